"""Every run records each topic's effective config and where each value came from (``topic_configs``), and the
summary names the topics whose index settings nobody gave."""

from __future__ import annotations

import shutil
from pathlib import Path

from chispa import assert_df_equality

from segdex.indexcore.config.log_config import CONFIG_NAMES
from segdex.indexcore.tools.segment_writer import segment_name
from segdex.jobs.cli import main as segdex_main
from segdex.pipelines.metadata_store import MetadataStore


def _log_dir(root: Path, fixtures: Path, topics: list[str]) -> Path:
    for topic in topics:
        d = root / f"{topic}-0"
        d.mkdir(parents=True)
        shutil.copy(fixtures / "v2_gzip" / "broker" / segment_name(0), d)
    return root


def test_effective_configs_and_their_sources_are_recorded(spark, kafka_fixtures: Path, tmp_path: Path, capsys):
    log_dir = _log_dir(tmp_path / "logs", kafka_fixtures, ["orders", "audit", "clicks"])
    server = tmp_path / "server.properties"
    server.write_text(f"log.dirs={log_dir}\nlog.retention.hours=48\n")
    described = tmp_path / "described.txt"
    described.write_text("Dynamic configs for topic audit are:\n"
                         "  segment.index.bytes=4096 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
                         "segment.index.bytes=4096}\n")
    meta = tmp_path / "meta"
    code = segdex_main(["verify", "--no-progress", "--metadata", str(meta), "--broker-config", str(server),
                        "--topic-configs", str(described), "--topic-config", "orders:index.interval.bytes=1024"])
    err = capsys.readouterr().err
    assert code in (0, 1)
    # clicks got nothing for its index settings: named; orders and audit got one each: not
    line = next(x for x in err.splitlines() if x.startswith("config: "))
    assert "1 topic ran on Kafka's defaults only" in line and line.rstrip().endswith(
        'clicks; every value and its source: segdex sql "SELECT * FROM topic_configs"')

    store = MetadataStore(str(meta), spark)
    got = store.read_df("topic_configs").where("config IN ('index.interval.bytes', 'segment.index.bytes', "
                                               "'retention.ms')").select("topic", "config", "value", "source")
    expected = spark.createDataFrame([
        ("audit", "index.interval.bytes", "4096", "Kafka default"),
        ("audit", "retention.ms", "172800000", "server.properties (log.retention.hours)"),
        ("audit", "segment.index.bytes", "4096", "--topic-configs (DYNAMIC_TOPIC_CONFIG)"),
        ("clicks", "index.interval.bytes", "4096", "Kafka default"),
        ("clicks", "retention.ms", "172800000", "server.properties (log.retention.hours)"),
        ("clicks", "segment.index.bytes", "10485760", "Kafka default"),
        ("orders", "index.interval.bytes", "1024", "--topic-config"),
        ("orders", "retention.ms", "172800000", "server.properties (log.retention.hours)"),
        ("orders", "segment.index.bytes", "10485760", "Kafka default"),
    ], got.schema)
    assert_df_equality(got.orderBy("topic", "config"), expected, ignore_nullable=True)
    assert store.read("topic_configs").num_rows == 3 * len(CONFIG_NAMES) == 3 * 14  # every config, per topic

    # a second run with other settings: the current rows say what that run used
    code = segdex_main(["verify", "--no-progress", "--metadata", str(meta), "--config", "index.interval.bytes=2048",
                        str(log_dir)])
    assert code in (0, 1)
    rows = {(r["topic"], r["config"]): (r["value"], r["source"]) for r in store.read("topic_configs").to_pylist()}
    assert rows[("clicks", "index.interval.bytes")] == ("2048", "--config")
    assert rows[("audit", "segment.index.bytes")] == ("10485760", "Kafka default")
    assert "ran on Kafka's defaults only" not in capsys.readouterr().err
