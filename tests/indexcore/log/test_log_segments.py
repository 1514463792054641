"""``PartitionRecovery.recover_segment``'s every outcome with its whole reason, in the test process: the status,
the cause, the file and the byte position a row shows. Segments are built with the generator, whose byte
lengths say where each batch starts; the expected positions come from those, not from segdex's recovery."""

from __future__ import annotations

from pathlib import Path

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.log.log_segments import PartitionRecovery, SegmentRecovery, recover_partition
from segdex.indexcore.status import Reason, SegmentStatus
from segdex.indexcore.tools.segment_writer import build_batch

T = 1_700_000_000_000


def _log(tmp_path: Path, *batches: bytes) -> Path:
    part = tmp_path / "t-0"
    part.mkdir(exist_ok=True)
    log = part / "00000000000000000000.log"
    log.write_bytes(b"".join(batches))
    return log


def _recover(log: Path, interval: int = 4096) -> SegmentRecovery:
    return PartitionRecovery(LogConfig(index_interval_bytes=interval)).recover_segment(str(log), 0)


def test_a_clean_segment_is_ok_without_a_reason(tmp_path: Path):
    a, b = build_batch(0, [(T, b"k", b"v")]), build_batch(1, [(T + 1, b"k", b"w")])
    seg = _recover(_log(tmp_path, a, b))
    assert (seg.status, seg.reason, seg.base_offset) == (SegmentStatus.OK, None, 0)
    assert (seg.result.valid_bytes, seg.result.size_bytes, seg.result.last_offset) == (len(a + b), len(a + b), 1)
    assert sorted(seg.files) == [".index", ".timeindex", ".txnindex"] and seg.files[".txnindex"] is None


def test_a_partial_batch_is_a_corrupt_tail_at_its_position(tmp_path: Path):
    a, b = build_batch(0, [(T, b"k", b"v")]), build_batch(1, [(T + 1, b"k", b"w" * 40)])
    log = _log(tmp_path, a, b[:30])
    seg = _recover(log)
    stop = f"partial batch at position {len(a)}: 30 trailing bytes do not hold a whole batch"
    assert seg.status == SegmentStatus.CORRUPT_LOG_TAIL
    assert seg.reason == Reason(f"{stop}; {len(a)} valid bytes of {len(a) + 30}", str(log), len(a))
    assert seg.result.stop_reason == stop and seg.files  # the index files of the valid part


def test_a_bad_crc_stops_at_that_batch(tmp_path: Path):
    a, b = build_batch(0, [(T, b"k", b"v")]), bytearray(build_batch(1, [(T + 1, b"k", b"w" * 40)]))
    b[-1] ^= 1
    log = _log(tmp_path, a, bytes(b))
    seg = _recover(log)
    assert seg.status == SegmentStatus.CORRUPT_LOG_TAIL
    assert seg.reason.cause.startswith(f"CorruptRecordException at position {len(a)}: ")
    assert seg.reason.cause.endswith(f"; {len(a)} valid bytes of {len(a) + len(b)}")
    assert (seg.reason.file, seg.reason.position) == (str(log), len(a))


def test_offsets_going_back_are_an_error_with_the_result(tmp_path: Path):
    """Kafka's index append throws InvalidOffsetException: the load fails, nothing is truncated or written."""
    a, b = build_batch(5, [(T, b"k", b"v")] * 3), build_batch(8, [(T + 1, b"k", b"w")])
    c = build_batch(2, [(T + 2, b"k", b"x")])
    log = _log(tmp_path, a, b, c)
    seg = _recover(log, interval=1)
    assert seg.status == SegmentStatus.ERROR
    assert seg.reason.cause.startswith(f"InvalidOffsetException at position {len(a + b)}: ")
    assert seg.reason.file == str(log) and seg.result is not None and seg.files == {}
    assert (seg.log_path, seg.base_offset) == (str(log), 0)


def test_unreadable_logs(tmp_path: Path):
    part = tmp_path / "t-0"
    part.mkdir()
    as_dir = part / "00000000000000000000.log"
    as_dir.mkdir()
    seg = PartitionRecovery(LogConfig()).recover_segment(str(as_dir), 0)
    assert seg == SegmentRecovery(str(as_dir), 0, SegmentStatus.UNREADABLE,
                                  Reason("cannot read: a directory, not a regular file", str(as_dir)))
    loop = part / "00000000000000000100.log"
    loop.symlink_to(loop.name)
    seg = PartitionRecovery(LogConfig()).recover_segment(str(loop), 100)
    assert seg == SegmentRecovery(str(loop), 100, SegmentStatus.UNREADABLE,
                                  Reason("cannot read: Too many levels of symbolic links", str(loop)))


def test_recover_partition_goes_in_offset_order_and_names_misnamed_logs(tmp_path: Path):
    part = tmp_path / "t-0"
    part.mkdir()
    (part / "00000000000000000002.log").write_bytes(build_batch(2, [(T + 2, b"k", b"c")]))
    (part / "00000000000000000000.log").write_bytes(build_batch(0, [(T, b"k", b"a"), (T + 1, b"k", b"b")]))
    (part / "not-a-segment.log").write_bytes(b"")
    segments, misnamed = recover_partition(part)
    assert [(s.base_offset, s.status, s.result.last_offset) for s in segments] == [
        (0, SegmentStatus.OK, 1), (2, SegmentStatus.OK, 2)]
    assert misnamed == ["not-a-segment.log"]


# Segments recovered on their own and completed in order (``speculate_segment``, ``PartitionRecovery.precomputed``):
# the scan of a partition split over several tasks must leave exactly what the ordered recovery leaves.


def _write_partition(part: Path, segments: dict[int, bytes]) -> list[tuple[int, str]]:
    part.mkdir(parents=True, exist_ok=True)
    for base, data in segments.items():
        (part / f"{base:020d}.log").write_bytes(data)
    return [(base, str(part / f"{base:020d}.log")) for base in sorted(segments)]


def _loaded(part: Path, logs, config: LogConfig, now: int, precomputed=None):
    from segdex.indexcore.log.log_loader import LogLoader

    loader = LogLoader(str(part), config, now, 0, precomputed)
    segs = [loader.recover_segment(path, base) for base, path in logs]
    state = loader.recovery.producer_state
    view = [(s.status, s.reason, s.files, s.result.valid_bytes if s.result else None,
             s.result.leader_epochs if s.result else None) for s in segs]
    finished = loader.finish() if all(s.status == SegmentStatus.OK for s in segs) else None
    return view, finished, list(state.producers.items()), state.ongoing_txns, loader.recovery.completed


def test_segments_completed_in_order_equal_the_ordered_recovery(tmp_path: Path):
    """300 generated partitions (idempotent and transactional producers, transactions across segments, epochs
    bumped, leader epochs going up, producers expiring at segment boundaries), each loaded in order and again
    from segments recovered on their own (all of them, or a random part): every file, status, leader epoch,
    producer entry (in order), snapshot and offset equal."""
    import random

    from segdex.indexcore.log.log_segments import speculate_segment
    from tests.support.generated_partitions import generated_partition

    rng = random.Random(20261126)
    t0 = T
    now = t0 + 4 * 86_400_000
    completed = aborted = 0
    for i in range(300):
        config = LogConfig(index_interval_bytes=rng.choice([1, 200, 4096]))
        logs = _write_partition(tmp_path / f"g{i}-0", generated_partition(rng, t0))
        ordered = _loaded(tmp_path / f"g{i}-0", logs, config, now)
        specs = {base: speculate_segment(path, base, config) for base, path in logs}
        assert all(specs.values())  # generated segments are whole: every one can be completed
        some = {b: s for b, s in specs.items() if rng.random() < 0.5}
        for chosen in (specs, some):
            again = {b: speculate_segment(p, b, config) for b, p in logs if b in chosen}
            split = _loaded(tmp_path / f"g{i}-0", logs, config, now, again)
            assert split[:4] == ordered[:4], i
            assert split[4] == len(again)  # each precomputed segment was completed, none recovered again
            completed += split[4]
        aborted += sum(bool(v[2].get(".txnindex")) for v in ordered[0])
    assert completed > 600 and aborted > 20  # the cases held many segments and aborted transactions


def test_a_write_inside_its_own_open_transaction_is_recovered_again_in_order(tmp_path: Path):
    """Producer 5 opens a transaction in segment 0 and writes without it in segment 2: the ordered recovery fails
    there (Kafka's InvalidTxnStateException), which the segment recovered on its own cannot know; its replay
    refuses, and that segment is recovered again in order, with the same error at the same batch."""
    from segdex.indexcore.log.log_segments import speculate_segment

    def txn(offset: int, seq: int) -> bytes:
        return build_batch(offset, [(T + offset, b"k", b"v")], producer_id=5, producer_epoch=0, base_sequence=seq,
                           is_transactional=True)

    plain = build_batch(2, [(T + 2, b"k", b"v")], producer_id=5, producer_epoch=0, base_sequence=1)
    other = build_batch(3, [(T + 3, b"k", b"v")], producer_id=6, producer_epoch=0, base_sequence=0)
    part = tmp_path / "t-0"
    logs = _write_partition(part, {0: txn(0, 0), 1: other, 2: plain + build_batch(3, [(T + 3, b"k", b"w")])})
    ordered = _loaded(part, logs, LogConfig(), T)
    specs = {b: speculate_segment(p, b) for b, p in logs}
    split = _loaded(part, logs, LogConfig(), T, specs)
    assert ordered[0][2][0] == SegmentStatus.ERROR and "InvalidTxnStateException" in str(ordered[0][2][1])
    assert split[:4] == ordered[:4]
    assert split[4] == 2  # segments 0 and 1 completed; 2 recovered again


def test_a_segment_changed_after_its_recovery_is_recovered_again(tmp_path: Path):
    from segdex.indexcore.log.log_segments import speculate_segment

    part = tmp_path / "t-0"
    logs = _write_partition(part, {0: build_batch(0, [(T, b"k", b"v")]), 1: build_batch(1, [(T, b"k", b"v")])})
    specs = {b: speculate_segment(p, b) for b, p in logs}
    with open(logs[1][1], "ab") as f:  # a batch appended after the span's task read the segment
        f.write(build_batch(2, [(T + 5, b"k", b"w")]))
    split = _loaded(part, logs, LogConfig(), T, specs)
    assert split[4] == 1
    assert split[0][1][3] == Path(logs[1][1]).stat().st_size  # the whole of the segment as it is now
    assert split[1].log_end_offset == 3


def test_a_segment_that_cannot_be_completed_is_not_kept(tmp_path: Path):
    """Only whole segments are kept: a corrupt tail or an unreadable file is the ordered recovery's to report."""
    from segdex.indexcore.log.log_segments import speculate_segment

    log = _log(tmp_path, build_batch(0, [(T, b"k", b"v")]), b"\0\0\0")
    assert speculate_segment(str(log), 0) is None
    assert speculate_segment(str(tmp_path / "missing.log"), 0) is None


def test_a_segment_whose_index_overflows_its_size_is_not_kept(tmp_path: Path):
    """``segment.index.bytes`` of 24 and an entry per batch: six batches overflow the time index (Kafka's
    ``IndexFullException``, an error of the load). The segment recovered on its own is held to the same size, so
    it is not kept, and the ordered recovery reports the error."""
    from segdex.indexcore.log.log_segments import speculate_segment

    config = LogConfig(index_interval_bytes=1, segment_index_bytes=24)
    log = _log(tmp_path, *(build_batch(i, [(T + i, b"k", b"v")]) for i in range(6)))
    assert speculate_segment(str(log), 0, config) is None
    seg = PartitionRecovery(config).recover_segment(str(log), 0)
    assert seg.status == SegmentStatus.ERROR and seg.reason.cause.startswith("IndexFullException at position ")


def test_a_segment_rewritten_or_removed_after_its_recovery_is_not_taken(tmp_path: Path):
    """Segment 1 rewritten in place after its task read it (same size, another record and another mtime) is
    recovered again; one removed since is unreadable, as the ordered recovery finds it."""
    import os

    from segdex.indexcore.log.log_segments import speculate_segment

    part = tmp_path / "t-0"
    logs = _write_partition(part, {0: build_batch(0, [(T, b"k", b"v")]), 1: build_batch(1, [(T, b"k", b"v")])})
    specs = {b: speculate_segment(p, b) for b, p in logs}
    Path(logs[1][1]).write_bytes(build_batch(1, [(T + 9, b"k", b"w")]))
    os.utime(logs[1][1], ns=(1_000_000_000, 1_000_000_000))
    split = _loaded(part, logs, LogConfig(), T, specs)
    assert split[4] == 1 and split[1].log_end_offset == 2
    assert split[0][1][2] == _loaded(part, logs, LogConfig(), T)[0][1][2]  # the files of the bytes there now
    specs = {b: speculate_segment(p, b) for b, p in logs}
    os.unlink(logs[1][1])
    recovery = PartitionRecovery(LogConfig(), specs)
    assert [s.status for s in recovery.recover_all(logs)] == [SegmentStatus.OK, SegmentStatus.UNREADABLE]
    assert recovery.completed == 1


def test_the_reader_gets_each_segment_it_recovers_while_mapped_and_none_it_completes(tmp_path: Path):
    """``PartitionRecovery.reader`` is handed the very bytes each segment's recovery read, once, in order; a
    segment completed from ``precomputed`` is not read, so not handed over; an unreadable one neither."""
    from segdex.indexcore.log.log_segments import speculate_segment

    logs = _write_partition(tmp_path / "p-0", {0: build_batch(0, [(T, b"a", b"1")]),
                                               1: build_batch(1, [(T, b"b", b"2")]),
                                               2: build_batch(2, [(T, b"c", b"3")])})
    seen: list[tuple[str, bytes]] = []
    recovery = PartitionRecovery(LogConfig(), {1: speculate_segment(logs[1][1], 1)})
    recovery.reader = lambda path, buf: seen.append((path, bytes(buf)))
    statuses = [recovery.recover_segment(path, base).status for base, path in logs]
    (tmp_path / "p-0" / f"{3:020d}.log").mkdir()  # not a regular file: unreadable
    assert recovery.recover_segment(str(tmp_path / "p-0" / f"{3:020d}.log"), 3).status == SegmentStatus.UNREADABLE
    assert statuses == [SegmentStatus.OK] * 3 and recovery.completed == 1
    assert seen == [(logs[0][1], Path(logs[0][1]).read_bytes()), (logs[2][1], Path(logs[2][1]).read_bytes())]
