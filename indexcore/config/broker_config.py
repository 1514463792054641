"""The broker's ``server.properties``: its log dirs, the ``log.*`` defaults its topics inherit, and the configs it
creates its internal topics with (``offsets.topic.segment.bytes`` is ``__consumer_offsets``'s ``segment.bytes``).

A topic without an override of its own takes the broker's ``log.*`` setting, else Kafka's default (``LogConfig``'s
server default properties, ``ServerLogConfigs``). This module reads the file as ``java.util.Properties`` does
(``jproperties``: ``key=value``, ``key: value``, ``key value``, comments, continuation lines, escapes) and maps
each broker name to the topic config it supplies. ``log.retention.ms`` wins over ``log.retention.minutes``, which
wins over ``log.retention.hours`` (``KafkaConfig.logRetentionTimeMillis``); any negative result means -1.

The same names are accepted in ``--config`` and ``--topic-config``: an operator pastes what the broker has.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from segdex.indexcore.config.log_config import ConfigException, parse_value

# broker property -> the topic config it is the default of (ServerLogConfigs / LogConfig.SERVER_DEFAULT_...)
BROKER_SYNONYMS: dict[str, str] = {
    "log.index.interval.bytes": "index.interval.bytes",
    "log.index.size.max.bytes": "segment.index.bytes",
    "log.segment.bytes": "segment.bytes",
    "log.retention.bytes": "retention.bytes",
    "log.cleanup.policy": "cleanup.policy",
    "log.segment.delete.delay.ms": "file.delete.delay.ms",
    "log.cleaner.delete.retention.ms": "delete.retention.ms",
    "log.cleaner.min.compaction.lag.ms": "min.compaction.lag.ms",
    "log.cleaner.max.compaction.lag.ms": "max.compaction.lag.ms",
    "log.cleaner.min.cleanable.ratio": "min.cleanable.dirty.ratio",
}
# broker property -> (internal topic, the topic config the broker creates it with): GroupCoordinatorService's
# groupMetadataTopicConfigs, TransactionStateManager's transactionTopicConfigs, ShareCoordinatorService's
# shareGroupStateTopicConfigs
INTERNAL_TOPIC_SYNONYMS: dict[str, tuple[str, str]] = {
    "offsets.topic.segment.bytes": ("__consumer_offsets", "segment.bytes"),
    "transaction.state.log.segment.bytes": ("__transaction_state", "segment.bytes"),
    "share.coordinator.state.topic.segment.bytes": ("__share_group_state", "segment.bytes"),
}

RETENTION_MS, RETENTION_MINUTES, RETENTION_HOURS = "log.retention.ms", "log.retention.minutes", "log.retention.hours"
RETENTION_UNITS_MS = {RETENTION_MS: 1, RETENTION_MINUTES: 60_000, RETENTION_HOURS: 3_600_000}


@dataclass
class BrokerConfig:
    """What segdex takes from one ``server.properties``."""

    path: str
    log_dirs: list[str]
    defaults: dict[str, str] = field(default_factory=dict)  # topic config name -> value
    origins: dict[str, str] = field(default_factory=dict)  # topic config name -> the broker property it came from
    internal: dict[str, dict[str, str]] = field(default_factory=dict)  # internal topic -> its configs set here
    internal_origins: dict[str, dict[str, str]] = field(default_factory=dict)  # ... -> the broker properties


def load_properties(path: str | os.PathLike, option: str, kind: str = "properties file") -> dict[str, str]:
    """A Java properties file as ``java.util.Properties`` reads it; ConfigException naming ``option`` (the
    command-line flag that gave the path) and ``kind`` when it cannot be read."""
    from jproperties import Properties

    props = Properties()
    try:
        with open(path, "rb") as f:
            props.load(f, "utf-8")
    except FileNotFoundError:
        raise ConfigException(f"{option} {path}: no such file") from None
    except IsADirectoryError:
        raise ConfigException(f"{option} {path}: a directory, not a {kind}") from None
    except UnicodeDecodeError as e:
        raise ConfigException(f"{option} {path}: not a properties file ({e.reason})") from None
    return {k: v.data for k, v in props.items()}


def retention_ms(props: dict[str, str]) -> tuple[str, str] | None:
    """(topic value of retention.ms, the broker property it came from), by Kafka's precedence; None if unset."""
    for key in (RETENTION_MS, RETENTION_MINUTES, RETENTION_HOURS):
        if key in props:
            try:
                millis = int(props[key].strip()) * RETENTION_UNITS_MS[key]
            except ValueError:
                raise ConfigException(f"Invalid value {props[key]} for configuration {key}: Not a number of type "
                                      f"{'LONG' if key == RETENTION_MS else 'INT'}") from None
            return str(-1 if millis < 0 else millis), key
    return None


def topic_names(overrides: dict[str, str]) -> dict[str, str]:
    """``--config``/``--topic-config`` items with broker names (``log.index.interval.bytes``,
    ``log.retention.hours``) turned into the topic configs they set; topic names pass through."""
    out: dict[str, str] = {}
    retention = retention_ms({k: v for k, v in overrides.items() if k in RETENTION_UNITS_MS})
    for key, value in overrides.items():
        if key in RETENTION_UNITS_MS:
            continue
        out[BROKER_SYNONYMS.get(key, key)] = value
    if retention is not None:
        out.setdefault("retention.ms", retention[0])
    return out


def read_broker_config(path: str | os.PathLike) -> BrokerConfig:
    """``log.dirs`` (else ``log.dir``) and the ``log.*`` topic defaults of a broker's ``server.properties``;
    every value checked with Kafka's validators (ConfigException names the broker property)."""
    path = os.fspath(path)
    props = load_properties(path, "--broker-config", "server.properties file")
    dirs_value = props.get("log.dirs") or props.get("log.dir") or ""
    config = BrokerConfig(path, [d.strip() for d in dirs_value.split(",") if d.strip()])
    for broker_key, topic_key in BROKER_SYNONYMS.items():
        if broker_key in props:
            try:
                parse_value(topic_key, props[broker_key])
            except ConfigException as e:
                raise ConfigException(f"{path}: {broker_key}: {e}") from None
            config.defaults[topic_key] = props[broker_key].strip()
            config.origins[topic_key] = broker_key
    retention = retention_ms(props)
    if retention is not None:
        config.defaults["retention.ms"], config.origins["retention.ms"] = retention
    for broker_key, (topic, topic_key) in INTERNAL_TOPIC_SYNONYMS.items():
        if broker_key in props:
            try:
                parse_value(topic_key, props[broker_key])
            except ConfigException as e:
                raise ConfigException(f"{path}: {broker_key}: {e}") from None
            config.internal.setdefault(topic, {})[topic_key] = props[broker_key].strip()
            config.internal_origins.setdefault(topic, {})[topic_key] = broker_key
    return config


__all__ = ["BROKER_SYNONYMS", "INTERNAL_TOPIC_SYNONYMS", "BrokerConfig", "load_properties", "read_broker_config",
           "retention_ms", "topic_names"]
