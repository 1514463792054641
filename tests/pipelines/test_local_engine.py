"""The one-host engine (``SEGDEX_ENGINE=local``): the scan's own task functions in forked processes, no JVM.
It writes what Spark's run writes, byte for byte and row for row; a command on it reports its start, exits as on
Spark, and stops cleanly on SIGTERM and Ctrl-C, its temporaries removed."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from segdex.indexcore.config.log_config import LogConfig
from segdex.pipelines import recover
from segdex.pipelines.local_engine import ENGINE_ENV, LocalEngine, wants_local_engine
from segdex.pipelines.metadata_store import MetadataStore
from segdex.pipelines.run_context import RunRequest
from segdex.pipelines.sample_logdir import generate_uniform
from tests.support.cli import segdex_popen
from tests.support.fixtures import FIXTURES


def tree(path: Path) -> dict[str, str]:
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(path.rglob("*")) if p.is_file() and p.name != ".lock"}


def _dir(root: Path) -> Path:
    log_dir = root / "logs"
    generate_uniform(log_dir, partitions=5, segments_per_partition=3, segment_bytes=96 * 1024,
                     topics=[("t", 1, 200)])
    shutil.copytree(FIXTURES / "v2_txn_two_producers" / "broker", log_dir / "txn-0",
                    ignore=shutil.ignore_patterns("*index", "*.snapshot", "*.json"))
    return log_dir


def test_which_runs_take_the_local_engine(monkeypatch):
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    monkeypatch.delenv("SEGDEX_DELTA_WRITER", raising=False)
    monkeypatch.setenv(ENGINE_ENV, "local")
    assert wants_local_engine(None, None)
    assert not wants_local_engine("local[2]", None) and not wants_local_engine(None, "sc://127.0.0.1:1")
    monkeypatch.setenv("SEGDEX_DELTA_WRITER", "spark")
    assert not wants_local_engine(None, None)
    monkeypatch.delenv("SEGDEX_DELTA_WRITER")
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "1")
    assert not wants_local_engine(None, None)
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT")
    monkeypatch.setenv(ENGINE_ENV, "spark")
    assert not wants_local_engine(None, None)
    monkeypatch.delenv(ENGINE_ENV)
    assert wants_local_engine(None, None)  # the default: nothing asks for Spark


def _boom(item: int) -> int:
    if item == 3:
        raise ValueError(f"task {item} failed")
    return item * 10


def test_tasks_run_in_item_order_and_a_failure_is_raised():
    with LocalEngine(2) as engine:
        assert engine.run_tasks([0, 1, 2], _boom) == [0, 10, 20]
        assert engine.run_tasks([5], lambda x: x + 1) == [6]  # one item runs here; a closure is fine
        with pytest.raises(ValueError, match="task 3 failed"):
            engine.run_tasks([1, 3], _boom)


def test_recover_on_the_local_engine_writes_what_spark_writes(tmp_path: Path, spark):
    a, b = _dir(tmp_path / "a"), _dir(tmp_path / "b")
    at = int(datetime(2026, 11, 26, tzinfo=UTC).timestamp() * 1000)
    with LocalEngine(2) as engine:
        local = recover.run(engine, RunRequest([str(a)], str(tmp_path / "meta-a"), LogConfig(), {}, now_ms=at))
    on_spark = recover.run(spark, RunRequest([str(b)], str(tmp_path / "meta-b"), LogConfig(), {}, now_ms=at))
    assert tree(a) == tree(b) and len(tree(a)) > 40
    assert local.run.exit_status == on_spark.run.exit_status == 0

    def rows(meta: Path) -> list[tuple]:
        table = MetadataStore(str(meta)).read("segments").drop_columns(
            ["run_id", "scanned_at", "log_dir", "log_mtime_ms"])  # the two dirs were written at different times
        return sorted(tuple(r.values()) for r in table.to_pylist())

    assert rows(tmp_path / "meta-a") == rows(tmp_path / "meta-b")


def _cli(*args: str) -> subprocess.Popen:
    """A command on the one-host engine, in a session of its own (a signal reaches it alone)."""
    return segdex_popen(*args, env={ENGINE_ENV: "local", "PYSPARK_GATEWAY_PORT": None}, start_new_session=True)


def test_a_command_on_the_local_engine_reports_its_start_and_starts_no_jvm(tmp_path: Path):
    log_dir = _dir(tmp_path)
    child = _cli("verify", "--no-progress", "--metadata", str(tmp_path / "meta"), str(log_dir))
    out, err = child.communicate(timeout=300)
    assert child.returncode == 1, err  # the index files are missing
    assert "(engine start " in out and "spark start" not in out
    assert not (tmp_path / "meta" / "_spark_log").exists()
    assert MetadataStore(str(tmp_path / "meta")).read("segments").num_rows == 16


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT"])
def test_a_signal_stops_the_local_engine_cleanly(tmp_path: Path, how: str):
    log_dir = tmp_path / "logs"
    generate_uniform(log_dir, partitions=300, segments_per_partition=2, segment_bytes=192 * 1024,
                     topics=[("t", 1, 120)])
    logs = {k: v for k, v in tree(log_dir).items() if k.endswith(".log")}
    child = _cli("reindex", "--no-progress", "--config", "index.interval.bytes=0", "--metadata",
                 str(tmp_path / "meta"), str(log_dir))
    deadline = time.monotonic() + 120
    while child.poll() is None and time.monotonic() < deadline:
        if any(p.name.startswith(".segdex-") for p in log_dir.rglob(".segdex-*")):
            break
        time.sleep(0.002)
    else:
        pytest.fail(f"reindex ended (status {child.poll()}) before any temporary file was seen")
    if how == "SIGINT":  # Ctrl-C reaches the whole foreground process group, workers included
        os.killpg(child.pid, signal.SIGINT)
    else:
        child.send_signal(signal.SIGTERM)
    out, err = child.communicate(timeout=120)
    assert child.returncode == 128 + getattr(signal, how), err
    assert f"segdex reindex: interrupted by {how}" in err and "Traceback" not in err
    assert not list(log_dir.rglob(".segdex-*.tmp"))
    assert {k: v for k, v in tree(log_dir).items() if k.endswith(".log")} == logs
    time.sleep(0.5)
    assert subprocess.run(["pgrep", "-g", str(child.pid)], capture_output=True).stdout == b""  # workers gone


def test_workers_die_with_a_killed_driver(tmp_path):
    """A driver killed with SIGKILL (no finally runs) leaves no worker behind: each dies with its parent."""
    import signal
    import subprocess
    import time

    code = ("import os, sys, time\nfrom segdex.pipelines.local_engine import LocalEngine\n"
            "e = LocalEngine(2)\nprint(' '.join(str(p) for p in e._pool._processes), flush=True)\ntime.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True)
    workers = [int(p) for p in proc.stdout.readline().split()]
    assert len(workers) == 2
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    alive = workers
    while alive and time.monotonic() < deadline:
        alive = [w for w in workers if os.path.exists(f"/proc/{w}") and "Z" not in _state(w)]
        time.sleep(0.1)
    assert not alive, f"workers {alive} outlived their driver"


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0]
    except OSError:
        return "Z"
