"""``ConfigRepository`` over the metadata image: the topic configs and dynamic broker configs a KRaft broker
reads from its metadata, in the names segdex resolves (``MetadataLogConfigs`` for ``TopicConfigResolver``).

A topic's log config is, highest first: the topic's own configs; this broker's dynamic ``log.*`` configs; the
cluster-wide dynamic broker defaults (``kafka-configs --entity-type brokers --entity-default``); the broker's
``server.properties``; Kafka's defaults (``DynamicBrokerConfig``, ``LogConfig.fromProps``). Configs segdex does
not use are left out here; broker names become the topic configs they default (``log.retention.hours`` ->
``retention.ms``, ...).
"""

from __future__ import annotations

from segdex.indexcore.config.broker_config import BROKER_SYNONYMS, RETENTION_UNITS_MS, retention_ms
from segdex.indexcore.config.log_config import CONFIG_NAMES, MetadataLogConfigs
from segdex.indexcore.metadata.metadata_image import MetadataImage


def _broker_layer(props: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(topic config -> value, topic config -> broker name) of one resource's broker configs."""
    values, origins = {}, {}
    for key, value in props.items():
        if key in BROKER_SYNONYMS:
            values[BROKER_SYNONYMS[key]], origins[BROKER_SYNONYMS[key]] = value, key
    retention = retention_ms({k: v for k, v in props.items() if k in RETENTION_UNITS_MS})
    if retention is not None:
        values["retention.ms"], origins["retention.ms"] = retention
    return values, origins


def log_configs(image: MetadataImage, broker_id: int | None) -> MetadataLogConfigs:
    """The image's configs for ``TopicConfigResolver``: every topic's own (those segdex uses), and the broker
    defaults of broker ``broker_id`` (the cluster-wide ones under its own)."""
    cluster, own = image.broker_configs(broker_id)
    broker, origins = _broker_layer(cluster)
    own_values, own_origins = _broker_layer(own)
    broker.update(own_values)
    origins.update({k: f"broker {broker_id}: {o}" for k, o in own_origins.items()})
    topics = {t.name: {k: v for k, v in image.topic_configs(t.name).items() if k in CONFIG_NAMES}
              for t in image.topics.values()}
    return MetadataLogConfigs({t: kv for t, kv in topics.items() if kv}, broker, origins, f"offset {image.offset}")
