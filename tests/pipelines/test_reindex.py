"""Spark reindex/verify over a log dir assembled from Kafka's own fixtures; Delta tables read back with SQL."""

from __future__ import annotations

import hashlib
import json
import shutil
import threading
from pathlib import Path

import pytest
from chispa import assert_df_equality

from segdex.indexcore.config.log_config import LogConfig
from segdex.jobs.cli import main as cli
from segdex.pipelines import metadata_store, reindex, schemas
from segdex.pipelines.run_context import RunRequest
from tests.support.fixtures import FIXTURES, broker_lock, fixture_case_names, load_case

pytestmark = pytest.mark.skipif(not FIXTURES.is_dir(), reason=f"Kafka fixtures not found at {FIXTURES}; "
                                                             f"set SEGDEX_KAFKA_FIXTURES")


def _configs() -> tuple[LogConfig, dict[str, LogConfig]]:
    topics = {c: LogConfig().with_overrides({"index.interval.bytes": str(load_case(c)["topic_config"]
                                                                           ["index.interval.bytes"])})
              for c in fixture_case_names()}
    return LogConfig(), topics


def _topic_config_args() -> list[str]:
    return [f"--topic-config={c}:index.interval.bytes={load_case(c)['topic_config']['index.interval.bytes']}"
            for c in fixture_case_names()]


def assemble(root: Path, with_broker_indexes: bool) -> Path:
    """A log dir with one partition ``<case>-0`` per fixture case: the recovery input ``.log`` files, and
    either no index files or the broker-written ones."""
    log_dir = root / "logs"
    log_dir.mkdir(parents=True)
    for case in fixture_case_names():
        part = log_dir / f"{case}-0"
        part.mkdir()
        info = load_case(case)
        src = FIXTURES / case / info.get("recovery_input_dir", "broker")
        for f in sorted((FIXTURES / case / "broker").iterdir()):
            if f.suffix == ".log" or (with_broker_indexes and f.suffix in (".index", ".timeindex", ".txnindex")):
                shutil.copyfile(f, part / f.name)
        if not with_broker_indexes:
            for f in src.glob("*.log"):
                shutil.copyfile(f, part / f.name)
    return log_dir


def tree_state(path: Path) -> dict[str, tuple[str, int]]:
    """sha256 and mtime of every file under ``path``."""
    out = {}
    for p in sorted(path.rglob("*")):
        if p.is_file():
            out[str(p.relative_to(path))] = (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
    return out


def sql_json(capsys, meta: Path, query: str) -> list[dict]:
    capsys.readouterr()
    assert cli(["sql", "--metadata", str(meta), "--format", "json", query]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]


def test_reindex_matches_kafka_recovery_and_is_idempotent(tmp_path, spark, capsys):
    log_dir = assemble(tmp_path, with_broker_indexes=False)
    meta = tmp_path / "meta"
    logs_before = {k: v for k, v in tree_state(log_dir).items() if k.endswith(".log")}
    default, topics = _configs()

    first = reindex.run(spark, "reindex", RunRequest([str(log_dir)], str(meta), default, topics), progress=False)
    assert first.exit_status == 1  # the three corrupt-tail cases need attention
    assert first.run_row.count_missing == first.run_row.segments - 3
    assert first.run_row.count_corrupt_log_tail == 3

    # every index file byte-identical to Kafka's recovered/ files, and no other index file
    for case in fixture_case_names():
        part = log_dir / f"{case}-0"
        expected = {f.name: f.read_bytes() for f in (FIXTURES / case / "recovered").iterdir()
                    if f.suffix in (".index", ".timeindex", ".txnindex")}
        got = {f.name: f.read_bytes() for f in part.iterdir() if f.suffix in (".index", ".timeindex", ".txnindex")}
        assert got == expected, case
    after = tree_state(log_dir)
    assert {k: v for k, v in after.items() if k.endswith(".log")} == logs_before  # .log files untouched

    # segments rows through `segdex sql` agree with Kafka's facts
    rows = sql_json(capsys, meta, "SELECT topic, base_offset, next_offset, max_timestamp, size_bytes, valid_bytes, "
                                  "status FROM segments ORDER BY topic, base_offset")
    got = {(r["topic"], r["base_offset"]): r for r in rows}
    n = 0
    for case in fixture_case_names():
        info = load_case(case)
        lookups = json.loads((FIXTURES / case / "lookups.json").read_text())
        recovered = {s["baseOffset"]: s for s in info["recovered"]["segments"]}
        for seg in lookups["log"]["segments"]:
            row = got[(case, seg["baseOffset"])]
            assert row["next_offset"] == seg["nextOffset"], case
            assert row["max_timestamp"] == seg["maxTimestampSoFar"][0], case
            assert row["valid_bytes"] == seg["sizeInBytes"] == recovered[seg["baseOffset"]]["logSizeAfter"], case
            assert row["size_bytes"] == recovered[seg["baseOffset"]]["logSizeBefore"], case
            assert row["status"] == ("corrupt_log_tail" if info.get("corruption") else "ok"), case
            n += 1
    assert n == len(rows)

    # partitions: log end offset and segment count per partition
    parts = sql_json(capsys, meta, "SELECT topic, log_end_offset, segment_count FROM partitions")
    for p in parts:
        lookups = json.loads((FIXTURES / p["topic"] / "lookups.json").read_text())
        assert p["log_end_offset"] == lookups["log"]["logEndOffset"]
        assert p["segment_count"] == len(lookups["log"]["segments"])

    seg_before = metadata_store.read_table(spark, str(meta), "segments").orderBy(*schemas.SEGMENT_KEYS)
    part_before = metadata_store.read_table(spark, str(meta), "partitions").orderBy(*schemas.PARTITION_KEYS)
    seg_before, part_before = seg_before.localCheckpoint(), part_before.localCheckpoint()

    second = reindex.run(spark, "reindex", RunRequest([str(log_dir)], str(meta), default, topics), progress=False)
    assert second.run_row.files_written == 0
    assert tree_state(log_dir) == after  # no file rewritten, not even touched
    assert_df_equality(metadata_store.read_table(spark, str(meta), "segments").orderBy(*schemas.SEGMENT_KEYS),
                       seg_before)
    assert_df_equality(metadata_store.read_table(spark, str(meta), "partitions").orderBy(*schemas.PARTITION_KEYS),
                       part_before)
    runs = sql_json(capsys, meta, "SELECT run_id, command, files_written, exit_status FROM runs ORDER BY started_at")
    assert [(r["run_id"], r["files_written"]) for r in runs] == [(first.run_id, first.run_row.files_written),
                                                                 (second.run_id, 0)]
    assert first.run_row.files_written > 0


def test_verify_broker_folders_as_fixture_says(tmp_path, spark):
    log_dir = assemble(tmp_path, with_broker_indexes=True)
    # verify judges the broker's own files, so use the broker's .log everywhere (not the damaged inputs)
    for case in fixture_case_names():
        for f in (FIXTURES / case / "broker").glob("*.log"):
            shutil.copyfile(f, log_dir / f"{case}-0" / f.name)
    before = tree_state(log_dir)
    default, topics = _configs()
    summary = reindex.run(spark, "verify", RunRequest([str(log_dir)], str(tmp_path / "meta"), default, topics),
                          progress=False)
    assert tree_state(log_dir) == before  # verify writes nothing in the log dir
    got = {(r.topic, r.base_offset): r.status for r in summary.segment_rows}
    for case in fixture_case_names():
        for cmp in load_case(case)["broker_vs_recovered"]:
            same = all(cmp[f"{k}_identical"] for k in ("index", "timeindex", "txnindex"))
            assert got[(case, cmp["baseOffset"])] == ("ok" if same else "equivalent"), case
    assert got[("v2_follower_multibatch_appends", 0)] == "equivalent"
    assert summary.exit_status == 0


def test_verify_flags_missing_and_corrupt_index(tmp_path, spark, capsys):
    log_dir = assemble(tmp_path, with_broker_indexes=True)
    case = "v2_varsize_interval_100"
    part = log_dir / f"{case}-0"
    (part / "00000000000000000000.timeindex").unlink()
    idx = log_dir / "v2_gzip-0" / "00000000000000000000.index"
    data = bytearray(idx.read_bytes())
    data[4:8] = (10 ** 6).to_bytes(4, "big")  # first entry's position points nowhere near a batch
    idx.write_bytes(bytes(data))
    meta = tmp_path / "meta"
    code = cli(["verify", "--metadata", str(meta), "--no-progress", *_topic_config_args(), str(log_dir)])
    assert code == 1
    rows = {(r["topic"]): r for r in sql_json(capsys, meta, "SELECT topic, status, reason FROM segments "
                                                            "WHERE status NOT IN ('ok', 'equivalent')")}
    assert rows["v2_varsize_interval_100"]["status"] == "missing"
    assert ".timeindex" in rows["v2_varsize_interval_100"]["reason"]
    assert rows["v2_gzip"]["status"] == "corrupt_index"
    runs = sql_json(capsys, meta, "SELECT count_missing, count_corrupt_index, exit_status FROM runs")
    assert runs == [{"count_missing": 1, "count_corrupt_index": 1, "exit_status": 1}]
    assert not (part / "00000000000000000000.timeindex").exists()


def test_concurrent_runs_lose_no_rows(tmp_path, spark):
    a = assemble(tmp_path / "a", with_broker_indexes=False)
    b = assemble(tmp_path / "b", with_broker_indexes=False)
    meta = str(tmp_path / "meta")
    default, topics = _configs()
    errors: list[BaseException] = []

    def go(d: Path) -> None:
        try:
            reindex.run(spark, "reindex", RunRequest([str(d)], meta, default, topics), progress=False)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=go, args=(d,)) for d in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    segs = metadata_store.read_arrow(meta, "segments").to_pylist()
    n_segments = sum(len(load_case(c)["recovered"]["segments"]) for c in fixture_case_names())
    assert len(segs) == 2 * n_segments
    assert {r["log_dir"] for r in segs} == {str(a), str(b)}
    assert len(metadata_store.read_arrow(meta, "runs").to_pylist()) == 2


def test_locked_log_dir_refused_and_special_dirs(tmp_path, spark, capsys):
    live = assemble(tmp_path, with_broker_indexes=False)
    shutil.copytree(live / "v2_gzip-0", live / "v2_gzip-1.0123abcd-delete")
    shutil.copytree(live / "v2_gzip-0", live / "v2_gzip-2.0123abcd-stray")
    shutil.copytree(live / "v2_lz4-0", live / "v2_lz4-3.0123abcd-future")
    (live / "v2_gzip-0" / "123.log").write_bytes(b"misnamed")
    locked = tmp_path / "locked"
    shutil.copytree(live / "v2_zstd-0", locked / "v2_zstd-0")
    with broker_lock(locked):
        meta = tmp_path / "meta"
        capsys.readouterr()
        code = cli(["reindex", "--metadata", str(meta), "--no-progress", "--allow-unloadable",
                    *_topic_config_args(), str(live), str(locked)])
        out, err = capsys.readouterr()
    assert code == 1
    assert "refused" in err and ".lock is held by another process" in err and str(locked) in err
    assert (f"unloadable: {live}/v2_gzip-0/123.log: the broker starts but reads it as the segment at offset 123"
            in err)  # a name Kafka's load misreads: said, then written anyway (--allow-unloadable)
    assert "-delete" in out and "-stray" in out
    assert not any(p.suffix == ".index" for p in (locked / "v2_zstd-0").iterdir())  # nothing written there
    assert not (live / "v2_gzip-1.0123abcd-delete" / "00000000000000000000.index").exists()
    rows = sql_json(capsys, meta, "SELECT DISTINCT topic, partition, future, reason FROM segments "
                                  "WHERE topic IN ('v2_gzip', 'v2_lz4')")
    assert sorted((r["topic"], r["partition"], r["future"]) for r in rows) == [
        ("v2_gzip", 0, False), ("v2_lz4", 0, False), ("v2_lz4", 3, True)]
    assert all("-future" in r["reason"] for r in rows if r["future"])
    assert (live / "v2_lz4-3.0123abcd-future" / "00000000000000000000.index").exists()  # scanned and rebuilt


def test_bad_arguments_are_usage_errors(tmp_path, capsys):
    assert cli(["reindex", "--config", "index.interval.bytes=x", str(tmp_path)]) == 2
    assert "Not a number of type INT" in capsys.readouterr().err
    assert cli(["verify", "--topic-config", "nocolon", str(tmp_path)]) == 2
    assert cli(["verify", str(tmp_path / "nope")]) == 2
    assert "not a directory" in capsys.readouterr().err
    assert not (tmp_path / "segdex-metadata").exists()


def test_plan_groups_balances_bytes():
    tasks = [reindex.PartitionTask("d", f"d/t-{i}", "t", i, False, LogConfig(), size_bytes=s, segment_count=1)
             for i, s in enumerate([100, 90, 50, 40, 30, 20, 10, 10])]
    groups = reindex.plan_groups(tasks, 2)
    totals = sorted(sum(t.size_bytes for t in g) for g in groups)
    assert totals == [170, 180]
    assert sorted(t.partition for g in groups for t in g) == list(range(8))
    assert len(reindex.plan_groups(tasks, 100)) == 8


def test_rows_of_vanished_segments_and_partitions_are_removed(tmp_path, spark):
    from segdex.pipelines.sample_logdir import generate_sample

    topics = {"orders": (2, "plain", 0), "clicks": (1, "plain", 0)}
    a, b = tmp_path / "a", tmp_path / "b"
    generate_sample(a, batches_per_partition=80, segment_bytes=8 * 1024, topics=topics)
    generate_sample(b, batches_per_partition=80, segment_bytes=8 * 1024, topics=topics)
    meta = str(tmp_path / "meta")
    reindex.run(spark, "reindex", RunRequest([str(a), str(b)], meta, LogConfig()), progress=False)
    before = metadata_store.read_arrow(meta, "segments").to_pylist()
    first = sorted((a / "orders-0").glob("*.log"))[0]
    first.rename(first.with_name(first.name + ".deleted"))  # as retention leaves a deleted segment
    shutil.rmtree(a / "clicks-0")  # partition moved away
    reindex.run(spark, "reindex", RunRequest([str(a)], meta, LogConfig()), progress=False)
    after = metadata_store.read_arrow(meta, "segments").to_pylist()
    gone = {(r["log_dir"], r["topic"], r["partition"], r["base_offset"]) for r in before} - \
        {(r["log_dir"], r["topic"], r["partition"], r["base_offset"]) for r in after}
    n_clicks = sum(1 for r in before if r["log_dir"] == str(a) and r["topic"] == "clicks")
    assert gone == {(str(a), "orders", 0, 0)} | {(str(a), "clicks", 0, r["base_offset"]) for r in before
                                                  if r["log_dir"] == str(a) and r["topic"] == "clicks"}
    assert n_clicks > 1
    assert metadata_store.sort_rows([r for r in after if r["log_dir"] == str(b)], schemas.SEGMENT_KEYS) == \
        metadata_store.sort_rows([r for r in before if r["log_dir"] == str(b)], schemas.SEGMENT_KEYS)
    part_rows = metadata_store.read_arrow(meta, "partitions").to_pylist()
    parts = {(r["log_dir"], r["topic"], r["partition"]) for r in part_rows}
    assert (str(a), "clicks", 0) not in parts and (str(b), "clicks", 0) in parts and (str(a), "orders", 0) in parts


def test_plan_spans_splits_only_partitions_bigger_than_two_shares(tmp_path):
    """By bytes: a partition of 8 segments that holds most of the dir is cut into spans of about one share (the
    dir's bytes over the task slots); the small one stays whole, and so does anything below SPAN_MIN_BYTES."""
    big, small = tmp_path / "big-0", tmp_path / "small-0"
    big.mkdir()
    small.mkdir()
    for i in range(8):
        (big / f"{i * 100:020d}.log").write_bytes(b"\0" * 1000)
    (small / f"{0:020d}.log").write_bytes(b"\0" * 1000)
    tasks = [reindex.PartitionTask(str(tmp_path), str(p), p.name[:-2], 0, False, LogConfig(), size_bytes=size,
                                   segment_count=count) for p, size, count in ((big, 8000, 8), (small, 1000, 1))]
    assert reindex.plan_spans(tasks, 4) == (tasks, [])  # SPAN_MIN_BYTES (256 MiB) is a share's floor
    reindex.SPAN_MIN_BYTES, saved = 0, reindex.SPAN_MIN_BYTES
    try:
        whole, spans = reindex.plan_spans(tasks, 4)  # share: 9000 / 4 = 2250 bytes, so spans of 3 segments
    finally:
        reindex.SPAN_MIN_BYTES = saved
    assert [t.path for t in whole] == [str(small)]
    assert [[b for b, _ in s.segments] for s in spans] == [[0, 100, 200], [300, 400, 500], [600, 700]]
    assert [s.size_bytes for s in spans] == [3000, 3000, 2000]


@pytest.fixture
def split_everything(monkeypatch):
    """Every partition of more than one segment cut into spans of one segment (as many task slots as wanted)."""
    planned: list = []
    plan = reindex.plan_spans

    def plan_spans(tasks, slots):
        whole, spans = plan(tasks, 100_000)
        planned.extend(spans)
        return whole, spans

    monkeypatch.setattr(reindex, "SPAN_MIN_BYTES", 0)
    monkeypatch.setattr(reindex, "plan_spans", plan_spans)
    return planned


def _rows(summary) -> list[tuple]:
    keep = lambda r: {k: v for k, v in vars(r).items() if k not in ("run_id", "scanned_at", "log_dir")}  # noqa: E731
    return sorted(sorted(keep(r).items(), key=str) for r in summary.segment_rows), \
        sorted(sorted(keep(o.partition).items(), key=str) for o in summary.outcomes if o.partition)


def _contents(d: Path) -> dict[str, bytes]:
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()
            and p.name != ".lock"}


def test_split_partitions_leave_what_whole_ones_leave(tmp_path, spark, split_everything):
    """Every fixture case (corrupt ones included: their segments are recovered again in order) and generated
    partitions of many producers, scanned whole and split into one span per segment (Spark, and the one-host
    engine): verify's rows and recover's files are the same, byte for byte."""
    import random

    from segdex.indexcore.tools.segment_writer import segment_name
    from segdex.pipelines import recover
    from segdex.pipelines.local_engine import LocalEngine
    from tests.support.generated_partitions import generated_partition
    from tests.support.recovery_cases import TXN_CASE_NOW

    whole = assemble(tmp_path / "whole", with_broker_indexes=False)
    rng = random.Random(7)
    for i in range(12):
        part = whole / f"gen{i}-0"
        part.mkdir()
        for base, data in generated_partition(rng, TXN_CASE_NOW - 3 * 86_400_000).items():
            (part / segment_name(base)).write_bytes(data)
    split = tmp_path / "split" / "logs"
    shutil.copytree(whole, split)
    config, topics = _configs()

    saved = reindex.plan_spans  # the whole run: no spans at all (SPAN_MIN_BYTES is 0 here, so plan with none)
    reindex.plan_spans = lambda tasks, slots: (tasks, [])
    try:
        verify_whole = reindex.run(spark, "verify", RunRequest([str(whole)], str(tmp_path / "m1"), config, topics),
                                   progress=False)
        recovered_whole = recover.run(spark, RunRequest([str(whole)], str(tmp_path / "m2"), config, topics,
                                                        now_ms=TXN_CASE_NOW))
    finally:
        reindex.plan_spans = saved
    assert not split_everything
    verify_split = reindex.run(spark, "verify", RunRequest([str(split)], str(tmp_path / "m3"), config, topics),
                               progress=False)
    assert len(split_everything) > 40  # fixture cases and generated partitions of several segments were split
    assert _rows(verify_split) == _rows(verify_whole)
    with LocalEngine(2) as engine:
        recovered_split = recover.run(engine, RunRequest([str(split)], str(tmp_path / "m4"), config, topics,
                                                         now_ms=TXN_CASE_NOW))
    assert recovered_split.exit_status == recovered_whole.exit_status
    assert _rows(recovered_split.run) == _rows(recovered_whole.run)
    assert _contents(split) == _contents(whole)


def test_verify_reads_the_cleaners_checkpoint_and_says_when_it_cannot(tmp_path, spark):
    """The log dir's cleaner-offset-checkpoint reaches each compacted partition's row; a corrupt one is a note
    and the partitions are seen as Kafka would see them with no entry."""
    from segdex.indexcore.log.checkpoints import write_offset_checkpoint
    from segdex.indexcore.tools.segment_writer import SegmentWriter, build_batch

    log_dir = tmp_path / "logs"
    with SegmentWriter(log_dir, "orders", 0) as w:
        for offset in range(4):
            w.append(build_batch(offset, [(1_700_000_000_000 + offset, b"k", b"v")]))
        w.roll(4)
        w.append(build_batch(4, [(1_700_000_000_004, b"k", b"w")]))
    write_offset_checkpoint(str(log_dir / "cleaner-offset-checkpoint"), {("orders", 0): 2})
    topics = {"orders": LogConfig(cleanup_policy="compact")}
    summary = reindex.run(spark, "verify", RunRequest([str(log_dir)], str(tmp_path / "meta"), LogConfig(), topics),
                          progress=False)
    row = summary.outcomes[0].partition
    assert (row.cleaner_checkpoint, row.cleaner_first_dirty_offset, row.cleaner_first_uncleanable_offset) == (2, 2, 4)
    (log_dir / "cleaner-offset-checkpoint").write_text("0\n5\norders 0 2\n")  # says 5 entries, holds 1
    summary = reindex.run(spark, "verify", RunRequest([str(log_dir)], str(tmp_path / "meta"), LogConfig(), topics),
                          progress=False)
    assert any("cleaner-offset-checkpoint ignored" in n for n in summary.discovery.notes)
    row = summary.outcomes[0].partition
    assert (row.cleaner_checkpoint, row.cleaner_first_dirty_offset) == (None, 0)


def test_plan_spans_keeps_a_coordinator_partition_whole(tmp_path):
    """A ``__consumer_offsets`` or ``__transaction_state`` partition is never cut: its task feeds the coordinator's
    load from the bytes its scan maps, which the spans' tasks would read apart."""
    tasks = []
    for name in ("__consumer_offsets-0", "__transaction_state-0", "big-0"):
        part = tmp_path / name
        part.mkdir()
        for i in range(8):
            (part / f"{i * 100:020d}.log").write_bytes(b"\0" * 1000)
        tasks.append(reindex.PartitionTask(str(tmp_path), str(part), name[:-2], 0, False, LogConfig(),
                                           size_bytes=8000, segment_count=8))
    reindex.SPAN_MIN_BYTES, saved = 0, reindex.SPAN_MIN_BYTES
    try:
        whole, spans = reindex.plan_spans(tasks, 24)  # share: 24000 / 24 = 1000 bytes, a span per segment
    finally:
        reindex.SPAN_MIN_BYTES = saved
    assert [t.topic for t in whole] == ["__consumer_offsets", "__transaction_state"]
    assert {s.task.topic for s in spans} == {"big"} and len(spans) == 8
