"""``indexcore.metadata.config_repository`` and its place among ``TopicConfigResolver``'s layers: a topic's own
configs from the metadata log over this broker's dynamic ``log.*`` configs over the cluster-wide ones over
``server.properties``, under the explicit flags; broker names become topic configs; configs segdex does not use are
left out; every value names its source."""

from __future__ import annotations

from pathlib import Path

from segdex.indexcore.config.log_config import TopicConfigResolver
from segdex.indexcore.metadata.config_repository import log_configs
from segdex.indexcore.metadata.metadata_image import load_metadata_image
from tests.support.metadata_log import record, uuid, write_metadata_log


def _config(kind: int, name: str, key: str, value: str) -> bytes:
    return record("ConfigRecord", resourceType=kind, resourceName=name, name=key, value=value)


def test_broker_and_topic_configs_layer_as_a_kraft_broker_layers_them(tmp_path: Path):
    part = tmp_path / "__cluster_metadata-0"
    write_metadata_log(part, [[
        record("TopicRecord", name="orders", topicId=uuid(1)),
        record("TopicRecord", name="clicks", topicId=uuid(2)),
        _config(2, "orders", "cleanup.policy", "compact"),
        _config(2, "orders", "compression.type", "zstd"),  # a topic config segdex does not use
        _config(4, "", "log.retention.hours", "48"),  # the cluster-wide default
        _config(4, "", "log.cleaner.delete.retention.ms", "1000"),
        _config(4, "1", "log.cleaner.delete.retention.ms", "2000"),  # broker 1's own
        _config(4, "2", "log.index.interval.bytes", "99"),  # another broker's
        _config(4, "", "min.insync.replicas", "2"),  # no topic config of segdex's
    ]])
    metadata = log_configs(load_metadata_image(str(part)), broker_id=1)
    assert metadata.topics == {"orders": {"cleanup.policy": "compact"}}
    assert metadata.broker == {"retention.ms": str(48 * 3_600_000), "delete.retention.ms": "2000"}
    assert metadata.where == "offset 8"

    resolver = TopicConfigResolver(config={"retention.bytes": "7"}, topic_configs={"clicks": {"retention.ms": "1"}},
                                   broker={"retention.ms": "5", "segment.bytes": "2097152"},
                                   broker_origins={"retention.ms": "log.retention.ms",
                                                   "segment.bytes": "log.segment.bytes"}, metadata=metadata)
    orders = resolver.resolve("orders")
    assert (orders.config.cleanup_policy, orders.config.retention_ms, orders.config.delete_retention_ms,
            orders.config.segment_bytes, orders.config.retention_bytes) == ("compact", 48 * 3_600_000, 2000,
                                                                             2097152, 7)
    assert orders.sources["cleanup.policy"] == "metadata log (offset 8)"
    assert orders.sources["retention.ms"] == "metadata log (log.retention.hours, offset 8)"
    assert orders.sources["delete.retention.ms"] == "metadata log (broker 1: log.cleaner.delete.retention.ms, offset 8)"
    assert orders.sources["segment.bytes"] == "server.properties (log.segment.bytes)"
    assert orders.sources["retention.bytes"] == "--config"
    clicks = resolver.resolve("clicks")
    assert clicks.config.retention_ms == 1 and clicks.sources["retention.ms"] == "--topic-config"
    assert clicks.config.cleanup_policy == "delete" and "cleanup.policy" not in clicks.sources
    # a topic the metadata log does not name takes the broker layers: the default
    assert resolver.default.retention_ms == 48 * 3_600_000 and resolver.default.delete_retention_ms == 2000
    assert resolver.configured_topics() == {"orders", "clicks"}
