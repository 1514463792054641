"""Both Delta writers behind the metadata store, end to end: ``segdex verify`` with Delta Lake on Spark
(``SEGDEX_DELTA_WRITER=spark``, the jars the set-up fetched) and with delta-rs give the same tables, and each
writer merges into the other's tables without changing a fact (chispa on the results)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from chispa import assert_df_equality

from segdex.indexcore.tools.segment_writer import build_batch, write_partition
from segdex.pipelines import metadata_store as ms
from tests.support.cli import segdex
from tests.support.fixtures import REPO_ROOT

REPO = REPO_ROOT
BOOKKEEPING = ("run_id", "scanned_at")


def verify(log_dir: Path, meta: Path, writer: str) -> subprocess.CompletedProcess:
    env = {"SEGDEX_DELTA_WRITER": writer}
    proc = segdex("verify", "--no-progress", "--metadata", str(meta), str(log_dir), env=env, timeout=600)
    assert proc.returncode == 1, proc.stderr[-2000:]  # the index files are missing: attention, as it should be
    return proc


def facts(spark, meta: Path, table: str):
    df = ms.MetadataStore(str(meta), spark).read_df(table)
    return df.drop(*BOOKKEEPING).orderBy(*[c for c in ("topic", "partition", "base_offset") if c in df.columns])


def test_spark_and_delta_rs_writers_agree_and_cross_merge(tmp_path, spark):
    log_dir = tmp_path / "logs"
    for topic in ("orders", "clicks"):
        batches = [build_batch(i, [(1_700_000_000_000 + i, b"k", b"v" * 150)]) for i in range(60)]
        write_partition(log_dir, topic, 0, batches, segment_bytes=20 * len(batches[0]))
    by_spark, by_rs = tmp_path / "meta-spark", tmp_path / "meta-rs"
    verify(log_dir, by_spark, "spark")
    verify(log_dir, by_rs, "deltalake")
    for table in ("segments", "partitions"):
        assert_df_equality(facts(spark, by_spark, table), facts(spark, by_rs, table), ignore_nullable=True)
    assert facts(spark, by_spark, "segments").count() == 6
    # each writer merges into the other's tables: same facts, and one more run recorded
    verify(log_dir, by_spark, "deltalake")
    verify(log_dir, by_rs, "spark")
    for table in ("segments", "partitions"):
        assert_df_equality(facts(spark, by_spark, table), facts(spark, by_rs, table), ignore_nullable=True)
    for meta in (by_spark, by_rs):
        assert len(ms.MetadataStore(str(meta)).read("runs")) == 2


@pytest.fixture(scope="module")
def spark_written(tmp_path_factory) -> tuple[Path, Path]:
    """A log dir verified twice with Spark as the writer: tables with two versions and two small runs files."""
    root = tmp_path_factory.mktemp("spark-written")
    log_dir, meta = root / "logs", root / "meta"
    batches = [build_batch(i, [(1_700_000_000_000 + i, b"k", b"v" * 150)]) for i in range(60)]
    write_partition(log_dir, "orders", 0, batches, segment_bytes=20 * len(batches[0]))
    for _ in range(2):
        verify(log_dir, meta, "spark")
    return log_dir, meta


@pytest.mark.spark
def test_sql_time_travel_through_spark_delta_reader(spark_written):
    """With Spark as the writer, segdex sql reads through Spark's Delta reader (catalog entries over the paths):
    Spark's own VERSION AS OF and DESCRIBE HISTORY."""
    _, meta = spark_written
    env = {"SEGDEX_DELTA_WRITER": "spark"}
    proc = segdex("sql", "--format", "json", "--metadata", str(meta),
                  "SELECT (SELECT count(*) FROM segments VERSION AS OF 0) AS then, "
                  "(SELECT count(*) FROM segments) AS now", env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[0]) == {"then": 0, "now": 3}


def test_compact_optimizes_and_vacuums_through_spark_when_it_is_the_writer(spark_written, spark):
    """``segdex compact --metadata`` with Spark as the writer: OPTIMIZE and VACUUM run in Delta Lake on Spark (the
    commit says so: Spark's engineInfo), and both readers see the same facts after it. The vacuum keeps the
    retention asked for (Delta 4 on Spark would otherwise take the table's 7 days): with ``--vacuum-hours 200`` a
    file no version references, last written 180 h ago, stays; one of 300 h goes, and the count says so."""
    from deltalake import DeltaTable

    log_dir, meta = spark_written
    before = facts(spark, meta, "segments").collect()
    now = time.time()
    aged = {}
    for hours in (180, 300):  # left by a writer that died before its commit: no version references them
        aged[hours] = meta / "runs" / f"part-00000-stray-{hours}h.snappy.parquet"
        aged[hours].write_bytes(b"PAR1 not referenced PAR1")
        os.utime(aged[hours], (now - hours * 3600, now - hours * 3600))
    env = {"SEGDEX_DELTA_WRITER": "spark"}
    proc = segdex("compact", "--metadata", str(meta), "--vacuum-hours", "200", str(log_dir), env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"{meta}/runs: files 2 -> 1, vacuumed 1 (retention 200 h)" in proc.stdout
    assert aged[180].exists() and not aged[300].exists()
    runs_files = len(DeltaTable(str(meta / "runs")).file_uris())
    history = DeltaTable(str(meta / "runs")).history()  # appended by each run: one small file per run
    operations = [h["operation"] for h in history]
    assert "OPTIMIZE" in operations and "VACUUM START" in operations and "VACUUM END" in operations
    assert all("Apache-Spark" in h.get("engineInfo", "") for h in history
               if h["operation"].startswith(("OPTIMIZE", "VACUUM")))
    assert runs_files == 1 and len(ms.MetadataStore(str(meta)).read("runs")) == 2
    assert facts(spark, meta, "segments").collect() == before
