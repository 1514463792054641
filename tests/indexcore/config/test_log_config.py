"""Topic config values as Kafka's ``ConfigDef`` reads them (``LogConfig``), in the test process: each type, each
bound, and Kafka's own wording of a rejection (``Invalid value V for configuration K: WHY``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from segdex.indexcore.config.broker_config import load_properties, read_broker_config
from segdex.indexcore.config.log_config import (
    ConfigException,
    LogConfig,
    TopicConfigResolver,
    parse_topic_config_args,
    parse_value,
)

INT_MAX, LONG_MAX = 2**31 - 1, 2**63 - 1


@pytest.mark.parametrize(("key", "text", "value"), [
    ("index.interval.bytes", " 0 ", 0),
    ("index.interval.bytes", str(INT_MAX), INT_MAX),
    ("segment.index.bytes", "4", 4),
    ("segment.bytes", "1048576", 1048576),
    ("retention.ms", "-1", -1),
    ("retention.ms", str(LONG_MAX), LONG_MAX),
    ("retention.bytes", str(-2**63), -2**63),
    ("file.delete.delay.ms", "0", 0),
    ("producer.id.expiration.ms", "1", 1),
    ("cleanup.policy", " compact , delete ", "compact,delete"),
    ("cleanup.policy", "", ""),  # Kafka 4.x: neither compaction nor deletion
    ("cleanup.policy", "compact,compact", "compact,compact"),
    ("compression.type", " zstd ", "zstd"),
    ("compression.gzip.level", "-1", -1),
    ("compression.zstd.level", "-131072", -131072),
    ("preallocate", " TRUE ", "true"),
    ("leader.replication.throttled.replicas", "0:1, 1:2,", "0:1,1:2,"),
    ("follower.replication.throttled.replicas", "*", "*"),
    ("message.timestamp.type", "LogAppendTime", "LogAppendTime"),
    ("local.retention.ms", "-2", -2),
    ("internal.segment.bytes", "100", 100),
    ("message.format.version", " 0.10.2 ", "0.10.2"),
])
def test_values_kafka_accepts(key: str, text: str, value: int | str):
    parsed = parse_value(key, text)
    assert parsed == value and type(parsed) is type(value)


@pytest.mark.parametrize(("key", "text", "why"), [
    ("index.interval.bytes", str(INT_MAX + 1), "Not a number of type INT"),
    ("index.interval.bytes", str(-2**31 - 1), "Not a number of type INT"),
    ("index.interval.bytes", "1.5", "Not a number of type INT"),
    ("index.interval.bytes", "-1", "Value must be at least 0"),
    ("segment.index.bytes", "3", "Value must be at least 4"),
    ("segment.bytes", "1048575", "Value must be at least 1048576"),
    ("retention.ms", "-2", "Value must be at least -1"),
    ("retention.ms", str(LONG_MAX + 1), "Not a number of type LONG"),
    ("retention.bytes", "ten", "Not a number of type LONG"),
    ("file.delete.delay.ms", "-1", "Value must be at least 0"),
    ("producer.id.expiration.ms", "0", "Value must be at least 1"),
    ("cleanup.policy", "forever", "String must be one of: compact, delete"),  # Kafka names the bad item
])
def test_values_kafka_rejects_in_kafkas_words(key: str, text: str, why: str):
    """A value Kafka cannot parse is shown as given, spaces and all; a parsed one out of range as parsed."""
    with pytest.raises(ConfigException) as e:
        parse_value(key, f" {text} ")
    shown = f" {text} " if why.startswith("Not a number") else text
    assert str(e.value) == f"Invalid value {shown} for configuration {key}: {why}"


@pytest.mark.parametrize(("key", "text", "message"), [
    # Kafka 4.4's own LogConfig.validate, run on these values, says the same (a did-you-mean aside)
    ("cleanup.policy", "delete,,", "Configuration 'cleanup.policy' values must not be empty."),
    ("compression.type", "GZIP", "Invalid value GZIP for configuration compression.type: String must be one of: "
                                 "uncompressed, zstd, lz4, snappy, gzip, producer"),
    ("compression.gzip.level", "0", "Invalid value 0 for configuration compression.gzip.level: Value must be "
                                    "between 1 and 9 or equal to -1"),
    ("compression.zstd.level", "23", "Invalid value 23 for configuration compression.zstd.level: Value must be no "
                                     "more than 22"),
    ("min.cleanable.dirty.ratio", "2", "Invalid value 2.0 for configuration min.cleanable.dirty.ratio: Value must "
                                       "be no more than 1"),
    ("min.cleanable.dirty.ratio", "-1e8", "Invalid value -1.0E8 for configuration min.cleanable.dirty.ratio: Value "
                                          "must be at least 0"),
    ("message.timestamp.type", "logappendtime", "Invalid value logappendtime for configuration "
                                                "message.timestamp.type: String must be one of: CreateTime, "
                                                "LogAppendTime"),
    ("preallocate", "yes", "Invalid value yes for configuration preallocate: Expected value to be either true or "
                           "false"),
    ("leader.replication.throttled.replicas", "0:1,x", "Invalid value [0:1, x] for configuration "
     "leader.replication.throttled.replicas: leader.replication.throttled.replicas must be the literal '*' or a list "
     "of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."),
    ("segment.bytes", "1000", "Invalid value 1000 for configuration segment.bytes: Value must be at least 1048576"),
    ("segment.ms", "0", "Invalid value 0 for configuration segment.ms: Value must be at least 1"),
    ("min.insync.replicas", "0", "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"),
    ("local.retention.ms", "-3", "Invalid value -3 for configuration local.retention.ms: Value must be at least -2"),
    ("segment.mss", "1", "Unknown topic config name: segment.mss (did you mean segment.ms?)"),
    ("retention.hours", "1", "Unknown topic config name: retention.hours (did you mean log.retention.hours?)"),
    ("zzz", "1", "Unknown topic config name: zzz"),
])
def test_every_kafka_topic_config_checked_in_kafkas_words(key: str, text: str, message: str):
    with pytest.raises(ConfigException) as e:
        parse_value(key, text)
    assert str(e.value) == message


def test_configs_segdex_does_not_use_change_nothing_and_are_recorded():
    config = LogConfig().with_overrides({"compression.type": "zstd", "segment.ms": "60000", "retention.ms": "5"})
    assert config == LogConfig(retention_ms=5)
    assert LogConfig().with_overrides({"internal.segment.bytes": "100"}).segment_bytes == 100  # Kafka 4.x
    resolver = TopicConfigResolver(config={"segment.ms": "60000"},
                                   topic_configs={"orders": {"compression.type": "zstd"}})
    rows = resolver.resolve("orders").rows()
    assert rows[-2:] == [{"topic": "orders", "config": "compression.type", "value": "zstd",
                          "source": "--topic-config"},
                         {"topic": "orders", "config": "segment.ms", "value": "60000", "source": "--config"}]
    with pytest.raises(ConfigException) as e:
        LogConfig().with_overrides({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"})
    assert str(e.value) == "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)"


def test_the_cleaners_configs_as_kafka_types_and_bounds_them():
    config = LogConfig().with_overrides({"min.cleanable.dirty.ratio": "0.25", "min.compaction.lag.ms": "5",
                                         "max.compaction.lag.ms": "9", "delete.retention.ms": "0",
                                         "cleanup.policy": "compact,delete"})
    assert (config.min_cleanable_dirty_ratio, config.min_compaction_lag_ms, config.max_compaction_lag_ms,
            config.delete_retention_ms, config.compact, config.delete) == (0.25, 5, 9, 0, True, True)
    assert (LogConfig().min_cleanable_dirty_ratio, LogConfig().max_compaction_lag_ms, LogConfig().compact) == (
        0.5, 2**63 - 1, False)
    with pytest.raises(ConfigException, match=r"min.cleanable.dirty.ratio: Value must be no more than 1"):
        parse_value("min.cleanable.dirty.ratio", "1.5")
    with pytest.raises(ConfigException, match="Not a number of type DOUBLE"):
        parse_value("min.cleanable.dirty.ratio", "half")
    with pytest.raises(ConfigException, match="max.compaction.lag.ms: Value must be at least 1"):
        parse_value("max.compaction.lag.ms", "0")


def test_overrides_and_validation():
    config = LogConfig().with_overrides({"index.interval.bytes": "1024", "cleanup.policy": "compact"})
    assert (config.index_interval_bytes, config.cleanup_policy, config.segment_bytes) == (1024, "compact", 1 << 30)
    LogConfig().validate()
    with pytest.raises(ConfigException, match="configuration segment.index.bytes: Value must be at least 4"):
        LogConfig(segment_index_bytes=2).validate()


def test_every_layer_with_its_source_and_origin():
    """Kafka's precedence, lowest first: server.properties, the described topic configs, --config, the internal
    topics' own settings, --topic-config; each value with where it came from (and the property it was read as)."""
    from segdex.indexcore.config.log_config import TopicConfigResolver

    resolver = TopicConfigResolver(
        config={"retention.ms": "1000", "cleanup.policy": "compact"},
        topic_configs={"orders": {"index.interval.bytes": "100"}},
        broker={"retention.bytes": "50", "retention.ms": "5", "segment.bytes": "2097152"},
        broker_origins={"retention.ms": "log.retention.hours", "segment.bytes": "log.segment.bytes"},
        described={"orders": {"retention.bytes": "70", "index.interval.bytes": "9"}},
        described_sources={"orders": {"retention.bytes": "DYNAMIC_TOPIC_CONFIG"}})
    orders = resolver.resolve("orders")
    assert orders.rows() == [
        {"topic": "orders", "config": "cleanup.policy", "value": "compact", "source": "--config"},
        {"topic": "orders", "config": "delete.retention.ms", "value": "86400000", "source": "Kafka default"},
        {"topic": "orders", "config": "file.delete.delay.ms", "value": "60000", "source": "Kafka default"},
        {"topic": "orders", "config": "index.interval.bytes", "value": "100", "source": "--topic-config"},
        {"topic": "orders", "config": "max.compaction.lag.ms", "value": str(2**63 - 1), "source": "Kafka default"},
        {"topic": "orders", "config": "max.message.bytes", "value": "1048588", "source": "Kafka default"},
        {"topic": "orders", "config": "message.format.version", "value": "3.0-IV1", "source": "Kafka default"},
        {"topic": "orders", "config": "min.cleanable.dirty.ratio", "value": "0.5", "source": "Kafka default"},
        {"topic": "orders", "config": "min.compaction.lag.ms", "value": "0", "source": "Kafka default"},
        {"topic": "orders", "config": "producer.id.expiration.ms", "value": "86400000", "source": "Kafka default"},
        {"topic": "orders", "config": "retention.bytes", "value": "70",
         "source": "--topic-configs (DYNAMIC_TOPIC_CONFIG)"},
        {"topic": "orders", "config": "retention.ms", "value": "1000", "source": "--config"},
        {"topic": "orders", "config": "segment.bytes", "value": "2097152",
         "source": "server.properties (log.segment.bytes)"},
        {"topic": "orders", "config": "segment.index.bytes", "value": "10485760", "source": "Kafka default"},
    ]
    assert orders.assumed(["segment.index.bytes", "segment.bytes", "file.delete.delay.ms"]) == [
        "segment.index.bytes", "file.delete.delay.ms"]
    other = resolver("other")
    assert (other.retention_ms, other.retention_bytes, other.index_interval_bytes) == (1000, 50, 4096)
    assert resolver.resolve("other").sources["retention.bytes"] == "server.properties"  # no origin given
    assert LogConfig(retention_ms=5).describe(["retention.ms", "segment.bytes"]) == \
        "retention.ms=5, segment.bytes=1073741824"
    assert LogConfig().describe().startswith("index.interval.bytes=4096, segment.index.bytes=10485760, ")


def test_config_arguments():
    from segdex.indexcore.config.log_config import parse_config_args, parse_topic_config_args

    assert parse_config_args([" a = 1 ", "b==2", "c="]) == {"a": "1", "b": "=2", "c": ""}
    assert parse_topic_config_args(["t:a=1", "t:b=2", "u:a=3"]) == {"t": {"a": "1", "b": "2"}, "u": {"a": "3"}}
    for bad, why in ((["novalue"], "expected KEY=VALUE, got 'novalue'"), (["=1"], "expected KEY=VALUE, got '=1'")):
        with pytest.raises(ConfigException) as e:
            parse_config_args(bad)
        assert str(e.value) == why
    for bad, why in ((["a=1"], "expected TOPIC:KEY=VALUE, got 'a=1'"),
                     ([":a=1"], "expected TOPIC:KEY=VALUE, got ':a=1'")):
        with pytest.raises(ConfigException) as e:
            parse_topic_config_args(bad)
        assert str(e.value) == why


# ------------------------------------------------------------------ from test_small_modules_units.py


def _server_properties(tmp_path: Path, text: str) -> str:
    path = tmp_path / "server.properties"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("key, kind", [("log.retention.ms", "LONG"), ("log.retention.minutes", "INT"),
                                       ("log.retention.hours", "INT")])
def test_a_retention_that_is_not_a_number(tmp_path: Path, key: str, kind: str):
    """ConfigDef's text: log.retention.ms is a LONG, minutes and hours are INTs."""
    with pytest.raises(ConfigException) as e:
        read_broker_config(_server_properties(tmp_path, f"{key}=soon\n"))
    assert str(e.value) == f"Invalid value soon for configuration {key}: Not a number of type {kind}"


def test_a_directory_is_not_a_properties_file(tmp_path: Path):
    with pytest.raises(ConfigException) as e:
        load_properties(tmp_path, "--config-file")
    assert str(e.value) == f"--config-file {tmp_path}: a directory, not a properties file"


def test_a_topic_config_value_may_hold_colons():
    """Only the first ':' ends the topic name (topic names have no ':'; throttled-replica lists do)."""
    assert parse_topic_config_args(["orders:leader.replication.throttled.replicas=0:101,1:102",
                                    "orders:retention.ms=5"]) == {
        "orders": {"leader.replication.throttled.replicas": "0:101,1:102", "retention.ms": "5"}}


def test_an_empty_topic_name_in_topic_configs():
    with pytest.raises(ConfigException) as e:
        TopicConfigResolver(topic_configs={"": {"retention.ms": "5"}})
    assert str(e.value) == "empty topic name in --topic-config"
