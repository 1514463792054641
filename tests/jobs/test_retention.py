"""Retention with Spark and Delta: retention_actions recorded (planned, then applied), log dirs fanned out as
Spark tasks, and the --from-metadata what-if planned from real segments/partitions Delta tables."""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime

import pytest
from chispa import assert_df_equality

from segdex.indexcore.config.log_config import LogConfig
from segdex.jobs.cli import main
from segdex.pipelines import metadata_store as ms
from segdex.pipelines import retention as pr
from segdex.pipelines.schemas import PARTITIONS_SCHEMA, SEGMENTS_SCHEMA
from tests.support.fixtures import FIXTURES, load_case
from tests.support.retention_cases import CASE, TOPIC, check_kafka_state, stage

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # Spark's Python workers need this venv (segdex)
NOW = 1700000098534


@pytest.fixture
def case() -> dict:
    if not (FIXTURES / CASE).is_dir():
        pytest.skip(f"Kafka fixtures not found at {FIXTURES}")
    return load_case(CASE)


def test_actions_recorded_planned_then_applied(tmp_path, spark, case, capsys):
    log_dir = stage(tmp_path)
    meta = str(tmp_path / "meta")
    assert main(["retention", "--now", str(NOW), "--config", "retention.ms=5513", "--metadata", meta,
                 str(log_dir)]) == 0
    assert main(["retention", "--now", str(NOW), "--config", "retention.ms=5513", "--metadata", meta, "--apply",
                 str(log_dir)]) == 0
    check_kafka_state(log_dir, case["retention"]["experiments"][1])
    got = (ms.read_table(spark, meta, pr.RETENTION_ACTIONS)
           .select("topic", "partition", "segment", "rule", "bytes", "status", "action", "log_start_offset_after")
           .orderBy("status", "segment"))
    sizes = {s["baseOffset"]: s["sizeInBytes"] for s in case["retention"]["segments_before"]}
    rows = [(TOPIC, 0, f"{b:020d}", "retention.ms", sizes[b], status, "delete", 828)
            for status in ("applied", "planned") for b in (0, 208, 410, 615)]
    expected = spark.createDataFrame(rows, got.schema)
    assert_df_equality(got, expected, ignore_nullable=True)
    runs = ms.read_table(spark, meta, pr.RETENTION_ACTIONS).select("run_id").distinct().count()
    assert runs == 2


def test_spark_tasks_per_log_dir(tmp_path, spark, case):
    dirs = [stage(tmp_path / "a"), stage(tmp_path / "b", log_start_offset=831)]
    outcomes = pr.run_disk([str(d) for d in dirs], LogConfig(retention_ms=-1), NOW, apply=True, spark=spark)
    assert [o.log_dir for o in outcomes] == [str(d) for d in dirs]
    assert [o.partitions[0].plan.deleted_count for o in outcomes] == [0, 4]
    check_kafka_state(dirs[1], case["retention"]["experiments"][4])
    assert not any(n.endswith(".deleted") for n in os.listdir(dirs[0] / f"{TOPIC}-0"))


def metadata_tables(spark, meta: str, case: dict, log_dirs: list[str], hw: int | None = 1537) -> None:
    """segments/partitions rows for the case's partition, as a verify run records them."""
    at = datetime(2024, 1, 1, tzinfo=UTC)
    segs, parts = [], []
    recovered = {s["baseOffset"]: s for s in case["broker"]["segments"]}
    before = case["retention"]["segments_before"]
    for ld in log_dirs:
        for i, s in enumerate(before):
            nxt = before[i + 1]["baseOffset"] if i + 1 < len(before) else case["retention"]["logEndOffset"]
            segs.append({"log_dir": ld, "topic": TOPIC, "partition": 0, "base_offset": s["baseOffset"],
                         "segment_file": f"{s['baseOffset']:020d}.log", "future": False, "next_offset": nxt,
                         "max_timestamp": recovered[s["baseOffset"]]["timeindexEntries"][-1][0],
                         "size_bytes": s["sizeInBytes"], "valid_bytes": s["sizeInBytes"], "status": "ok",
                         "run_id": "r", "scanned_at": at})
        parts.append({"log_dir": ld, "topic": TOPIC, "partition": 0, "future": False, "log_start_offset": 0,
                      "recovery_point": 1537, "high_watermark": hw, "log_end_offset": 1537, "status": "ok",
                      "run_id": "r", "scanned_at": at})
    ms.write_table(spark, meta,
                   ms.TableSpec("segments", SEGMENTS_SCHEMA, ("log_dir", "topic", "partition", "base_offset")), segs)
    ms.write_table(spark, meta, ms.TableSpec("partitions", PARTITIONS_SCHEMA, ("log_dir", "topic", "partition")), parts)


def test_what_if_from_metadata_matches_disk_plan(tmp_path, spark, case):
    meta = str(tmp_path / "meta")
    metadata_tables(spark, meta, case, ["/brokers/1/data", "/brokers/2/data"])
    for e in case["retention"]["experiments"][:4]:
        tc = e["topic_config"]
        config = LogConfig(retention_ms=tc["retention.ms"], retention_bytes=tc["retention.bytes"])
        got = (pr.what_if(spark, meta, config, e["now_ms"])
               .select("log_dir", "base_offset", "action", "status", "log_start_offset_after")
               .orderBy("log_dir", "base_offset"))
        gone = sorted({int(n[:20]) for n in e["files_in_dir_after_before_async_delete"] if n.endswith(".log.deleted")})
        expected = spark.createDataFrame(
            [(ld, b, "delete", "what_if", e["logStartOffset_after"])
             for ld in ("/brokers/1/data", "/brokers/2/data") for b in gone], got.schema)
        assert_df_equality(got, expected, ignore_nullable=True)
        # and the same plan the disk path makes from the staged files
        staged = stage(tmp_path / f"d{e['retention.ms'] if 'retention.ms' in e else e['retention.bytes']}")
        disk = pr.run_disk([str(staged)], config, e["now_ms"])[0].partitions[0].plan
        assert [d.base_offset for d in disk.deletions] == gone


def test_what_if_cli_fleet_total_and_unknown_hw(tmp_path, spark, case, capsys):
    meta = str(tmp_path / "meta")
    metadata_tables(spark, meta, case, ["/b1"])
    three_days = 3 * 24 * 3600 * 1000
    now = 1700000088136 + three_days + 1  # only segment 0 is older than 3 days
    assert main(["retention", "--from-metadata", meta, "--now", str(now), "--config",
                 f"retention.ms={three_days}"]) == 0
    out = capsys.readouterr().out
    assert "would delete 00000000000000000000 65.2 KB (65,204 bytes)" in out
    assert "what-if total: 65.2 KB (65,204 bytes)" in out
    meta2 = str(tmp_path / "meta2")
    metadata_tables(spark, meta2, case, ["/b1"], hw=None)
    assert main(["retention", "--from-metadata", meta2, "--now", str(now), "--config", "retention.ms=1"]) == 1
    assert "nothing deletable: no high watermark known" in capsys.readouterr().out
    assert main(["retention", "--from-metadata", str(tmp_path / "none")]) == 2
    assert "no segments table" in capsys.readouterr().err
    assert main(["retention", "--from-metadata", meta, "--apply"]) == 2


def test_what_if_uses_log_mtime_without_timestamps(tmp_path, spark):
    """Segments with no time-index entry (magic 0) fall back to the .log mtime recorded in `segments`, as Kafka
    does; rows written without the column are never deemed expired."""
    meta = str(tmp_path / "meta")
    at = datetime(2024, 1, 1, tzinfo=UTC)
    now = 10_000_000
    mtimes = {0: now - 5000, 100: now - 4000, 200: now - 10}  # the last is the active segment
    segs = [{"log_dir": "/d", "topic": "legacy", "partition": 0, "base_offset": b, "next_offset": b + 100,
             "max_timestamp": -1, "size_bytes": 1000, "log_mtime_ms": m, "status": "ok", "run_id": "r",
             "scanned_at": at} for b, m in mtimes.items()]
    ms.write_table(spark, meta,
                   ms.TableSpec("segments", SEGMENTS_SCHEMA, ("log_dir", "topic", "partition", "base_offset")), segs)
    ms.write_table(spark, meta, ms.TableSpec("partitions", PARTITIONS_SCHEMA, ("log_dir", "topic", "partition")), [{
        "log_dir": "/d", "topic": "legacy", "partition": 0, "log_start_offset": 0, "high_watermark": 300,
        "log_end_offset": 300, "run_id": "r", "scanned_at": at}])
    got = pr.what_if(spark, meta, LogConfig(retention_ms=4500), now).where("action = 'delete'")
    assert [r["base_offset"] for r in got.orderBy("base_offset").collect()] == [0]
    got = pr.what_if(spark, meta, LogConfig(retention_ms=3000), now).where("action = 'delete'")
    assert [r["base_offset"] for r in got.orderBy("base_offset").collect()] == [0, 100]
