"""A fleet into one bucket: several ``segdex reindex`` processes at once (more than the cores), each over its own
log dir with its own broker id, all writing the same tables on the session's S3 server (s3proxy)."""

from __future__ import annotations

import os
import shutil
from collections import Counter
from pathlib import Path

import pytest

from segdex.pipelines import metadata_store as ms
from segdex.pipelines.sample_logdir import generate_sample
from tests.support import cli

BROKERS = 6
CLUSTER = "fleet-cluster-1"


segdex = cli.segdex_popen  # runs side by side: each returns its Popen


def _log_dir(root: Path, broker: int) -> Path:
    log_dir = root / f"broker-{broker}" / "kafka-logs"
    generate_sample(log_dir, batches_per_partition=40 + 10 * broker, segment_bytes=8 * 1024, seed=broker)
    (log_dir / "meta.properties").write_text(f"version=1\nnode.id={broker}\ncluster.id={CLUSTER}\n")
    return log_dir


def _segments_on_disk(log_dir: Path) -> int:
    return sum(1 for _ in log_dir.glob("*-*/*.log"))


@pytest.fixture(scope="module")
def fleet(s3_server, tmp_path_factory):
    """Six brokers' log dirs reindexed at once into s3://BUCKET/segdex."""
    root = tmp_path_factory.mktemp("fleet")
    bucket = s3_server.bucket("fleet-module")
    uri = f"s3://{bucket}/segdex"
    dirs = {b: _log_dir(root, b) for b in range(1, BROKERS + 1)}
    env = s3_server.env()
    procs = {b: segdex("reindex", "--no-progress", "--metadata", uri, str(d), env=env) for b, d in dirs.items()}
    results = {b: (p.wait(300), *p.communicate()) for b, p in procs.items()}
    return {"uri": uri, "dirs": dirs, "env": env, "results": results, "server": s3_server}


def test_every_broker_run_lands_once(fleet, monkeypatch):
    for b, (code, _out, err) in fleet["results"].items():
        assert code == 0, f"broker {b}: exit {code}: {err[-1500:]}"
    for k, v in fleet["env"].items():
        monkeypatch.setenv(k, v)
    store = ms.MetadataStore(fleet["uri"])
    segments = store.read("segments")
    per_broker = Counter(segments.column("broker_id").to_pylist())
    assert per_broker == {b: _segments_on_disk(d) for b, d in fleet["dirs"].items()}
    keys = list(zip(*(segments.column(k).to_pylist() for k in ("broker_id", "log_dir", "topic", "partition",
                                                                "base_offset")), strict=True))
    assert len(keys) == len(set(keys))
    assert set(segments.column("cluster_id").to_pylist()) == {CLUSTER}
    assert set(segments.column("host").to_pylist()) == {os.uname().nodename}
    runs = store.read("runs")
    assert sorted(runs.column("broker_id").to_pylist()) == list(range(1, BROKERS + 1))
    partitions = store.read("partitions")
    assert Counter(partitions.column("broker_id").to_pylist()) == {
        b: sum(1 for p in d.iterdir() if p.is_dir() and "-" in p.name) for b, d in fleet["dirs"].items()}


def test_sql_group_by_broker(fleet):
    proc = segdex("sql", "--metadata", fleet["uri"],
                  "SELECT broker_id, count(*) AS n FROM segments GROUP BY broker_id ORDER BY broker_id",
                  env=fleet["env"])
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    rows = [line.split("|") for line in out.splitlines() if line.strip()[:1].isdigit()]
    assert {int(b): int(n) for b, n in rows} == {b: _segments_on_disk(d) for b, d in fleet["dirs"].items()}


def test_spark_reads_the_same_counts_through_s3a(fleet):
    """Spark's own Delta reader over s3a (hadoop-aws, Delta's jars, the AWS environment as s3a settings) answers
    the per-broker GROUP BY with the dirs' counts."""
    env = {**fleet["env"], "SEGDEX_DELTA_WRITER": "spark"}
    proc = segdex("sql", "--master", "local[1]", "--format", "csv", "--metadata",
                  fleet["uri"].replace("s3://", "s3a://"),
                  "SELECT broker_id, count(*) AS n FROM segments GROUP BY broker_id ORDER BY broker_id", env=env)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-2000:]
    rows = [line.split(",") for line in out.splitlines() if line[:1].isdigit()]
    assert {int(b): int(n) for b, n in rows} == {b: _segments_on_disk(d) for b, d in fleet["dirs"].items()}


COLUMNS = ("broker_id", "log_dir", "topic", "partition", "base_offset", "status")


def _rows(table, keep) -> list[tuple]:
    return sorted(r for r in zip(*(table.column(c).to_pylist() for c in COLUMNS), strict=True) if keep(r[0]))


def test_rerun_replaces_its_own_broker_rows_only(fleet, monkeypatch):
    """Broker 3 loses a partition and runs again: its rows are its dir's now, every other broker's are as before."""
    for k, v in fleet["env"].items():
        monkeypatch.setenv(k, v)
    store = ms.MetadataStore(fleet["uri"])
    before = store.read("segments")
    three = fleet["dirs"][3]
    gone = sorted(p for p in three.iterdir() if p.is_dir() and "-" in p.name)[0]
    shutil.rmtree(gone)
    proc = segdex("reindex", "--no-progress", "--metadata", fleet["uri"], str(three), env=fleet["env"])
    _out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    after = store.read("segments")
    assert _rows(after, lambda b: b != 3) == _rows(before, lambda b: b != 3)
    mine = _rows(after, lambda b: b == 3)
    assert len(mine) == _segments_on_disk(three) < len(_rows(before, lambda b: b == 3))
    assert not [r for r in mine if f"{r[2]}-{r[3]}" == gone.name]


def test_same_path_on_another_broker(fleet, monkeypatch, tmp_path):
    """Across a fleet every broker's log dir sits at the same path: broker 9's dir at broker 5's path adds broker
    9's rows there and leaves broker 5's rows of that path alone."""
    for k, v in fleet["env"].items():
        monkeypatch.setenv(k, v)
    store = ms.MetadataStore(fleet["uri"])
    five = fleet["dirs"][5]
    before = store.read("segments")
    kept = tmp_path / "broker-5"
    shutil.move(five, kept)
    try:
        shutil.copytree(fleet["dirs"][4], five)
        (five / "meta.properties").write_text(f"version=1\nnode.id=9\ncluster.id={CLUSTER}\n")
        proc = segdex("reindex", "--no-progress", "--metadata", fleet["uri"], str(five), env=fleet["env"])
        _out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        after = store.read("segments")
        assert _rows(after, lambda b: b != 9) == _rows(before, lambda b: True)
        nine = _rows(after, lambda b: b == 9)
        assert len(nine) == _segments_on_disk(five) and {r[1] for r in nine} == {str(five)}
        assert {r[1] for r in _rows(after, lambda b: b == 5)} == {str(five)}
    finally:
        shutil.rmtree(five)
        shutil.move(kept, five)


def test_retention_clean_and_compact_beside_a_writer(fleet, monkeypatch):
    """The other writing commands on the shared bucket: broker 1's retention plan and broker 2's cleaner plan
    record their rows under their own broker id; then the tables' maintenance (``compact --metadata``: OPTIMIZE
    and VACUUM) runs while broker 4's reindex merges into the same tables. Every process exits 0 and no row is
    lost or doubled."""
    for k, v in fleet["env"].items():
        monkeypatch.setenv(k, v)
    store = ms.MetadataStore(fleet["uri"])
    uri, dirs, env = fleet["uri"], fleet["dirs"], fleet["env"]
    plans = [segdex("retention", "--metadata", uri, "--config", "retention.ms=1000", str(dirs[1]), env=env),
             segdex("clean", "--no-progress", "--metadata", uri, "--config", "cleanup.policy=compact", str(dirs[2]),
                    env=env)]
    for proc in plans:
        _out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    assert set(store.read("retention_actions").column("broker_id").to_pylist()) == {1}
    cleaning = store.read("cleaning")
    assert set(cleaning.column("broker_id").to_pylist()) == {2} and cleaning.num_rows > 0
    before = store.read("segments")
    four = fleet["dirs"][4]
    gone = sorted(p for p in four.iterdir() if p.is_dir() and "-" in p.name)[-1]
    shutil.rmtree(gone)  # so broker 4's MERGE deletes rows in files the compaction rewrites
    both = [segdex("compact", "--metadata", uri, env=env),
            segdex("reindex", "--no-progress", "--metadata", uri, str(four), env=env)]
    outputs = [p.communicate(timeout=300) for p in both]
    for proc, (_out, err) in zip(both, outputs, strict=True):
        assert proc.returncode == 0, err
    assert f"{uri}/segments: files " in outputs[0][0], outputs[0]
    after = store.read("segments")
    assert _rows(after, lambda b: b != 4) == _rows(before, lambda b: b != 4)
    four_rows = _rows(after, lambda b: b == 4)
    assert len(four_rows) == _segments_on_disk(four) and not [r for r in four_rows if f"{r[2]}-{r[3]}" == gone.name]
    assert len(store.open("segments").file_uris()) <= len({r[0] for r in _rows(after, lambda b: True)}) + 1
