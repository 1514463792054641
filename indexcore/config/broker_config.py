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

from segdex.indexcore.config.kafka_configs import BROKER_CONFIGS, TOPIC_SYNONYMS
from segdex.indexcore.config.log_config import (
    CONFIG_NAMES,
    KNOWN_CONFIGS,
    ConfigException,
    _java_double,
    java_double,
    java_integer,
    java_trim,
    parse_value,
)

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

# prefixes of per-listener and per-mechanism broker settings (listener.name.sasl_ssl.ssl.keystore.location) and
# of plugins' own (their names are theirs, not Kafka's)
PREFIXED = ("listener.name.", "confluent.", "metric.reporters.", "authorizer.", "client.quota.callback.",
            "remote.log.storage.", "remote.log.metadata.", "kafka.metrics.", "ssl.", "sasl.")

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
    unknown: list[str] = field(default_factory=list)  # names Kafka does not know (a broker starts ignoring them)


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
    found = _synonym("retention.ms", props)
    return None if found is None else (found[0], found[1])


# broker setting -> (the topic config it is the default of, its factor to the topic config's unit), every one
# Kafka 4.4 or 3.9 has (ServerTopicConfigSynonyms: log.roll.hours is segment.ms in hours)
ALL_BROKER_SYNONYMS: dict[str, tuple[str, int]] = {b: (t, f) for t, syns in TOPIC_SYNONYMS.items() for b, f in syns}


def _synonym(topic_key: str, props: dict[str, str]) -> tuple[str, str] | None:
    """(value of ``topic_key``, broker property) from the first of its broker synonyms ``props`` sets, converted to
    the topic config's unit (``log.retention.hours`` to ms; a negative retention is -1, as
    ``KafkaConfig.logRetentionTimeMillis``); None when none is set."""
    for key, factor in TOPIC_SYNONYMS.get(topic_key, ()):
        if key not in props:
            continue
        if factor == 1 and topic_key != "retention.ms":
            return props[key].strip(), key
        try:
            value = int(props[key].strip()) * factor
        except ValueError:
            raise ConfigException(f"Invalid value {props[key]} for configuration {key}: Not a number of type "
                                  f"{BROKER_CONFIGS.get(key, ('INT',))[0]}") from None
        return str(-1 if topic_key == "retention.ms" and value < 0 else value), key
    return None


def broker_only(overrides: dict[str, str]) -> list[str]:
    """The names in ``--config``/``--topic-config`` items that are broker settings and no topic config's default
    (``log.cleaner.threads``): known to Kafka, no topic takes them."""
    return sorted(k for k in overrides if k in BROKER_CONFIGS and k not in ALL_BROKER_SYNONYMS
                  and k not in KNOWN_CONFIGS)


def topic_names(overrides: dict[str, str]) -> dict[str, str]:
    """``--config``/``--topic-config`` items with broker names (``log.index.interval.bytes``,
    ``log.retention.hours``) turned into the topic configs they set, by Kafka's precedence between synonyms; topic
    names pass through (and win over a broker name of the same config); broker settings no topic takes are left
    out (``broker_only``)."""
    out: dict[str, str] = {}
    synonyms: set[str] = set()
    for key, value in overrides.items():
        if key in KNOWN_CONFIGS or key not in ALL_BROKER_SYNONYMS and key not in BROKER_CONFIGS:
            out[key] = value
        elif key in ALL_BROKER_SYNONYMS:
            synonyms.add(ALL_BROKER_SYNONYMS[key][0])
    for topic_key in sorted(synonyms):
        found = _synonym(topic_key, overrides)
        if found is not None:
            out.setdefault(topic_key, found[0])
    return out


def check_broker_value(path: str, key: str, value: str) -> None:
    """A broker setting's value as ``KafkaConfig``'s ``ConfigDef`` parses it (``ConfigDef.parseType``: numbers as
    Java parses them, their ranges, booleans; ``compression.gzip.level`` with gzip's own validator); values a
    config provider fills (``${file:...}``) and other types are left to the broker."""
    kind, low, high, _ = BROKER_CONFIGS[key]
    text = java_trim(value)
    if "${" in text:
        return
    if kind == "BOOLEAN":
        if text.lower() not in ("true", "false"):
            raise ConfigException(f"{path}: Invalid value {value} for configuration {key}: Expected value to be "
                                  f"either true or false")
        return
    if kind not in ("INT", "LONG", "SHORT", "DOUBLE"):
        return
    try:
        number = java_double(text) if kind == "DOUBLE" else java_integer(text, JAVA_BITS[kind])
    except ValueError:
        raise ConfigException(f"{path}: Invalid value {value} for configuration {key}: Not a number of type "
                              f"{kind}") from None
    shown = _java_double(number) if kind == "DOUBLE" else str(number)
    if key == GZIP_LEVEL:  # GzipCompression.LevelValidator, as the topic config's
        try:
            parse_value(key, shown)
        except ConfigException as e:
            raise ConfigException(f"{path}: {e}") from None
        return
    if low is not None and number < low:
        raise ConfigException(f"{path}: Invalid value {shown} for configuration {key}: Value must be at least {low}")
    if high is not None and number > high:
        raise ConfigException(f"{path}: Invalid value {shown} for configuration {key}: Value must be no more than "
                              f"{high}")


GZIP_LEVEL = "compression.gzip.level"
JAVA_BITS = {"SHORT": 16, "INT": 32, "LONG": 64}  # the Java integer types' widths


def read_broker_config(path: str | os.PathLike) -> BrokerConfig:
    """``log.dirs`` (else ``log.dir``) and the ``log.*`` topic defaults of a broker's ``server.properties``;
    every value checked with Kafka's validators (ConfigException names the broker property)."""
    path = os.fspath(path)
    props = load_properties(path, "--broker-config", "server.properties file")
    dirs_value = props.get("log.dirs") or props.get("log.dir") or ""
    config = BrokerConfig(path, [d.strip() for d in dirs_value.split(",") if d.strip()])
    config.unknown = sorted(k for k in props if k not in BROKER_CONFIGS and not k.startswith(PREFIXED))
    for key in props:
        if key in BROKER_CONFIGS and key not in ALL_BROKER_SYNONYMS and key not in INTERNAL_TOPIC_SYNONYMS:
            check_broker_value(path, key, props[key])
    for topic_key in sorted({t for t, _ in ALL_BROKER_SYNONYMS.values()}):
        found = _synonym(topic_key, props)
        if found is None:
            continue
        try:
            parse_value(topic_key, found[0])
        except ConfigException as e:
            raise ConfigException(f"{path}: {found[1]}: {e}") from None
        if topic_key in CONFIG_NAMES:  # the others are checked as Kafka would, and change nothing here
            config.defaults[topic_key], config.origins[topic_key] = found
    for broker_key, (topic, topic_key) in INTERNAL_TOPIC_SYNONYMS.items():
        if broker_key in props:
            try:
                parse_value(topic_key, props[broker_key])
            except ConfigException as e:
                raise ConfigException(f"{path}: {broker_key}: {e}") from None
            config.internal.setdefault(topic, {})[topic_key] = props[broker_key].strip()
            config.internal_origins.setdefault(topic, {})[topic_key] = broker_key
    return config


__all__ = ["ALL_BROKER_SYNONYMS", "BROKER_SYNONYMS", "INTERNAL_TOPIC_SYNONYMS", "BrokerConfig", "broker_only",
           "check_broker_value", "load_properties", "read_broker_config", "retention_ms", "topic_names"]
