"""The index verifier's entry checks, one rule at a time, and the index classes' own rules and messages.

Where the expected values come from: every segment is written here by ``build_batch`` from a list of (offset,
timestamp) pairs the test states, and each batch's position is the sum of the encoded lengths before it (the
generator's own record of what it wrote). Index files are packed with ``struct`` from Kafka's formats: ``.index``
entries are (int32 relative offset, int32 position), ``.timeindex`` entries (int64 timestamp, int32 relative
offset). The rules pinned are Kafka's: ``OffsetIndex``/``TimeIndex`` lookups land at or before the batch holding the
target, a time-index entry is written only where a batch strictly raised the running max timestamp
(``LogSegment.recover``), ``AbstractIndex.relativeOffset`` accepts 0..Integer.MAX_VALUE, ``OffsetIndex.sanityCheck``
refuses a last offset below the base offset.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.errors import (
    CorruptIndexException,
    IndexFullException,
    IndexOffsetOverflowException,
    InvalidOffsetException,
)
from segdex.indexcore.index.offset_index import OffsetIndex, parse_offset_index
from segdex.indexcore.index.offset_index import sanity_check as offset_sanity
from segdex.indexcore.index.time_index import parse_time_index
from segdex.indexcore.index.transaction_index import AbortedTxn, TransactionIndex
from segdex.indexcore.log.log_segment import recover
from segdex.indexcore.log.log_segments import PartitionRecovery, SegmentRecovery
from segdex.indexcore.record.file_records import open_log
from segdex.indexcore.status import Reason, SegmentStatus
from segdex.indexcore.tools.index_verifier import Verdict, check_offset_entries, check_time_entries, verify_segment
from segdex.indexcore.tools.segment_writer import build_batch
from tests.support.log_segments import write_segment

START = 1_700_000_000_000
BATCHES = 20


def offset_index(entries: list[tuple[int, int]], base: int = 0) -> bytes:
    return b"".join(struct.pack(">ii", o - base, p) for o, p in entries)


def time_index(entries: list[tuple[int, int]], base: int = 0) -> bytes:
    return b"".join(struct.pack(">qi", t, o - base) for t, o in entries)


@pytest.fixture
def segment(tmp_path) -> tuple[Path, list[int]]:
    """20 one-record batches, batch k holds offset k at timestamp START + 10k."""
    return write_segment(tmp_path, [build_batch(i, [(START + 10 * i, b"k", b"v" * (50 + 7 * i))])
                                    for i in range(BATCHES)])


def every_batch(positions: list[int]) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """What Kafka's recovery writes at index.interval.bytes=1: an entry for every batch after the first."""
    return ([(k, positions[k]) for k in range(1, BATCHES)], [(START + 10 * k, k) for k in range(1, BATCHES)])


def sparse(positions: list[int]) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Valid sparse entries (every 5th batch) ending with the segment's largest timestamp."""
    return ([(k, positions[k]) for k in range(5, BATCHES, 5)],
            [(START + 10 * k, k) for k in range(5, BATCHES, 5)] + [(START + 10 * (BATCHES - 1), BATCHES - 1)])


def recovered(log: Path, index: bytes | None, timeindex: bytes | None) -> SegmentRecovery:
    for suffix, data in ((".index", index), (".timeindex", timeindex)):
        if data is not None:
            log.with_suffix(suffix).write_bytes(data)
    return PartitionRecovery(LogConfig(index_interval_bytes=1)).recover_segment(str(log), 0)


# verify_segment


def test_a_rebuilt_offset_index_does_not_excuse_a_bad_time_index(segment):
    """Each of .index and .timeindex is judged on its own: an identical .index does not end the checks."""
    log, positions = segment
    offsets, times = every_batch(positions)
    seg = recovered(log, offset_index(offsets), time_index(times[:-1]))
    assert seg.files[".index"] == offset_index(offsets)
    assert verify_segment(seg) == Verdict(SegmentStatus.CORRUPT_INDEX, Reason(
        f"time index does not end with the segment's largest timestamp {START + 10 * (BATCHES - 1)} (Kafka reads "
        f"the last entry as the segment's max timestamp)", str(log.with_suffix(".timeindex"))))


def test_an_empty_index_file_is_valid_but_not_the_rebuild(segment):
    """An empty .index is one Kafka reads (every lookup falls back to the segment start): equivalent, not ok.
    An empty .txnindex where Kafka keeps none is as good as none; a non-empty one is not."""
    log, positions = segment
    _, times = every_batch(positions)
    seg = recovered(log, b"", time_index(times))
    assert verify_segment(seg) == Verdict(SegmentStatus.EQUIVALENT, Reason(
        "00000000000000000000.index entries differ from a rebuild but are valid", str(log)))
    log.with_suffix(".index").write_bytes(offset_index(every_batch(positions)[0]))
    log.with_suffix(".txnindex").write_bytes(b"")
    assert verify_segment(seg) == Verdict(SegmentStatus.OK)
    log.with_suffix(".txnindex").write_bytes(struct.pack(">hqqqq", 0, 9, 2, 4, 0))
    assert verify_segment(seg) == Verdict(SegmentStatus.CORRUPT_INDEX, Reason(
        "aborted transactions differ from the ones the log's control batches record",
        str(log.with_suffix(".txnindex"))))


def test_never_closed_is_off_unless_asked(segment):
    """Without ``never_closed`` a preallocated time index lacking the final entry is corrupt (a closed segment's
    time index ends with its max timestamp: ``LogSegment.close`` appends it)."""
    log, positions = segment
    offsets, times = sparse(positions)
    seg = recovered(log, offset_index(offsets), time_index(times[:-1]) + bytes(12 * 3))
    assert verify_segment(seg) == Verdict(SegmentStatus.CORRUPT_INDEX, Reason(
        f"time index does not end with the segment's largest timestamp {START + 10 * (BATCHES - 1)} (Kafka reads "
        f"the last entry as the segment's max timestamp)", str(log.with_suffix(".timeindex"))))


def test_an_empty_segment_with_preallocated_indexes_is_equivalent(tmp_path):
    """A segment that never got a batch (the broker's fresh active segment): preallocated zero indexes hold no
    entries, and with no timestamp at all no final time entry is owed."""
    log, _ = write_segment(tmp_path, [])
    seg = recovered(log, bytes(8 * 10), bytes(12 * 10))
    assert verify_segment(seg) == Verdict(SegmentStatus.EQUIVALENT, Reason(
        "00000000000000000000.index has 80 bytes of preallocated zeros; "
        "00000000000000000000.timeindex has 120 bytes of preallocated zeros", str(log)))


def test_a_log_gone_after_recovery_is_unreadable(segment):
    log, positions = segment
    offsets, times = sparse(positions)
    seg = recovered(log, offset_index(offsets), time_index(times))
    log.unlink()
    assert verify_segment(seg) == Verdict(SegmentStatus.UNREADABLE, Reason("No such file or directory", str(log)))


def test_a_log_changed_under_the_verifier_is_reported_as_corrupt(segment):
    """The .log rewritten after recovery so that a batch's size field falls below Kafka's minimum record
    overhead (14): reading it again fails, and that failure is the verdict's cause."""
    log, positions = segment
    offsets, times = every_batch(positions)
    seg = recovered(log, offset_index(offsets), time_index(times[:5]))
    data = bytearray(log.read_bytes())
    struct.pack_into(">i", data, positions[3] + 8, 5)  # batch 3's batchLength field
    log.write_bytes(bytes(data))
    assert verify_segment(seg) == Verdict(SegmentStatus.CORRUPT_INDEX, Reason(
        "Found record size 5 smaller than minimum record overhead (14)", str(log)))


# check_offset_entries / check_time_entries, called as `segdex dump` calls them


def result_of(log: Path):
    with open_log(log) as buf:
        return bytes(buf), recover(buf, 0, index_interval_bytes=1)


def test_the_first_offset_entry_is_checked(segment):
    log, positions = segment
    buf, result = result_of(log)
    assert check_offset_entries(buf, [(3, positions[3] + 1)], result) == (
        f"offset index entry (3, {positions[3] + 1}) does not point at a batch start")
    # the first batch's own start, naming its first offset, is a sound entry
    assert check_offset_entries(buf, [(0, 0), (7, positions[7])], result) is None
    # relative offset -1 (offset 0xFFFFFFFF in the file) names an offset before the segment
    assert check_offset_entries(buf, [(-1, 0)], result) == (
        f"offset index entry (-1, 0): offset outside (-1, {BATCHES - 1}] for the batch at that position")


def test_the_first_time_entry_is_checked(segment):
    log, _ = segment
    buf, result = result_of(log)
    last = (START + 10 * (BATCHES - 1), BATCHES - 1)
    assert check_time_entries(buf, [(START + 50, 4), last], result) == (
        f"time index entry ({START + 50}, 4) is not (max timestamp, last offset) of a batch that raised the "
        f"segment's running max timestamp")


def test_time_entries_repeating_an_offset(segment):
    """Kafka's time index lets offsets repeat (timestamps must grow): not out of order, but no batch has two
    running maxima."""
    log, _ = segment
    buf, result = result_of(log)
    entries = [(START + 50, 5), (START + 51, 5), (START + 10 * (BATCHES - 1), BATCHES - 1)]
    assert check_time_entries(buf, entries, result) == (
        f"time index entry ({START + 51}, 5) is not (max timestamp, last offset) of a batch that raised the "
        f"segment's running max timestamp")


def test_the_final_time_entry_is_required_by_default(segment):
    log, _ = segment
    buf, result = result_of(log)
    assert check_time_entries(buf, [(START + 50, 5)], result) == (
        f"time index does not end with the segment's largest timestamp {START + 10 * (BATCHES - 1)} (Kafka reads "
        f"the last entry as the segment's max timestamp)")
    assert check_time_entries(buf, [(START + 50, 5)], result, final_entry_required=False) is None


def test_time_entry_at_a_batch_that_only_equals_the_running_max(tmp_path):
    """Batches 0 and 1 share max timestamp 100: Kafka indexes batch 0 only (the running max must strictly grow);
    an entry (100, 1) would make a lookup of 100 skip offset 0."""
    log, _ = write_segment(tmp_path, [build_batch(0, [(100, None, b"a")]), build_batch(1, [(100, None, b"b")]),
                                      build_batch(2, [(200, None, b"c")])])
    buf, result = result_of(log)
    assert check_time_entries(buf, [(100, 0), (200, 2)], result) is None
    assert check_time_entries(buf, [(100, 1), (200, 2)], result) == (
        "time index entry (100, 1) is not (max timestamp, last offset) of a batch that raised the segment's running "
        "max timestamp")


def test_time_entry_inside_a_multi_record_batch(tmp_path):
    """A time entry names the batch's last offset (Kafka's shallow offset of the max timestamp), not an offset
    inside it, even when the timestamp is right."""
    log, _ = write_segment(tmp_path, [build_batch(0, [(100, None, b"a"), (101, None, b"b"), (102, None, b"c")]),
                                      build_batch(3, [(200, None, b"d")])])
    buf, result = result_of(log)
    assert check_time_entries(buf, [(102, 2), (200, 3)], result) is None
    assert check_time_entries(buf, [(102, 1), (200, 3)], result) == (
        "time index entry (102, 1) is not (max timestamp, last offset) of a batch that raised the segment's running "
        "max timestamp")


def test_entries_past_a_corrupt_batch_in_the_middle(segment):
    """Batch 12's CRC broken: recovery keeps batches 0..11 (valid bytes end at batch 12), and entries naming the
    intact batches after it still lie beyond the valid bytes."""
    log, positions = segment
    data = bytearray(log.read_bytes())
    data[positions[13] - 1] ^= 0xFF  # last byte of batch 12's record
    log.write_bytes(bytes(data))
    buf, result = result_of(log)
    assert result.valid_bytes == positions[12]
    assert check_offset_entries(buf, [(5, positions[5]), (15, positions[15])], result) == (
        f"offset index entry (15, {positions[15]}) lies beyond the valid bytes ({positions[12]})")
    assert check_time_entries(buf, [(START + 50, 5), (START + 150, 15)], result) == (
        f"time index entry ({START + 150}, 15) lies beyond the valid bytes")


# index files: parsing, sanity checks, append rules


def test_parsers_ignore_a_partial_last_entry():
    """Kafka reads whole entries only (``AbstractIndex`` rounds the file size down to the entry size)."""
    assert parse_offset_index(struct.pack(">ii", 3, 120) + b"\0\0\1", 100) == [(103, 120)]
    assert parse_time_index(struct.pack(">qi", 5000, 3) + b"\0" * 11, 100) == [(5000, 103)]


def test_offset_index_last_offset_below_the_base():
    """``OffsetIndex.sanityCheck``: a non-empty index whose last offset is below the base offset is corrupt."""
    with pytest.raises(CorruptIndexException) as e:
        offset_sanity(offset_index([(99, 0)], base=100), 100)
    assert str(e.value) == ("Corrupt index found, index file has non-zero size but the last offset is 99 which is "
                            "less than the base offset 100")
    with pytest.raises(CorruptIndexException) as e:
        offset_sanity(offset_index([(95, 0), (97, 8), (99, 16)], base=100), 100)
    assert str(e.value) == ("Corrupt index found, index file has non-zero size but the last offset is 99 which is "
                            "less than the base offset 100")
    with pytest.raises(CorruptIndexException) as e:
        offset_sanity(offset_index([(101, 0), (105, 8), (99, 16)], base=100), 100)
    assert str(e.value) == ("Corrupt index found, index file has non-zero size but the last offset is 99 which is "
                            "less than the base offset 100")


def test_offset_index_append_refusals():
    idx = OffsetIndex(100, max_index_size=16)
    idx.append(105, 300)
    with pytest.raises(InvalidOffsetException) as e:
        idx.append(105, 400)
    assert str(e.value) == ("Attempt to append an offset (105) to position 1 no larger than the last offset "
                            "appended (105)")
    idx.append(110, 900)
    with pytest.raises(IndexFullException) as e:
        idx.append(120, 1500)
    assert str(e.value) == "Attempt to append to a full index (size = 2)."


def test_relative_offsets_span_the_whole_int32_range():
    """``AbstractIndex.relativeOffset``: offset - base must lie in [0, Integer.MAX_VALUE]."""
    idx = OffsetIndex(0)
    idx.append(2**31 - 1, 10)
    assert idx.to_bytes() == struct.pack(">ii", 2**31 - 1, 10)
    with pytest.raises(IndexOffsetOverflowException) as e:
        OffsetIndex(0).append(2**31, 10)
    assert str(e.value) == ("Integer overflow for offset: 2147483648 (base offset 0): relative offset 2147483648 "
                            "does not fit in an int32")


def test_transaction_index_refuses_a_last_offset_going_back():
    idx = TransactionIndex(0)
    idx.append(AbortedTxn(4001, 3, 33, 34))
    with pytest.raises(InvalidOffsetException) as e:
        idx.append(AbortedTxn(4002, 1, 20, 21))
    assert str(e.value) == ("The last offset of appended transactions must increase sequentially, but 20 is not "
                            "greater than current last offset 33 of index")


def test_transaction_index_refuses_the_same_last_offset_again():
    """Kafka's ``TransactionIndex.append`` throws when ``lastOffset >= abortedTxn.lastOffset()``: an equal last
    offset is refused too."""
    idx = TransactionIndex(0)
    idx.append(AbortedTxn(4001, 3, 33, 34))
    with pytest.raises(InvalidOffsetException) as e:
        idx.append(AbortedTxn(4002, 30, 33, 34))
    assert str(e.value) == ("The last offset of appended transactions must increase sequentially, but 33 is not "
                            "greater than current last offset 33 of index")
    assert [t.producer_id for t in idx.aborted] == [4001]
