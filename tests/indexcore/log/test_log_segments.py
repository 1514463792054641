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
