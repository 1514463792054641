"""Unit checks of ``log_segment.recover`` and its helpers on small segments built byte by byte, for the corners
the fixture listings (``test_recovery_facts``) do not reach: mixed codecs and magics in one segment, an unreadable
legacy wrapper, a batch Kafka counts before its producer update fails, a producer write refused while its
transaction is open, a leader epoch numerically equal to the previous epoch's start offset, offsets past int64,
a time index whose final entry would go backwards, and the offset of the largest timestamp.

Expected values come from Kafka's rules (``LogSegment.recover``: validBytes grows before ``updateProducerState``,
a legacy wrapper is only CRC-checked, ``TimestampOffset.UNKNOWN`` is (-1, -1), ``TimeIndex.maybeAppend``'s checks,
``LeaderEpochFileCache.assign``, ``ProducerAppendInfo.appendDataBatch``), from Kafka's own listings
(``*.batches.json``) and from the bytes each test writes (``build_batch``'s inputs, struct.pack)."""

from __future__ import annotations

import json
import struct
import zlib
from array import array

import pytest

from segdex.indexcore.errors import InvalidOffsetException
from segdex.indexcore.index.time_index import TimeIndex
from segdex.indexcore.log.log_segment import recover
from segdex.indexcore.log.scan import kernel
from segdex.indexcore.log.scan.python_kernel import scan_simple
from segdex.indexcore.tools.segment_writer import build_batch
from tests.support.fixtures import FIXTURES, fixture_case_names
from tests.support.log_segments import TS, one

NATIVE = pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
V2_HEADER = 61  # bytes of a v2 batch before its first record
V2_CRC_FROM = 21  # the v2 CRC-32C covers attributes onwards
LEGACY_CRC_FROM = 16  # the v0/v1 CRC-32 covers magic onwards (after offset, size, crc)


def _v2_crc(buf: bytearray, pos: int, size: int) -> None:
    """Rewrite a v2 batch's CRC-32C over bytes [attributes, end), as Kafka computes it."""
    from crc32c import crc32c

    struct.pack_into(">I", buf, pos + 17, crc32c(bytes(buf[pos + V2_CRC_FROM:pos + size])))


@NATIVE
def test_codecs_and_magics_of_every_batch_are_reported(native: bool):
    """``codecs`` and ``magics`` are the sets over all kept batches, in Kafka's id order, not the last batch's."""
    buf = (build_batch(0, [(TS, b"k", b"a"), (TS, b"k", b"b")], magic=1, compression=1)
           + build_batch(2, [(TS + 1, b"k", b"c")], magic=2, compression=0))
    result = recover(buf, 0, native=native)
    assert (result.batch_count, result.record_count, result.first_offset, result.last_offset) == (2, 3, 0, 2)
    assert (result.codecs, result.magics, result.valid_bytes, result.error) == (["none", "gzip"], [1, 2], len(buf),
                                                                                None)


def _unreadable_gzip_wrapper(offset: int) -> bytes:
    """A v1 gzip wrapper whose payload is not gzip, with a correct outer CRC (all Kafka's recovery checks)."""
    good = bytearray(build_batch(offset, [(TS, b"k", b"a"), (TS, b"k", b"b")], magic=1, compression=1))
    value_at = 8 + 4 + 4 + 1 + 1 + 8 + 4 + 4  # offset, size, crc, magic, attributes, timestamp, key -1, value size
    good[value_at:] = b"\x00" * (len(good) - value_at)
    struct.pack_into(">I", good, 12, zlib.crc32(bytes(good[LEGACY_CRC_FROM:])) & 0xFFFFFFFF)
    return bytes(good)


@NATIVE
def test_an_unreadable_legacy_wrapper_is_kept(native: bool):
    """``LogSegment.recover`` never opens a legacy wrapper (``ensureValid`` checks the outer CRC; ``lastOffset``
    and ``maxTimestamp`` are the wrapper's own): the batch is kept whole and recovery goes on past it."""
    wrapper = _unreadable_gzip_wrapper(1)
    buf = wrapper + build_batch(2, [(TS, b"k", b"c")], magic=1)
    result = recover(buf, 0, native=native)
    assert (result.error, result.stop_reason, result.valid_bytes, result.batch_count, result.last_offset,
            result.max_timestamp) == (None, None, len(buf), 2, 2, TS)


@NATIVE
def test_a_batch_whose_producer_update_fails_is_counted_first(native: bool):
    """Kafka adds a batch to validBytes before ``updateProducerState``; an ``InvalidRecordException`` there (a
    control record key version below 0) truncates after the batch, which is counted, as the segment's first."""
    buf = bytearray(build_batch(0, [], producer_id=5, producer_epoch=0, control=("ABORT", 0)))
    key_at = V2_HEADER + 4 + 1  # one-byte varints: length, attributes, timestamp and offset deltas; key length
    struct.pack_into(">h", buf, key_at, -1)
    _v2_crc(buf, 0, len(buf))
    result = recover(bytes(buf) + one(1), 0, native=native)
    assert (result.valid_bytes, result.batch_count, result.record_count, result.first_offset,
            result.last_offset, result.error) == (len(buf), 1, 1, 0, 0, None)
    assert result.stop_reason.startswith(
        f"InvalidRecordException at position {len(buf)}: Invalid version found for control record: -1")


@NATIVE
def test_a_plain_write_inside_an_open_transaction_fails_recovery_at_that_batch(native: bool):
    """``ProducerAppendInfo.appendDataBatch``: a non-transactional batch from a producer whose transaction is open
    throws ``InvalidTxnStateException``, which escapes recovery; the error names the batch that Kafka refused."""
    txn = one(0, producer_id=5, producer_epoch=0, base_sequence=0, is_transactional=True)
    plain = one(1, producer_id=5, producer_epoch=0, base_sequence=1)
    result = recover(txn + plain + one(2, producer_id=5, producer_epoch=0, base_sequence=2), 0, native=native)
    assert result.error == f"InvalidTxnStateException at position {len(txn)}: Expected transactional write from " \
                           f"producer 5 at offset 1"


@NATIVE
def test_an_epoch_equal_to_the_last_epochs_start_offset_is_still_a_new_epoch(native: bool):
    """``LeaderEpochFileCache.assign``: a batch whose partitionLeaderEpoch is above the latest epoch starts a new
    one at its base offset, whatever that number happens to equal (here the previous epoch's start offset)."""
    buf = one(5, partition_leader_epoch=1) + one(6, partition_leader_epoch=5) + one(7, partition_leader_epoch=5)
    result = recover(buf, 5, native=native)
    assert result.leader_epochs == [(1, 5), (5, 6)]
    assert (result.valid_bytes, result.batch_count, result.last_offset) == (len(buf), 3, 7)


def test_the_transaction_index_belongs_to_the_segment():
    """Kafka opens a segment's ``TransactionIndex`` with the segment's base offset as its start offset."""
    assert recover(b"", 42).txn_index.start_offset == 42


def _python_overflow_text(value: int) -> str:
    """Python's own text for an int64 slot given ``value`` (the OverflowError recovery reports)."""
    try:
        array("q", [0])[0] = value
    except OverflowError as e:
        return str(e)
    raise AssertionError("no overflow")


def test_offsets_past_int64_fail_recovery_with_a_reason():
    """An offset past Long.MAX_VALUE cannot be held by Kafka's segment (its lastOffset would wrap): recovery fails
    with an error naming the position, not silently."""
    base = 2**63 - 10
    buf = build_batch(2**63 - 2, [(TS, b"k", b"a"), (TS, b"k", b"b"), (TS, b"k", b"c")], producer_id=5,
                      producer_epoch=0, base_sequence=0, is_transactional=True)
    result = recover(buf, base, native=False)
    assert result.error == (f"OverflowError at position 0: {_python_overflow_text(2**63)} "
                            f"(offsets or file positions beyond what a Kafka segment can hold)")


@NATIVE
def test_a_final_time_index_entry_going_backwards_fails_recovery(native: bool):
    """Recovery ends with ``timeIndex.maybeAppend(maxTimestampSoFar, offsetOfMaxTimestampSoFar, true)``; when the
    largest timestamp belongs to an offset below the time index's last entry, maybeAppend throws
    (``InvalidOffsetException``) and recovery fails."""
    big = build_batch(10, [(TS, b"k", b"v" * 200)])
    small = build_batch(20, [(TS + 1000, b"k", b"v")])
    back = build_batch(5, [(TS + 2000, b"k", b"v")])
    interval = len(small)  # indexed at `small` (len(big) > interval), not at `back` (len(small) is not)
    assert len(big) > interval
    result = recover(big + small + back, 0, interval, native=native)
    assert result.error == ("InvalidOffsetException at the end of the segment: Attempt to append an offset (5) to "
                            "slot 1 no larger than the last offset appended (20)")


def test_time_index_refuses_a_smaller_timestamp():
    """``TimeIndex.maybeAppend``: a timestamp below the last entry's throws, naming both."""
    index = TimeIndex(0, 1024)
    index.maybe_append(100, 5)
    with pytest.raises(InvalidOffsetException) as e:
        index.maybe_append(50, 6)
    assert str(e.value) == ("Attempt to append a timestamp (50) to slot 1 no larger than the last timestamp "
                            "appended (100)")


def test_an_empty_segment_has_no_offset_of_max_timestamp():
    """``TimestampOffset.UNKNOWN`` is (-1, -1): nothing read, no offset of the largest timestamp."""
    result = recover(b"", 7)
    assert (result.max_timestamp, result.offset_of_max_timestamp, result.batch_count) == (-1, -1, 0)


@pytest.mark.parametrize("case", [c for c in fixture_case_names() if not c.startswith("corrupt_")])
def test_offset_of_max_timestamp_is_kafkas(case: str):
    """``LogSegment.recover``: the last offset of the first batch whose maxTimestamp is above all before it."""
    for listing in sorted((FIXTURES / case / "broker").glob("*.batches.json")):
        batches = json.loads(listing.read_text())
        log = listing.with_name(listing.name.replace(".batches.json", ".log"))
        base = int(log.name[:20])
        best, offset = -1, base
        for b in batches:
            if b["maxTimestamp"] > best:
                best, offset = b["maxTimestamp"], b["lastOffset"]
        result = recover(log.read_bytes(), base, native=False)
        want = offset if batches else -1
        assert (result.max_timestamp, result.offset_of_max_timestamp) == (best, want), (case, log.name)


def test_forbidding_the_native_kernel_gives_the_python_one():
    """``native=False`` forbids the extension: the Python twin is used even when the native one is loaded."""
    assert kernel(False) is scan_simple


def test_the_first_batch_timestamp_is_kafkas(tmp_path):
    """``LogSegment.getFirstBatchTimestamp``: the first batch's max timestamp when it is 0 or more, else
    Long.MAX_VALUE (a negative timestamp, or no batch at all)."""
    from segdex.indexcore.log.log_segment import LONG_MAX, LogSegment

    log = tmp_path / "00000000000000000000.log"
    for first, want in ((0, 0), (-1, LONG_MAX), (TS, TS)):
        log.write_bytes(build_batch(0, [(first, b"k", b"v")]) + build_batch(1, [(TS + 5, b"k", b"v")]))
        assert LogSegment(str(log), 0).first_batch_timestamp() == want
    log.write_bytes(b"")
    assert LogSegment(str(log), 0).first_batch_timestamp() == LONG_MAX
