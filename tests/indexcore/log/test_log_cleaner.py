"""``clean_partition``: one round written into the partition as Kafka's cleaner writes it, against Kafka 4.4's own
``Cleaner.doClean`` on a copy (every live segment file equal), Kafka's load of the result, and the quarantine
holding every replaced file whole."""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import struct
from pathlib import Path

import pytest

from segdex.indexcore.config.cleaner_config import CleanerConfig
from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.log import cleaner
from segdex.indexcore.log.log_cleaner import LogCleaningException, clean_partition, load_for_cleaning, plan_cleaning
from segdex.indexcore.record.compression import compress
from segdex.indexcore.record.file_records import batches as batches_of
from segdex.indexcore.tools.segment_writer import build_batch, build_legacy, legacy_message, segment_name
from tests.support.cleaner_cases import RecordingOracle, judge_cleaning, judge_given, keep_recording, recorded
from tests.support.compacted_partitions import HOUR_MS, compacted_partition, lat_message_set
from tests.support.fixtures import GOLDEN

T0 = 1_700_000_000_000
LIVE = (".log", ".index", ".timeindex", ".txnindex")


def _live(part: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(part.iterdir()) if p.suffix in LIVE}


def test_applied_rounds_equal_kafkas_and_kafka_loads_them(kafka44, tmp_path: Path):
    rng = random.Random(99)
    applied = 0
    for i in range(25):
        data, last_ts = compacted_partition(rng, T0)
        ours, theirs, check = (tmp_path / f"{w}{i}" / "c-0" for w in ("ours", "theirs", "check"))
        ours.mkdir(parents=True)
        for n, (base, seg) in enumerate(sorted(data.items())):
            (ours / segment_name(base)).write_bytes(seg)
            os.utime(ours / segment_name(base), ns=(T0 * 10**6, (T0 + n * HOUR_MS) * 10**6))
        shutil.copytree(ours, theirs)
        before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in ours.iterdir()}
        config = LogConfig(cleanup_policy="compact", segment_bytes=rng.choice([1 << 20, 900]))
        cleaner = CleanerConfig(dedupe_buffer_size=24 * rng.choice([5, 10_000]))
        now = last_ts + HOUR_MS
        planned = plan_cleaning(str(ours), config, cleaner, now)
        if planned.error or planned.end_offset is None:
            continue
        plan = clean_partition(str(ours), config, cleaner, now, quarantine=str(tmp_path / f"q{i}"), run_id="r",
                               force=True)
        assert plan.applied and plan.end_offset == planned.end_offset, i
        answer = kafka44.cleanable(theirs, now, 0, -1, None, cleaner.offset_map_memory, config={
            "cleanup.policy": "compact", "internal.segment.bytes": config.segment_bytes})
        assert answer["endOffset"] == plan.end_offset, i
        mine, kafkas = _live(ours), _live(theirs)
        assert {n: b for n, b in mine.items() if n.endswith(".log")} == {
            n: b for n, b in kafkas.items() if n.endswith(".log")}, i
        # the cleaned segments' indexes (Kafka's load also wrote those of the segments no round touched)
        assert mine and all(kafkas.get(n) == b for n, b in mine.items()), i
        assert not [p for p in ours.iterdir() if p.suffix in (".cleaned", ".swap", ".deleted")]
        # every replaced file is in the quarantine, whole
        manifest = json.loads((Path(plan.quarantine) / "manifest.json").read_text())
        kept = {os.path.basename(p["source"]): p["sha256"] for p in manifest["pieces"]}
        assert kept and all(before[name] == digest for name, digest in kept.items()), i
        # Kafka loads what segdex left: the same log end offset, no exception
        shutil.copytree(ours, check)
        loaded = kafka44.load(check, now)
        assert "exception" not in loaded and loaded["logEndOffset"] == answer["logEndOffset"], (i, loaded)
        applied += 1
    assert applied > 15


def test_a_rebuilt_log_append_time_message_set_equals_kafkas(kafka44, tmp_path: Path):
    """A v1 gzip message set with LogAppendTime rebuilt by a round (``lat_message_set``): the cleaned segment is
    byte for byte the one Kafka 4.4's round writes (a v2 batch with LogAppendTime, the wrapper's append time its max
    timestamp)."""
    ours, _ = lat_message_set(tmp_path / "ours" / "c-0", T0)
    theirs = tmp_path / "theirs" / "c-0"
    shutil.copytree(ours, theirs)
    config, cleaner_config, now = LogConfig(cleanup_policy="compact"), CleanerConfig(), T0 + HOUR_MS
    plan = clean_partition(str(ours), config, cleaner_config, now, force=True)
    answer = kafka44.cleanable(theirs, now, 0, -1, None, cleaner_config.offset_map_memory,
                               config={"cleanup.policy": "compact"})
    assert plan.applied and answer["endOffset"] == plan.end_offset == 3
    mine, kafkas = _live(ours), _live(theirs)
    assert mine[segment_name(0)] == kafkas[segment_name(0)]


def test_a_partition_kafka_would_not_clean_is_left_alone(tmp_path: Path):
    data, last_ts = compacted_partition(random.Random(3), T0)
    part = tmp_path / "c-0"
    part.mkdir()
    for base, seg in data.items():
        (part / segment_name(base)).write_bytes(seg)
    before = _live(part)
    config = LogConfig(cleanup_policy="compact", min_cleanable_dirty_ratio=1.0)
    plan = clean_partition(str(part), config, CleanerConfig(), last_ts, quarantine=str(tmp_path / "q"))
    assert not plan.applied and plan.would_clean is False and _live(part) == before
    assert not (tmp_path / "q").exists()


@pytest.mark.parametrize(("threads", "held", "limit"), [(1, cleaner.HELD_BYTES, 2_500_000),
                                                       (2, cleaner.HELD_BYTES, 4_100_000), (2, 0, 2_500_000)])
def test_an_applied_round_holds_one_group_not_the_round(tmp_path: Path, threads: int, held: int, limit: int,
                                                        monkeypatch):
    """Eight segments of 700 KB whose keys are all live, cleaned with ``segment.bytes`` 1 MiB: eight groups, each
    streamed into its files and swapped in before the next is read, so the round's Python memory peaks at about
    one group's I/O buffer while it writes 5.6 MB; the --until-clean plan of the same, counted, holds no more.
    Split over two threads, it holds besides the two groups at most whose bytes wait for their turn (the one
    about to be written, the one after it: ``HELD_BYTES`` allows both), or none (``HELD_BYTES`` 0). Every byte
    equals the plan's figures and the quarantine holds each original once."""
    import tracemalloc

    monkeypatch.setattr(cleaner, "HELD_BYTES", held)

    from segdex.indexcore.tools.segment_writer import build_batch

    part = tmp_path / "logs" / "c-0"
    part.mkdir(parents=True)
    offset, value = 0, random.Random(8).randbytes(1000)
    for _ in range(8):
        base, batches = offset, []
        for _ in range(70):
            batches.append(build_batch(offset, [(T0, f"k{offset + i}".encode(), value) for i in range(10)]))
            offset += 10
        (part / segment_name(base)).write_bytes(b"".join(batches))
    (part / segment_name(offset)).write_bytes(build_batch(offset, [(T0, b"last", value)]))
    config = LogConfig(cleanup_policy="compact", segment_bytes=1 << 20)
    originals = _live(part)
    for until_clean in (False, True):
        tracemalloc.start()
        planned = plan_cleaning(str(part), config, CleanerConfig(), T0 + HOUR_MS, until_clean=until_clean,
                                threads=threads)
        plan_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert planned.segments_before == planned.segments_after == 8 and plan_peak < 1_500_000, plan_peak
    tracemalloc.start()
    plan = clean_partition(str(part), config, CleanerConfig(), T0 + HOUR_MS, quarantine=str(tmp_path / "q"),
                           run_id="r", threads=threads)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert plan.applied and plan.error is None and plan.segments_after == 8
    assert plan.bytes_after > 5_500_000 and peak < limit, peak
    logs = {n: b for n, b in _live(part).items() if n.endswith(".log")}
    assert logs == originals  # every key live: each cleaned segment is its source, copied whole
    (manifest,) = (tmp_path / "q").rglob("manifest.json")
    pieces = json.loads(manifest.read_text())["pieces"]
    assert sorted(Path(p["source"]).name for p in pieces) == sorted(n for n in originals if int(n[:20]) < offset)


def test_the_first_unstable_offset_is_the_batch_a_read_from_it_finds(tmp_path: Path):
    """Kafka 4.x's ``convertToOffsetMetadataOrThrow`` takes the offset of the batch its read finds: where a
    damaged segment served as it is was cut before the open transaction's first batch, the next whole batch's base
    offset in a later segment (the last stable offset above the snapshot's first unstable offset); the offset
    itself where its batch is there; the batch holding it; the log end where no batch is left."""
    from segdex.indexcore.index.offset_index import OffsetIndex
    from segdex.indexcore.log.cleaner import CleanerSegment
    from segdex.indexcore.log.log_cleaner import _first_unstable
    from segdex.indexcore.tools.segment_writer import build_batch

    def segment(base: int, batches: list[bytes], cut: int = 0) -> CleanerSegment:
        path = tmp_path / segment_name(base)
        data = b"".join(batches)
        path.write_bytes(data[:len(data) - cut])
        return CleanerSegment(str(path), base, len(data) - cut, 0, OffsetIndex.from_bytes(b"", base, 1024), 0, [],
                              base)

    def batch(base: int, count: int) -> bytes:
        return build_batch(base, [(0, b"k%d" % i, b"v") for i in range(count)])

    segs = [segment(0, [batch(0, 3), batch(3, 4)], cut=20), segment(10, [batch(10, 2), batch(12, 1)])]
    assert _first_unstable(segs, None, 13) is None
    assert _first_unstable(segs, 3, 13) == 10  # cut: the next segment's first batch
    assert _first_unstable(segs, 0, 13) == 0
    assert _first_unstable(segs, 1, 13) == 0  # held by the batch at 0
    assert _first_unstable(segs, 12, 13) == 12
    assert _first_unstable(segs, 13, 13) == 13
    damaged = bytearray(batch(21, 1))
    damaged[16], damaged[17] = 0x80, 0x02  # magic -128, read as a snappy wrapper of the older formats
    segs.append(segment(20, [batch(20, 1), bytes(damaged), batch(22, 1)]))
    assert _first_unstable(segs, 20, 23) == 20  # found before the search meets it
    with pytest.raises(LogCleaningException, match=r"the load: org\.apache\.kafka\.common\.InvalidRecordException: "
                       r"Invalid wrapper magic found in legacy deep record iterator -128 \(a damaged batch at byte 71 "
                       r"of .*/0+20\.log, met by the read from offset 22\): a broker's start reads"):
        _first_unstable(segs, 22, 23)


@pytest.mark.parametrize(("seed", "kafka_threw"), [
    (57041173007, "java.lang.IllegalArgumentException: Unknown compression type id: 5"),
    (24683074053, "java.lang.IllegalArgumentException: Unknown compression type id: 7"),
    (13309040441, "org.apache.kafka.common.InvalidRecordException: Invalid wrapper magic found in legacy deep record "
                  "iterator -1"),
])
def test_a_clean_start_fails_where_the_first_unstable_offsets_read_meets_a_damaged_batch(kafka44, tmp_path: Path,
                                                                                          seed: int, kafka_threw: str):
    """Kafka 4.4's ``UnifiedLog`` constructor makes the producer state's first unstable offset ``LogOffsetMetadata``
    (``maybeIncrementFirstUnstableOffset``, ``convertToOffsetMetadataOrThrow``): a read whose search passes a v2
    batch damaged below the recovery point to a negative magic byte, loads it as the older format and throws, so
    the clean start itself fails; segdex's load refuses the partition likewise (the one-thread differential, seeds
    57041, 24683 and 13309)."""
    v = judge_cleaning(random.Random(seed), kafka44, tmp_path / "case", damage=True, buffers=True)
    assert not v.mismatches, (v.kind, v.mismatches)
    assert v.kafka_threw == f"the load: {kafka_threw}", v.kafka_threw


def _written(part: Path, segments: dict[int, list[bytes]]) -> Path:
    part.mkdir(parents=True)
    for base, batches in segments.items():
        (part / segment_name(base)).write_bytes(b"".join(batches))
    return part


def _plain(base: int, *keys: bytes | None, values: bytes | None = b"v") -> bytes:
    from segdex.indexcore.tools.segment_writer import build_batch

    return build_batch(base, [(T0 + base + i, k, values) for i, k in enumerate(keys)])


def test_the_high_watermark_bounds_the_round_at_its_segment(tmp_path: Path):
    """The high watermark at segment 5's base (the last stable offset): the round stops there, where the log end
    lets it run to the active segment's base; the same applied. One past the log end is the log end."""
    part = _written(tmp_path / "c-0", {0: [_plain(0, b"a", b"b", b"a")], 3: [_plain(3, b"a", b"c")],
                                       5: [_plain(5, b"b")], 6: [_plain(6, b"d")]})
    config, now = LogConfig(cleanup_policy="compact"), T0 + HOUR_MS
    assert plan_cleaning(str(part), config, CleanerConfig(), now).first_uncleanable_offset == 6
    assert plan_cleaning(str(part), config, CleanerConfig(), now, high_watermark=99).first_uncleanable_offset == 6
    planned = plan_cleaning(str(part), config, CleanerConfig(), now, high_watermark=5)
    assert (planned.first_uncleanable_offset, planned.end_offset) == (5, 5)
    plan = clean_partition(str(part), config, CleanerConfig(), now, high_watermark=5, force=True)
    assert plan.applied and (plan.first_uncleanable_offset, plan.end_offset) == (5, 5)
    assert sorted(p.name for p in part.glob("*.log")) == [segment_name(b) for b in (0, 5, 6)]


def test_a_partition_without_segments_is_not_loaded(tmp_path: Path):
    part = tmp_path / "c-0"
    part.mkdir()
    for run in (plan_cleaning, clean_partition):
        plan = run(str(part), LogConfig(cleanup_policy="compact"), CleanerConfig(), T0)
        assert (plan.error, plan.end_offset, plan.applied) == ("not loaded: no segment", None, False)


def test_one_ms_past_the_max_compaction_lag_forces_a_round(tmp_path: Path):
    """A dirty ratio under the minimum, the oldest dirty batch 1 ms past ``max.compaction.lag.ms``: taken."""
    part = _written(tmp_path / "c-0", {0: [_plain(0, b"a")], 1: [_plain(1, b"b")]})
    config = LogConfig(cleanup_policy="compact", min_cleanable_dirty_ratio=1.0, max_compaction_lag_ms=HOUR_MS)
    plan = plan_cleaning(str(part), config, CleanerConfig(), T0 + HOUR_MS + 1)
    assert (plan.would_clean, plan.why) == (True, "max.compaction.lag.ms passed 1 ms ago")
    plan = plan_cleaning(str(part), config, CleanerConfig(), T0 + HOUR_MS)
    assert plan.would_clean is False and plan.why.startswith("dirty ratio 1.000 <= min.cleanable.dirty.ratio")


def test_a_plan_counts_the_tombstones_and_aborted_records_its_round_removes(tmp_path: Path):
    """a's tombstone is superseded (removed), b's kept (its horizon stamped); producer 7's aborted transaction
    (two records) goes; the ABORT marker stays until its horizon passes."""
    from segdex.indexcore.tools.segment_writer import build_batch

    part = _written(tmp_path / "c-0", {
        0: [_plain(0, b"a", values=None), _plain(1, b"a", b"b", values=None),
            build_batch(3, [(T0, b"x", b"1"), (T0, b"y", b"2")], producer_id=7, producer_epoch=0,
                        is_transactional=True),
            build_batch(5, [], producer_id=7, producer_epoch=0, control=("ABORT", 0), control_timestamp=T0),
            _plain(6, b"a")],
        7: [_plain(7, b"z")]})
    plan = plan_cleaning(str(part), LogConfig(cleanup_policy="compact"), CleanerConfig(), T0 + HOUR_MS)
    assert (plan.records_before, plan.records_after) == (7, 3)  # b's tombstone, the marker, a at 6
    assert (plan.tombstones_removed, plan.tombstones_kept, plan.aborted_removed) == (2, 1, 2)


def test_room_is_short_below_the_bytes_needed_and_a_mebibyte(tmp_path: Path):
    """``_short_of_room``: free space under what is needed plus 1 MiB is short, naming the path it measured (a path
    not created yet: its nearest existing parent). Measured while the filesystem's free space holds still."""
    import pytest

    from segdex.indexcore.log.log_cleaner import _short_of_room

    def free_of(path: Path) -> int:
        st = os.statvfs(path)
        return st.f_bavail * st.f_frsize

    def asked(path: Path, measured: Path, over: int) -> tuple[int, str | None]:
        for _ in range(100):
            free = free_of(measured)
            said = _short_of_room(str(path), free - (1 << 20) + over)
            if free_of(measured) == free:
                return free, said
        pytest.skip("the filesystem's free space kept changing")

    assert asked(tmp_path, tmp_path, 0)[1] is None
    free, said = asked(tmp_path, tmp_path, 1)
    assert said == f"{tmp_path}: {free:,} bytes free, {free - (1 << 20) + 1:,} needed"
    free, said = asked(tmp_path / "q" / "r", tmp_path, 1)
    assert said == f"{tmp_path}: {free:,} bytes free, {free - (1 << 20) + 1:,} needed"


def test_the_same_filesystem_is_told_by_device_and_a_missing_quarantine_by_its_parent(tmp_path: Path):
    import pytest

    from segdex.indexcore.log.log_cleaner import _same_filesystem

    assert _same_filesystem(str(tmp_path), None) is False
    assert _same_filesystem(str(tmp_path), str(tmp_path)) is True
    assert _same_filesystem(str(tmp_path), str(tmp_path / "q" / "run")) is True  # not created yet: its parent's
    other = Path("/dev/shm")
    if not other.is_dir() or os.stat(other).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no second filesystem here")
    assert _same_filesystem(str(tmp_path), str(other)) is False


def test_an_until_clean_plan_whose_first_round_fails_says_kafkas_failure(tmp_path: Path):
    """The first round throws as Kafka's does (a merged segment's time index full): the plan's error is Kafka's
    failure, as one round's plan says it, not a later round's."""
    from tests.support.compacted_partitions import OUTGROWN_ERROR, outgrown_partition

    part = tmp_path / "c-0"
    outgrown_partition(part, T0)
    config = LogConfig(cleanup_policy="compact", index_interval_bytes=1, segment_index_bytes=96)
    cleaner = CleanerConfig(dedupe_buffer_size=2400)
    one = plan_cleaning(str(part), config, cleaner, T0 + HOUR_MS)
    assert one.error == (f"Kafka's cleaner fails this round ({OUTGROWN_ERROR}): segments 0, 5 merged into one "
                         "outgrow its index of segment.index.bytes=96; a broker marks the partition uncleanable and "
                         "leaves it dirty")
    assert plan_cleaning(str(part), config, cleaner, T0 + HOUR_MS, threads=2).error == one.error  # split
    whole = plan_cleaning(str(part), config, cleaner, T0 + HOUR_MS, until_clean=True)
    assert (whole.error, whole.end_offset, whole.rounds) == (one.error, None, 0)
    # a map of 9 keys: the round ends inside segment 5 and would spill its groups for the next; it fails the same
    small = plan_cleaning(str(part), config, CleanerConfig(dedupe_buffer_size=24 * 10), T0 + HOUR_MS, until_clean=True)
    assert (small.error, small.end_offset, small.rounds) == (one.error, None, 0)


def test_planned_rounds_spill_into_a_scratch_directory_removed_at_the_end(tmp_path: Path, monkeypatch):
    """--until-clean over a map of 3 keys: each round a later one reads is written under ``segdex-clean-plan-*``
    in the temporary directory while the plan runs, and nothing is left after."""
    import tempfile

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    part = _written(tmp_path / "c-0", {0: [_plain(0, b"a", b"b", b"c", b"d")], 4: [_plain(4, b"e", b"f", b"a")],
                                       7: [_plain(7, b"g")]})
    seen = []

    def on_round(_bytes: int) -> None:
        seen.append(sorted((p.parent.name[:18], p.suffix) for p in scratch.rglob("*") if p.is_file()))

    plan = plan_cleaning(str(part), LogConfig(cleanup_policy="compact"), CleanerConfig(dedupe_buffer_size=24 * 4),
                         T0 + HOUR_MS, until_clean=True, on_round=on_round)
    assert plan.rounds == len(seen) > 1 and plan.error is None and plan.end_offset == 7
    assert seen[0] and all(name == "segdex-clean-plan-" and suffix == ".log" for name, suffix in seen[0])
    assert list(scratch.iterdir()) == []
    split = plan_cleaning(str(part), LogConfig(cleanup_policy="compact"), CleanerConfig(dedupe_buffer_size=24 * 4),
                          T0 + HOUR_MS, until_clean=True, threads=2)
    assert split == plan and list(scratch.iterdir()) == []


def test_an_until_clean_plan_whose_second_round_fails_keeps_the_first(tmp_path: Path):
    """A map of 5 keys: round 1 takes segment 0's five keys and cleans it alone; round 2 merges it with segment 5,
    whose time indexes together outgrow ``segment.index.bytes``, and throws as Kafka's does: the plan keeps round
    1 and says round 2's failure."""
    from tests.support.compacted_partitions import OUTGROWN_ERROR, outgrown_partition

    part = tmp_path / "c-0"
    outgrown_partition(part, T0)
    config = LogConfig(cleanup_policy="compact", index_interval_bytes=1, segment_index_bytes=96)
    one = plan_cleaning(str(part), config, CleanerConfig(dedupe_buffer_size=2400), T0 + HOUR_MS)
    whole = plan_cleaning(str(part), config, CleanerConfig(dedupe_buffer_size=24 * 6), T0 + HOUR_MS,
                          until_clean=True)
    assert one.error.startswith(f"Kafka's cleaner fails this round ({OUTGROWN_ERROR})")
    assert (whole.error, whole.rounds, whole.end_offset, whole.map_full) == (f"round 2: {one.error}", 1, 5, True)


def test_an_offset_map_too_small_for_a_key_makes_no_progress(tmp_path: Path):
    """A map of one slot takes no key (``int(1 x 0.9)`` = 0): its round ends at offset 0 and the next would not get
    past it, which the plan says instead of planning on. Two slots take one key a round: two rounds. Each round is
    told to ``on_round`` with the bytes it cleans."""
    part = _written(tmp_path / "c-0", {0: [_plain(0, b"a", b"b")], 2: [_plain(2, b"c")]})
    config, now = LogConfig(cleanup_policy="compact"), T0 + HOUR_MS
    for memory, rounds, told, end, error, keys in ((24, 1, [0], 0, "round 2 would not get past offset 0", 0),
                                                   (48, 2, [79, 79], 2, None, 1)):
        seen = []
        plan = plan_cleaning(str(part), config, CleanerConfig(dedupe_buffer_size=memory), now, until_clean=True,
                             on_round=seen.append)
        assert (plan.rounds, seen, plan.end_offset, plan.error, plan.keys) == (rounds, told, end, error, keys), memory


def test_a_run_finishes_what_an_interrupted_one_left_and_says_so(tmp_path: Path):
    """A temporary of a killed run and a ``.deleted`` file of an unfinished swap: removed before the round (as
    Kafka's load removes the latter), each named in ``finished``, in that order."""
    from segdex.indexcore.log.log_loader import complete_swaps

    part = _written(tmp_path / "c-0", {0: [_plain(0, b"a", b"b", b"a")], 3: [_plain(3, b"c")]})
    (part / ".segdex-1-00.tmp").write_bytes(b"half")
    (part / (segment_name(3)[:-4] + ".index.deleted")).write_bytes(b"")
    copy = tmp_path / "copy" / "c-0"
    shutil.copytree(part, copy)
    (copy / ".segdex-1-00.tmp").unlink()
    swaps = complete_swaps(str(copy))
    plan = clean_partition(str(part), LogConfig(cleanup_policy="compact"), CleanerConfig(), T0 + HOUR_MS)
    assert swaps and plan.finished == "; ".join(["removed .segdex-1-00.tmp", *swaps])
    assert plan.applied and not [p.name for p in part.iterdir() if p.name.endswith((".tmp", ".deleted"))]
    again = clean_partition(str(part), LogConfig(cleanup_policy="compact"), CleanerConfig(), T0 + HOUR_MS,
                            force=True, quarantine=str(tmp_path / "q"))
    assert again.finished is None and again.applied  # nothing left over; a run without an id: none in the manifest
    assert json.loads((Path(again.quarantine) / "manifest.json").read_text())["run_id"] == ""


def test_a_start_that_does_not_re_read_segments_keeps_their_indexes_on_disk(tmp_path: Path):
    """Segments 0 and 4 with empty ``.index`` and ``.timeindex`` files: a start that re-reads them (the default)
    rebuilds their indexes (3 time entries each), which ``segment.index.bytes`` 48 keeps apart; a clean start, or
    a recovery point past them, keeps the empty files, so the cleaner merges the two and the merged segment
    outgrows its time index, as Kafka's round fails there. ``clean_partition`` takes the same three starts."""
    part = tmp_path / "c-0"
    part.mkdir()
    for base, n in ((0, 4), (4, 4), (8, 1)):
        (part / segment_name(base)).write_bytes(b"".join(_plain(base + i, b"k%d" % (base + i)) for i in range(n)))
        if base < 8:
            for suffix in (".index", ".timeindex"):
                (part / (segment_name(base)[:-4] + suffix)).write_bytes(b"")
    config = LogConfig(cleanup_policy="compact", index_interval_bytes=1, segment_index_bytes=48)
    now = T0 + HOUR_MS
    failed = ("Kafka's cleaner fails this round (java.lang.IllegalArgumentException: Attempt to append to a full time "
              "index (size = 3).): segments 0, 4 merged into one outgrow its index of segment.index.bytes=48; a "
              "broker marks the partition uncleanable and leaves it dirty")
    starts = (({}, None), ({"clean_shutdown": True}, failed), ({"recovery_point": 9}, failed))
    for i, (start, error) in enumerate(starts):
        planned = plan_cleaning(str(part), config, CleanerConfig(), now, **start)
        assert (planned.error, planned.segments_after) == (error, None if error else 2), start
        copy = tmp_path / f"copy{i}" / "c-0"
        shutil.copytree(part, copy)
        applied = clean_partition(str(copy), config, CleanerConfig(), now, force=True, **start)
        assert applied.applied == (error is None) and (applied.error or "").startswith(error or ""), start


def test_a_clean_start_takes_its_active_producers_from_the_snapshot_at_the_log_end(tmp_path: Path):
    """A clean start loads the producer snapshot at the log end (3) instead of replaying the log: the snapshot's
    producers, those idle past ``producer.id.expiration.ms`` (60 s here) dropped, are the round's active ones
    (producer 9, which the log does not hold; not 7, idle 100 s there though its batch in the log is recent).
    A start that re-reads the log has producer 7 from its batch."""
    from segdex.indexcore.log.cleaner import LastRecord
    from segdex.indexcore.log.log_cleaner import load_for_cleaning
    from segdex.indexcore.log.producer_snapshot import producer_snapshot_file_name, snapshot_bytes
    from segdex.indexcore.log.producer_state import BatchMetadata, ProducerStateEntry
    from segdex.indexcore.tools.segment_writer import build_batch

    now = T0 + HOUR_MS
    part = tmp_path / "c-0"
    part.mkdir()
    (part / segment_name(0)).write_bytes(build_batch(0, [(now - 10, b"a", b"1")], producer_id=7, producer_epoch=0,
                                                     base_sequence=0) + build_batch(1, [(now - 9, b"a", b"2")]))
    (part / segment_name(2)).write_bytes(build_batch(2, [(now - 8, b"b", b"1")]))
    (part / producer_snapshot_file_name(3)).write_bytes(snapshot_bytes([
        ProducerStateEntry(7, 0, -1, now - 100_000, None, BatchMetadata(0, 0, 0, now - 100_000)),
        ProducerStateEntry(9, 2, -1, now - 10, None, BatchMetadata(4, 1, 0, now - 10))]))
    config = LogConfig(cleanup_policy="compact", producer_id_expiration_ms=60_000)
    assert load_for_cleaning(str(part), config, now).active_producers() == {7: LastRecord(0, 0)}
    assert load_for_cleaning(str(part), config, now, clean_shutdown=True).active_producers() == {
        9: LastRecord(1, 2)}


def test_a_segment_not_re_read_has_its_indexes_and_largest_timestamp_as_on_disk(tmp_path: Path):
    """``_indexes_on_disk``: the ``.index`` read whole at the segment's base (offsets 12, 15), sized by
    ``segment.index.bytes``; the ``.timeindex``'s entries counted (a whole number); the largest timestamp its last
    entry's (not the file's time)."""
    from segdex.indexcore.index.offset_index import OffsetIndex
    from segdex.indexcore.index.time_index import TimeIndex
    from segdex.indexcore.log.log_cleaner import _indexes_on_disk
    from segdex.indexcore.tools.segment_writer import build_batch

    part = tmp_path / "c-0"
    part.mkdir()
    log = part / segment_name(10)
    log.write_bytes(b"".join(build_batch(o, [(T0 + o, b"k", b"v")]) for o in range(10, 16)))
    offsets, times = OffsetIndex(10, 1 << 20), TimeIndex(10, 1 << 20)
    offsets.append(12, 140)
    offsets.append(15, 350)
    times.maybe_append(T0 + 12, 12)
    times.maybe_append(T0 + 15, 15)
    (part / (segment_name(10)[:-4] + ".index")).write_bytes(offsets.to_bytes())
    (part / (segment_name(10)[:-4] + ".timeindex")).write_bytes(times.to_bytes())
    index, time_entries, largest = _indexes_on_disk(str(log), 10, LogConfig(segment_index_bytes=800))
    assert (index.entries(), index.lookup(14), index.max_entries) == ([(12, 140), (15, 350)], (12, 140), 100)
    assert (time_entries, type(time_entries), largest) == (2, int, T0 + 15)


def test_an_applied_round_that_fails_after_a_group_says_what_was_swapped_in_and_kept(tmp_path: Path):
    """A clean start keeps segments 4 and 8's empty index files, so the cleaner groups them (segment 0, larger, in
    a group of its own by ``segment.bytes``) and their merged segment outgrows its time index, as Kafka's round
    fails there: segment 0's group is swapped in before, its files kept in the quarantine (whose manifest says
    why), the checkpoint untouched. With ``segment.bytes`` at its default the three merge into the first group,
    which fails before anything is written: nothing changed."""
    part = tmp_path / "c-0"
    part.mkdir()
    sizes = {}
    for base, n, value in ((0, 4, b"v" * 200), (4, 4, b"v"), (8, 4, b"v"), (12, 1, b"v")):
        data = b"".join(_plain(o, b"k%d" % o, values=value) for o in range(base, base + n))
        (part / segment_name(base)).write_bytes(data)
        sizes[base] = len(data)
        if base in (4, 8):
            for suffix in (".index", ".timeindex"):
                (part / (segment_name(base)[:-4] + suffix)).write_bytes(b"")
    failed = ("Kafka's cleaner fails this round (java.lang.IllegalArgumentException: Attempt to append to a full "
              "time index (size = 3).): segments {} merged into one outgrow its index of segment.index.bytes=48; a "
              "broker marks the partition uncleanable and leaves it dirty")
    config = LogConfig(cleanup_policy="compact", index_interval_bytes=1, segment_index_bytes=48)
    copy = tmp_path / "copy" / "c-0"
    shutil.copytree(part, copy)
    for threads in (1, 2):  # a round in turn, and one split over two threads
        whole = clean_partition(str(copy), config, CleanerConfig(), T0 + HOUR_MS, force=True, clean_shutdown=True,
                                threads=threads)
        assert (whole.error, whole.swapped_groups, whole.applied) == (
            failed.format("0, 4, 8") + "; nothing was changed", 0, False)
    separate = LogConfig(cleanup_policy="compact", index_interval_bytes=1, segment_index_bytes=48,
                         segment_bytes=sizes[0] + sizes[4] - 1)
    unkept = tmp_path / "unkept" / "c-0"
    shutil.copytree(part, unkept)
    plan = clean_partition(str(unkept), separate, CleanerConfig(), T0 + HOUR_MS, force=True, clean_shutdown=True)
    assert (plan.error, plan.quarantine) == (
        "not applied: " + failed.format("4, 8") + "; the 1 cleaned segments before it were swapped in, as Kafka's "
        "round leaves them (cleaner-offset-checkpoint unchanged)", None)
    plan = clean_partition(str(part), separate, CleanerConfig(), T0 + HOUR_MS, force=True, clean_shutdown=True,
                           quarantine=str(tmp_path / "q"), run_id="r1")
    kept = plan.quarantine
    assert kept is not None and kept.startswith(str(tmp_path / "q"))
    assert (plan.error, plan.swapped_groups, plan.applied) == (
        "not applied: " + failed.format("4, 8") + "; the 1 cleaned segments before it were swapped in, as Kafka's "
        "round leaves them (cleaner-offset-checkpoint unchanged); the files they replaced are kept in " + kept, 1,
        False)
    manifest = json.loads((Path(kept) / "manifest.json").read_text())
    assert manifest["reason"] == "segdex clean: replaced by cleaned segments"
    assert os.path.basename(manifest["pieces"][0]["source"]) == segment_name(0)


def _damaged_partition(part: Path, damaged: int, how: str) -> Path:
    """Segments 0, 2 and 4 (active) of two one-record batches each, every one with empty index files (as a clean
    start finds them: not recovered when opened); in segment ``damaged`` the second batch broken: ``crc`` a byte
    of its value (its CRC fails), ``size`` its size field 5, ``magic`` its magic byte 7."""
    import struct

    from segdex.indexcore.tools.segment_writer import build_batch

    part.mkdir(parents=True)
    for base in (0, 2, 4):
        first, second = (build_batch(o, [(T0 + o, bytes([97 + o % 3]), b"v")]) for o in (base, base + 1))
        data = bytearray(first + second)
        if base == damaged:
            if how == "crc":
                data[-2] ^= 1
            elif how == "size":
                struct.pack_into(">i", data, len(first) + 8, 5)
            elif how == "codec":
                data[len(first) + 22] |= 5
            else:
                data[len(first) + 16] = 7
        (part / segment_name(base)).write_bytes(bytes(data))
        for suffix in (".index", ".timeindex"):
            (part / (segment_name(base)[:-4] + suffix)).write_bytes(b"")
    return part


SERVED = "dirty ratio 1.000 > min.cleanable.dirty.ratio 0.5; damaged, served as it is: {path} byte 70 ({why}): {what}"
CARRIED = "carried through as Kafka's round carries it (its cleaner checks no CRC)"
FAILS = ("Kafka's cleaner fails this round (org.apache.kafka.common.errors.CorruptRecordException: {kafka}): a damaged "
         "batch at byte 70 of {path}, served as it is (a clean start does not re-read it); a broker marks the "
         "partition uncleanable and leaves it dirty")


def test_a_clean_starts_damaged_segments_are_served_as_they_are_and_said(tmp_path: Path):
    """A clean start does not re-read a segment with index files: a batch whose CRC fails is carried through by the
    round (Kafka's cleaner checks no CRC), or not read when the round stops before its segment (the high watermark
    at 2), each said in the plan's ``why``, also by ``--until-clean`` and an applied round; a size field below 14
    or a magic byte 7 fails the round where Kafka's does; in the active segment the load itself fails."""
    config, now = LogConfig(cleanup_policy="compact"), T0 + HOUR_MS

    def plan(damaged: int, how: str, **kwargs):
        part = _damaged_partition(tmp_path / f"{how}{damaged}" / "c-0", damaged, how)
        return part, plan_cleaning(str(part), config, CleanerConfig(), now, clean_shutdown=True, **kwargs)

    part, crc = plan(0, "crc")
    why = SERVED.format(path=part / segment_name(0), why="CorruptRecordException at position 70: Record is corrupt "
                        "(stored crc = 1396929550, computed crc = 1088547961); 70 valid bytes of 140", what=CARRIED)
    assert (crc.error, crc.why) == (None, why)
    assert plan_cleaning(str(part), config, CleanerConfig(), now, clean_shutdown=True, until_clean=True).why == why
    applied = clean_partition(str(part), config, CleanerConfig(), now, clean_shutdown=True, force=True)
    assert (applied.applied, applied.why) == (True, why)
    part, later = plan(2, "crc", high_watermark=2)
    assert later.why.endswith(f"{part / segment_name(2)} byte 70 (CorruptRecordException at position 70: Record is "
                              "corrupt (stored crc = 390064854, computed crc = 77427361); 70 valid bytes of 140): "
                              "not read by this round")
    for how, kafka in (("size", "Record size 5 is less than the minimum record overhead (14)"),
                       ("magic", "Invalid magic found in record: 7")):
        part, failed = plan(0, how)
        assert failed.error == FAILS.format(kafka=kafka, path=part / segment_name(0)), how
    _, active = plan(4, "size")
    assert active.error.startswith("not loaded: 00000000000000000004.log: corrupt_log_tail: ")
    # a magic byte above 2 passes the load (a v2 CRC does not cover it): served as it is, said, and failing only a
    # round that reads it; one the high watermark stops before it cleans
    part, unread = plan(2, "magic", high_watermark=2)
    assert (unread.error, unread.why) == (None, SERVED.format(path=part / segment_name(2), why="a magic byte above 2",
                                                              what="not read by this round"))


def test_the_load_starts_the_log_at_its_log_start_offset_checkpoint(tmp_path: Path):
    """``LogLoader.load``: the log starts at the greater of the ``log-start-offset-checkpoint`` entry and the first
    segment's base offset."""
    part = _damaged_partition(tmp_path / "c-0", -1, "none")
    config, now = LogConfig(cleanup_policy="compact"), T0 + HOUR_MS
    assert load_for_cleaning(str(part), config, now, log_start_offset_checkpoint=3).log_start_offset == 3
    assert load_for_cleaning(str(part), config, now).log_start_offset == 0


def test_a_compression_id_kafka_does_not_know_fails_the_round_that_reads_its_records(tmp_path: Path):
    """A served batch whose attributes name compression id 5: Kafka's round throws ``CompressionType.forId``'s
    ``IllegalArgumentException`` where it reads the batch's records (building the offset map over segment 0, or
    cleaning segment 2 into its group), and the applied round changes nothing; a round that stops before the
    segment (the high watermark at 2) never reads it and cleans."""
    config, now = LogConfig(cleanup_policy="compact"), T0 + HOUR_MS
    fails = ("Kafka's cleaner fails this round (java.lang.IllegalArgumentException: Unknown compression type id: 5): "
             "a damaged batch at byte 70 of {path}, served as it is (a clean start does not re-read it); a broker "
             "marks the partition uncleanable and leaves it dirty")
    for damaged in (0, 2):
        part = _damaged_partition(tmp_path / str(damaged) / "c-0", damaged, "codec")
        failed = plan_cleaning(str(part), config, CleanerConfig(), now, clean_shutdown=True)
        assert failed.error == fails.format(path=part / segment_name(damaged)), damaged
        before = _live(part)
        applied = clean_partition(str(part), config, CleanerConfig(), now, clean_shutdown=True, force=True)
        assert (applied.applied, applied.error, _live(part)) == (False, f"{failed.error}; nothing was changed", before)
    part = _damaged_partition(tmp_path / "hw" / "c-0", 2, "codec")
    bounded = clean_partition(str(part), config, CleanerConfig(), now, clean_shutdown=True, force=True,
                              high_watermark=2)
    assert (bounded.applied, bounded.error, bounded.why.endswith("not read by this round")) == (True, None, True)


def test_a_plan_loads_at_its_clock_and_carries_the_checkpoint_it_was_given(tmp_path: Path):
    """Producer 7's only batch is superseded: while the producer is active (an hour on) the round keeps it as an
    empty batch (61 bytes); once it has been idle past ``producer.id.expiration.ms`` (a day) at the plan's clock,
    the load drops the producer and the batch goes. The checkpoint given is the plan's."""
    from segdex.indexcore.tools.segment_writer import build_batch

    part = _written(tmp_path / "c-0", {0: [build_batch(0, [(T0, b"a", b"1")], producer_id=7, producer_epoch=0,
                                                       base_sequence=0), _plain(1, b"a")], 2: [_plain(2, b"b")]})
    config = LogConfig(cleanup_policy="compact")
    kept = _plain(1, b"a")
    for now, after in ((T0 + HOUR_MS, len(kept) + 61), (T0 + 25 * HOUR_MS, len(kept))):
        plan = plan_cleaning(str(part), config, CleanerConfig(), now, checkpoint=0)
        assert (plan.checkpoint, plan.bytes_after) == (0, after), now  # the round's range: segment 0


def test_a_segment_served_as_it_is_keeps_what_its_files_say(tmp_path: Path):
    """``_served_as_is`` on segment 2 of ``_damaged_partition`` (a size field of 5 in its second batch, an index
    file with one entry at its first batch): its ``readNextOffset`` throws, so its next offset is its base and the
    error is Kafka's, naming the file; its sizes, modification time, indexes and first timestamp are the files'.
    As the log's last segment it is not served (the load itself throws)."""
    import struct

    from segdex.indexcore.index.transaction_index import AbortedTxn
    from segdex.indexcore.log.log_cleaner import _served_as_is
    from segdex.indexcore.log.log_cleaner_manager import SegmentFacts

    part = _damaged_partition(tmp_path / "c-0", 2, "size")
    path = str(part / segment_name(2))
    (part / (segment_name(2)[:-4] + ".index")).write_bytes(struct.pack(">ii", 0, 0))
    txn = AbortedTxn(7, 2, 3, 4)
    (part / (segment_name(2)[:-4] + ".txnindex")).write_bytes(txn.to_bytes())  # sane for base 2
    os.utime(path, ns=(1_700_000_000_123_456_789,) * 2)
    config = LogConfig(cleanup_policy="compact", segment_index_bytes=800)
    seg, facts = _served_as_is(path, 2, config, last=False)
    assert (seg.base_offset, seg.size, seg.mtime_ms, seg.next_offset, seg.as_is) == (
        2, 140, 1_700_000_000_123, 2, True)
    assert (seg.offset_index.entries(), seg.offset_index.max_entries, seg.time_index_entries, seg.aborted) == (
        [(2, 0)], 100, 0, [txn])
    assert seg.next_offset_error == (
        "org.apache.kafka.common.errors.CorruptRecordException: Found record size 5 smaller than minimum record "
        f"overhead (14) in file {os.path.abspath(path)}.")
    assert facts == SegmentFacts(2, 140, 1_700_000_000_123, T0 + 2)
    assert _served_as_is(path, 2, config, last=True) is None


def test_the_first_batch_with_a_magic_byte_above_2_is_found_by_position(tmp_path: Path):
    """``_bad_magic_at``: the position of the first batch whose magic byte is above 2 (3 is), not one of magic 2
    after a v1 message; 0 where there is none."""
    from segdex.indexcore.log.log_cleaner import _bad_magic_at
    from segdex.indexcore.tools.segment_writer import build_batch, legacy_message

    log = tmp_path / segment_name(0)
    v1, v2 = legacy_message(0, b"k", b"v", timestamp=T0), build_batch(1, [(T0, b"k", b"v")])
    log.write_bytes(v1 + v2)
    assert _bad_magic_at(str(log)) == 0
    bad = bytearray(build_batch(2, [(T0, b"k", b"v")]))
    bad[16] = 3
    log.write_bytes(v1 + v2 + bytes(bad))
    assert _bad_magic_at(str(log)) == len(v1) + len(v2)


def test_an_applied_round_meets_a_served_segments_damage_before_writing_a_group(tmp_path: Path):
    """A segment cleaned already (the checkpoint at 7) and served as it is with a size field of 5: Kafka's round
    throws there, after swapping in the group of segment 0 (``segment.bytes`` 280 makes the groups [0], [3, 5],
    [7]); segdex meets the damage before the first group is written, in the group's second segment (5, its next
    offset read) or its first (3, its batches read), so the partition is left as it was. So too for a batch whose
    compression id Kafka does not know (5), whose records Kafka's round reads in the group of segment 3: that is
    found only by cleaning up to it, into nothing, before the first write. So too for a magic byte 7 in segment 3,
    which the load passes (a v2 CRC does not cover it) and marks served as it is."""
    import struct

    from segdex.indexcore.tools.segment_writer import build_batch

    for damaged, how in ((5, "size"), (3, "size"), (3, "codec"), (3, "magic")):
        part = tmp_path / f"{how}{damaged}" / "c-0"
        part.mkdir(parents=True)
        for base, n in ((0, 3), (3, 2), (5, 2), (7, 2), (9, 1)):
            data = bytearray(b"".join(build_batch(o, [(T0 + o, bytes([97 + o % 3]), b"v")])
                                      for o in range(base, base + n)))
            if base == damaged and how == "size":
                struct.pack_into(">i", data, 70 + 8, 5)
            elif base == damaged and how == "magic":  # passes the load: a v2 CRC does not cover it
                data[70 + 16] = 7
            elif base == damaged:
                data[70 + 22] |= 5
            (part / segment_name(base)).write_bytes(bytes(data))
            for suffix in (".index", ".timeindex"):
                (part / (segment_name(base)[:-4] + suffix)).write_bytes(b"")
        before = _live(part)
        config = LogConfig(cleanup_policy="compact", segment_bytes=280)
        plan = clean_partition(str(part), config, CleanerConfig(), T0 + HOUR_MS, checkpoint=7, clean_shutdown=True,
                               force=True, threads=1)
        log = part / segment_name(damaged)
        kafka, where = {
            (5, "size"): ("org.apache.kafka.common.errors.CorruptRecordException: Found record size 5 smaller than "
                          f"minimum record overhead (14) in file {log}.", f"reading to the end of {log}"),
            (3, "size"): ("org.apache.kafka.common.errors.CorruptRecordException: Record size 5 is less than the "
                          "minimum record overhead (14)", f"a damaged batch at byte 70 of {log}"),
            (3, "codec"): ("java.lang.IllegalArgumentException: Unknown compression type id: 5",
                           f"a damaged batch at byte 70 of {log}"),
            (3, "magic"): ("org.apache.kafka.common.errors.CorruptRecordException: Invalid magic found in record: 7",
                           f"a damaged batch at byte 70 of {log}")}[damaged, how]
        assert plan.error == (f"Kafka's cleaner fails this round ({kafka}): {where}, served as it is (a clean start "
                              "does not re-read it); a broker marks the partition uncleanable and leaves it dirty; "
                              "nothing was changed"), damaged
        assert (plan.swapped_groups, _live(part)) == (0, before)


def _room_group(part: Path, sizes: dict[int, int]) -> list:
    """Segments at these bases, each .log of 10 bytes and a .index of one entry on disk, as the cleaner reads
    them with the given (claimed) sizes, 2 offset entries and 3 time entries each."""
    from segdex.indexcore.index.offset_index import OffsetIndex

    group = []
    for base, size in sizes.items():
        (part / segment_name(base)).write_bytes(b"x" * 10)
        (part / (segment_name(base)[:-4] + ".index")).write_bytes(bytes(8))
        index = OffsetIndex(base, 1 << 20)
        index.append(base, 0)
        index.append(base + 1, 5)
        group.append(cleaner.CleanerSegment(str(part / segment_name(base)), base, size, 0, index, 3, [], base + 2))
    return group


def test_a_swap_writer_needs_room_for_a_groups_files_and_the_originals_it_keeps(tmp_path: Path):
    """``SwapWriter._needs``: a group's cleaned files at most (each segment's bytes, offset entries of 8 bytes,
    time entries and two more of 12, 4 KiB), and the bytes of the originals a quarantine keeps (none without
    one); ``_short`` and ``begin`` ask the filesystems for that room, beside the partition and in the quarantine
    (together where they share one): a round that cannot have it writes nothing."""
    import re

    from segdex.indexcore.log.log_cleaner import QuarantineSession, SwapWriter, _ShortOfRoom

    part = tmp_path / "c-0"
    part.mkdir()
    group = _room_group(part, {0: 100, 5: 50})
    out = (100 + 16 + 5 * 12 + 4096) + (50 + 16 + 5 * 12 + 4096)
    assert SwapWriter(str(part), None, None)._needs(group) == (out, 0)
    quarantine = str(tmp_path / "q")
    session = QuarantineSession(str(part), quarantine, "r1", "test")
    kept = SwapWriter(str(part), session, quarantine)
    assert kept._needs(group) == (out, 2 * (10 + 8))
    (part / "00000000000000000000.snapshot").write_bytes(b"x" * 7)  # the cleaned segment's own: stays
    (part / "00000000000000000005.snapshot").write_bytes(b"x" * 3)  # a replaced base's: goes, kept
    assert kept._needs(group) == (out, 2 * (10 + 8) + 3)
    for name in ("00000000000000000000.snapshot", "00000000000000000005.snapshot"):
        (part / name).unlink()
    huge = 10 ** 18

    def short(text: str | None, where: Path, need: int) -> bool:
        return text is not None and re.fullmatch(rf"{re.escape(str(where))}: [\d,]+ bytes free, {need:,} needed",
                                                 text) is not None

    assert SwapWriter(str(part), None, None)._short(out, 0) is None
    assert short(SwapWriter(str(part), None, None)._short(huge, 0), part, huge)
    assert short(kept._short(huge, 7), part, huge + 7)  # the quarantine on the partition's filesystem
    with pytest.raises(_ShortOfRoom) as e:  # the largest group's output (no quarantine)
        SwapWriter(str(part), None, None).begin([_room_group(part, {0: huge}), _room_group(part, {5: 2 * huge})], 7)
    assert str(e.value).endswith(f"{2 * huge + 16 + 60 + 4096:,} needed; nothing was changed")
    with pytest.raises(_ShortOfRoom) as e:  # outputs so far plus a group's copies, at their most
        kept.begin([_room_group(part, {0: huge}), _room_group(part, {5: 2 * huge})], 7)
    assert str(e.value).endswith(f"{3 * huge + 2 * (16 + 60 + 4096) + 18:,} needed; nothing was changed")
    SwapWriter(str(part), None, None).begin([], 0)  # no group: nothing asked
    other = Path("/dev/shm")
    if other.is_dir() and os.stat(other).st_dev != os.stat(tmp_path).st_dev:  # a quarantine elsewhere
        apart = SwapWriter(str(part), QuarantineSession(str(part), str(other / "q"), "r1", "test"), str(other / "q"))
        assert apart._short(out, 10) is None
        assert short(apart._short(out, huge), other, huge)
        assert short(apart._short(huge, 10), part, huge)
        with pytest.raises(_ShortOfRoom) as e:  # the largest group's output beside the partition, not a peak
            apart.begin([_room_group(part, {0: huge})], 7)
        assert str(e.value).endswith(f" {huge + 16 + 60 + 4096:,} needed; nothing was changed")


def test_a_swap_writer_opens_a_group_only_with_room_and_names_what_it_will_write(tmp_path: Path):
    """``SwapWriter.open`` with a quarantine: without room for the group it stops before its first segment;
    else it keeps the originals and names the group's files in the partition as written by this run (the restore
    lines remove them), then opens the temporary its ``.log`` streams into."""
    from segdex.indexcore.log.log_cleaner import QuarantineSession, SwapWriter, _ShortOfRoom

    part = tmp_path / "c-0"
    part.mkdir()
    quarantine = str(tmp_path / "q")
    session = QuarantineSession(str(part), quarantine, "r1", "test")
    writer = SwapWriter(str(part), session, quarantine)
    with pytest.raises(_ShortOfRoom) as e:
        writer.open(_room_group(part, {5: 10 ** 18, 7: 1}))
    assert str(e.value).startswith(f"stopped before segment 5: {part}: ")
    file = writer.open(_room_group(part, {0: 10}))
    file.close()
    stem = os.path.realpath(part / segment_name(0)[:-4])
    assert {stem + suffix for suffix in (".log", ".index", ".timeindex", ".txnindex")} <= session.written
    writer.abort()


def test_an_applied_round_counts_every_group_it_swapped_in_before_it_failed(tmp_path: Path):
    """Segments 0 and 4 (large) are groups of their own and are swapped in; 8 and 12 (their index files empty, a
    clean start keeps them) merge and outgrow the time index: two groups swapped in before the failure."""
    part = tmp_path / "c-0"
    part.mkdir()
    for base, n, value in ((0, 4, b"v" * 200), (4, 4, b"v" * 200), (8, 4, b"v"), (12, 4, b"v"), (16, 1, b"v")):
        (part / segment_name(base)).write_bytes(b"".join(_plain(o, b"k%d" % o, values=value)
                                                         for o in range(base, base + n)))
        if base in (8, 12):
            for suffix in (".index", ".timeindex"):
                (part / (segment_name(base)[:-4] + suffix)).write_bytes(b"")
    config = LogConfig(cleanup_policy="compact", index_interval_bytes=1, segment_index_bytes=48,
                       segment_bytes=1088 + 284 - 1)
    plan = clean_partition(str(part), config, CleanerConfig(), T0 + HOUR_MS, force=True, clean_shutdown=True)
    assert plan.swapped_groups == 2 and "; the 2 cleaned segments before it were swapped in" in plan.error


def test_a_plan_of_a_partition_that_cannot_be_read_says_why(tmp_path: Path):
    """A partition directory that is not there: the plan's error is the system's reason (``strerror``)."""
    plan = plan_cleaning(str(tmp_path / "gone-0"), LogConfig(cleanup_policy="compact"), CleanerConfig(), T0)
    assert plan.error == "not loaded: No such file or directory"


def test_two_damaged_segments_are_each_said(tmp_path: Path):
    """Segments 0 and 2 each with a batch whose CRC fails, both carried through: two notes, one after the other."""
    part = _damaged_partition(tmp_path / "c-0", 0, "crc")
    other = _damaged_partition(tmp_path / "other" / "c-0", 2, "crc")
    shutil.copy(other / segment_name(2), part / segment_name(2))
    plan = plan_cleaning(str(part), LogConfig(cleanup_policy="compact"), CleanerConfig(), T0 + HOUR_MS,
                         clean_shutdown=True)
    notes = plan.why.split("; damaged, served as it is: ")[1]
    assert notes.count(CARRIED) == 2 and f"{CARRIED}; {part / segment_name(2)} byte 70 (" in notes


def test_a_plan_meets_a_batch_cut_short_with_its_read_buffer_grown_to_the_limit(tmp_path: Path):
    """Segment 0's second batch cut to 40 of its 70 bytes, served as it is: Kafka's read grows its buffer from
    ``log.cleaner.io.buffer.size`` to ``message.max.bytes`` and throws; the plan says so with those sizes."""
    part = _damaged_partition(tmp_path / "c-0", 2, "crc")  # segment 2 as a clean start serves it, CRC aside
    whole = (part / segment_name(0)).read_bytes()
    (part / segment_name(0)).write_bytes(whole[:70 + 40])
    plan = plan_cleaning(str(part), LogConfig(cleanup_policy="compact"), CleanerConfig(), T0 + HOUR_MS,
                         clean_shutdown=True)
    assert plan.error.startswith("Kafka's cleaner fails this round (java.lang.IllegalStateException: Batch size 70 < "
                                 "buffer size 1048588, but not processed for log segment "), plan.error


# --- rounds and loads at the edges the mutation run found untold (issue 42), judged by Kafka's own code -----------
# Kafka's answers are recorded in tests/kafka/golden/cleaner_mutant_rounds.json (``SEGDEX_RECORD_GOLDEN=1`` records
# them), so that the mutation run (no JVM) checks them too.

MUTANT_ROUNDS = GOLDEN / "cleaner_mutant_rounds.json"


def _patched(oracle, patch: dict[str, tuple[int, bytes]]):
    """``oracle`` (a ``RecordingOracle`` or ``RecordedOracle``, its state shared) whose start also writes ``patch``
    (file name: (position, bytes)) into the partition once Kafka's load has written its files: an index file Kafka
    wrote, damaged before both sides load it again."""

    class Patched(type(oracle)):
        def load(self, part: Path, *args, **kwargs) -> dict:
            answer = super().load(part, *args, **kwargs)
            for name, (position, data) in patch.items():
                with open(part / name, "r+b") as f:
                    f.seek(position)
                    f.write(data)
            return answer

    patched = Patched.__new__(Patched)
    patched.__dict__ = oracle.__dict__
    return patched


def _one(offset: int, key: bytes, size: int = 1, **kwargs) -> bytes:
    return build_batch(offset, [(T0 + offset, key, b"v" * size)], **kwargs)


def _size_field(size_in_bytes: int) -> bytes:
    """A batch's size field for a batch of ``size_in_bytes`` bytes in all."""
    return struct.pack(">i", size_in_bytes - 12)


def _edges(oracle, tmp_path: Path) -> None:
    """Rounds of ``judge_given`` (one round after Kafka's clean start and stop, compared with Kafka's: what it
    throws, or every file it cleans), each at an edge no other judged case reaches:

    - a v2 batch exactly 51 bytes long below the first dirty offset: ``checkBatchRetention`` reads its producer id
      (its last 8 bytes) and the round throws only where ``filterBatch`` positions it at its records (byte 61);
    - a v1 message whose key length lies past its end (a size field of 14), the first of its segment, met by the
      offset map's build just after the map filled: ``hasKey`` throws before the map says it is full;
    - a gzip v1 message set with LogAppendTime holding v0 messages (no timestamps of their own), rebuilt as a v2
      batch whose max timestamp is the wrapper's append time (``buildRetainedRecordsInto``), not its records' -1;
    - a v2 batch (3..6) in segment 5, its records 5 and 6 superseded, gzip and uncompressed (the C kernel's
      rebuild): its rebuilt form's largest kept offset, 4, lies below the cleaned segment's base, which Kafka's
      append checks (not the batch's last offset, 6), and the round fails (segment 5 does not overflow its own base,
      so it is not split);
    - a batch before the first dirty offset whose size field runs past the segment's end, in the segment where the
      map filled after a batch of 3,000 bytes: the round's first ``cleanInto`` reads with the buffer the build grew
      (4,096 bytes, not the 1,024 of a fresh one), so the damaged batch is "not processed", not corrupt."""
    config = LogConfig(cleanup_policy="compact", index_interval_bytes=1)
    now, io = T0 + 10 * HOUR_MS, (262_144, 1_048_588)
    first = [_one(0, b"a"), _one(1, b"b"), _one(2, b"c"), _one(3, b"d")]
    v = judge_given(oracle, tmp_path / "case", {0: b"".join(first), 4: _one(4, b"e")}, config, now, 24 * 100, io, 3,
                    damage={0: (len(first[0]) + 8, _size_field(51))})
    assert not v.mismatches and v.kafka_threw == "java.lang.IllegalArgumentException: newPosition > limit: (61 > 51)"

    legacy = {0: build_legacy(0, [(T0, b"a", b"v"), (T0 + 1, b"b", b"v")]),
              2: build_legacy(2, [(T0 + 2, b"c", b"v"), (T0 + 3, b"d", b"v")]),
              4: build_legacy(4, [(T0 + 4, b"e", b"v")])}
    v = judge_given(oracle, tmp_path / "case", legacy, LogConfig(cleanup_policy="compact"), now, 24 * 3, io, None,
                    damage={2: (8, struct.pack(">i", 14))})
    assert not v.mismatches and v.kafka_threw == "java.lang.IndexOutOfBoundsException: null", v

    inner = legacy_message(0, b"a", b"1", magic=0) + legacy_message(1, b"b", b"1", magic=0)
    wrapper = legacy_message(1, None, compress(1, inner), magic=1, attributes=1 | 0x08, timestamp=T0 + 5_000)
    v = judge_given(oracle, tmp_path / "case", {0: wrapper + build_legacy(2, [(T0 + 2, b"a", b"2")]),
                                                3: build_legacy(3, [(T0 + 3, b"c", b"1")])},
                    LogConfig(cleanup_policy="compact"), now, 24 * 100, io, None)
    assert not v.mismatches and v.rounds == 1 and v.kafka_threw is None, v
    rebuilt = next(batches_of((tmp_path / "case" / "ours" / "c-0" / segment_name(0)).read_bytes()))
    assert (rebuilt.magic, rebuilt.max_timestamp) == (2, T0 + 5_000)

    clean = _one(0, b"x") + _one(1, b"y") + _one(2, b"z")
    for codec in (1, 0):  # gzip: rebuilt in Python; uncompressed: by the kernel where it is built
        below = build_batch(3, [(T0 + o, k, b"1") for o, k in ((3, b"a"), (4, b"b"), (5, b"c"), (6, b"d"))],
                            compression=codec)
        v = judge_given(oracle, tmp_path / "case", {0: clean, 5: below, 7: build_batch(7, [(T0 + 7, b"c", b"2"),
                                                                                          (T0 + 8, b"d", b"2")]),
                                                    9: _one(9, b"e")},
                        LogConfig(cleanup_policy="compact", segment_bytes=len(clean) + 1), now, 24 * 100, io, None)
        assert not v.mismatches and (v.kafka_threw or "").startswith(
            "java.lang.IllegalArgumentException: Split operation is only permitted for segments with overflow"), v

    grown = [_one(0, b"a"), _one(1, b"b"), _one(2, b"c"), _one(3, b"d"), _one(4, b"big", 3000), _one(5, b"f"),
             _one(6, b"g")]
    assert sum(map(len, grown[2:])) < 3800 < 4096
    v = judge_given(oracle, tmp_path / "case", {0: b"".join(grown), 7: _one(7, b"h")},
                    LogConfig(cleanup_policy="compact", index_interval_bytes=1, max_message_bytes=600), now, 24 * 3,
                    (64, 2_500_000), 3, damage={0: (sum(map(len, grown[:2])) + 8, _size_field(3800))})
    assert not v.mismatches and (v.kafka_threw or "").startswith(
        "java.lang.IllegalStateException: Batch size 3800 < buffer size 4096, but not processed"), v


def _txn(offset: int, pid: int, key: bytes) -> bytes:
    return build_batch(offset, [(T0 + offset, key, b"t")], producer_id=pid, producer_epoch=0, base_sequence=0,
                       is_transactional=True)


def _marker(offset: int, pid: int, kind: str) -> bytes:
    return build_batch(offset, [], producer_id=pid, producer_epoch=0, control=(kind, 0), control_timestamp=T0 + offset)


def _aborted_in_a_middle_segment(oracle, tmp_path: Path) -> None:
    """A group of three segments (0, 3, 7; then 9 alone, 11 active): producer 2's transaction begins at 1 in
    segment 0 and is aborted at 5 in segment 3, whose ``.txnindex`` lists producer 1's aborted transaction (3 to
    4) first, its last stable offset set to 4 (Kafka wrote 1). ``cleanSegments`` asks each segment for the aborted
    transactions below the next one's base: for segment 0 (below 3) the search stops at that entry (4 reaches 3)
    before producer 2's, which segment 3's search (below 7) takes in, after its data at 1 was read as committed
    data: kept, and producer 2's commit marker at 9 (the next group) kept as the end of committed data."""
    segs = {0: _one(0, b"a") + _txn(1, 2, b"p") + _one(2, b"b"),
            3: _txn(3, 1, b"q") + _marker(4, 1, "ABORT") + _marker(5, 2, "ABORT") + _one(6, b"c"),
            7: _one(7, b"d") + _one(8, b"e"),
            9: _marker(9, 2, "COMMIT") + _one(10, b"f"),
            11: _one(11, b"g")}
    config = LogConfig(cleanup_policy="compact", segment_bytes=sum(len(segs[b]) for b in (0, 3, 7)))
    first_lso = 26  # the .txnindex entry's last stable offset: after its version (2) and three longs
    patched = _patched(oracle, {segment_name(3)[:-4] + ".txnindex": (first_lso, struct.pack(">q", 4))})
    v = judge_given(patched, tmp_path / "case", segs, config, T0 + 10 * HOUR_MS, 24 * 100, (262_144, 1_048_588),
                    None)
    assert not v.mismatches and v.rounds == 1 and v.kafka_threw is None, v
    cleaned = (tmp_path / "case" / "ours" / "c-0" / segment_name(0)).read_bytes()
    assert [(b.base_offset, b.producer_id) for b in batches_of(cleaned)][:2] == [(0, -1), (1, 2)]


def _loads(oracle, tmp_path: Path) -> None:
    """A v1 log whose segment 2 starts with a compressed message set of a null value, started once by Kafka with
    its log start at 5 (its indexes and snapshots written), then loaded again as the three settings of a start
    decide: after a clean shutdown (with a recovery point of 0), after an unclean one with the recovery point at the
    log end, with the log start checkpointed at 5. Each time the producer-state replay's reads do not reach the
    message set and the load succeeds: ``load_for_cleaning``'s dry run of the start (``preview_start``), asked with
    the same settings, agrees (a clean flag, recovery point or log start of none would make it read there and
    fail)."""
    part = tmp_path / "started" / "c-0"
    part.mkdir(parents=True)
    segments = {0: build_legacy(0, [(T0, b"a", b"v"), (T0 + 1, b"b", b"v")]),
                2: legacy_message(3, None, None, magic=1, attributes=1, timestamp=T0 + 3)
                + build_legacy(4, [(T0 + 4, b"c", b"v")]),
                5: build_legacy(5, [(T0 + 5, b"d", b"v")]), 6: build_legacy(6, [(T0 + 6, b"e", b"v")])}
    for base, data in segments.items():
        (part / segment_name(base)).write_bytes(data)
    now = T0 + 10_000
    assert oracle.load(part, now, log_start_offset=5, recovery_point=0, clean=False)["logEndOffset"] == 7
    for clean, recovery_point, log_start in ((True, 0, 0), (False, 7, 0), (False, 0, 5)):
        ours, theirs = (tmp_path / f"{side}-{clean}-{recovery_point}-{log_start}" / "c-0" for side in ("o", "t"))
        shutil.copytree(part, ours)
        shutil.copytree(part, theirs)
        answer = oracle.load(theirs, now, log_start_offset=log_start, recovery_point=recovery_point, clean=clean)
        loaded = load_for_cleaning(str(ours), LogConfig(cleanup_policy="compact"), now,
                                   log_start_offset_checkpoint=log_start, clean_shutdown=clean,
                                   recovery_point=recovery_point)
        assert (loaded.log_start_offset, loaded.log_end_offset) == (answer["logStartOffset"], answer["logEndOffset"])


MUTANT_JUDGED = {"edges": _edges, "aborted in a middle segment": _aborted_in_a_middle_segment, "loads": _loads}


@pytest.mark.parametrize("name", list(MUTANT_JUDGED))
def test_the_edge_rounds_and_loads_equal_kafkas(kafka44, tmp_path: Path, name: str):
    """The cases above against Kafka 4.4's own round and load; its answers equal the recorded ones."""
    recording = RecordingOracle(kafka44)
    MUTANT_JUDGED[name](recording, tmp_path)
    keep_recording(name, recording, MUTANT_ROUNDS)


@pytest.mark.parametrize("threads", ["1", "2"])
@pytest.mark.parametrize("name", list(MUTANT_JUDGED))
def test_the_edge_rounds_and_loads_equal_kafkas_recorded_answers(tmp_path: Path, name: str, threads: str,
                                                                 monkeypatch):
    """The cases above against Kafka's recorded answers, in the test process (the mutation run's check), the round
    in one thread and split over two (``SEGDEX_CLEAN_THREADS``)."""
    monkeypatch.setenv(cleaner.THREADS_ENV, threads)
    kafka = recorded(name, MUTANT_ROUNDS)
    MUTANT_JUDGED[name](kafka, tmp_path)
    assert not kafka.recorded


def test_a_swap_writer_with_a_quarantine_elsewhere_needs_room_there_for_every_original(tmp_path: Path):
    """A quarantine on another filesystem than the partition's (``/dev/shm``, a tmpfs): ``begin`` asks it for room
    for every original the round replaces, beside the partition only for the largest group's output. Originals
    (a sparse ``.log``) larger than the quarantine's free room refuse the round before its first write, though the
    partition's filesystem has room for the output."""
    from segdex.indexcore.log.log_cleaner import QuarantineSession, SwapWriter, _ShortOfRoom

    other = Path("/dev/shm")
    if not other.is_dir() or os.stat(other).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no tmpfs apart from the test's directory at /dev/shm")
    part = tmp_path / "c-0"
    part.mkdir()
    group = _room_group(part, {0: 10})
    st = os.statvfs(other)
    originals = st.f_bavail * st.f_frsize + (2 << 20)  # past the quarantine's free room, a mebibyte to spare too
    os.truncate(part / segment_name(0), originals - 8)  # with the .index's 8 bytes
    quarantine = str(other / f"segdex-test-{os.getpid()}" / "q")  # never created: the round stops first
    writer = SwapWriter(str(part), QuarantineSession(str(part), quarantine, "r1", "test"), quarantine)
    assert writer._needs(group)[1] == originals and writer._short(writer._needs(group)[0], 0) is None
    with pytest.raises(_ShortOfRoom) as e:
        writer.begin([group], 2)
    assert str(e.value).startswith(f"{other}: ") and str(e.value).endswith(
        f" bytes free, {originals:,} needed; nothing was changed")
    assert not os.path.exists(os.path.dirname(quarantine))


# --- rounds whose failure an operator reads word for word (the plan's error), and one read only a round that ends
# a read early on its output tells apart, judged by Kafka 4.4's own start and round (``judge_given``); recorded in
# ``cleaner_wording.json`` so that the mutation run (no JVM) checks them too.

WORDING_ROUNDS = GOLDEN / "cleaner_wording.json"
ROUND_FAILS = ("Kafka's cleaner fails this round ({kafka}): {what}; a broker marks the partition uncleanable and "
               "leaves it dirty")


def _failed_round(part: Path, config: LogConfig, cleaner_config: CleanerConfig, now: int, checkpoint: int | None,
                  leo: int) -> tuple[str | None, LogCleaningException]:
    """The plan's error for the round of ``judge_given`` over ``part`` (a clean start, the recovery point at the log
    end ``leo``), and the exception that round raises."""
    from segdex.indexcore.log.log_cleaner import _prepare

    plan = plan_cleaning(str(part), config, cleaner_config, now, checkpoint=checkpoint, clean_shutdown=True,
                         recovery_point=leo)
    _, prepared = _prepare(str(part), config, cleaner_config, now, 0, None, checkpoint, None, True, leo)
    with pytest.raises(LogCleaningException) as e:
        prepared.clean()
    return plan.error, e.value


def _wording(oracle, tmp_path: Path) -> None:
    """Two rounds Kafka's cleaner fails, each said in the plan's error with Kafka's exception, where and why, and a
    start that fails, said as the dry run of the start says it:

    - a v2 batch (offset 1, the second of segment 0) whose record's length varint reads 9, one byte past the batch:
      the offset map's build reads its records and Kafka's reader refuses them (``DefaultRecord.readFrom``); the
      error names the batch's file and byte position, which the exception carries too (``path``, ``position``);
    - segment 100's third batch rewritten to offset 50, an index entry every byte: the cleaned segment's offset
      index refuses 50 after 101 (``OffsetIndex.append``'s ``InvalidOffsetException``), naming the cleaned index
      file (``_CleanedLog._failed``);
    - an entry of version 256 in segment 0's ``.txnindex``: Kafka's load throws (``TransactionIndex.sanityCheck``),
      the broker does not start, and no round is planned (``load_for_cleaning``'s ``preview_start``)."""
    config, now = LogConfig(cleanup_policy="compact"), T0 + 10 * HOUR_MS
    first = [_one(0, b"a"), _one(1, b"b")]
    work = tmp_path / "refused"
    v = judge_given(oracle, work, {0: b"".join(first), 2: _one(2, b"c") + _one(3, b"d"), 4: _one(4, b"e")}, config,
                    now, 24 * 100, (262_144, 1_048_588), None, damage={0: (len(first[0]) + 61, b"\x12")})
    kafka = ("org.apache.kafka.common.InvalidRecordException: Invalid record size: expected 9 bytes in record "
             "payload, but instead the buffer has only 8 remaining bytes.")
    assert not v.mismatches and v.kafka_threw == kafka, v
    part = work / "ours" / "c-0"
    path = str(part / segment_name(0))
    error, e = _failed_round(part, config, CleanerConfig(), now, None, 5)
    assert error == str(e) == ROUND_FAILS.format(kafka=kafka, what=f"the batch at byte {len(first[0])} of {path}, "
                                                                   f"whose records Kafka's reader refuses")
    assert (e.kafka_exception, e.path, e.position) == (kafka, path, len(first[0]))

    config = LogConfig(cleanup_policy="compact", index_interval_bytes=1)
    seg = [_one(100 + i, b"k%d" % i) for i in range(10)]
    work = tmp_path / "index"
    v = judge_given(oracle, work, {100: b"".join(seg), 110: _one(110, b"z") + _one(111, b"y"),
                                   112: _one(112, b"x") + _one(113, b"w")}, config, now, 24 * 100, (200, 2_500_000),
                    108, damage={100: (2 * len(seg[0]), struct.pack(">q", 50))})
    part = work / "ours" / "c-0"
    index = part / (segment_name(100)[:-4] + ".index.cleaned")
    kafka = ("org.apache.kafka.common.errors.InvalidOffsetException: Attempt to append an offset 50 to position 1 no "
             f"larger than the last offset appended (101) to {index}")
    assert not v.mismatches and v.kafka_threw == kafka, v
    error, e = _failed_round(part, config, CleanerConfig(dedupe_buffer_size=24 * 100, io_buffer_size=400), now, 108,
                             114)
    assert error == str(e) == ROUND_FAILS.format(kafka=kafka, what="an offset its cleaned segment 100's index "
                                                                   "refuses (a batch's offset rewritten below the one "
                                                                   "before it)")

    ours, theirs = (tmp_path / "txn" / side / "c-0" for side in ("ours", "theirs"))
    for part in (ours, theirs):
        part.mkdir(parents=True)
        for base in (0, 2):
            (part / segment_name(base)).write_bytes(_one(base, b"a") + _one(base + 1, b"b"))
            (part / (segment_name(base)[:-4] + ".index")).write_bytes(b"")
        (part / (segment_name(0)[:-4] + ".txnindex")).write_bytes(struct.pack(">hqqqq", 256, 7, 0, 1, 2))
    answer = oracle.load(theirs, now)
    assert "Unexpected aborted transaction version 256" in answer.get("exception", ""), answer
    plan = plan_cleaning(str(ours), LogConfig(cleanup_policy="compact"), CleanerConfig(), now)
    assert plan.error == ("not loaded: the broker's load fails: unexpected aborted transaction version 256 in "
                          "00000000000000000000.txnindex; the broker will not start (LogManager.loadLogs rethrows it: "
                          "\"Error starting LogManager\")")


def _filtered_after_an_early_read(oracle, tmp_path: Path) -> None:
    """Segment 100's 120 v1 messages of 38 bytes, each rebuilt as a v2 batch of 72, read 4,096 bytes at a time:
    the first read's output outgrows the write buffer after 57 of them, and ``filterTo`` returns there (its input
    would hold 107). Those 57 are rewritten below the cleaned segment's base (offsets 40-96), message 110 names an
    unknown codec, the checkpoint at 220 (the build reads segment 220 only). Kafka's round appends the first read,
    whose largest offset (96) overflows the cleaned segment, before it reads message 110: it throws the split's
    failure, not the codec's (a read ending at 107 would end with 206, which fits)."""
    msgs = [_one(100 + i, b"%03d" % i, magic=1) for i in range(120)]
    codec = bytearray(msgs[110])
    codec[17] = (codec[17] & ~7) | 5  # the v1 message's attributes
    damage = b"".join(struct.pack(">q", 40 + i) + msgs[i][8:] for i in range(57)) + b"".join(msgs[57:110]) + codec
    segments = {100: b"".join(msgs), 220: _one(220, b"z", magic=1) + _one(221, b"y", magic=1),
                222: _one(222, b"x", magic=1) + _one(223, b"w", magic=1)}
    v = judge_given(oracle, tmp_path / "case", segments, LogConfig(cleanup_policy="compact"), T0 + 10 * HOUR_MS,
                    24 * 100, (4096, 2_500_000), 220, damage={100: (0, damage)})
    assert not v.mismatches and (v.kafka_threw or "").startswith(
        "java.lang.IllegalArgumentException: Split operation is only permitted for segments with overflow"), v


def _load_factor_above_one(oracle, tmp_path: Path) -> None:
    """``log.cleaner.io.buffer.load.factor`` 1.5, which Kafka's config accepts, over a map of 5 slots (120 bytes):
    the build stops at 7 keys, so the sixth distinct key meets a full map and ``SkimpyOffsetMap.put`` throws
    (``IllegalArgumentException``, "entries: 5, slots: 5"); the round fails, in the plan's words too. The same
    round planned with the one-thread cleaner and split over two threads (the kernel's build, its partial maps'
    merge, and Python's path each stop at the slots)."""
    config, now = LogConfig(cleanup_policy="compact"), T0 + 10 * HOUR_MS
    segments = {0: b"".join(_one(i, b"k%d" % i) for i in range(4)),
                4: b"".join(_one(i, b"k%d" % i) for i in range(4, 9)), 9: _one(9, b"z") + _one(10, b"y")}
    v = judge_given(oracle, tmp_path / "case", segments, config, now, 24 * 5, (262_144, 1_048_588), None,
                    load_factor=1.5)
    kafka = ("java.lang.IllegalArgumentException: Attempted to add a new entry to a full offset map, entries: 5, "
             "slots: 5")
    assert not v.mismatches and v.kafka_threw == kafka, v
    part = tmp_path / "case" / "ours" / "c-0"
    for threads in (1, 2):
        plan = plan_cleaning(str(part), config, CleanerConfig(dedupe_buffer_size=24 * 5, dedupe_buffer_load_factor=1.5),
                             now, clean_shutdown=True, recovery_point=11, threads=threads)
        assert plan.error == ROUND_FAILS.format(kafka=kafka, what="its offset map of 5 slots filled before "
                                                                  "log.cleaner.io.buffer.load.factor=1.5 of them "
                                                                  "were taken"), threads


WORDING_JUDGED = {"wording": _wording, "filtered after an early read": _filtered_after_an_early_read,
                  "load factor above one": _load_factor_above_one}


@pytest.mark.parametrize("name", list(WORDING_JUDGED))
def test_failed_rounds_and_their_words_equal_kafkas(kafka44, tmp_path: Path, name: str):
    """The cases above against Kafka 4.4's own start and round; its answers equal the recorded ones."""
    recording = RecordingOracle(kafka44)
    WORDING_JUDGED[name](recording, tmp_path)
    keep_recording(name, recording, WORDING_ROUNDS)


@pytest.mark.parametrize("name", list(WORDING_JUDGED))
def test_failed_rounds_and_their_words_equal_kafkas_recorded_answers(tmp_path: Path, name: str):
    """The cases above against Kafka's recorded answers, in the test process (the mutation run's check)."""
    kafka = recorded(name, WORDING_ROUNDS)
    WORDING_JUDGED[name](kafka, tmp_path)
    assert not kafka.recorded
