"""``plan_cleaning`` and ``clean_partition`` in the test process against Kafka 4.4's own cleaner, recorded.

``test_log_cleaner.py`` compares applied rounds with Kafka's ``Cleaner.doClean`` run beside them, which needs a
JVM per test module (``kafka_broker``): the mutation run (scripts/mutation.sh) cannot fork it for each mutant.
Here the same kind of partitions (``compacted_partition``, fixed seeds, every codec, a few of message format v1)
are cleaned by segdex in the test process and compared with Kafka's answers recorded in
``tests/kafka/golden/log_cleaner_rounds.json``: the choice and the range (``LogCleanerManager``), the round's end
offset, the SHA-256 of every live file after the round and the log end offset of Kafka's load of it.
``test_the_recorded_rounds_are_kafkas`` asks Kafka again whenever the ``kafka_broker`` tests run;
``SEGDEX_RECORD_GOLDEN=1`` writes the file from Kafka's answers instead."""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
from pathlib import Path

import pytest

from segdex.indexcore.config.cleaner_config import CleanerConfig
from segdex.indexcore.config.log_config import LONG_MAX, LogConfig
from segdex.indexcore.log.log_cleaner import clean_partition, plan_cleaning
from segdex.indexcore.tools.segment_writer import build_batch, segment_name
from tests.support.cleaner_cases import RecordedOracle, RecordingOracle, keep_recording, live_files, recorded
from tests.support.compacted_partitions import HOUR_MS, compacted_partition
from tests.support.fixtures import GOLDEN

T0 = 1_700_000_000_000
LIVE = (".log", ".index", ".timeindex", ".txnindex")
RECORDED = GOLDEN / "log_cleaner_rounds.json"
CASES = 24


def _case(i: int, root: Path) -> tuple[Path, LogConfig, CleanerConfig, int, int | None]:
    """Case ``i``: a compacted partition in ``root/c-0`` (segment mtimes an hour apart), its configs, now, and the
    cleaner-offset-checkpoint entry (None: none; every third case checkpoints the middle segment's base)."""
    rng = random.Random(1000 + i)
    codecs = ((0,), (0, 1, 3, 4), (0, 2))[i % 3]  # none; gzip, lz4, zstd; snappy (the _snappy kernel)
    data, last_ts = compacted_partition(rng, T0, codecs=codecs, magic=1 if i % 8 == 7 else 2)
    part = root / "c-0"
    part.mkdir(parents=True)
    for n, (base, seg) in enumerate(sorted(data.items())):
        (part / segment_name(base)).write_bytes(seg)
        os.utime(part / segment_name(base), ns=(T0 * 10**6, (T0 + n * HOUR_MS) * 10**6))
    config = LogConfig(cleanup_policy="compact", segment_bytes=rng.choice([1 << 20, 900]),
                       min_cleanable_dirty_ratio=rng.choice([0.5, 0.01, 0.9]),
                       min_compaction_lag_ms=HOUR_MS if i % 5 == 4 else 0,
                       max_compaction_lag_ms=HOUR_MS if i % 4 == 1 else LONG_MAX)
    cleaner = CleanerConfig(dedupe_buffer_size=24 * rng.choice([5, 10_000]))
    bases = sorted(data)
    checkpoint = bases[len(bases) // 2] if i % 3 == 2 else None
    return part, config, cleaner, last_ts + HOUR_MS, checkpoint


def _digests(part: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(part.iterdir()) if p.suffix in LIVE}


def _kafkas(kafka44, i: int, root: Path) -> dict:
    part, config, cleaner, now, checkpoint = _case(i, root)
    kconfig = {"cleanup.policy": "compact", "internal.segment.bytes": config.segment_bytes,
               "min.cleanable.dirty.ratio": config.min_cleanable_dirty_ratio,
               "min.compaction.lag.ms": config.min_compaction_lag_ms,
               "max.compaction.lag.ms": config.max_compaction_lag_ms}
    view = kafka44.cleanable(part, now, 0, -1, checkpoint, 0, config=kconfig)  # the choice, no round
    answer = kafka44.cleanable(part, now, 0, -1, checkpoint, cleaner.offset_map_memory, config=kconfig)
    files = _digests(part)
    loaded = kafka44.load(part, now)
    return {"view": view, "end_offset": answer.get("endOffset"), "files": files,
            "log_end_offset": loaded.get("logEndOffset"), "exception": loaded.get("exception")}


def test_the_recorded_rounds_are_kafkas(kafka44, tmp_path: Path):
    answers = [_kafkas(kafka44, i, tmp_path / f"k{i}") for i in range(CASES)]
    if os.environ.get("SEGDEX_RECORD_GOLDEN") == "1":
        RECORDED.write_text(json.dumps(answers, indent=1, sort_keys=True) + "\n")
    assert json.loads(RECORDED.read_text()) == answers


def _recorded() -> list[dict]:
    return json.loads(RECORDED.read_text())


@pytest.mark.parametrize("i", range(CASES))
def test_a_plan_is_kafkas_choice_and_range(i: int, tmp_path: Path):
    kafka = _recorded()[i]
    part, config, cleaner, now, checkpoint = _case(i, tmp_path)
    plan = plan_cleaning(str(part), config, cleaner, now, checkpoint=checkpoint)
    assert plan_cleaning(str(part), config, cleaner, now, checkpoint=checkpoint, threads=2) == plan  # split
    view = kafka["view"]
    assert plan.error is None
    assert (plan.first_dirty_offset, plan.first_uncleanable_offset) == (view["firstDirtyOffset"],
                                                                        view["firstUncleanableOffset"])
    ratio, delay, least = view["cleanableRatio"], view["maxCompactionDelay"], config.min_cleanable_dirty_ratio
    assert plan.dirty_ratio == (None if view["cleanableBytes"] == 0 and view["totalBytes"] == 0 else
                                pytest.approx(ratio))
    # LogCleanerManager.grabFilthiestCompactedLog: a log past max.compaction.lag.ms, or dirtier than the minimum
    assert plan.would_clean == (delay > 0 or ratio > least)
    if view["cleanableBytes"] == 0:
        assert plan.why.startswith("nothing cleanable") and plan.end_offset is None
        return
    assert plan.why == (f"max.compaction.lag.ms passed {delay} ms ago" if delay > 0 else
                        f"dirty ratio {ratio:.3f} {'>' if ratio > least else '<='} min.cleanable.dirty.ratio {least}")
    assert plan.end_offset == kafka["end_offset"]
    assert plan.map_full == (plan.end_offset < plan.first_uncleanable_offset)


@pytest.mark.parametrize("i", range(CASES))
def test_an_applied_round_leaves_kafkas_files(i: int, tmp_path: Path):
    kafka = _recorded()[i]
    part, config, cleaner, now, checkpoint = _case(i, tmp_path)
    before = _digests(part)
    planned = plan_cleaning(str(part), config, cleaner, now, checkpoint=checkpoint)
    plan = clean_partition(str(part), config, cleaner, now, checkpoint=checkpoint, quarantine=str(tmp_path / "q"),
                           run_id="r", force=True)
    if planned.end_offset is None:  # nothing cleanable: nothing done
        assert not plan.applied and _digests(part) == before and not (tmp_path / "q").exists()
        return
    assert plan.applied and plan.end_offset == planned.end_offset == kafka["end_offset"]
    assert plan.bytes_freed == planned.bytes_before - planned.bytes_after
    mine = _digests(part)
    assert {n: d for n, d in mine.items() if n.endswith(".log")} == {
        n: d for n, d in kafka["files"].items() if n.endswith(".log")}
    assert all(kafka["files"].get(n) == d for n, d in mine.items())  # Kafka's load also wrote untouched indexes
    assert not [p for p in part.iterdir() if p.suffix in (".cleaned", ".swap", ".deleted")]
    manifest = json.loads((Path(plan.quarantine) / "manifest.json").read_text())
    kept = {os.path.basename(p["source"]): p["sha256"] for p in manifest["pieces"]}
    assert kept and all(before[name] == digest for name, digest in kept.items())
    shutil.rmtree(tmp_path / "q")


@pytest.mark.parametrize("i", [i for i in range(CASES) if i % 3 != 2])  # from the log start (no checkpoint)
def test_rounds_until_clean_in_memory_are_the_rounds_applied_one_by_one(i: int, tmp_path: Path):
    """``--until-clean`` plans every round in memory over what the last one left; applying the rounds one at a
    time (each checked against Kafka's above for the first) must end in the same place with the same figures."""
    part, config, cleaner, now, _ = _case(i, tmp_path)
    small = CleanerConfig(dedupe_buffer_size=24 * 20)  # a map of 10 keys: several rounds
    whole = plan_cleaning(str(part), config, small, now, until_clean=True)
    if whole.end_offset is None or whole.error:
        return
    checkpoint, rounds, last = None, 0, None
    while True:
        step = clean_partition(str(part), config, small, now, checkpoint=checkpoint, force=True)
        if step.end_offset is None or (checkpoint is not None and step.end_offset <= checkpoint):
            break
        rounds, last, checkpoint = rounds + 1, step, step.end_offset
        if not step.map_full:
            break
    assert (whole.rounds, whole.end_offset, whole.map_full) == (rounds, last.end_offset, last.map_full)
    assert (whole.records_after, whole.bytes_after, whole.segments_after, whole.tombstones_kept, whole.keys) == (
        last.records_after, last.bytes_after, last.segments_after, last.tombstones_kept, last.keys)


# ---------------------------------------------------------------- a clean start's last replay and the high watermark

HW_RECORDED = GOLDEN / "cleaner_high_watermark.json"
HW_NOW = T0 + 10 * HOUR_MS
HW_CONFIG = LogConfig(cleanup_policy="compact")
HW_KAFKA_CONFIG = {"cleanup.policy": "compact"}


def _plain(offset: int, key: bytes) -> bytes:
    return build_batch(offset, [(T0 + offset, key, b"v%d" % offset)])


def _committed() -> dict[int, bytes]:
    """Producer 7's transaction opens at 1 (segment 0) and commits at 3 (segment 2); segment 5 is the active one."""
    return {0: _plain(0, b"a") + build_batch(1, [(T0 + 1, b"a", b"v1")], producer_id=7, producer_epoch=0,
                                             base_sequence=0, is_transactional=True),
            2: _plain(2, b"a") + build_batch(3, [], producer_id=7, producer_epoch=0, control=("COMMIT", 0),
                                             control_timestamp=T0 + 3) + _plain(4, b"b"),
            5: _plain(5, b"c")}


def _open() -> dict[int, bytes]:
    """Producer 7's transaction opens at 1 and never ends; segment 4 is the active one."""
    return {0: _plain(0, b"a") + build_batch(1, [(T0 + 1, b"a", b"v1")], producer_id=7, producer_epoch=0,
                                             base_sequence=0, is_transactional=True),
            2: _plain(2, b"a") + _plain(3, b"b"), 4: _plain(4, b"c")}


def _idempotent() -> dict[int, bytes]:
    """Idempotent producer 9's only batch at 0 (key a, superseded at 2); segment 4 is the active one."""
    return {0: build_batch(0, [(T0, b"a", b"v0")], producer_id=9, producer_epoch=0, base_sequence=0)
            + _plain(1, b"b"), 2: _plain(2, b"a") + _plain(3, b"b"), 4: _plain(4, b"c")}


# name -> (segments, the snapshot files left of those Kafka's start and stop wrote, high watermark (-1: the log end),
# offset map bytes of Kafka's round (0: no round, the view only)[, the recovery point for a start without the
# clean-shutdown marker])
HW_CASES = {
    "marker above the high watermark": (_committed, {2}, 2, 0),
    "marker at the high watermark": (_committed, {2}, 3, 0),
    "marker below the high watermark": (_committed, {2}, 4, 0),
    "high watermark at the log end": (_committed, {2}, -1, 0),
    "snapshot at the log end": (_committed, {2, 5, 6}, 3, 0),
    "open transaction, no snapshot": (_open, set(), -1, 0),
    "idempotent producer, no snapshot": (_idempotent, set(), -1, 24 * 1000),
    "unclean start, segments served": (_committed, {2}, 2, 0, 6),
    "unclean start, active segment recovered": (_committed, {2}, 2, 0, 5),
    "unclean start, from segment 2": (_committed, {2}, 3, 0, 2),
}


def _started_by_kafka(oracle, root: Path, segments: dict[int, bytes], kept: set[int], config: dict,
                      change=None) -> tuple[Path, Path, int]:
    """``segments`` (base offset -> ``.log`` bytes, an hour apart) started and stopped by Kafka (its indexes and
    snapshots written), its snapshots but those at ``kept`` removed, ``change`` applied, then copied for segdex:
    (Kafka's partition, segdex's copy, the log end offset)."""
    theirs, ours = root / "theirs" / "c-0", root / "ours" / "c-0"
    theirs.mkdir(parents=True)
    for n, (base, data) in enumerate(sorted(segments.items())):
        (theirs / segment_name(base)).write_bytes(data)
        os.utime(theirs / segment_name(base), ns=(T0 * 10**6, (T0 + n * HOUR_MS) * 10**6))
    leo = oracle.load(theirs, HW_NOW, config=config)["logEndOffset"]
    for snapshot in theirs.glob("*.snapshot"):
        if int(snapshot.stem) not in kept:
            snapshot.unlink()
    if change is not None:
        change(theirs)
    shutil.copytree(theirs, ours)
    return theirs, ours, leo


def _clean_start(oracle, name: str, root: Path) -> tuple[Path, int, int | None, dict, dict]:
    """Case ``name`` started and stopped by Kafka (its indexes and snapshots written), its snapshots but those kept
    removed, copied for segdex, then Kafka's cleaner's view (and round) after a clean start with the recovery point
    at the log end: (segdex's copy, the log end offset, the high watermark (None: the log end), Kafka's answer,
    the files of its round)."""
    segments, kept, hw, dedupe, *unclean = HW_CASES[name]
    theirs, ours, leo = _started_by_kafka(oracle, root, segments(), kept, HW_KAFKA_CONFIG)
    answer = oracle.cleanable(theirs, HW_NOW, 0, hw, None, dedupe, config=HW_KAFKA_CONFIG,
                              recovery_point=unclean[0] if unclean else leo, clean=not unclean)
    files = oracle.files if isinstance(oracle, RecordedOracle) else oracle.recorded[-1]["files"]
    return ours, leo, None if hw < 0 else hw, answer, files


@pytest.mark.parametrize("name", HW_CASES)
def test_the_recorded_clean_starts_are_kafkas(kafka44, name: str, tmp_path: Path):
    recording = RecordingOracle(kafka44)
    _clean_start(recording, name, tmp_path)
    keep_recording(name, recording, HW_RECORDED)


@pytest.mark.parametrize("name", [n for n, case in HW_CASES.items() if not case[3]])
def test_a_clean_starts_replay_bounds_the_range_as_kafkas(name: str, tmp_path: Path):
    """A clean start that finds no snapshot at the log end: its last ``rebuildProducerState`` loads the latest
    snapshot left and replays from there, and each transaction that replay completes stays in
    ``ProducerStateManager.unreplicatedTxns`` while its marker is at or above the high watermark
    (``onHighWatermarkUpdated``): it still counts for ``firstUnstableOffset``, so the last stable offset, which
    bounds ``LogCleanerManager.cleanableOffsets``, is its first offset (1, in segment 0: nothing cleanable), not
    the high watermark. With no snapshot at all the rebuild is skipped (an empty state: a transaction the log
    holds open does not count). A start without the clean-shutdown marker recovers from its recovery point, each
    recovery's rebuild replaying from the latest snapshot: where that replay completes the transaction, the log's
    manager keeps it too. Kafka 4.4's answers, recorded."""
    ours, leo, hw, kafka, _ = _clean_start(recorded(name, HW_RECORDED), name, tmp_path)
    unclean = HW_CASES[name][4:]
    plan = plan_cleaning(str(ours), HW_CONFIG, CleanerConfig(dedupe_buffer_size=24 * 1000), HW_NOW,
                         high_watermark=hw, clean_shutdown=not unclean, recovery_point=unclean[0] if unclean else leo)
    assert plan.error is None
    assert (plan.first_dirty_offset, plan.first_uncleanable_offset) == (kafka["firstDirtyOffset"],
                                                                        kafka["firstUncleanableOffset"])
    assert (plan.end_offset is None) == (kafka["cleanableBytes"] == 0)


def test_a_clean_start_without_snapshots_holds_no_producer(tmp_path: Path):
    """A clean start that finds no snapshot skips the producer state's rebuild (``rebuildProducerState``, Kafka's
    upgrade path): ``lastRecordsOfActiveProducers`` is empty, so the round keeps no batch for producer 9's sake and
    removes its only batch, superseded, as Kafka 4.4's ``Cleaner.doClean`` does (recorded)."""
    name = "idempotent producer, no snapshot"
    ours, leo, hw, kafka, files = _clean_start(recorded(name, HW_RECORDED), name, tmp_path)
    plan = clean_partition(str(ours), HW_CONFIG, CleanerConfig(dedupe_buffer_size=HW_CASES[name][3]), HW_NOW,
                           high_watermark=hw, clean_shutdown=True, recovery_point=leo, force=True)
    assert plan.error is None and plan.applied and plan.end_offset == kafka["endOffset"]
    logs = {n: got for n, got in live_files(ours).items() if n.endswith(".log")}
    assert logs == {n: got for n, got in files.items() if n.endswith(".log")}


# ---------------------------------------------------------------- what a start re-reads, and the state it leaves

GAPS_RECORDED = GOLDEN / "cleaner_load_gaps.json"


def _lone_first() -> dict[int, bytes]:
    """Segment 0 holds offset 0 alone (segment 1 starts at 1); segment 3 is the active one."""
    return {0: _plain(0, b"a"), 1: _plain(1, b"a") + _plain(2, b"b"), 3: _plain(3, b"c")}


def _lone_open_first() -> dict[int, bytes]:
    """``_lone_first`` with producer 7's transaction opening at 0 (never ended)."""
    return {0: build_batch(0, [(T0, b"a", b"v0")], producer_id=7, producer_epoch=0, base_sequence=0,
                           is_transactional=True), **{b: s for b, s in _lone_first().items() if b}}


def _rewrite(part: Path, name: str, data: bytes) -> None:
    """``name`` rewritten in ``part``, its modification time kept (the cleaner reads a ``.log``'s)."""
    stat = (part / name).stat()
    (part / name).write_bytes(data)
    os.utime(part / name, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def _newer_time_index(part: Path) -> None:
    """Segment 0's ``.timeindex`` says its largest timestamp is now (its batch is ten hours older)."""
    _rewrite(part, segment_name(0)[:-4] + ".timeindex", HW_NOW.to_bytes(8, "big") + bytes(4))


def _untransacted_first(part: Path) -> None:
    """Segment 0's batch at 0 rewritten without its producer: the snapshot at 1 still holds the open transaction."""
    _rewrite(part, segment_name(0), _plain(0, b"a"))


def _untransacted_second(part: Path) -> None:
    """``_open``'s batch at 1 rewritten without its producer: the snapshot at 2 still holds its open transaction."""
    _rewrite(part, segment_name(0), _plain(0, b"a") + build_batch(1, [(T0 + 1, b"a", b"v1")]))


def _corrupt_last_snapshot(part: Path) -> None:
    """The snapshot at the log end (5) with a byte of its entry flipped: its CRC fails."""
    snapshot = part / "00000000000000000005.snapshot"
    data = bytearray(snapshot.read_bytes())
    data[-1] ^= 1
    _rewrite(part, snapshot.name, bytes(data))


def _backwards_tail() -> dict[int, bytes]:
    """``_lone_open_first``'s segment 0; segment 1, the active one: batches at 1 and 5 of over 4 KiB each, one at 3
    (offsets going back), producer 7's commit marker at 6 and a batch at 7. With ``index.interval.bytes`` at 4096
    recovery would index 5 then 3 (``OffsetIndex.append`` throws ``InvalidOffsetException``); with the topic's
    1 MiB it indexes nothing."""
    big = b"x" * 4200
    return {0: _lone_open_first()[0],
            1: build_batch(1, [(T0 + 1, b"a", big)]) + build_batch(5, [(T0 + 5, b"b", big)]) + _plain(3, b"c")
            + build_batch(6, [], producer_id=7, producer_epoch=0, control=("COMMIT", 0), control_timestamp=T0 + 6)
            + _plain(7, b"d")}


# name -> (segments, the snapshot files left of those Kafka's start and stop wrote, what is changed after them,
# the topic's configs besides cleanup.policy, the start: "clean" (the recovery point at the log end) or a recovery
# point with no clean-shutdown marker (0: none in the checkpoint))
GAP_CASES = {
    "no recovery point, segment 0's time index newer": (_lone_first, set(), _newer_time_index,
                                                        {"min.compaction.lag.ms": HOUR_MS}, 0),
    "no recovery point, a snapshot at 1 the log does not hold": (_lone_open_first, {1}, _untransacted_first, {}, 0),
    "clean start, a snapshot's open transaction the log does not hold": (_open, {2}, _untransacted_second, {},
                                                                         "clean"),
    "clean start, the snapshot at the log end corrupt": (_open, {5}, _corrupt_last_snapshot, {}, "clean"),
    "recovery point 1, a snapshot at 1 the log does not hold, offsets going back": (
        _backwards_tail, {1}, _untransacted_first, {"index.interval.bytes": 1 << 20}, 1),
}


def _gap_start(oracle, name: str, root: Path) -> tuple[Path, int, dict]:
    """Case ``name`` of ``GAP_CASES`` started and stopped by Kafka, its snapshots but those kept removed, changed,
    copied for segdex, then Kafka's cleaner's view after the case's start: (segdex's copy, the log end offset,
    Kafka's answer)."""
    segments, kept, change, configs, start = GAP_CASES[name]
    config = {**HW_KAFKA_CONFIG, **configs}
    theirs, ours, leo = _started_by_kafka(oracle, root, segments(), kept, config, change)
    answer = oracle.cleanable(theirs, HW_NOW, 0, -1, None, 0, config=config,
                              recovery_point=leo if start == "clean" else start, clean=start == "clean")
    return ours, leo, answer


@pytest.mark.parametrize("name", GAP_CASES)
def test_the_recorded_gap_starts_are_kafkas(kafka44, name: str, tmp_path: Path):
    recording = RecordingOracle(kafka44)
    _gap_start(recording, name, tmp_path)
    keep_recording(name, recording, GAPS_RECORDED)


@pytest.mark.parametrize("name", GAP_CASES)
def test_what_a_start_rereads_and_the_state_it_leaves_bound_the_range_as_kafkas(name: str, tmp_path: Path):
    """Without a recovery point (none in the checkpoint: Kafka's 0) ``LogLoader.recoverLog`` re-reads every segment
    from the first, also one holding offset 0 alone: its indexes are rebuilt (a newer ``.timeindex`` on disk does
    not hold it back from ``min.compaction.lag.ms``), and its ``recoverSegment``'s ``rebuildProducerState`` to 0
    deletes every snapshot above 0 (``truncateAndReload``), a stale one at 1 among them, whose open transaction
    then never counts. A clean start loads the latest snapshot left and replays from there: an open transaction
    that snapshot holds counts for ``firstUnstableOffset`` though the log does not hold it, and one that does not
    read (its CRC) is deleted (``loadFromSnapshot``) and the state rebuilt from the log. From recovery point 1 the
    stale snapshot at 1 is loaded and the segment recovered into its state (with the topic's
    ``index.interval.bytes``: offsets going back in it are never indexed, nothing throws), whose commit marker
    completes the transaction. Kafka 4.4's answers, recorded."""
    ours, leo, kafka = _gap_start(recorded(name, GAPS_RECORDED), name, tmp_path)
    _, _, _, configs, start = GAP_CASES[name]
    clean = start == "clean"
    plan = plan_cleaning(str(ours), HW_CONFIG.with_overrides(configs), CleanerConfig(dedupe_buffer_size=24 * 1000),
                         HW_NOW, clean_shutdown=clean, recovery_point=leo if clean else start or None)
    assert plan.error is None
    assert (plan.first_dirty_offset, plan.first_uncleanable_offset) == (kafka["firstDirtyOffset"],
                                                                        kafka["firstUncleanableOffset"])
    assert (plan.end_offset is None) == (kafka["cleanableBytes"] == 0)
