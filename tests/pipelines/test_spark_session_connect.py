"""Every Spark command through Spark Connect (``--remote sc://HOST:PORT`` and Spark's own ``SPARK_REMOTE``)
against a Spark Connect server started from the project's pyspark: the same files, rows and answers as the
embedded classic session. The server runs the scan (``mapInArrow``); this process writes the Delta tables."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from chispa import assert_df_equality

from segdex.pipelines import metadata_store as ms
from segdex.pipelines.sample_logdir import generate_sample
from tests.support import cli
from tests.support.fixtures import REPO_ROOT
from tests.support.spark_connect import SparkConnectServer

pytestmark = pytest.mark.spark  # every test here starts Spark (a command on Spark, a cluster, a Connect server)

REPO = REPO_ROOT
VOLATILE = {"run_id", "scanned_at", "log_dir", "recorded_at", "run_at", "now_ms"}
INDEX_SUFFIXES = (".index", ".timeindex", ".txnindex", ".snapshot")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with SparkConnectServer(tmp_path_factory.mktemp("connect")) as srv:
        yield srv


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("connect-sample") / "kafka-logs"
    generate_sample(root, batches_per_partition=120, segment_bytes=12 * 1024)
    return root


def segdex(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return cli.segdex(*args, env={"SPARK_REMOTE": None, **(env or {})})


def index_files(log_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(log_dir)): p.read_bytes() for p in sorted(log_dir.rglob("*"))
            if p.suffix in INDEX_SUFFIXES}


def table_rows(meta: Path, name: str) -> list[dict]:
    rows = [{k: v for k, v in r.items() if k not in VOLATILE} for r in ms.read_arrow(str(meta), name).to_pylist()]
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def normalized(text: str, root: Path) -> str:
    """Output with the copy's root and the run's clock (``now=``, run ids, ages in ms) made comparable."""
    text = text.replace(str(root), "R")
    text = re.sub(r"now=\d+", "now=N", text)
    text = re.sub(r"\b(retention|compact)-\d{8}T\d{6}-[0-9a-f]{8}", r"\1-ID", text)
    return re.sub(r"is \d+ ms old", "is N ms old", text)


def copies(sample: Path, tmp_path: Path) -> tuple[Path, Path]:
    local, remote = tmp_path / "local" / "kafka-logs", tmp_path / "remote" / "kafka-logs"
    shutil.copytree(sample, local)
    shutil.copytree(sample, remote)
    return local, remote


def test_reindex_verify_recover_through_spark_connect(server, sample, tmp_path, spark):
    local, remote = copies(sample, tmp_path)
    for command in ("verify", "reindex", "recover"):
        here = segdex(command, "--metadata", str(local.parent / "meta"), str(local))
        there = segdex(command, "--remote", server.url, "--metadata", str(remote.parent / "meta"), str(remote))
        assert there.returncode == here.returncode, (command, there.stderr[-3000:])
        assert "Traceback" not in there.stderr and "log4j" not in there.stderr
        assert f"{command} {command}-" in there.stdout
    assert index_files(remote) and index_files(remote) == index_files(local)
    for table in ("segments", "partitions"):
        want, got = table_rows(local.parent / "meta", table), table_rows(remote.parent / "meta", table)
        assert got == want, table
        frames = []
        for meta in (remote.parent / "meta", local.parent / "meta"):
            arrow = ms.read_arrow(str(meta), table)
            arrow = arrow.drop_columns([c for c in arrow.column_names if c in VOLATILE])
            frames.append(spark.createDataFrame(arrow).select(*sorted(arrow.column_names)))
        assert_df_equality(*frames, ignore_row_order=True)
    assert (remote / ".kafka_cleanshutdown").exists() == (local / ".kafka_cleanshutdown").exists()


def test_retention_compact_offsets_through_spark_connect(server, sample, tmp_path):
    local, remote = copies(sample, tmp_path)
    second_local, second_remote = local.parent / "more-logs", remote.parent / "more-logs"
    shutil.copytree(sample, second_local)
    shutil.copytree(sample, second_remote)
    for args in (["retention", "--config", "retention.bytes=60000"],
                 ["retention", "--config", "retention.bytes=60000", "--apply"],
                 ["compact"],
                 ["offsets", "--time", "-1", "--json"]):
        here = segdex(*args, *(["--metadata", str(local.parent / "meta")] if args[0] == "retention" else []),
                      str(local), str(second_local))
        there = segdex(*args[:1], "--remote", server.url, *args[1:],
                       *(["--metadata", str(remote.parent / "meta")] if args[0] == "retention" else []),
                       str(remote), str(second_remote))
        assert there.returncode == here.returncode, (args, there.stderr[-3000:])
        assert normalized(there.stdout, remote.parent) == normalized(here.stdout, local.parent), args
    assert sorted(p.name for p in remote.rglob("*.log")) == sorted(p.name for p in local.rglob("*.log"))
    assert table_rows(remote.parent / "meta", "retention_actions") == \
        table_rows(local.parent / "meta", "retention_actions")


def test_sql_and_time_travel_through_spark_connect(server, sample, tmp_path):
    _, remote = copies(sample, tmp_path)
    meta = str(remote.parent / "meta")
    assert segdex("verify", "--remote", server.url, "--metadata", meta, str(remote)).returncode in (0, 1)
    assert segdex("reindex", "--remote", server.url, "--metadata", meta, str(remote)).returncode in (0, 1)
    now = segdex("sql", "--remote", server.url, "--metadata", meta, "--format", "json",
                 "SELECT count(*) AS n, count(DISTINCT run_id) AS runs FROM segments")
    assert now.returncode == 0, now.stderr
    first = segdex("sql", "--remote", server.url, "--metadata", meta, "--format", "json",
                   "SELECT count(*) AS n FROM runs VERSION AS OF 0")
    assert first.returncode == 0, first.stderr
    history = segdex("sql", "--remote", server.url, "--metadata", meta, "--format", "json",
                     "SELECT version, operation FROM (DESCRIBE HISTORY segments)")
    assert json.loads(now.stdout.splitlines()[0])["n"] == sum(1 for _ in remote.rglob("*.log"))
    assert json.loads(first.stdout.splitlines()[0])["n"] == 1  # the table's first version: the first run
    if history.returncode == 0:  # DESCRIBE HISTORY as a subquery is Delta-version dependent; the versions count
        assert len(history.stdout.splitlines()) >= 2
    bad = segdex("sql", "--remote", server.url, "--metadata", meta, "SELECT nope FROM segments")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "nope" in bad.stderr


def test_spark_remote_environment_variable(server, sample, tmp_path):
    _, remote = copies(sample, tmp_path)
    ok = segdex("verify", "--metadata", str(remote.parent / "meta"), str(remote), env={"SPARK_REMOTE": server.url})
    assert ok.returncode in (0, 1) and "verify verify-" in ok.stdout, ok.stderr[-2000:]
    dead = segdex("verify", "--metadata", str(remote.parent / "meta2"), str(remote),
                  env={"SPARK_REMOTE": "sc://127.0.0.1:9"})
    assert dead.returncode == 2 and "Traceback" not in dead.stderr
    assert "no Spark Connect server answers at 127.0.0.1:9" in dead.stderr
    assert not (remote.parent / "meta2").exists()


def test_remote_argument_errors(sample):
    both = segdex("verify", "--master", "local[1]", "--remote", "sc://127.0.0.1:1", str(sample))
    assert both.returncode == 2 and "give one" in both.stderr
    wrong = segdex("sql", "--remote", "http://127.0.0.1:1", "SELECT 1")
    assert wrong.returncode == 2 and "sc://HOST:PORT" in wrong.stderr


def test_fleet_tables_on_s3_through_spark_connect(server, sample, tmp_path, s3_server, s3_bucket):
    """Tables on object storage queried through a Spark Connect server that has no s3a of its own (a remote
    server's settings are not segdex's): the rows are read here with delta-rs and sent to the session, so
    ``segdex sql --remote ... --metadata s3://...`` answers the per-broker GROUP BY with the dirs' counts, and
    the run's verify through the server recorded them there."""
    _, remote = copies(sample, tmp_path)
    (remote / "meta.properties").write_text("version=1\nnode.id=7\ncluster.id=connect-fleet\n")
    uri = f"s3://{s3_bucket}/segdex"
    env = s3_server.env()
    run = segdex("verify", "--remote", server.url, "--no-progress", "--metadata", uri, str(remote), env=env)
    assert run.returncode in (0, 1), run.stderr[-2000:]
    out = segdex("sql", "--remote", server.url, "--metadata", uri, "--format", "json",
                 "SELECT broker_id, cluster_id, count(*) AS n FROM segments GROUP BY 1, 2", env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert [json.loads(line) for line in out.stdout.splitlines()] == [
        {"broker_id": 7, "cluster_id": "connect-fleet", "n": sum(1 for _ in remote.rglob("*.log"))}]
    assert s3_server.secret_key not in out.stdout + out.stderr + run.stdout + run.stderr
