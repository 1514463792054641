"""The verifier must call wrong-but-plausible index files ``corrupt_index`` (issue 15, point 3).

Every index here is written by hand from the generator's own record of what it wrote (each batch's position is
the sum of the encoded lengths before it), not from segdex's recovery, so a verifier that stopped checking would
let these files pass as ``equivalent``.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.log.log_segments import PartitionRecovery
from segdex.indexcore.status import Reason, SegmentStatus
from segdex.indexcore.tools.index_verifier import Verdict, verify_segment
from segdex.indexcore.tools.segment_writer import build_batch
from tests.support.log_segments import write_segment

START = 1_700_000_000_000
BATCHES = 20


@pytest.fixture
def segment(tmp_path) -> tuple[Path, list[int]]:
    """One segment of 20 one-record batches with rising timestamps; the batch start positions as written."""
    return write_segment(tmp_path, [build_batch(i, [(START + 10 * i, b"k", b"v" * (50 + 7 * i))])
                                    for i in range(BATCHES)])


def offset_index(entries: list[tuple[int, int]]) -> bytes:
    return b"".join(struct.pack(">ii", o, p) for o, p in entries)


def time_index(entries: list[tuple[int, int]]) -> bytes:
    return b"".join(struct.pack(">qi", t, o) for t, o in entries)


def verdict(log: Path, index: bytes, timeindex: bytes):
    log.with_suffix(".index").write_bytes(index)
    log.with_suffix(".timeindex").write_bytes(timeindex)
    seg = PartitionRecovery(LogConfig(index_interval_bytes=1)).recover_segment(str(log), 0)
    return verify_segment(seg)


def sound(positions: list[int]) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Valid sparse entries: every 5th batch, (offset, position) and (timestamp, offset)."""
    offsets = [(k, positions[k]) for k in range(5, BATCHES, 5)]
    times = [(START + 10 * k, k) for k in range(5, BATCHES, 5)] + [(START + 10 * (BATCHES - 1), BATCHES - 1)]
    return offsets, times


def test_sound_sparse_files_are_equivalent(segment):
    log, positions = segment
    offsets, times = sound(positions)
    v = verdict(log, offset_index(offsets), time_index(times))
    assert v.status == SegmentStatus.EQUIVALENT, v.reason


def test_offset_entry_pointing_inside_a_batch(segment):
    log, positions = segment
    offsets, times = sound(positions)
    offsets[1] = (offsets[1][0], offsets[1][1] + 10)  # still ordered, 10 bytes into batch 10
    v = verdict(log, offset_index(offsets), time_index(times))
    assert v.status == SegmentStatus.CORRUPT_INDEX
    assert v.reason.cause == f"offset index entry (10, {positions[10] + 10}) does not point at a batch start"
    assert v.reason.file == str(log.with_suffix(".index"))


def test_offset_entry_naming_an_offset_before_its_batch(segment):
    log, positions = segment
    offsets, times = sound(positions)
    offsets[1] = (8, positions[10])  # ordered after (5, ...), but a lookup of offset 8 would start past it
    v = verdict(log, offset_index(offsets), time_index(times))
    assert v.status == SegmentStatus.CORRUPT_INDEX
    assert v.reason.cause == (f"offset index entry (8, {positions[10]}): offset outside (9, 19] for the batch at "
                              f"that position")


def test_time_entry_with_a_wrong_but_ordered_offset(segment):
    log, positions = segment
    offsets, times = sound(positions)
    times[1] = (times[1][0], 9)  # (timestamp of batch 10, offset 9): ordered, but not that batch's last offset
    v = verdict(log, offset_index(offsets), time_index(times))
    assert v.status == SegmentStatus.CORRUPT_INDEX
    assert v.reason.cause == (f"time index entry ({START + 100}, 9) is not (max timestamp, last offset) of a batch "
                              f"that raised the segment's running max timestamp")
    assert v.reason.file == str(log.with_suffix(".timeindex"))


def test_final_time_entry_missing(segment):
    log, positions = segment
    offsets, times = sound(positions)
    v = verdict(log, offset_index(offsets), time_index(times[:-1]))
    assert v.status == SegmentStatus.CORRUPT_INDEX
    assert v.reason.cause == (f"time index does not end with the segment's largest timestamp "
                              f"{START + 10 * (BATCHES - 1)} (Kafka reads the last entry as the segment's max "
                              f"timestamp)")


def test_entries_past_the_valid_bytes(segment):
    log, positions = segment
    offsets, times = sound(positions)
    data = log.read_bytes()
    log.write_bytes(data[: positions[12]])  # the log now ends after batch 11: entry (15, ...) points past it
    v = verdict(log, offset_index(offsets), time_index(times))
    assert v.status == SegmentStatus.CORRUPT_INDEX
    assert v.reason.cause == f"offset index entry (15, {positions[15]}) lies beyond the valid bytes ({positions[12]})"


# Every verdict verify_segment gives, with its whole reason: the status, the cause and the file it names.

def recovered(log: Path, interval: int = 1, never_closed: bool = False):
    seg = PartitionRecovery(LogConfig(index_interval_bytes=interval)).recover_segment(str(log), 0)
    return seg, verify_segment(seg, never_closed=never_closed)


def test_rebuilt_files_are_ok_and_absent_ones_missing(segment):
    log, positions = segment
    # interval 1: an entry for every batch after the first (Kafka indexes once more than 1 byte went by)
    offsets = [(k, positions[k]) for k in range(1, BATCHES)]
    times = [(START + 10 * k, k) for k in range(1, BATCHES)]
    log.with_suffix(".index").write_bytes(offset_index(offsets))
    log.with_suffix(".timeindex").write_bytes(time_index(times))
    seg, v = recovered(log)
    assert seg.files[".index"] == offset_index(offsets) and seg.files[".timeindex"] == time_index(times)
    assert (v.status, v.reason) == (SegmentStatus.OK, None)
    log.with_suffix(".txnindex").write_bytes(b"")  # an empty .txnindex where Kafka writes none: as good as none
    assert recovered(log)[1] == Verdict(SegmentStatus.OK)
    log.with_suffix(".txnindex").write_bytes(struct.pack(">hqqqq", 0, 7, 0, 3, 0))
    assert recovered(log)[1] == Verdict(SegmentStatus.CORRUPT_INDEX, Reason(
        "aborted transactions differ from the ones the log's control batches record",
        str(log.with_suffix(".txnindex"))))
    log.with_suffix(".txnindex").unlink()
    log.with_suffix(".index").unlink()
    assert recovered(log)[1] == Verdict(SegmentStatus.MISSING, Reason("no .index file", str(log)))
    log.with_suffix(".timeindex").unlink()
    assert recovered(log)[1] == Verdict(SegmentStatus.MISSING, Reason("no .index, .timeindex file", str(log)))


def test_a_missing_txnindex_that_kafka_writes(tmp_path):
    """v2_txn_two_producers: Kafka's recovery writes a .txnindex; without one the segment is missing it."""
    from tests.support.fixtures import FIXTURES, load_case
    fx = FIXTURES / "v2_txn_two_producers" / "recovered"
    for p in (*fx.glob("*.index"), *fx.glob("*.timeindex"), *(fx.parent / "broker").glob("*.log")):
        (tmp_path / p.name).write_bytes(p.read_bytes())
    log = tmp_path / "00000000000000000000.log"
    interval = load_case("v2_txn_two_producers")["topic_config"]["index.interval.bytes"]
    seg = PartitionRecovery(LogConfig(index_interval_bytes=interval)).recover_segment(str(log), 0)
    assert len(seg.result.txn_index) >= 1
    assert verify_segment(seg) == Verdict(SegmentStatus.MISSING, Reason("no .txnindex file", str(log)))
    (tmp_path / "00000000000000000000.txnindex").write_bytes((fx / "00000000000000000000.txnindex").read_bytes())
    assert verify_segment(seg) == Verdict(SegmentStatus.OK)


def test_index_files_kafka_cannot_read(segment):
    log, _ = segment
    idx = log.with_suffix(".index")
    idx.mkdir()
    log.with_suffix(".timeindex").write_bytes(b"")
    assert recovered(log)[1] == Verdict(SegmentStatus.CORRUPT_INDEX,
                                        Reason("cannot read: a directory, not a regular file", str(idx)))
    idx.rmdir()
    idx.symlink_to(idx.name)  # a symlink to itself: open fails with ELOOP
    assert recovered(log)[1] == Verdict(SegmentStatus.UNREADABLE, Reason(
        "cannot read index files: Too many levels of symbolic links", str(idx)))


def test_bytes_that_are_not_whole_entries(segment):
    log, positions = segment
    offsets, times = sound(positions)
    v = verdict(log, offset_index(offsets) + b"\0\0\1", time_index(times))
    assert v == Verdict(SegmentStatus.CORRUPT_INDEX, Reason(
        f"{8 * len(offsets) + 3} bytes do not hold whole entries followed by zero padding",
        str(log.with_suffix(".index"))))


def test_preallocated_zeros_and_sparse_entries_are_noted(segment):
    log, positions = segment
    offsets, times = sound(positions)
    v = verdict(log, offset_index(offsets) + bytes(80), time_index(times))
    assert v == Verdict(SegmentStatus.EQUIVALENT, Reason(
        "00000000000000000000.index has 80 bytes of preallocated zeros; "
        "00000000000000000000.timeindex entries differ from a rebuild but are valid", str(log)))


def test_a_never_closed_segment_may_lack_the_final_time_entry_only_when_preallocated(segment):
    """The KRaft metadata log's active segment: Kafka never closes it, so its preallocated time index has no
    final entry; a time index without padding must still end with the largest timestamp."""
    log, positions = segment
    offsets, times = sound(positions)
    log.with_suffix(".index").write_bytes(offset_index(offsets))
    log.with_suffix(".timeindex").write_bytes(time_index(times[:-1]) + bytes(12 * 4))
    assert recovered(log, never_closed=True)[1] == Verdict(SegmentStatus.EQUIVALENT, Reason(
        "00000000000000000000.index entries differ from a rebuild but are valid; "
        "00000000000000000000.timeindex has 48 bytes of preallocated zeros", str(log)))
    assert recovered(log)[1].status == SegmentStatus.CORRUPT_INDEX
    log.with_suffix(".timeindex").write_bytes(time_index(times[:-1]))
    assert recovered(log, never_closed=True)[1].status == SegmentStatus.CORRUPT_INDEX


def test_entries_out_of_order_and_at_the_edges_of_a_batch(segment):
    log, positions = segment
    offsets, times = sound(positions)
    (o0, p0), (o1, p1) = offsets[0], offsets[1]
    assert verdict(log, offset_index([(o0, p0), (o0, p1)]), time_index(times)).reason.cause == (
        f"offset index entries out of order: ({o0}, {p0}) then ({o0}, {p1})")
    assert verdict(log, offset_index([(o0, p0), (o1, p0)]), time_index(times)).reason.cause == (
        f"offset index entries out of order: ({o0}, {p0}) then ({o1}, {p0})")
    # an entry may name its batch's own offset, not the one before it (the previous batch's last)
    v = verdict(log, offset_index([(1, positions[1]), (10, positions[10])]), time_index(times))
    assert v.status == SegmentStatus.EQUIVALENT, v.reason
    v = verdict(log, offset_index([(1, positions[1]), (9, positions[10])]), time_index(times))
    assert v.status == SegmentStatus.CORRUPT_INDEX
    same_time = [times[0], (times[0][0], times[1][1])] + times[2:]
    assert verdict(log, offset_index(offsets), time_index(same_time)).reason.cause == (
        f"time index entries out of order: ({times[0][0]}, {times[0][1]}) then ({times[0][0]}, {times[1][1]})")


def test_a_corrupt_tail_and_an_unreadable_log_keep_the_recoverys_reason(segment):
    log, positions = segment
    offsets, times = sound(positions)
    log.with_suffix(".index").write_bytes(offset_index(offsets))
    log.with_suffix(".timeindex").write_bytes(time_index(times))
    with open(log, "ab") as f:
        f.write(b"\1" * 30)
    seg, v = recovered(log)
    assert seg.status == SegmentStatus.CORRUPT_LOG_TAIL and seg.reason is not None
    assert v == Verdict(SegmentStatus.CORRUPT_LOG_TAIL, seg.reason)
    log.unlink()
    log.mkdir()
    seg, v = recovered(log)
    assert seg.status == SegmentStatus.UNREADABLE
    assert v == Verdict(SegmentStatus.UNREADABLE, seg.reason) and seg.reason.file == str(log)
