"""A quiet, quick command line (issue 13): no JVM or Spark log lines on the terminal unless ``-v``, errors in one
line, the summary's time is the command's wall time with the Spark start as its own phase, progress from the
tasks at least once a second while they run, and ``segdex sql`` time travel (``VERSION AS OF``, ``TIMESTAMP AS
OF``) through delta-rs (through Spark's Delta reader: tests/pipelines/test_metadata_store_writers.py)."""

from __future__ import annotations

import json
import re
import subprocess
import time

import pytest

from segdex.pipelines import spark_tasks
from segdex.pipelines.reindex import Progress
from segdex.pipelines.sample_logdir import generate_sample
from tests.support import cli
from tests.support.fixtures import REPO_ROOT

pytestmark = pytest.mark.spark  # every test here starts Spark (a command on Spark, a cluster, a Connect server)

REPO = REPO_ROOT
JVM_NOISE = re.compile(r"log4j|WARN|WARNING|NativeCodeLoader|Setting default log level|SparkSession|Stage \d")


def segdex(*args: str, env: dict | None = None) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    proc = cli.segdex(*args, env=env)
    return proc, time.monotonic() - started


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    """A sample log dir verified, then reindexed: two runs, so the tables have several versions."""
    root = tmp_path_factory.mktemp("quiet")
    logs, meta = root / "kafka-logs", root / "meta"
    generate_sample(logs, batches_per_partition=120, segment_bytes=12 * 1024)
    on_spark = {"SEGDEX_ENGINE": "spark"}  # the JVM's lines are the subject here, not the one-host engine's speed
    verify, verify_s = segdex("verify", "--no-progress", "--metadata", str(meta), str(logs), env=on_spark)
    reindex, _ = segdex("reindex", "--no-progress", "--metadata", str(meta), str(logs), env=on_spark)
    return {"logs": logs, "meta": str(meta), "verify": verify, "verify_s": verify_s, "reindex": reindex,
            "segments": sum(1 for _ in logs.rglob("*.log"))}


def test_no_jvm_lines_on_the_terminal(runs):
    for proc in (runs["verify"], runs["reindex"]):
        assert proc.returncode in (0, 1)
        noisy = [line for line in proc.stderr.splitlines() if JVM_NOISE.search(line)]
        assert noisy == []
    proc, _ = segdex("sql", "--metadata", runs["meta"], "SELECT count(*) AS n FROM segments")
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout.split()[-3:] == [str(runs["segments"]), "(1", "row)"]


def test_verbose_shows_spark_lines(runs):
    proc, _ = segdex("sql", "-v", "--metadata", runs["meta"], "SELECT 1 AS one FROM segments LIMIT 1")
    assert proc.returncode == 0
    assert any(JVM_NOISE.search(line) for line in proc.stderr.splitlines()), proc.stderr


def test_a_bad_query_is_one_line(runs):
    proc, _ = segdex("sql", "--metadata", runs["meta"], "SELECT nope FROM segments")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("segdex sql: [UNRESOLVED_COLUMN") and "{" not in lines[0]


def test_summary_time_is_the_command_wall_time(runs):
    summary = runs["verify"].stdout.strip().splitlines()[-1]
    match = re.search(r" in (\d+\.\d\d)s \(spark start (\d+\.\d\d)s, discover (\d+\.\d\d)s, scan (\d+\.\d\d)s, "
                      r"metadata (\d+\.\d\d)s\)", summary)
    assert match, summary
    total, start, discover, scan, metadata = map(float, match.groups())
    assert total <= runs["verify_s"] + 0.1  # measured inside the process the test timed
    assert total >= 0.65 * runs["verify_s"]  # the whole command (JVM shutdown after the line aside), not the run alone
    assert start + discover + scan + metadata <= total + 0.2
    assert start > 0.3  # the JVM's start is a phase of its own, not hidden


def test_progress_moves_every_second_from_running_tasks(spark):
    """Tasks that take 4 s each and report as they go: the driver's snapshots move while no task has ended."""
    def slow(item: int) -> int:
        for _ in range(8):
            time.sleep(0.5)
            spark_tasks.report(1, 100)
        return item

    snapshots = []
    with spark_tasks.ProgressChannel("127.0.0.1") as channel, \
            Progress(16, 1600, snapshots.append, channel, interval=1.0):
        started = time.monotonic()
        results = spark_tasks.run_tasks(spark, [1, 2], slow, "progress test", channel.sender)
        elapsed = time.monotonic() - started
    assert results == [1, 2]
    moving = [s for s in snapshots if 0 < s.bytes_done < s.total_bytes]
    assert len(snapshots) >= int(elapsed) - 1
    assert len({s.bytes_done for s in moving}) >= 2  # it moved between ticks, before any task had ended
    assert all(0 < s.segments_done < 16 for s in moving)


def test_time_travel_through_delta_rs(runs):
    meta, n = runs["meta"], runs["segments"]

    def one(query: str) -> dict:
        proc, _ = segdex("sql", "--format", "json", "--metadata", meta, query)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout.splitlines()[0])

    # a new table's first version is the first run's rows (one commit), each later run a version more; one
    # query reads each table at several points, a column qualified by the table's name in each subquery
    both = one("SELECT (SELECT count(*) FROM segments VERSION AS OF 0) AS first, "
               "(SELECT count(*) FROM segments) AS n, "
               "(SELECT count(*) FROM runs VERSION AS OF 0) AS then, (SELECT count(*) FROM runs) AS now, "
               "(SELECT count(*) FROM runs FOR SYSTEM_VERSION AS OF 0) AS sys, "
               "(SELECT count(DISTINCT segments.run_id) FROM segments TIMESTAMP AS OF '2100-01-01') AS runs_seen")
    assert both.pop("runs_seen") >= 1
    assert both == {"first": n, "n": n, "then": 1, "now": 2, "sys": 1}
    for query, message in (("SELECT * FROM segments VERSION AS OF 99", "segments as of 99"),
                           ("SELECT * FROM segments TIMESTAMP AS OF '2000-01-01 00:00:00'", "before the table's"),
                           ("SELECT * FROM segments TIMESTAMP AS OF 'soon'", "not a timestamp")):
        proc, _ = segdex("sql", "--metadata", meta, query)
        assert proc.returncode == 2 and message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
