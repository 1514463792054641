"""``spark-submit jobs/reindex.py`` on a real Spark standalone cluster (a master and a worker on 127.0.0.1, see
``spark_cluster.py``) does what ``segdex reindex`` does in local mode: on two copies of one damaged sample log dir
(missing, valid and corrupt index files, a corrupt batch in a ``.log``), the same bytes in every file, the same
``segments``, ``partitions`` and ``runs`` facts, the same exit status and problem lines; and the work ran on the
cluster's executor, with segdex shipped to it as the ``--py-files`` zip.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.cli import segdex
from tests.support.fixtures import REPO_ROOT
from tests.support.spark_cluster import HOST, StandaloneCluster, clean_env

pytestmark = pytest.mark.spark  # every test here starts Spark (a command on Spark, a cluster, a Connect server)

REPO = REPO_ROOT
REINDEX_JOB = REPO / "jobs" / "reindex.py"
INDEX_SUFFIXES = (".index", ".timeindex", ".txnindex", ".snapshot")
VOLATILE = ("run_id", "scanned_at", "recorded_at")  # which run last wrote a row, and when
ATTENTION = 1  # segdex's exit status when something needs attention (here: the corrupt batch)


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory):
    with StandaloneCluster(tmp_path_factory.mktemp("spark-cluster")) as cluster:
        yield cluster


# ---------------------------------------------------------------------------------------------------------------
# One damaged sample, reindexed twice: on the cluster and in local mode
# ---------------------------------------------------------------------------------------------------------------

@dataclass
class Damage:
    corrupt_log: Path  # relative to the log dir: a closed segment with a flipped byte mid-way (corrupt_log_tail)
    corrupt_log_bytes: bytes
    corrupt_index: Path  # an index file with a flipped entry byte (corrupt_index)
    good_index_bytes: bytes  # what Kafka's recovery writes for it
    kept_indexes: dict[Path, bytes]  # the rest of that partition's (valid) index files, left as they are


def damaged_sample(log_dir: Path) -> Damage:
    """A generated log dir (4 topics, 7 partitions: plain, zstd, transactional, v1 gzip) that lost most of its
    index files; one partition keeps valid ones, one of which is then damaged; one ``.log`` gets a bad byte."""
    from segdex.indexcore.config.log_config import LogConfig
    from segdex.indexcore.tools.rebuild import rebuild
    from segdex.pipelines.sample_logdir import generate_sample

    generate_sample(log_dir, batches_per_partition=240, segment_bytes=48 * 1024)
    victim = sorted((log_dir / "orders-0").glob("*.log"))[0]
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    victim.write_bytes(bytes(data))
    list(rebuild(str(log_dir / "clicks-0"), LogConfig()))  # clicks-0 has its index files, as a broker left them
    indexes = sorted((log_dir / "clicks-0").glob("*.index"))
    assert len(indexes) > 2
    damaged = indexes[1]
    good = damaged.read_bytes()
    bad = bytearray(good)
    bad[10] ^= 0xFF  # inside the first entry's relative offset
    damaged.write_bytes(bytes(bad))
    kept = {p.relative_to(log_dir): p.read_bytes() for p in (log_dir / "clicks-0").iterdir()
            if p.suffix in INDEX_SUFFIXES and p != damaged}
    return Damage(victim.relative_to(log_dir), bytes(data), damaged.relative_to(log_dir), good, kept)


@dataclass
class Run:
    log_dir: Path
    metadata: Path
    proc: subprocess.CompletedProcess
    seconds: float


@dataclass
class Runs:
    damage: Damage
    cluster: Run
    local: Run
    app_ids: set[str]  # applications the cluster completed during the cluster run


def _env() -> dict[str, str]:
    """Driver and executors run this interpreter (segdex's dependencies are installed in it)."""
    return {"SPARK_LOCAL_IP": HOST, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}


def _copy(sample: Path, root: Path) -> Path:
    dest = root / "kafka-logs"
    shutil.copytree(sample, dest)  # copy2: same bytes and mtimes (the segments table records the .log's mtime)
    return dest


def _cluster_run(cluster: StandaloneCluster, sample: Path, root: Path) -> tuple[Run, set[str]]:
    """As the nightly DAG submits it: the package zipped by package_zip() and shipped with --py-files (segdex's
    own shipping off), executors on this venv's Python."""
    from segdex.pipelines.spark_session import package_zip

    log_dir, metadata = _copy(sample, root), root / "metadata"
    package = package_zip(str(root))
    before = set(cluster.completed_apps())
    start = time.monotonic()
    proc = cluster.submit(
        ["--driver-memory", "512m", "--executor-memory", "512m", "--conf", "spark.ui.enabled=false",
         "--py-files", package, str(REINDEX_JOB), "--metadata", str(metadata), "--no-progress", str(log_dir)],
        env={**_env(), "SEGDEX_SHIP_PACKAGE": "0"}, cwd=root)
    seconds = time.monotonic() - start
    return Run(log_dir, metadata, proc, seconds), set(cluster.completed_apps()) - before


def _local_run(sample: Path, root: Path) -> Run:
    """``segdex reindex`` in local mode (embedded Spark, local[*])."""
    log_dir, metadata = _copy(sample, root), root / "metadata"
    start = time.monotonic()
    proc = segdex("reindex", "--metadata", str(metadata), "--no-progress", str(log_dir), timeout=300,
                  env=clean_env(_env()), inherit=False, cwd=root)
    return Run(log_dir, metadata, proc, time.monotonic() - start)


@pytest.fixture(scope="module")
def runs(spark_cluster, tmp_path_factory) -> Runs:
    root = tmp_path_factory.mktemp("reindex-runs")
    damage = damaged_sample(root / "sample")
    cluster, app_ids = _cluster_run(spark_cluster, root / "sample", root / "cluster")
    local = _local_run(root / "sample", root / "local")  # (side by side they take as long: 2 cores)
    print(f"\nreindex: cluster {cluster.seconds:.1f}s, local {local.seconds:.1f}s")
    return Runs(damage, cluster, local, app_ids)


def _files(log_dir: Path) -> dict[str, bytes]:
    """Every regular file under a log dir, by relative path."""
    return {str(p.relative_to(log_dir)): p.read_bytes() for p in sorted(log_dir.rglob("*")) if p.is_file()}


def _rows(run: Run, table: str) -> list[dict]:
    """A table's rows without the bookkeeping columns, the copy's path replaced by ``<log_dir>``, sorted."""
    from segdex.pipelines import metadata_store

    real = os.path.realpath(run.log_dir)
    rows = [{k: (v.replace(real, "<log_dir>") if isinstance(v, str) else v) for k, v in r.items() if k not in VOLATILE}
            for r in metadata_store.read_arrow(str(run.metadata), table).to_pylist()]
    return sorted(rows, key=repr)


def _summary(stdout: str) -> str:
    """The run summary without run id, timings and paths: ``found ...; rewrote N index files``."""
    found = re.findall(r"found [^;]*; rewrote \d+ index files[^;]*", stdout)
    assert len(found) == 1, stdout
    return found[0]


PROBLEM_LINE = re.compile(r"(config|startup|unloadable|removed|refused|warning|corrupt_\w+|unreadable|error): ")


def _problem_lines(output: str) -> list[str]:
    """segdex's own lines of a run's output (``<status>: <file>: <why>``, ``config: ...``), not Spark's."""
    return sorted(line for line in output.splitlines() if PROBLEM_LINE.match(line))


# ---------------------------------------------------------------------------------------------------------------
# The tests
# ---------------------------------------------------------------------------------------------------------------

def test_exit_status_and_report_as_in_local_mode(runs):
    cluster, local = runs.cluster.proc, runs.local.proc
    assert local.returncode == ATTENTION, local.stderr  # the corrupt batch needs attention
    assert cluster.returncode == local.returncode, cluster.stderr[-4000:]
    assert _summary(cluster.stdout) == _summary(local.stdout)
    assert "corrupt_log_tail=1" in _summary(local.stdout) and "corrupt_index=1" in _summary(local.stdout)
    # segdex's problem lines (paths relative to the log dir). spark-submit's PythonRunner merges the Python
    # driver's stderr into its own stdout: there they are, among Spark's lines.
    problems = _problem_lines(local.stderr)
    assert any(line.startswith(f"corrupt_log_tail: {runs.damage.corrupt_log}:") for line in problems), problems
    assert _problem_lines(cluster.stdout + cluster.stderr) == problems


def test_cluster_run_writes_the_same_files_as_local_mode(runs):
    cluster, local = _files(runs.cluster.log_dir), _files(runs.local.log_dir)
    indexes = {name for name in cluster if name.endswith(INDEX_SUFFIXES)}
    assert indexes == {name for name in local if name.endswith(INDEX_SUFFIXES)}
    for name in sorted(indexes):
        assert cluster[name] == local[name], name
    assert cluster == local  # every other file too: .log files, checkpoints, meta.properties, .lock

    # ...and both did the work: every segment has its index files, the corrupt one is rebuilt, the valid ones
    # are left, the transactional topic's aborted transactions have their .txnindex, no .log byte changed
    logs = [name for name in cluster if name.endswith(".log")]
    assert len(logs) == 41
    for log in logs:
        assert log[:-4] + ".index" in cluster and log[:-4] + ".timeindex" in cluster, log
    assert cluster[str(runs.damage.corrupt_index)] == runs.damage.good_index_bytes
    for name, data in runs.damage.kept_indexes.items():
        assert cluster[str(name)] == data, name
    assert any(name.startswith("payments-0/") and name.endswith(".txnindex") for name in cluster)
    assert cluster[str(runs.damage.corrupt_log)] == runs.damage.corrupt_log_bytes
    assert not [name for name in cluster if ".segdex-" in name]  # no temporaries left


def test_cluster_run_records_the_same_metadata_as_local_mode(runs):
    segments = _rows(runs.cluster, "segments")
    assert segments == _rows(runs.local, "segments")
    assert len(segments) == 41 and {r["log_dir"] for r in segments} == {"<log_dir>"}
    # rows hold the state after the run: every segment indexed as Kafka's recovery indexes it, but the corrupt one
    bad = {f"{r['topic']}-{r['partition']}/{r['segment_file']}": r["status"] for r in segments if r["status"] != "ok"}
    assert bad == {str(runs.damage.corrupt_log): "corrupt_log_tail"}
    assert _rows(runs.cluster, "partitions") == _rows(runs.local, "partitions")
    assert _rows(runs.cluster, "topic_configs") == _rows(runs.local, "topic_configs")

    def counts(run: Run) -> list[dict]:
        return [{k: v for k, v in r.items() if k not in ("arguments", "started_at", "ended_at")}
                for r in _rows(run, "runs")]

    (cluster_run,) = counts(runs.cluster)
    assert cluster_run == counts(runs.local)[0]
    # what the run found: clicks-0's valid index files, the damaged one, the corrupt batch, the rest missing
    found = {k[len("count_"):]: v for k, v in cluster_run.items() if k.startswith("count_") and v}
    assert found == {"ok": 5, "corrupt_index": 1, "corrupt_log_tail": 1, "missing": 34}
    assert cluster_run["exit_status"] == ATTENTION and cluster_run["files_failed"] == 0
    assert cluster_run["log_dirs"] == '["<log_dir>"]' and cluster_run["command"] == "reindex"
    assert cluster_run["files_written"] > 70


def test_the_work_ran_on_the_cluster(runs, spark_cluster):
    (app_id,) = runs.app_ids  # the submission's application, finished on this master
    app = spark_cluster.completed_apps()[app_id]
    assert app["name"] == "segdex-reindex" and app["state"] == "FINISHED", app
    worker = spark_cluster.worker_log.read_text()
    assert f"Asked to launch executor {app_id}/" in worker
    logs = spark_cluster.executor_logs(app_id)
    assert logs, f"no executor of {app_id} under {spark_cluster.work_dir}"
    text = "\n".join(logs.values())
    assert re.search(r"Fetching spark://\S+/files/segdex\.zip", text)  # the --py-files package reached it
    assert re.search(r"Finished task \d+\.\d+ in stage", text)  # and it ran the scan tasks
    assert "Starting Python task execution" in text
