"""``--broker-config server.properties``: log.dirs and the log.* defaults, read as Kafka reads them."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from segdex.indexcore.config.broker_config import read_broker_config, topic_names
from segdex.indexcore.config.log_config import ConfigException, TopicConfigResolver
from tests.support import cli
from tests.support.fixtures import FIXTURES


def props(tmp_path, text: str):
    path = tmp_path / "server.properties"
    path.write_text(text)
    return path


def test_java_properties_forms_and_kafka_names(tmp_path):
    b = read_broker_config(props(tmp_path, "# broker 1\n! also a comment\nlog.dirs=/data/a,\\\n  /data/b\n"
                                           "log.index.interval.bytes = 512\nlog.index.size.max.bytes: 4096\n"
                                           "log.segment.bytes 1073741824\nlog.cleanup.policy=compact,delete\n"
                                           "log.retention.bytes=-1\nlog.segment.delete.delay.ms=0\nnum.partitions=3\n"))
    assert b.log_dirs == ["/data/a", "/data/b"]
    assert b.defaults == {"index.interval.bytes": "512", "segment.index.bytes": "4096", "segment.bytes": "1073741824",
                          "cleanup.policy": "compact,delete", "retention.bytes": "-1", "file.delete.delay.ms": "0"}
    assert b.origins["segment.index.bytes"] == "log.index.size.max.bytes"


@pytest.mark.parametrize("text,expected", [
    ("log.retention.hours=48\n", "172800000"),
    ("log.retention.hours=48\nlog.retention.minutes=90\n", "5400000"),  # minutes win over hours
    ("log.retention.hours=48\nlog.retention.minutes=90\nlog.retention.ms=1000\n", "1000"),  # ms win over both
    ("log.retention.ms=-5\n", "-1"),  # any negative: forever
    ("log.retention.hours=-1\n", "-1"),
    ("log.dir=/x\n", None),
])
def test_retention_precedence_as_kafka(tmp_path, text, expected):
    b = read_broker_config(props(tmp_path, text))
    assert b.defaults.get("retention.ms") == expected


def test_bad_values_and_files_are_config_errors(tmp_path):
    with pytest.raises(ConfigException, match="log.index.interval.bytes"):
        read_broker_config(props(tmp_path, "log.index.interval.bytes=3000000000\n"))
    with pytest.raises(ConfigException, match="log.retention.hours"):
        read_broker_config(props(tmp_path, "log.retention.hours=two days\n"))
    with pytest.raises(ConfigException) as e:  # a setting of no topic config: checked under its own name
        read_broker_config(props(tmp_path, "num.partitions=three\n"))
    assert str(e.value) == (f"{tmp_path / 'server.properties'}: Invalid value three for configuration num.partitions: "
                            f"Not a number of type INT")
    with pytest.raises(ConfigException, match="no such file"):
        read_broker_config(tmp_path / "missing.properties")
    with pytest.raises(ConfigException, match="a directory"):
        read_broker_config(tmp_path)


def test_broker_names_in_config_args_and_precedence():
    assert topic_names({"log.retention.hours": "2", "log.index.size.max.bytes": "4096", "index.interval.bytes": "9"}) \
        == {"segment.index.bytes": "4096", "index.interval.bytes": "9", "retention.ms": "7200000"}
    resolver = TopicConfigResolver({"retention.ms": "1000"}, {"orders": {"retention.bytes": "5"}},
                                   broker={"retention.ms": "7200000", "index.interval.bytes": "512"},
                                   broker_origins={"retention.ms": "log.retention.hours",
                                                   "index.interval.bytes": "log.index.interval.bytes"})
    orders = resolver.resolve("orders")
    assert orders.config.retention_ms == 1000 and orders.sources["retention.ms"] == "--config"  # --config > broker
    assert orders.config.index_interval_bytes == 512
    assert orders.sources["index.interval.bytes"] == "server.properties (log.index.interval.bytes)"
    assert orders.config.retention_bytes == 5 and orders.sources["retention.bytes"] == "--topic-config"
    assert resolver.resolve("__consumer_offsets").config.cleanup_policy == "compact"  # internal topics keep theirs


segdex = functools.partial(cli.segdex, timeout=300, no_traceback=True)


def test_rebuild_takes_the_brokers_index_interval(tmp_path):
    """A case written with index.interval.bytes=100: rebuilt from the broker's log.index.interval.bytes=100 it
    is Kafka's recovered/ byte for byte; with Kafka's default (4096) it is not."""
    case = "v2_varsize_interval_100"
    source = FIXTURES / case / "input" if (FIXTURES / case / "input").exists() else FIXTURES / case / "broker"
    path = props(tmp_path, "log.index.interval.bytes=100\n")
    with_broker, without = tmp_path / "with", tmp_path / "without"
    proc = segdex("rebuild", "-q", "--broker-config", str(path), "--out-dir", str(with_broker), str(source))
    assert proc.returncode == 0
    assert segdex("rebuild", "-q", "--out-dir", str(without), str(source)).returncode == 0
    name = "00000000000000000000.index"
    expected = (FIXTURES / case / "recovered" / name).read_bytes()
    assert (with_broker / source.name / name).read_bytes() == expected
    assert (without / source.name / name).read_bytes() != expected


def test_log_dirs_come_from_the_broker_config(tmp_path):
    log_dir = tmp_path / "kafka-logs"
    log_dir.mkdir()
    path = props(tmp_path, f"log.dirs={log_dir}\nlog.retention.hours=1\n")
    proc = segdex("retention", "--no-record", "--broker-config", str(path))
    assert proc.returncode == 0, proc.stderr
    assert str(log_dir) in proc.stdout
    no_dirs = props(tmp_path, "log.retention.hours=1\n")
    proc = segdex("retention", "--no-record", "--broker-config", str(no_dirs))
    assert proc.returncode == 2 and "log.dirs" in proc.stderr
    proc = segdex("verify", "--no-progress", "--broker-config", str(no_dirs))
    assert proc.returncode == 2 and "log.dirs" in proc.stderr
    bad = props(tmp_path, "log.index.interval.bytes=-3\n")
    proc = segdex("verify", "--no-progress", "--broker-config", str(bad), str(log_dir))
    assert proc.returncode == 2 and "log.index.interval.bytes" in proc.stderr


def test_read_broker_config_whole(tmp_path):
    """Every field of what segdex takes from a server.properties, in the test process: ``log.dir`` when there
    is no ``log.dirs``, each default with the broker property it came from, retention by Kafka's precedence."""
    from segdex.indexcore.config.broker_config import BrokerConfig, read_broker_config
    from segdex.indexcore.config.log_config import ConfigException

    props = tmp_path / "server.properties"
    props.write_text("log.dir = /data/a , /data/b ,\nlog.index.interval.bytes= 2048 \nlog.retention.minutes=3\n"
                     "log.retention.hours=1\nlog.segment.delete.delay.ms=5\n")
    assert read_broker_config(props) == BrokerConfig(
        str(props), ["/data/a", "/data/b"],
        {"index.interval.bytes": "2048", "file.delete.delay.ms": "5", "retention.ms": "180000"},
        {"index.interval.bytes": "log.index.interval.bytes", "file.delete.delay.ms": "log.segment.delete.delay.ms",
         "retention.ms": "log.retention.minutes"})
    props.write_text("log.dirs=/x\nlog.dir=/y\nlog.retention.hours=-5\n")
    config = read_broker_config(props)
    assert (config.log_dirs, config.defaults, config.origins) == (
        ["/x"], {"retention.ms": "-1"}, {"retention.ms": "log.retention.hours"})
    props.write_text("log.segment.bytes=12\n")
    with pytest.raises(ConfigException) as e:
        read_broker_config(props)
    assert str(e.value) == (f"{props}: log.segment.bytes: Invalid value 12 for configuration segment.bytes: "
                            f"Value must be at least 1048576")
    props.write_text("log.retention.minutes=soon\n")
    with pytest.raises(ConfigException) as e:
        read_broker_config(props)
    assert str(e.value) == "Invalid value soon for configuration log.retention.minutes: Not a number of type INT"
    with pytest.raises(ConfigException) as e:
        read_broker_config(tmp_path)
    assert str(e.value) == f"--broker-config {tmp_path}: a directory, not a server.properties file"
    with pytest.raises(ConfigException) as e:
        read_broker_config(tmp_path / "nope")
    assert str(e.value) == f"--broker-config {tmp_path / 'nope'}: no such file"
    (tmp_path / "latin1").write_bytes(b"log.dirs=/d\xe9\n")
    with pytest.raises(ConfigException, match=r"^--broker-config .*latin1: not a properties file \("):
        read_broker_config(tmp_path / "latin1")


# ------------------------------------------------------------------ from test_small_modules_units.py


def _server_properties(tmp_path: Path, text: str) -> str:
    path = tmp_path / "server.properties"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("line, value, origin", [
    ("log.retention.ms=0", "0", "log.retention.ms"),
    ("log.retention.minutes=0", "0", "log.retention.minutes"),
    ("log.retention.hours=0", "0", "log.retention.hours"),
    ("log.retention.ms=1", "1", "log.retention.ms"),
    ("log.retention.ms=-5", "-1", "log.retention.ms"),
])
def test_a_retention_of_zero_stays_zero(tmp_path: Path, line: str, value: str, origin: str):
    """``logRetentionTimeMillis``: only a negative result becomes -1 (0 deletes at once)."""
    config = read_broker_config(_server_properties(tmp_path, f"log.dirs=/data/a\n{line}\n"))
    assert (config.defaults, config.origins) == ({"retention.ms": value}, {"retention.ms": origin})


def test_a_broker_config_without_log_dirs_names_none(tmp_path: Path):
    config = read_broker_config(_server_properties(tmp_path, "log.segment.bytes=1048576\n"))
    assert (config.log_dirs, config.defaults) == ([], {"segment.bytes": "1048576"})


def test_the_internal_topics_take_the_segment_bytes_the_broker_creates_them_with(tmp_path):
    """``offsets.topic.segment.bytes`` is ``__consumer_offsets``'s ``segment.bytes`` (and so how Kafka's cleaner
    groups its segments), not ``log.segment.bytes``; the real-broker cleaning test found segdex had 100 MiB."""
    props = tmp_path / "server.properties"
    props.write_text("log.dirs=/data\nlog.segment.bytes=2097152\noffsets.topic.segment.bytes=1048576\n"
                     "transaction.state.log.segment.bytes=3145728\n")
    broker = read_broker_config(props)
    assert broker.internal == {"__consumer_offsets": {"segment.bytes": "1048576"},
                               "__transaction_state": {"segment.bytes": "3145728"}}
    resolver = TopicConfigResolver(broker=broker.defaults, broker_origins=broker.origins, internal=broker.internal,
                                   internal_origins=broker.internal_origins)
    offsets = resolver.resolve("__consumer_offsets")
    assert offsets.config.segment_bytes == 1_048_576 and offsets.config.cleanup_policy == "compact"
    assert offsets.sources["segment.bytes"] == "internal topic (offsets.topic.segment.bytes)"
    assert resolver("__transaction_state").segment_bytes == 3_145_728
    assert resolver("__share_group_state").segment_bytes == 100 * 1024 * 1024  # not set: Kafka's default
    assert resolver("orders").segment_bytes == 2_097_152  # log.segment.bytes for every other topic
    assert TopicConfigResolver()("__consumer_offsets").segment_bytes == 100 * 1024 * 1024
    props.write_text("offsets.topic.segment.bytes=ten\n")
    with pytest.raises(ConfigException, match="offsets.topic.segment.bytes"):
        read_broker_config(props)
