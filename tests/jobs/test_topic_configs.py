"""``--topic-configs``: `kafka-configs --describe` output read back, bad files refused with a clear error, and
where its values sit in the precedence (above the broker's, below --config and --topic-config)."""

from __future__ import annotations

from pathlib import Path

import pytest

from segdex.indexcore.config.log_config import ConfigException, TopicConfigResolver
from segdex.indexcore.config.topic_configs_file import parse_topic_configs
from segdex.jobs.cli import main as segdex_main

ALL = """All configs for topic orders are:
  cleanup.policy=delete sensitive=false synonyms={DEFAULT_CONFIG:log.cleanup.policy=delete}
  index.interval.bytes=1024 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:index.interval.bytes=1024, DEFAULT_CONFIG:log.index.interval.bytes=4096}
  retention.ms=3600000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.retention.ms=3600000, STATIC_BROKER_CONFIG:log.retention.hours=24, DEFAULT_CONFIG:log.retention.hours=168}
  segment.bytes=1073741824 sensitive=false synonyms={DEFAULT_CONFIG:log.segment.bytes=1073741824}
  some.secret=null sensitive=true synonyms={}
  compression.type=producer sensitive=false synonyms={DEFAULT_CONFIG:compression.type=producer}
Dynamic configs for topic audit-log are:
  retention.bytes=1048576 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.bytes=1048576}
"""  # noqa: E501


def test_both_forms_with_sources():
    topics = parse_topic_configs(ALL)
    assert topics["orders"].values == {"index.interval.bytes": "1024", "retention.ms": "3600000"}
    assert topics["orders"].sources == {"index.interval.bytes": "DYNAMIC_TOPIC_CONFIG",
                                        "retention.ms": "DYNAMIC_BROKER_CONFIG"}
    assert topics["audit-log"].values == {"retention.bytes": "1048576"}


def test_precedence_broker_described_config_topic_config():
    topics = parse_topic_configs(ALL)
    resolver = TopicConfigResolver({"retention.ms": "60000"}, {"audit-log": {"retention.bytes": "5"}},
                                   broker={"index.interval.bytes": "2048", "retention.bytes": "7"},
                                   described={t: d.values for t, d in topics.items()},
                                   described_sources={t: d.sources for t, d in topics.items()})
    orders = resolver.resolve("orders")
    assert orders.config.index_interval_bytes == 1024  # the topic override beats the broker's
    assert orders.sources["index.interval.bytes"] == "--topic-configs (DYNAMIC_TOPIC_CONFIG)"
    assert orders.config.retention_ms == 60000 and orders.sources["retention.ms"] == "--config"
    audit = resolver.resolve("audit-log")
    assert audit.config.retention_bytes == 5 and audit.sources["retention.bytes"] == "--topic-config"
    assert resolver.resolve("other").config.retention_bytes == 7


@pytest.mark.parametrize("text, message", [
    ("", "no 'Dynamic configs for topic T are:'"),
    ("hello\n", "line 1: not `kafka-configs --entity-type topics --describe` output"),
    ("  retention.ms=1 sensitive=false synonyms={}\n", "line 1"),
    ("Dynamic configs for topic t are:\n  index.interval.bytes=-3 sensitive=false synonyms={}\n",
     "line 2: topic t: Invalid value -3 for configuration index.interval.bytes: Value must be at least 0"),
])
def test_bad_files_are_refused_with_the_line(text, message):
    with pytest.raises(ConfigException, match=None) as e:
        parse_topic_configs(text)
    assert message in str(e.value)


def test_cli_bad_topic_configs_is_a_usage_error(tmp_path: Path, capsys):
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    bad = tmp_path / "bad.txt"
    bad.write_text("not it\n")
    for command in (["verify"], ["reindex"], ["recover"], ["retention"]):
        assert segdex_main([*command, "--topic-configs", str(bad), str(log_dir)]) == 2
        assert "--topic-configs" in capsys.readouterr().err
    assert segdex_main(["verify", "--topic-configs", str(tmp_path / "missing.txt"), str(log_dir)]) == 2
    assert "no such file" in capsys.readouterr().err


def test_live_configs_bad_input_is_a_usage_error(tmp_path: Path, capsys, monkeypatch):
    """Nothing listening, a --command-config without --bootstrap-server, a Java truststore librdkafka cannot
    read: exit 2 with one line, no traceback, no hang."""
    import socket

    log_dir = tmp_path / "logs"
    (log_dir / "t-0").mkdir(parents=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    monkeypatch.setenv("SEGDEX_ADMIN_TIMEOUT_S", "3")
    assert segdex_main(["verify", "--bootstrap-server", f"127.0.0.1:{port}", str(log_dir)]) == 2
    assert f"--bootstrap-server 127.0.0.1:{port}: no answer in 3 s" in capsys.readouterr().err
    props = tmp_path / "client.properties"
    props.write_text("security.protocol=SSL\nssl.truststore.location=/etc/kafka/truststore.jks\n")
    assert segdex_main(["verify", "--command-config", str(props), str(log_dir)]) == 2
    assert "--command-config is for --bootstrap-server" in capsys.readouterr().err
    assert segdex_main(["verify", "--bootstrap-server", f"127.0.0.1:{port}", "--command-config", str(props),
                        str(log_dir)]) == 2
    assert "give ssl.ca.location" in capsys.readouterr().err


def test_command_config_maps_java_client_properties():
    from segdex.indexcore.config.topic_configs_live import client_config

    conf = client_config({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                          "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                                              'username="ops" password="s3\\"cret";',
                          "ssl.ca.location": "/etc/ca.pem", "ssl.truststore.password": "x", "retries": "3"})
    assert conf == {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "ops",
                    "sasl.password": 's3\\"cret', "ssl.ca.location": "/etc/ca.pem"}
    with pytest.raises(ConfigException, match="GSSAPI"):
        client_config({"sasl.jaas.config": "com.sun.security.auth.module.Krb5LoginModule required;"})


def test_rebuild_takes_a_topics_described_config(kafka_fixtures: Path, tmp_path: Path):
    """`rebuild --topic-configs` builds a partition's indexes with its topic's described index.interval.bytes,
    the same bytes as giving that value with --config."""
    import shutil

    from segdex.indexcore.tools.segment_writer import segment_name

    described = tmp_path / "described.txt"
    described.write_text("Dynamic configs for topic orders are:\n  index.interval.bytes=100 sensitive=false "
                         "synonyms={DYNAMIC_TOPIC_CONFIG:index.interval.bytes=100}\n")
    built = {}
    for name, args in (("described", ["--topic-configs", str(described)]),
                       ("given", ["--config", "index.interval.bytes=100"]), ("default", [])):
        part = tmp_path / name / "orders-0"
        part.mkdir(parents=True)
        shutil.copy(kafka_fixtures / "v2_gzip" / "broker" / segment_name(0), part)
        assert segdex_main(["rebuild", "--quiet", *args, str(part)]) == 0
        built[name] = (part / segment_name(0, ".index")).read_bytes()
    assert built["described"] == built["given"] != built["default"]


def test_parse_every_line_kind_in_the_test_process(tmp_path):
    """Each kind of line of ``kafka-configs --describe``: a dynamic form's entry without synonyms is a topic
    override, an --all form's source is its first synonym's, Kafka's defaults, sensitive values and configs segdex
    does not use are left out; a blank line is skipped, not the end."""
    from segdex.indexcore.config.topic_configs_file import DescribedTopic, parse_topic_configs, read_topic_configs

    text = ("Dynamic configs for topic a are:\n"
            "  retention.ms=1000 sensitive=false synonyms={}\n"
            "\n"
            "  retention.bytes=5 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.bytes=5}\n"
            "All configs for topic b are:\n"
            "  segment.bytes=1048576 sensitive=false synonyms={STATIC_BROKER_CONFIG:log.segment.bytes=1048576, "
            "DEFAULT_CONFIG:log.segment.bytes=1073741824}\n"
            "  retention.ms=604800000 sensitive=false synonyms={DEFAULT_CONFIG:log.retention.hours=168}\n"
            "  cleanup.policy=null sensitive=true synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=null}\n"
            "  min.insync.replicas=2 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:min.insync.replicas=2}\n"
            "  index.interval.bytes=100 sensitive=false synonyms={}\n"
            "  confluent.tier.enable=false sensitive=false "
            "synonyms={DYNAMIC_TOPIC_CONFIG:confluent.tier.enable=false}\n")
    assert parse_topic_configs(text) == {
        "a": DescribedTopic("a", {"retention.ms": "1000", "retention.bytes": "5"},
                            {"retention.ms": "DYNAMIC_TOPIC_CONFIG", "retention.bytes": "DYNAMIC_TOPIC_CONFIG"}),
        "b": DescribedTopic("b", {"segment.bytes": "1048576", "min.insync.replicas": "2"},
                            {"segment.bytes": "STATIC_BROKER_CONFIG", "min.insync.replicas": "DYNAMIC_TOPIC_CONFIG"},
                            ["confluent.tier.enable"]),  # --all without a synonym: Kafka's default, not taken
    }
    with pytest.raises(ConfigException) as e:
        parse_topic_configs("  retention.ms=1 sensitive=false synonyms={}\n")
    assert str(e.value).startswith("--topic-configs line 1: not `kafka-configs --entity-type topics --describe` "
                                   "output (expected 'Dynamic configs for topic T are:'")
    path = tmp_path / "described.txt"
    path.write_text("Dynamic configs for topic c are:\n  segment.index.bytes=3 sensitive=false synonyms={}\n")
    with pytest.raises(ConfigException) as e:
        read_topic_configs(path)
    assert str(e.value) == (f"--topic-configs {path} line 2: topic c: Invalid value 3 for configuration "
                            f"segment.index.bytes: Value must be at least 4")
    with pytest.raises(ConfigException) as e:
        read_topic_configs(tmp_path)
    assert str(e.value) == f"--topic-configs {tmp_path}: a directory, not a file"
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(ConfigException, match=r"^--topic-configs .*described.txt: not text \("):
        read_topic_configs(path)
    path.write_text("Dynamic configs for topic d are:\n  retention.ms=7 sensitive=false synonyms={}\n")
    assert read_topic_configs(path)["d"].values == {"retention.ms": "7"}


def test_every_kafka_config_taken_unused_ones_said_once_unknown_ones_refused(kafka_fixtures: Path, tmp_path: Path,
                                                                           capsys):
    """A topic's whole config as `kafka-configs --describe --all` shows it is taken: the configs segdex does not
    use change nothing (the same index bytes) and are named in one line; a name Kafka does not know is refused,
    exit 2, in one line with the nearest name; a server.properties name Kafka does not know is said, as a broker
    starts with it."""
    import shutil

    from segdex.indexcore.tools.segment_writer import segment_name

    broker = tmp_path / "server.properties"
    broker.write_text("log.retension.hours=5\nlog.roll.hours=2\nnum.io.threads=8\n")
    described = tmp_path / "described.txt"
    described.write_text(
        "All configs for topic orders are:\n"
        "  compression.type=zstd sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:compression.type=zstd}\n"
        "  unclean.leader.election.enable=true sensitive=false "
        "synonyms={STATIC_BROKER_CONFIG:unclean.leader.election.enable=true}\n"
        "  confluent.tier.enable=false sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:confluent.tier.enable=false}\n"
        "  index.interval.bytes=100 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:index.interval.bytes=100}\n")
    built = {}
    for name, args in (("all", ["--config", "segment.ms=60000", "--config", "log.cleaner.threads=2",
                                "--topic-configs", str(described), "--broker-config", str(broker)]),
                       ("used", ["--config", "index.interval.bytes=100"])):
        part = tmp_path / name / "orders-0"
        part.mkdir(parents=True)
        shutil.copy(kafka_fixtures / "v2_gzip" / "broker" / segment_name(0), part)
        assert segdex_main(["rebuild", "--quiet", *args, str(part)]) == 0
        built[name] = (part / segment_name(0, ".index")).read_bytes()
        lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("config:")]
        assert lines == ([] if name == "used" else [
            "config: not used by segdex, so changing nothing here (taken and checked as Kafka checks them): "
            "compression.type (--topic-configs), log.cleaner.threads (--config), segment.ms (--config), "
            "unclean.leader.election.enable (--topic-configs)",
            "config: names Kafka 4.4 and 3.9 do not know, left out as a broker leaves them: confluent.tier.enable "
            "(--topic-configs), log.retension.hours (--broker-config) (did you mean log.retention.hours?)"])
    assert built["all"] == built["used"]
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    for args, message in (
            (["--config", "segment.mss=1"],
             "--config segment.mss=1: Unknown topic config name: segment.mss (did you mean segment.ms?)"),
            (["--topic-config", "orders:log.retention.hour=1"],
             "--topic-config orders:log.retention.hour=1: Unknown topic config name: log.retention.hour (did you "
             "mean log.retention.hours?)"),
            (["--topic-config", "orders:compression.type=brotli"],
             "Invalid value brotli for configuration compression.type: String must be one of: uncompressed, zstd, "
             "lz4, snappy, gzip, producer"),
            (["--config", "log.roll.hours=0"],
             "Invalid value 0 for configuration segment.ms: Value must be at least 1"),
            (["--config", "log.cleaner.threads=two"],
             "--config: Invalid value two for configuration log.cleaner.threads: Not a number of type INT")):
        assert segdex_main(["clean", *args, str(log_dir)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err and "Traceback" not in err, err
    broker.write_text("num.io.threads=many\n")
    assert segdex_main(["clean", "--broker-config", str(broker), str(log_dir)]) == 2
    assert "Invalid value many for configuration num.io.threads: Not a number of type INT" in capsys.readouterr().err
