"""Tests written for the mutation run's survivors in the log cleaner's modules (issue 42): each pins what a
mutant of the named function changes (benchmarks/mutation/report.md lists them). A file of its own, beside
test_cleaner.py, so that work on the cleaner itself merges without conflicts."""

from __future__ import annotations

import os
import struct

import pytest

from segdex.indexcore.log import cleaner
from segdex.indexcore.log.cleaner import (
    INT32_MAX,
    CleanerSegment,
    LogCleaningException,
    LogSegmentOffsetOverflowException,
)
from segdex.indexcore.record.file_records import batches
from segdex.indexcore.tools.segment_writer import build_batch

T = 1_795_000_000_000


# --- LogSegmentOffsetOverflowException -------------------------------------------------------------------------


def test_an_offset_overflow_names_its_offset():
    e = LogSegmentOffsetOverflowException(7)
    assert (str(e), e.offset) == ("offset 7 does not fit the segment", 7)


# --- cleaner._chunk_overflow: cleanInto's buffers, each checked at its largest kept offset ---------------------


def _segment(n: int) -> tuple[bytes, list[int], int]:
    """n one-record batches of one size at offsets 0..n-1: the bytes, each batch's position, the batch size."""
    data = b"".join(build_batch(i, [(T, b"k", b"v")]) for i in range(n))
    positions = [b.position for b in batches(data, 0)]
    size = positions[1]
    assert positions == [i * size for i in range(n)]
    return data, positions, size


def test_each_buffer_is_checked_at_its_largest_kept_offset():
    """Two batches a buffer: (99, 101) in the first, which fits base 100 by its largest; 50 alone in the second,
    which does not."""
    data, pos, size = _segment(3)
    with pytest.raises(LogSegmentOffsetOverflowException) as e:
        cleaner._chunk_overflow(data, [(pos[0], 99), (pos[1], 101), (pos[2], 50)], 100, cleaner.IoBuffers(2 * size))
    assert e.value.offset == 50


def test_a_batch_below_the_base_passes_where_a_later_one_in_its_buffer_fits():
    """Four batches, two a buffer: 50 shares the second buffer with 150, so nothing overflows; one buffer a batch
    (a buffer of one batch's size) checks 50 alone."""
    data, pos, size = _segment(4)
    kept = [(pos[0], 100), (pos[1], 101), (pos[2], 50), (pos[3], 150)]
    cleaner._chunk_overflow(data, kept, 100, cleaner.IoBuffers(2 * size))
    with pytest.raises(LogSegmentOffsetOverflowException) as e:
        cleaner._chunk_overflow(data, kept, 100, cleaner.IoBuffers(size))
    assert e.value.offset == 50


def test_a_buffer_that_holds_exactly_its_batches_is_not_split():
    """A buffer of exactly two batches' bytes holds both: (99, 101) fit together."""
    data, pos, size = _segment(2)
    cleaner._chunk_overflow(data, [(pos[0], 99), (pos[1], 101)], 100, cleaner.IoBuffers(2 * size))


def test_kept_offsets_past_the_int32_range_overflow():
    data, pos, size = _segment(2)
    cleaner._chunk_overflow(data, [(pos[0], 100 + INT32_MAX)], 100, cleaner.IoBuffers(2 * size))
    with pytest.raises(LogSegmentOffsetOverflowException) as e:
        cleaner._chunk_overflow(data, [(pos[0], 101 + INT32_MAX)], 100, cleaner.IoBuffers(2 * size))
    assert e.value.offset == 101 + INT32_MAX


def test_each_kept_batch_counts_in_its_own_buffer():
    """One batch a buffer: the first buffer's 50 is met first (not the second's 40)."""
    data, pos, size = _segment(3)
    with pytest.raises(LogSegmentOffsetOverflowException) as e:
        cleaner._chunk_overflow(data, [(pos[0], 50), (pos[1], 40)], 100, cleaner.IoBuffers(size))
    assert e.value.offset == 50


def test_a_buffer_is_checked_at_its_largest_kept_offset_not_its_last():
    """(101, 50) in one buffer: 101 fits base 100, so the buffer passes though its last kept offset does not."""
    data, pos, size = _segment(2)
    cleaner._chunk_overflow(data, [(pos[0], 101), (pos[1], 50)], 100, cleaner.IoBuffers(2 * size))


def _big_first(value_bytes: int, n: int = 6) -> tuple[bytes, list[int], int, int]:
    """A first batch of one ``value_bytes`` record, then n small one-record batches: the bytes, positions, the
    first batch's size and a small one's."""
    data = build_batch(0, [(T, b"k", b"v" * value_bytes)]) + b"".join(
        build_batch(i, [(T, b"k", b"v")]) for i in range(1, n + 1))
    positions = [b.position for b in batches(data, 0)]
    return data, positions, positions[1], positions[2] - positions[1]


def test_a_buffer_grown_for_a_large_batch_stays_grown():
    """growBuffersOrFail doubles the buffer until the first batch fits, and the reads after it use the grown
    buffer: with 100 bytes, a first batch of 150 to 200 grows it to 200, so the next reads take two small batches
    (of 70 to 100 bytes) each, where a buffer tripled would take three."""
    data, pos, big, small = _big_first(80)
    assert 100 < big <= 200 and 66 < small <= 100, (big, small)
    # reads: [0], [1, 2], [3, 4], [5, 6]: 50 (batch 3) shares its read with 150 (batch 4); 40 (batch 2) with 41
    kept = [(pos[0], 100), (pos[1], 41), (pos[2], 40), (pos[3], 50), (pos[4], 150)]
    with pytest.raises(LogSegmentOffsetOverflowException) as e:
        cleaner._chunk_overflow(data, kept, 100, cleaner.IoBuffers(100))
    assert e.value.offset == 41


def test_a_batch_larger_than_max_message_bytes_grows_the_buffer_to_its_size():
    """Past max.message.bytes the buffer grows to the batch's size: from 262,147 bytes it doubles to exactly
    1,048,588 (``MAX_MESSAGE_BYTES``), then to the 1.1 MB batch, and the next read holds the batches after it."""
    assert 4 * 262_147 == cleaner.MAX_MESSAGE_BYTES
    data, pos, big, small = _big_first(1_100_000, 2)
    assert big > cleaner.MAX_MESSAGE_BYTES
    kept = [(pos[0], 100), (pos[1], 50), (pos[2], 150)]  # 50 shares the second read with 150
    cleaner._chunk_overflow(data, kept, 100, cleaner.IoBuffers(262_147))


def _damaged_tail(size_field: bytes, magic: int, length: int) -> bytes:
    """The first ``length`` bytes of a damaged batch: offset 10, the size field, 4 bytes of leader epoch, the magic
    byte, then zeros."""
    return (struct.pack(">q", 10) + size_field + bytes(4) + bytes([magic]) + bytes(24))[:length]


@pytest.mark.parametrize(("tail", "throws_there"), [
    (_damaged_tail(struct.pack(">i", 5), 0, 24), True),  # a size below 14 in reach: that buffer throws
    (_damaged_tail(struct.pack(">i", 5), 0, 12), True),  # the size field is the buffer's last bytes
    (_damaged_tail(bytes(3), 0, 11), False),  # the size field not whole in the buffer: its batches are appended
    (_damaged_tail(struct.pack(">i", -1), 0, 24), True),  # the size field is signed
    (_damaged_tail(struct.pack(">i", 14), 0, 24), False),  # 14, a v0 message's least size, passes
    (_damaged_tail(struct.pack(">i", 100), 3, 17), True),  # a magic byte past 2 in reach (the buffer's last byte)
    (_damaged_tail(struct.pack(">i", 100), 3, 16), False),  # the magic byte out of reach
    (_damaged_tail(struct.pack(">i", 100), 2, 24), False),  # magic 2, a size that may be whole: appended
])
def test_a_buffer_that_holds_a_damaged_batchs_header_throws_before_its_batches_are_appended(tail, throws_there):
    """A damaged batch after three whole ones, the last read holding batch 2 and the damaged bytes (two batches a
    buffer): where the damaged batch's size field (below 14) or magic byte (past 2) is in that read, the read throws
    while it is filtered and its kept batch (offset 50, below the base 100) is never appended; else it is, and
    overflows. The first read's kept batch (101) fits either way."""
    data, pos, size = _segment(3)
    kept = [(pos[0], 101), (pos[2], 50)]
    buffers = cleaner.IoBuffers(2 * size)
    if throws_there:
        cleaner._chunk_overflow(data + tail, kept, 100, buffers, damaged_at=len(data))
    else:
        with pytest.raises(LogSegmentOffsetOverflowException) as e:
            cleaner._chunk_overflow(data + tail, kept, 100, buffers, damaged_at=len(data))
        assert e.value.offset == 50
    with pytest.raises(LogSegmentOffsetOverflowException):  # the read before it is appended either way
        cleaner._chunk_overflow(data + tail, [(pos[0], 99)] + kept[1:], 100, buffers, damaged_at=len(data))


# --- cleaner._offset_overflow: Kafka splits a segment that overflows its own base, else fails the round --------


def _cleaner_segment(base: int, next_offset: int) -> CleanerSegment:
    return CleanerSegment(f"/tmp/p-0/{base:020d}.log", base, 0, 0, None, 0, [], next_offset)


SPLIT = ("Kafka's cleaner would split segment {} (its offsets overflow it) and clean it in a later round; segdex "
         "does not split segments")


def _fails(seg: CleanerSegment, offset: int, cleaned_base: int) -> tuple[str, str]:
    kafka = ("java.lang.IllegalArgumentException: Split operation is only permitted for segments with overflow, and "
             f"the problem path is {os.path.abspath(seg.log_path)}")
    return (f"Kafka's cleaner fails this round ({kafka}): offset {offset}, the last kept of a message set of segment "
            f"{seg.base_offset}, lies below the cleaned segment's base offset {cleaned_base}; a broker marks the "
            f"partition uncleanable and leaves it dirty", kafka)


@pytest.mark.parametrize(("base", "next_offset", "split"), [
    (0, 2**31 + 1, True),  # its last offset 2**31 is past base + INT32_MAX: Kafka splits it
    (0, 2**31, False),  # its last offset is base + INT32_MAX exactly: it fits
    (2**31, 2**31 + 10, False),  # a high base: offsets relative to it fit
    (5, 5, False),  # an empty segment has no overflow
    (5, 6, False),  # one offset, at its base: no overflow
])
def test_only_a_segment_that_overflows_its_own_base_is_split(base: int, next_offset: int, split: bool):
    seg = _cleaner_segment(base, next_offset)
    e = cleaner._offset_overflow(LogSegmentOffsetOverflowException(3), seg, 10)
    assert isinstance(e, LogCleaningException)
    if split:
        assert (str(e), e.kafka_exception) == (SPLIT.format(base), None)
    else:
        assert (str(e), e.kafka_exception) == _fails(seg, 3, 10)


# --- cleaned_transaction_metadata: which transactional batches and markers a round may drop ----------------------


class _Batch:
    """The fields CleanedTransactionMetadata reads of a batch."""

    def __init__(self, last_offset: int, producer_id: int = -1, transactional: bool = False) -> None:
        self.last_offset, self.producer_id, self.is_transactional = last_offset, producer_id, transactional


def _metadata(*aborted):
    from segdex.indexcore.log.cleaned_transaction_metadata import CleanedTransactionMetadata

    tm = CleanedTransactionMetadata()
    tm.cleaned_index = []  # the cleaned segment's .txnindex: what the round appends to it
    tm.add_aborted_transactions(list(aborted))
    return tm


def test_an_aborted_transactions_data_goes_and_its_marker_stays_in_the_txnindex():
    from segdex.indexcore.index.transaction_index import AbortedTxn

    txn = AbortedTxn(7, 2, 5, 9)
    tm = _metadata(txn)
    assert tm.on_batch_read(_Batch(1, 7, True)) is False  # before its first offset: not yet aborted
    assert tm.on_batch_read(_Batch(2, 7, True)) is True  # at its first offset: aborted data
    assert tm.ongoing_aborted[7].last_observed_batch_offset == 2
    assert tm.on_control_batch_read(_Batch(5, 7, True), "ABORT") is False
    assert tm.cleaned_index == [txn] and 7 not in tm.ongoing_aborted


def test_an_abort_marker_whose_data_was_not_seen_may_go():
    from segdex.indexcore.index.transaction_index import AbortedTxn

    tm = _metadata(AbortedTxn(7, 2, 5, 9))
    assert tm.on_control_batch_read(_Batch(5, 7, True), "ABORT") is True
    assert tm.cleaned_index == [] and tm.ongoing_aborted == {}
    assert tm.on_control_batch_read(_Batch(6, 8, True), "ABORT") is True  # no aborted transaction at all


def test_a_commit_marker_stays_once_after_its_transactions_data():
    tm = _metadata()
    assert tm.on_batch_read(_Batch(3, 8, True)) is False and tm.ongoing_committed == {8}
    assert tm.on_batch_read(_Batch(4, 9, False)) is False and tm.ongoing_committed == {8}  # not transactional
    assert tm.on_control_batch_read(_Batch(5, 8, True), "COMMIT") is False
    assert tm.ongoing_committed == set()
    assert tm.on_control_batch_read(_Batch(6, 8, True), "COMMIT") is True  # no data of it seen since


def test_a_control_batch_without_records_or_of_another_type_goes():
    tm = _metadata()
    tm.on_batch_read(_Batch(3, 8, True))
    assert tm.on_control_batch_read(_Batch(5, 8, True), None) is True
    assert tm.ongoing_committed == {8}


def test_a_control_batch_of_another_kind_stays():
    """A control record neither ABORT nor COMMIT (KRaft's LEADER_CHANGE, type 2) is kept: ``case _ => false``."""
    tm = _metadata()
    assert tm.on_control_batch_read(_Batch(5, -1, False), "LEADER_CHANGE") is False


def test_aborted_transactions_start_by_first_offset_not_by_arrival():
    from segdex.indexcore.index.transaction_index import AbortedTxn

    tm = _metadata(AbortedTxn(7, 100, 105, 109))
    assert tm.on_batch_read(_Batch(5, 7, True)) is False and tm.ongoing_aborted == {}


def test_aborted_transactions_with_one_first_offset_are_taken_in_order():
    from segdex.indexcore.index.transaction_index import AbortedTxn

    tm = _metadata(AbortedTxn(1, 4, 6, 9), AbortedTxn(2, 4, 7, 9), AbortedTxn(3, 4, 8, 9))
    assert all(tm.on_batch_read(_Batch(4, pid, True)) for pid in (1, 2, 3))
    assert sorted(tm.ongoing_aborted) == [1, 2, 3]


# --- skimpy_offset_map._libcrypto_paths: hashlib's OpenSSL first, then the system's -------------------------------


def test_the_libcrypto_candidates_are_the_loaded_ones_then_the_systems():
    import ctypes.util

    from segdex.indexcore.log.skimpy_offset_map import _libcrypto_paths

    paths = _libcrypto_paths()
    system = ctypes.util.find_library("crypto")
    loaded = paths[:-1] if system else paths
    assert loaded, "hashlib's libcrypto is mapped into this process"
    assert all("/libcrypto.so" in p and os.path.isabs(p) for p in loaded)
    assert len(set(loaded)) == len(loaded)
    with open("/proc/self/maps") as maps:
        assert all(p in maps.read() for p in loaded)
    if system:
        assert paths[-1] == system


# --- cleaner._delete_horizon and _control_type: what a batch's header and first record say ----------------------


def _with_horizon(base_timestamp: int) -> tuple[bytes, object]:
    """A v2 batch whose attributes carry the delete-horizon flag and whose base timestamp is ``base_timestamp``."""
    from segdex.indexcore.record.batch_header import ATTRIBUTES_OFFSET, BASE_TIMESTAMP_OFFSET, DELETE_HORIZON_FLAG_MASK

    data = bytearray(build_batch(0, [(T, b"k", None)]))
    attributes = int.from_bytes(data[ATTRIBUTES_OFFSET:ATTRIBUTES_OFFSET + 2], "big") | DELETE_HORIZON_FLAG_MASK
    data[ATTRIBUTES_OFFSET:ATTRIBUTES_OFFSET + 2] = attributes.to_bytes(2, "big")
    data[BASE_TIMESTAMP_OFFSET:BASE_TIMESTAMP_OFFSET + 8] = base_timestamp.to_bytes(8, "big", signed=True)
    data = bytes(data)
    return data, next(batches(data, 0))


def test_the_delete_horizon_is_the_base_timestamp_read_as_a_signed_long():
    for stamp in (T, -5):
        data, batch = _with_horizon(stamp)
        assert cleaner._delete_horizon(data, batch) == stamp
    data = build_batch(0, [(T, b"k", None)])
    assert cleaner._delete_horizon(data, next(batches(data, 0))) is None  # no flag: no horizon


def test_a_control_batchs_type_is_its_first_records():
    for kind in ("COMMIT", "ABORT"):
        data = build_batch(4, [], producer_id=7, producer_epoch=0, control=(kind, 0), control_timestamp=T)
        assert cleaner._control_type(data, next(batches(data, 0))) == kind
    data = build_batch(4, [], producer_id=7, producer_epoch=0, is_transactional=True)
    assert cleaner._control_type(data, next(batches(data, 0))) is None  # no records


# --- log_cleaner.CleaningPlan.followed_by: two rounds' plans as one (--until-clean) -----------------------------


def test_two_rounds_plans_add_up_as_one():
    from segdex.indexcore.log.log_cleaner import CleaningPlan

    first = CleaningPlan(would_clean=True, why="dirty", checkpoint=3, first_dirty_offset=3,
                         first_uncleanable_offset=90, dirty_ratio=0.75, end_offset=40, map_full=True,
                         segments_before=5, segments_after=2, bytes_before=5000, bytes_after=2000,
                         records_before=500, records_after=200, tombstones_kept=7, tombstones_removed=3,
                         aborted_removed=4, keys=100, error=None, applied=True, quarantine="q1", rounds=1,
                         bytes_freed=3000)
    later = CleaningPlan(end_offset=90, map_full=False, segments_before=4, segments_after=3, bytes_before=4500,
                         bytes_after=3000, records_before=450, records_after=300, tombstones_kept=5,
                         tombstones_removed=2, aborted_removed=1, keys=120, error="later", applied=False,
                         quarantine=None, rounds=1, bytes_freed=1500)
    both = first.followed_by(later)
    assert both == CleaningPlan(
        would_clean=True, why="dirty", checkpoint=3, first_dirty_offset=3, first_uncleanable_offset=90,
        dirty_ratio=0.75, end_offset=90, map_full=False,
        segments_before=5 + 4 - 2, segments_after=3, bytes_before=5000 + 4500 - 2000, bytes_after=3000,
        records_before=500 + 450 - 200, records_after=300, tombstones_kept=5, tombstones_removed=5,
        aborted_removed=5, keys=120, error="later", applied=True, quarantine="q1", rounds=2, bytes_freed=4500)
    # a plan without figures (None) gives none; no counts read as zero; the first error stands without a later one
    bare = CleaningPlan(error="first", quarantine=None).followed_by(CleaningPlan(quarantine="q2", applied=True))
    assert (bare.segments_before, bare.bytes_before, bare.records_before) == (None, None, None)
    assert (bare.tombstones_removed, bare.aborted_removed, bare.error, bare.quarantine, bare.applied) == (
        0, 0, "first", "q2", True)


# --- log_cleaner._round_error: Kafka's own failure is the answer, anything else was not planned -------------------


def test_a_rounds_error_is_kafkas_failure_or_not_planned():
    from segdex.indexcore.log.log_cleaner import _round_error
    from segdex.indexcore.record.memory_records_builder import UnsupportedCompressionException

    kafka = LogCleaningException("Kafka's cleaner fails this round", kafka_exception="java.lang.X")
    assert _round_error(kafka) == "Kafka's cleaner fails this round"
    assert _round_error(kafka, "round 2") == "round 2: Kafka's cleaner fails this round"
    assert _round_error(LogCleaningException("ours")) == "not planned: ours"
    assert _round_error(OSError(28, "No space left on device")) == "not planned: No space left on device"
    assert _round_error(OSError("plain"), "round 3") == "round 3 not planned: plain"
    assert _round_error(UnsupportedCompressionException("snappy")) == (
        "not planned: snappy (snappy batches are rebuilt by the _snappy kernel, not built here)")


# --- cleaner.Cleaner.group_segments_by_size: Cleaner.groupSegmentsBySize at each of its limits ---------------------


def _sized(base: int, size: int, index_entries: int = 0, time_entries: int = 0) -> CleanerSegment:
    return CleanerSegment(f"{base:020d}.log", base, size, 0, [None] * index_entries, time_entries, [], base)


def _grouping(segs, max_size=1 << 30, max_index_size=1 << 30, first_uncleanable=1 << 20) -> list[list[int]]:
    groups = cleaner.Cleaner.group_segments_by_size(segs, max_size, max_index_size, first_uncleanable)
    return [[s.base_offset for s in g] for g in groups]


def test_segments_are_grouped_up_to_the_segment_size_exactly():
    segs = [_sized(b, 100) for b in (0, 10, 20, 30)]
    assert _grouping(segs, max_size=200) == [[0, 10], [20, 30]]
    assert _grouping(segs, max_size=199) == [[0], [10], [20], [30]]
    assert _grouping(segs, max_size=300) == [[0, 10, 20], [30]]


def test_segments_are_grouped_up_to_the_index_size_exactly():
    segs = [_sized(b, 1, index_entries=2) for b in (0, 10, 20)]  # 16 bytes of offset index each
    assert _grouping(segs, max_index_size=32) == [[0, 10], [20]]
    assert _grouping(segs, max_index_size=31) == [[0], [10], [20]]
    segs = [_sized(b, 1, time_entries=2) for b in (0, 10, 20)]  # 24 bytes of time index each
    assert _grouping(segs, max_index_size=48) == [[0, 10], [20]]
    assert _grouping(segs, max_index_size=47) == [[0], [10], [20]]


def test_a_group_spans_at_most_int32_offsets_by_the_next_segments_base():
    edge = INT32_MAX + 1  # a next segment at this base: the one before it ends at INT32_MAX at the latest
    assert _grouping([_sized(0, 1), _sized(10, 1), _sized(edge, 1)], first_uncleanable=edge + 5) == [
        [0, 10], [edge]]
    assert _grouping([_sized(0, 1), _sized(10, 1), _sized(edge + 1, 1)], first_uncleanable=edge + 5) == [
        [0], [10, edge + 1]]  # 10's group: the last one ends before edge + 4
    # the last one's end is estimated by the first uncleanable offset
    assert _grouping([_sized(0, 1), _sized(10, 1)], first_uncleanable=edge) == [[0, 10]]
    assert _grouping([_sized(0, 1), _sized(10, 1)], first_uncleanable=edge + 1) == [[0], [10]]
    # an empty segment joins whatever its offsets
    assert _grouping([_sized(0, 1), _sized(10, 0), _sized(edge + 1, 1)], first_uncleanable=edge + 5) == [
        [0, 10], [edge + 1]]


# --- skimpy_offset_map.md5_address and native_offset_map: found once per process, so found again here ------------


def test_libcryptos_md5_is_found_checked_and_kept(monkeypatch):
    import ctypes
    import ctypes.util
    import hashlib

    from segdex.indexcore.log import skimpy_offset_map as som

    monkeypatch.setattr(som, "_md5", None)
    address = som.md5_address()
    md5 = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p)(address)
    out = ctypes.create_string_buffer(16)
    md5(b"a key", 5, out)
    assert out.raw == hashlib.md5(b"a key").digest()
    assert som._md5 is not None and som._md5[1] == address and som.md5_address() == address
    # candidates that do not load, or have no MD5, are passed over; none at all is an OSError
    monkeypatch.setattr(som, "_md5", None)
    monkeypatch.setattr(som, "_libcrypto_paths", lambda: ["/nonexistent/libcrypto.so.3", ctypes.util.find_library("c")])
    with pytest.raises(OSError, match="^no libcrypto with MD5 found$"):
        som.md5_address()


def test_the_kernels_offset_map_is_md5s_only_and_not_when_disabled(monkeypatch):
    from segdex.indexcore.log import skimpy_offset_map as som

    assert som.native_offset_map(100, "MD5") is not None and som.native_offset_map(100, "md5") is not None
    assert som.native_offset_map(100, "SHA-256") is None
    monkeypatch.setenv("SEGDEX_NO_NATIVE", "1")
    assert som.native_offset_map(100, "MD5") is None
    monkeypatch.delenv("SEGDEX_NO_NATIVE")
    monkeypatch.setattr(som, "_md5", None)
    monkeypatch.setattr(som, "_libcrypto_paths", lambda: [])
    assert som.native_offset_map(100, "MD5") is None  # no libcrypto: the Python map


# --- cleaner.read_batch: a damaged batch fails the round, naming its file and position ------------------------------


def test_a_damaged_batch_names_its_segment_file_and_position():
    data, pos, _ = _segment(2)
    damaged = bytearray(data)
    damaged[pos[1] + 16] = 7  # the second batch's magic byte
    seg = _cleaner_segment(0, 2)
    assert cleaner.read_batch(bytes(damaged), pos[0], seg, 4096).base_offset == 0
    with pytest.raises(LogCleaningException) as e:
        cleaner.read_batch(bytes(damaged), pos[1], seg, 4096)
    kafka = "org.apache.kafka.common.errors.CorruptRecordException: Invalid magic found in record: 7"
    assert (e.value.kafka_exception, e.value.path, e.value.position) == (kafka, os.path.abspath(seg.log_path), pos[1])
    assert str(e.value) == (f"Kafka's cleaner fails this round ({kafka}): a damaged batch at byte {pos[1]} of "
                            f"{os.path.abspath(seg.log_path)}, served as it is (a clean start does not re-read it); a "
                            f"broker marks the partition uncleanable and leaves it dirty")


# --- cleaner._segment_range: LogSegments.values refuses a range that ends before it starts ------------------------


def test_an_offset_map_asked_for_a_range_ending_before_its_start_fails_as_kafkas_segments_do():
    """``buildOffsetMap`` asks ``LogSegments.values(start, end)`` for the dirty segments; Kafka's refuses an end
    below the start with ``IllegalArgumentException("Invalid log segment range: ...")`` naming the partition, and
    so does the round here (no view asks for one: its cleanable bytes are 0 then), in Kafka's words (``LogSegments``'
    source). An empty range is no segment."""
    from segdex.indexcore.log.skimpy_offset_map import SkimpyOffsetMap

    segs = [_cleaner_segment(0, 2), _cleaner_segment(2, 4)]
    clean = cleaner.Cleaner(SkimpyOffsetMap(2400), threads=1)
    with pytest.raises(LogCleaningException) as e:
        clean.build_offset_map(segs, 0, 3, 1, cleaner.CleanerStats())
    kafka = ("java.lang.IllegalArgumentException: Invalid log segment range: requested segments in p-0 from offset 3 "
             "which is greater than limit offset 1")
    assert (str(e.value), e.value.kafka_exception) == (f"Kafka's cleaner fails this round ({kafka})", kafka)
    with pytest.raises(LogCleaningException) as e:  # the bounds are checked before any segment is looked at
        clean.build_offset_map(segs[:1], 0, 3, 1, cleaner.CleanerStats())
    assert e.value.kafka_exception == kafka
    assert cleaner._segment_range(segs, 3, 3) == [] and cleaner._segment_range(segs, 3, 4) == segs[1:]


# --- cleaner._txn_events: what a split round reads of a segment ahead of the pass ---------------------------------


def test_a_segments_transactional_and_control_batches_are_its_events(tmp_path):
    data = (build_batch(0, [(T, b"a", b"1")])
            + build_batch(1, [(T, b"b", b"2"), (T, b"c", b"3")], producer_id=7, producer_epoch=0,
                          is_transactional=True)
            + build_batch(3, [(T, b"d", b"4")], producer_id=8, producer_epoch=0)
            + build_batch(4, [], producer_id=7, producer_epoch=0, control=("COMMIT", 0), control_timestamp=T)
            + build_batch(5, [(T, b"e", b"5")]))
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    seg = CleanerSegment(str(path), 0, len(data), 0, None, 0, [], 6)
    assert cleaner._txn_events(seg) == [cleaner._TxnEvent(2, 7, True, False, None),
                                        cleaner._TxnEvent(4, 7, True, True, "COMMIT")]
    second = next(b.position for b in batches(data, 0) if b.base_offset == 3)
    assert cleaner._txn_events(seg, second) == [cleaner._TxnEvent(4, 7, True, True, "COMMIT")]


# --- cleaner.CleanedSegment.as_segment and facts: a cleaned segment as the next planned round reads it ----------


def _cleaned_segment(mtime_ms: int = T + 5):
    """A cleaned segment of three batches (offsets 10-14, max timestamps T+1, T+9, T+4), its offset index an entry
    a batch, its time index two entries."""
    from segdex.indexcore.index.offset_index import OffsetIndex
    from segdex.indexcore.index.time_index import TimeIndex
    from segdex.indexcore.index.transaction_index import AbortedTxn, TransactionIndex

    log = (build_batch(10, [(T + 1, b"a", b"1")]) + build_batch(11, [(T + 9, b"b", b"2"), (T + 2, b"c", b"3")])
           + build_batch(13, [(T + 3, b"d", None), (T + 4, b"e", b"5")]))
    positions = [b.position for b in batches(log, 0)]
    offsets = OffsetIndex(10, 1 << 20)
    for offset, position in zip((10, 12, 14), positions, strict=True):
        offsets.append(offset, position)
    times = TimeIndex(10, 1 << 20)
    times.maybe_append(T + 1, 10)
    times.maybe_append(T + 9, 12)
    txn = TransactionIndex(10)
    txn.append(AbortedTxn(7, 10, 12, 15))
    return cleaner.CleanedSegment(10, log, offsets.to_bytes(), times.to_bytes(), txn.to_bytes(), mtime_ms, [10, 20],
                                  len(log)), positions


@pytest.mark.parametrize("on_disk", [False, True])
def test_a_cleaned_segment_is_read_back_as_the_log_holds_it(tmp_path, on_disk: bool):
    from segdex.indexcore.index.transaction_index import AbortedTxn

    cleaned, positions = _cleaned_segment()
    log, path = cleaned.log, None
    if on_disk:  # a planned round's segment spilled to a scratch file: the round kept no bytes of it
        path = str(tmp_path / "00000000000000000010.7.log")
        with open(path, "wb") as f:
            f.write(cleaned.log)
        cleaned.log = b""
    seg = cleaned.as_segment(4096, path)
    assert (seg.log_path, seg.data) == ((path, None) if on_disk else ("(planned round's segment 10)", log))
    assert (seg.base_offset, seg.size, seg.mtime_ms, seg.next_offset) == (10, len(log), T + 5, 15)
    assert seg.offset_index.entries() == list(zip((10, 12, 14), positions, strict=True))
    assert seg.offset_index.lookup(13) == (12, positions[1]) and seg.offset_index.max_entries == 4096 // 8
    assert seg.time_index_entries == 2 and seg.aborted == [AbortedTxn(7, 10, 12, 15)]
    with cleaner._open_segment(seg) as buf:
        assert bytes(buf) == log
    facts = cleaned.facts(path)
    assert facts == cleaner.SegmentFacts(10, len(log), T + 9, T + 1)


def test_an_empty_cleaned_segment_reads_back_empty_and_dated_by_its_time(tmp_path):
    empty = cleaner.CleanedSegment(30, b"", b"", b"", None, T + 5, [30], 0)
    path = str(tmp_path / "00000000000000000030.1.log")
    open(path, "wb").close()
    for where in (None, path):
        seg = empty.as_segment(4096, where)
        assert (seg.next_offset, seg.time_index_entries, seg.aborted, len(seg.offset_index)) == (30, 0, [], 0)
        assert empty.facts(where) == cleaner.SegmentFacts(30, 0, T + 5, cleaner.LONG_MAX)


def test_a_cleaned_segment_at_timestamp_zero_is_dated_zero():
    """Timestamp 0 is a timestamp: the time index's last entry and the first batch's max timestamp, not the file's
    time or none."""
    from segdex.indexcore.index.time_index import TimeIndex

    times = TimeIndex(40, 1 << 20)
    times.maybe_append(0, 40)
    log = build_batch(40, [(0, b"a", b"1")])
    zero = cleaner.CleanedSegment(40, log, b"", times.to_bytes(), None, T + 5, [40], len(log))
    assert zero.facts() == cleaner.SegmentFacts(40, len(log), 0, 0)


# --- cleaner.collect_aborted_transactions: LocalLog.collectAbortedTransactions over the .txnindex entries ---------


def _with_aborted(base: int, *aborted) -> CleanerSegment:
    return CleanerSegment(f"/tmp/p-0/{base:020d}.log", base, 0, 0, None, 0, list(aborted), base)


def test_aborted_transactions_are_those_ending_at_or_after_the_log_start_and_starting_below_the_bound():
    """TransactionIndex.collectAbortedTxns: lastOffset >= the log start (equal counts) and firstOffset < the
    bound, both; an entry ending below the log start is left out though it starts below the bound."""
    from segdex.indexcore.index.transaction_index import AbortedTxn

    ended_before, ends_at_start, inside, past = (AbortedTxn(1, 0, 5, 6), AbortedTxn(2, 3, 10, 11),
                                                 AbortedTxn(3, 12, 14, 15), AbortedTxn(4, 30, 32, 33))
    segs = [_with_aborted(0, ended_before, ends_at_start, inside, past)]
    assert cleaner.collect_aborted_transactions(segs, 10, 0, 20) == [ends_at_start, inside]


def test_aborted_transactions_stop_at_the_first_whose_last_stable_offset_reaches_the_bound():
    """An entry whose last stable offset equals the bound ends the search: a later entry starting below the bound
    (transactions that overlapped) is not taken."""
    from segdex.indexcore.index.transaction_index import AbortedTxn

    first, overlapping = AbortedTxn(1, 4, 8, 20), AbortedTxn(2, 6, 25, 26)
    assert cleaner.collect_aborted_transactions([_with_aborted(0, first, overlapping)], 0, 0, 20) == [first]
    assert cleaner.collect_aborted_transactions([_with_aborted(0, first, overlapping)], 0, 0, 21) == [
        first, overlapping]


# --- cleaner.Cleaner.clean: rounds over partitions written here, each at a case no other in-process test has -----


def _clean(part, segments: dict[int, bytes], config=None, now: int = T + 10_000, checkpoint: int | None = None,
           high_watermark: int | None = None, io_buffer_size: int = 262_144, mtimes: dict[int, int] | None = None):
    """The segments written into ``part`` (base offset: bytes; the last one active), loaded as a broker loads them
    and cleaned in one round from ``checkpoint`` (the cleaner's view, as test_cleaner.py's ``load``); ``mtimes``:
    a segment's .log modification time (ms)."""
    from segdex.indexcore.config.log_config import LogConfig
    from segdex.indexcore.log.log_cleaner import load_for_cleaning
    from segdex.indexcore.log.log_cleaner_manager import SegmentFacts, cleaning_view, last_stable_offset
    from segdex.indexcore.log.skimpy_offset_map import SkimpyOffsetMap
    from segdex.indexcore.tools.segment_writer import segment_name

    part.mkdir()
    for base, data in segments.items():
        (part / segment_name(base)).write_bytes(data)
        if mtimes and base in mtimes:
            os.utime(part / segment_name(base), ns=(mtimes[base] * 1_000_000,) * 2)
    config = config or LogConfig(cleanup_policy="compact")
    loaded = load_for_cleaning(str(part), config, now)
    start, leo, segs = loaded.log_start_offset, loaded.log_end_offset, loaded.segments
    facts = [SegmentFacts(s.base_offset, s.size, 0) for s in segs]
    view = cleaning_view(facts, start, leo, last_stable_offset(loaded.first_unstable_offset, leo), checkpoint, now,
                         config)
    hw = leo if high_watermark is None else high_watermark
    return cleaner.Cleaner(SkimpyOffsetMap(2400), io_buffer_size=io_buffer_size, threads=1).clean(
        segs, view.log, start, hw, loaded.active_producers(), config, now)


def _kept(round_) -> list[tuple[int, int, int]]:
    """Each batch of the round's cleaned segments: (base offset, last offset, records)."""
    from segdex.indexcore.record.records import records

    return [(b.base_offset, b.last_offset, len(list(records(s.log, b)))) for s in round_.segments
            for b in batches(s.log, 0)]


def test_a_fenced_producers_aborted_data_goes_though_its_entry_has_no_last_data_offset(tmp_path):
    """Producer 7's transaction is aborted by a marker of a bumped epoch (1; the coordinator fenced epoch 0): the
    new epoch drops the entry's batches (``ProducerStateEntry.maybeUpdateProducerEpoch``), so its last record has
    no data offset, and only a control batch of epoch 1 is its last. The aborted data batch is deleted, not kept
    empty; the marker stays (its horizon is not due)."""
    seg = (build_batch(0, [(T, b"a", b"1"), (T, b"b", b"2")], producer_id=7, producer_epoch=0, base_sequence=0,
                       is_transactional=True)
           + build_batch(2, [], producer_id=7, producer_epoch=1, control=("ABORT", 0), control_timestamp=T + 1)
           + build_batch(3, [(T + 2, b"c", b"3")]))
    round_ = _clean(tmp_path / "c-0", {0: seg, 4: build_batch(4, [(T + 3, b"d", b"4")])})
    assert _kept(round_) == [(2, 2, 1), (3, 3, 1)]
    assert (round_.stats.aborted_removed, round_.stats.empty_batches) == (2, 0)


def test_a_legacy_tombstone_goes_from_a_segment_dated_exactly_at_the_legacy_horizon(tmp_path):
    """A v0/v1 tombstone's horizon is the last clean segment's modification time less delete.retention.ms; a dirty
    segment modified exactly then is not after it, so its tombstones go (``lastModified > deleteHorizonMs``)."""
    from segdex.indexcore.config.log_config import LogConfig

    config = LogConfig(cleanup_policy="compact", delete_retention_ms=1000)
    clean = b"".join(build_batch(o, [(T + o, k, b"v")], magic=1) for o, k in ((0, b"x"), (1, b"y")))
    dirty = build_batch(2, [(T + 2, b"a", None)], magic=1) + build_batch(3, [(T + 3, b"b", b"v")], magic=1)
    segments = {0: clean, 2: dirty, 4: build_batch(4, [(T + 4, b"c", b"v")], magic=1)}
    mtime = T + 50_000
    for dirty_mtime, tombstone_kept in ((mtime - 1000, False), (mtime - 999, True)):
        round_ = _clean(tmp_path / f"c-{dirty_mtime}", segments, config, checkpoint=2,
                        mtimes={0: mtime, 2: dirty_mtime, 4: mtime})
        assert (round_.stats.tombstones_removed, round_.stats.tombstones_kept) == (
            (0, 1) if tombstone_kept else (1, 0)), dirty_mtime


@pytest.mark.parametrize("kernel", [True, False])
def test_a_message_set_below_its_segments_base_fails_the_round_in_a_buffer_of_its_own(tmp_path, monkeypatch,
                                                                                      kernel: bool):
    """Segment 5 as older brokers named it, by its compressed v1 wrapper's last offset (5; its records 3, 4 and a
    keyless 5): records 3 and 4 are kept, below the cleaned segment's base 5. With a read buffer that holds only
    the wrapper, Kafka's append checks that buffer alone, at offset 4, and the round fails (the segment does not
    overflow its own base, so it cannot be split); the batches read after it in the next buffer (6, copied; 7,
    keyless at the high watermark, kept empty) are each checked at their own offsets."""
    from segdex.indexcore.tools.segment_writer import build_legacy

    if not kernel:  # the Python loops end the segment (the kernel's end is another branch)
        monkeypatch.setenv("SEGDEX_NO_NATIVE", "1")
    wrapper = build_legacy(3, [(T, b"a", b"1"), (T + 1, b"b", b"2"), (T + 2, None, b"3")], compression=1)
    seg = (wrapper + build_batch(6, [(T + 3, b"c", b"4")], producer_id=9, producer_epoch=0, base_sequence=0)
           + build_batch(7, [(T + 4, None, b"5")]))
    with pytest.raises(LogCleaningException) as e:
        _clean(tmp_path / "c-0", {5: seg, 8: build_batch(8, [(T + 5, b"d", b"6")])}, high_watermark=8,
               io_buffer_size=len(wrapper))
    assert "offset 4, the last kept of a message set of segment 5, lies below the cleaned segment's base offset 5" \
        in str(e.value)


# --- cleaner.usable_cores: the affinity, no more than the cgroup's CPU quota ---------------------------------------


@pytest.mark.parametrize(("cpu_max", "quota"), [
    ("max 100000\n", None),  # no quota
    ("100000 100000\n", 1),
    ("150000 100000\n", 1),  # whole CPUs: 1.5 is 1
    ("50000 100000\n", 1),  # under one CPU is one
    ("400000 100000 more\n", 4),  # the first two fields
    ("100000\n", None),  # not "quota period": no quota read
    (None, None),  # no such file (no cgroup v2)
])
def test_the_usable_cores_are_the_affinity_within_the_cgroup_quota(tmp_path, cpu_max, quota):
    path = tmp_path / "cpu.max"
    if cpu_max is not None:
        path.write_text(cpu_max)
    affinity = len(os.sched_getaffinity(0))
    assert cleaner.usable_cores(str(path)) == (affinity if quota is None else min(affinity, quota))


def test_the_usable_cores_follow_the_affinity_not_the_machine(tmp_path):
    """Pinned to one core of several, the process may use one (``sched_getaffinity``, not ``cpu_count``)."""
    cores = os.sched_getaffinity(0)
    if len(cores) < 2:
        pytest.skip("one core: the affinity cannot be narrowed")
    os.sched_setaffinity(0, {min(cores)})
    try:
        assert cleaner.usable_cores(str(tmp_path / "none")) == 1
    finally:
        os.sched_setaffinity(0, cores)


def test_a_v1_message_set_emptied_at_the_high_watermark_names_kafkas_exception(tmp_path):
    """The round's failure carries Kafka's exception apart from the text (``kafka_exception``: what the plan
    compares with Kafka's answer)."""
    segments = {base: b"".join(build_batch(o, [(T + o, k, b"v")], magic=1) for o, k in recs)
                for base, recs in ((0, [(0, b"a"), (1, None)]), (2, [(2, b"b")]), (3, [(3, b"c")]))}
    with pytest.raises(LogCleaningException) as e:
        _clean(tmp_path / "c-0", segments, high_watermark=2)
    assert e.value.kafka_exception == ("java.lang.IllegalStateException: Empty batches are only supported for magic "
                                       "v2 and above")


# --- cleaner.read_batch: what Kafka's round throws at a damaged batch, by what its read buffer holds ---------------


def _tail(size: int | None, magic: int | None, length: int) -> bytes:
    """A damaged batch's first ``length`` bytes: offset 9, the size field (zeros when None), a leader epoch, the
    magic byte (as a signed byte), then zeros."""
    head = struct.pack(">q", 9) + (struct.pack(">i", size) if size is not None else bytes(4)) + bytes(4)
    return (head + struct.pack(">b", magic if magic is not None else 2) + bytes(200))[:length]


WHERE = "for log segment {path} at position {position}"


@pytest.mark.parametrize(("tail", "kafka"), [
    (_tail(None, None, 1), "java.lang.IllegalStateException: Could not determine next batch size " + WHERE),
    (_tail(None, None, 11), "java.lang.IllegalStateException: Could not determine next batch size " + WHERE),
    (_tail(5, None, 12), "org.apache.kafka.common.errors.CorruptRecordException: Record size 5 is less than the "
                         "minimum record overhead (14)"),
    (_tail(-1, None, 40), "org.apache.kafka.common.errors.CorruptRecordException: Record size -1 is less than the "
                          "minimum record overhead (14)"),
    (_tail(100, 2, 16), "java.lang.IllegalStateException: Could not determine next batch size " + WHERE),
    (_tail(100, 7, 17), "org.apache.kafka.common.errors.CorruptRecordException: Invalid magic found in record: 7"),
    (_tail(100, 3, 40), "org.apache.kafka.common.errors.CorruptRecordException: Invalid magic found in record: 3"),
    (_tail(100, -1, 40), "org.apache.kafka.common.errors.CorruptRecordException: Invalid magic found in record: -1"),
    (_tail(100, 2, 17), "java.lang.IllegalStateException: Batch size 112 < buffer size 1048588, but not processed "
                        + WHERE),
    (_tail(60, 2, 71), "java.lang.IllegalStateException: Batch size 72 < buffer size 1048588, but not processed "
                       + WHERE),
    (_tail(2_000_000, 2, 40), "org.apache.kafka.common.errors.CorruptRecordException: Log segment may be corrupt, "
                              "batch size 2000012 > 40 bytes left in segment " + WHERE),
    (_tail(1_048_576, 2, 40), "java.lang.IllegalStateException: Batch size 1048588 < buffer size 1048588, but not "
                              "processed " + WHERE),  # exactly the largest buffer
    (_tail(1_048_577, 2, 40), "org.apache.kafka.common.errors.CorruptRecordException: Log segment may be corrupt, "
                              "batch size 1048589 > 40 bytes left in segment " + WHERE),  # one byte past it
])
def test_a_damaged_batch_fails_the_round_as_kafkas_read_of_it_throws(tmp_path, tail, kafka):
    """After one whole batch, a damaged one: too short to read a size (under 12 bytes) or a magic byte (under 17),
    a size field below 14, a magic byte outside 0..2 (signed), a batch cut short within the largest buffer (which
    grows from 256 KiB to ``max.message.bytes``) or past it."""
    whole = build_batch(0, [(T, b"k", b"v")] * 9)
    path = tmp_path / "00000000000000000000.log"
    seg = CleanerSegment(str(path), 0, len(whole) + len(tail), 0, None, 0, [], 9)
    buf = whole + tail
    assert cleaner.read_batch(buf, 0, seg, cleaner.IoBuffers()).base_offset == 0
    assert cleaner.read_batch(whole, len(whole), seg, cleaner.IoBuffers()) is None
    with pytest.raises(LogCleaningException) as e:
        cleaner.read_batch(buf, len(whole), seg, cleaner.IoBuffers())
    want = kafka.format(path=path, position=len(whole))
    assert (e.value.kafka_exception, e.value.position, e.value.path) == (want, len(whole), str(path))


def test_a_group_ending_in_a_segment_whose_next_offset_failed_names_the_file(tmp_path):
    """``group_next_offset``: the load's next offset, or the round fails with what the segment's
    ``readNextOffset`` threw, naming its file (the plan reads ``path``)."""
    path = tmp_path / "00000000000000000005.log"
    seg = CleanerSegment(str(path), 5, 0, 0, None, 0, [], 9)
    assert cleaner.group_next_offset(seg) == 9
    seg.next_offset_error = "org.apache.kafka.common.KafkaException: Failed to load record batch"
    with pytest.raises(LogCleaningException) as e:
        cleaner.group_next_offset(seg)
    assert (e.value.kafka_exception, e.value.path) == (seg.next_offset_error, os.path.abspath(path))
    assert f"reading to the end of {os.path.abspath(path)}, served as it is" in str(e.value)


def test_a_control_batch_declaring_no_record_is_not_asked_its_compression_type():
    """``onControlBatchRead`` reads a control batch with ``RecordBatch.iterator``, which is empty for a batch
    declaring no record before any look at its compression type: an emptied marker whose attributes name id 7 is
    read as holding none; a marker holding its record throws ``CompressionType.forId``'s exception."""
    from segdex.indexcore.errors import UnknownCompressionTypeException
    from segdex.indexcore.record.memory_records_builder import empty_header

    marker = build_batch(4, [], producer_id=7, producer_epoch=0, control=("ABORT", 0), control_timestamp=0)
    attributes = next(batches(marker)).attributes
    emptied = empty_header(4, 4, attributes | 7, 0, 0, 7, 0, -1)
    assert cleaner._control_type(emptied, next(batches(emptied))) is None
    assert cleaner._control_type(marker, next(batches(marker))) == "ABORT"
    damaged = bytearray(marker)
    damaged[22] |= 7
    with pytest.raises(UnknownCompressionTypeException, match="^Unknown compression type id: 7$"):
        cleaner._control_type(bytes(damaged), next(batches(bytes(damaged))))


# --- cleaner.without_bytes: what a round keeps of a group written out --------------------------------------------


@pytest.mark.parametrize("applied", [True, False])
def test_a_group_written_out_keeps_its_modification_time(tmp_path, applied: bool):
    """A round whose groups are written out as they are cleaned (``SwapWriter``: applied), or that keeps no files
    (``keep_files=False``), keeps of each group (``CleaningRound.segments``) its names, size and time but not its
    bytes: the time is the group's last segment's ``.log`` modification time (``cleanSegments``'
    ``setLastModified``), the one the swapped-in ``.log`` carries on disk."""
    from segdex.indexcore.config.log_config import LogConfig
    from segdex.indexcore.log.log_cleaner import SwapWriter, load_for_cleaning
    from segdex.indexcore.log.log_cleaner_manager import cleaning_view, last_stable_offset
    from segdex.indexcore.log.skimpy_offset_map import SkimpyOffsetMap
    from segdex.indexcore.tools.segment_writer import segment_name

    part = tmp_path / "c-0"
    part.mkdir()
    mtimes = {0: T - 7_000, 2: T - 5_000, 4: T - 3_000, 6: T - 1_000}
    for base, mtime in mtimes.items():
        (part / segment_name(base)).write_bytes(build_batch(base, [(T + base, b"a", b"v")])
                                                + build_batch(base + 1, [(T + base + 1, b"k%d" % base, b"v")]))
        os.utime(part / segment_name(base), ns=(mtime * 1_000_000,) * 2)
    config = LogConfig(cleanup_policy="compact", segment_bytes=300)  # groups [0, 2], [4] (140 bytes a segment)
    loaded = load_for_cleaning(str(part), config, T + 10_000)
    view = cleaning_view(loaded.facts, 0, 8, last_stable_offset(None, 8), None, T + 10_000, config)
    clean = cleaner.Cleaner(SkimpyOffsetMap(2400), keep_files=False, threads=1)
    round_ = clean.clean(loaded.segments, view.log, 0, 8, {}, config, T + 10_000,
                         SwapWriter(str(part), None, None) if applied else None)
    assert [(c.base_offset, c.replaces, c.log, c.mtime_ms) for c in round_.segments] == [
        (0, [0, 2], b"", mtimes[2]), (4, [4], b"", mtimes[4])]
    if applied:
        assert [os.stat(part / segment_name(c.base_offset)).st_mtime_ns // 1_000_000 for c in round_.segments] == [
            mtimes[2], mtimes[4]]
