"""Batch validity (``ensure_valid``) and payload decompression, on bytes packed here by hand; the helpers that pack
v2 records and batches serve ``test_default_record.py`` (v2 record parsing) too.

Where the expected values come from: every batch is packed with ``struct`` from the Kafka protocol guide's field
lists (v2: baseOffset int64, batchLength int32, partitionLeaderEpoch int32, magic int8, crc uint32 = CRC-32C of the
bytes from attributes on, attributes int16, lastOffsetDelta int32, baseTimestamp int64, maxTimestamp int64,
producerId int64, producerEpoch int16, baseSequence int32, recordsCount int32, then records as varint length,
attributes int8, varlong timestampDelta, varint offsetDelta, varint-length key and value, varint header count and
headers; legacy: offset int64, size int32, crc uint32 = CRC-32 from magic on, magic, attributes, key, value).

The rules and error texts are Kafka's: ``DefaultRecordBatch.ensureValid`` ("Record batch is corrupt (the size N is
smaller than the minimum allowed overhead 61)", "Record is corrupt (stored crc = X, computed crc = Y)"),
``LegacyRecord.ensureValid`` ("Record is corrupt (crc could not be retrieved as the record is too small, size =
N)"; ``RECORD_OVERHEAD_V0`` = 14), ``DefaultRecordBatch`` ("Found invalid record count N in magic vM batch"),
``ByteUtils.readVarlong`` (at most 10 bytes: it fails only once the shift passes 63), ``Utils.utf8`` (malformed
UTF-8 becomes U+FFFD). Where Kafka's text has no counterpart the whole text pinned is segdex's own wording.
"""

from __future__ import annotations

import struct
import zlib

import crc32c
import pytest

from segdex.indexcore.errors import (
    CorruptRecordException,
)
from segdex.indexcore.log.log_segment import recover
from segdex.indexcore.record.record_batch import RecordBatch, ensure_valid, increment_sequence
from segdex.indexcore.record.records import Record, v2_records
from tests.support.kafka_bytes import RECORD_BATCH_V2_HEADER as V2_HEADER  # 61 bytes: RECORD_BATCH_OVERHEAD
from tests.support.kafka_bytes import varint as zz

CRC_FROM = 21  # attributes offset: the CRC-32C covers attributes .. end of batch
LOG_OVERHEAD = 12


def vbytes(data: bytes | None) -> bytes:
    return zz(-1) if data is None else zz(len(data)) + data


def record_body(key: bytes | None, value: bytes | None, ts_delta: int = 0, offset_delta: int = 0,
                headers: list[tuple[bytes | None, bytes | None]] | None = None, ts_raw: bytes | None = None) -> bytes:
    """A v2 record after its length: attributes, timestampDelta, offsetDelta, key, value, headers."""
    hs = headers or []
    return (b"\x00" + (ts_raw if ts_raw is not None else zz(ts_delta)) + zz(offset_delta) + vbytes(key)
            + vbytes(value) + zz(len(hs)) + b"".join(vbytes(k) + vbytes(v) for k, v in hs))


def framed(body: bytes) -> bytes:
    return zz(len(body)) + body


def v2_batch(payload: bytes, count: int, base_offset: int = 100, base_ts: int = 1000, max_ts: int = 1000,
             attributes: int = 0) -> bytes:
    """A whole v2 batch with a correct CRC-32C."""
    head = V2_HEADER.pack(base_offset, 49 + len(payload), 0, 2, 0, attributes, max(count - 1, 0), base_ts, max_ts,
                          -1, -1, -1, count)
    data = bytearray(head + payload)
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[CRC_FROM:])))
    return bytes(data)


def v2_view(data: bytes, magic: int = 2) -> RecordBatch:
    """The header of ``data`` as the dataclass, from the struct layout (not from segdex's parser)."""
    (base, length, epoch, _magic, crc, attrs, last_delta, _bts, max_ts, pid, pepoch, seq,
     count) = V2_HEADER.unpack_from(data, 0)
    return RecordBatch(0, length + LOG_OVERHEAD, magic, crc, base, base + last_delta, attrs, max_ts, pid, pepoch,
                       seq, epoch, count)


def legacy_message(key: bytes | None, value: bytes | None) -> tuple[bytes, RecordBatch]:
    """A magic 0 message and its dataclass view (size = 12 + messageSize)."""
    rest = struct.pack(">bb", 0, 0) + b"".join(struct.pack(">i", -1) if f is None else struct.pack(">i", len(f)) + f
                                               for f in (key, value))
    crc = zlib.crc32(rest) & 0xFFFFFFFF
    data = struct.pack(">qiI", 5, len(rest) + 4, crc) + rest
    return data, RecordBatch(0, len(data), 0, crc, 5, 5, 0, -1)


def error_text(exc_type: type[Exception], fn, *args) -> str:
    with pytest.raises(exc_type) as info:
        fn(*args)
    return str(info.value)


def read_all(data: bytes) -> list[Record]:
    return list(v2_records(data, v2_view(data)))


# --- ensure_valid -------------------------------------------------------------------------------------------


def test_v2_batch_of_exactly_the_minimum_overhead_is_valid():
    """A 61-byte v2 batch (header only, 0 records) is not below RECORD_BATCH_OVERHEAD: ensureValid accepts it."""
    data = v2_batch(b"", 0)
    assert len(data) == 61
    assert ensure_valid(data, v2_view(data)) is None


def test_v2_batch_one_byte_below_the_minimum_overhead():
    """A v2 batch of 60 bytes is corrupt with Kafka's text, even when its CRC-32C over those bytes matches."""
    data = bytearray(v2_batch(b"", 0)[:60])
    struct.pack_into(">i", data, 8, 48)
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[CRC_FROM:])))
    batch = v2_view(bytes(data) + b"\x00")  # the struct needs 61 bytes to unpack; the size field says 60
    assert batch.size_in_bytes == 60
    assert error_text(CorruptRecordException, ensure_valid, bytes(data), batch) == (
        "Record batch is corrupt (the size 60 is smaller than the minimum allowed overhead 61)")


def test_v2_batch_with_a_wrong_crc():
    """DefaultRecordBatch.ensureValid: 'Record is corrupt (stored crc = X, computed crc = Y)'."""
    data = bytearray(v2_batch(framed(record_body(b"k", b"v")), 1))
    good = struct.unpack_from(">I", data, 17)[0]
    struct.pack_into(">I", data, 17, good ^ 1)
    assert error_text(CorruptRecordException, ensure_valid, bytes(data), v2_view(bytes(data))) == (
        f"Record is corrupt (stored crc = {good ^ 1}, computed crc = {good})")


def test_smallest_legacy_message_is_valid():
    """A legacy message of exactly RECORD_OVERHEAD_V0 (14) bytes after offset and size passes ensureValid."""
    data, batch = legacy_message(None, None)
    assert batch.size_in_bytes - LOG_OVERHEAD == 14
    assert ensure_valid(data, batch) is None


def test_legacy_message_one_byte_below_the_minimum():
    """LegacyRecord.ensureValid on a 13-byte message (size is the message's, without offset and size fields)."""
    data, _ = legacy_message(None, None)
    short = data[:-1]
    rest_crc = zlib.crc32(short[16:]) & 0xFFFFFFFF  # even a matching CRC does not save it
    batch = RecordBatch(0, len(short), 0, rest_crc, 5, 5, 0, -1)
    assert error_text(CorruptRecordException, ensure_valid, short, batch) == (
        "Record is corrupt (crc could not be retrieved as the record is too small, size = 13)")


def test_legacy_message_with_a_wrong_crc():
    """LegacyRecord.ensureValid: 'Record is corrupt (stored crc = X, computed crc = Y)'."""
    data, batch = legacy_message(b"k", b"v")
    good = batch.crc
    batch.crc = good ^ 0x80000000
    assert error_text(CorruptRecordException, ensure_valid, data, batch) == (
        f"Record is corrupt (stored crc = {good ^ 0x80000000}, computed crc = {good})")


# --- what recovery reports ----------------------------------------------------------------------------------


@pytest.mark.parametrize("native", [False, True])
def test_recovery_stops_at_a_batch_with_a_wrong_crc(native: bool):
    """LogSegment.recover truncates at the first batch failing ensureValid and keeps the bytes before it."""
    first = v2_batch(framed(record_body(b"k", b"v")), 1, base_offset=100)
    second = bytearray(v2_batch(framed(record_body(b"k2", b"v2")), 1, base_offset=101))
    good = struct.unpack_from(">I", second, 17)[0]
    struct.pack_into(">I", second, 17, good ^ 0xFF)
    result = recover(first + bytes(second), 100, native=native)
    assert (result.valid_bytes, result.batch_count, result.error) == (len(first), 1, None)
    assert result.stop_reason == (f"CorruptRecordException at position {len(first)}: Record is corrupt "
                                  f"(stored crc = {good ^ 0xFF}, computed crc = {good})")


@pytest.mark.parametrize("native", [False, True])
def test_recovery_stops_at_a_v2_batch_below_the_overhead(native: bool):
    """A v2 batch whose batchLength makes it 60 bytes long ends recovery with Kafka's size text."""
    first = v2_batch(framed(record_body(b"k", b"v")), 1, base_offset=100)
    second = bytearray(v2_batch(b"", 0, base_offset=101)[:60])
    struct.pack_into(">i", second, 8, 48)
    result = recover(first + bytes(second), 100, native=native)
    assert (result.valid_bytes, result.batch_count, result.error) == (len(first), 1, None)
    assert result.stop_reason == (f"CorruptRecordException at position {len(first)}: Record batch is corrupt "
                                  f"(the size 60 is smaller than the minimum allowed overhead 61)")


# ------------------------------------------------------------------ from test_small_modules_units.py


INT32_MAX = 2**31 - 1


@pytest.mark.parametrize("sequence, increment", [
    (0, 5), (INT32_MAX - 5, 5), (INT32_MAX - 4, 5), (INT32_MAX, 1), (INT32_MAX - 2, 10), (INT32_MAX, 0)])
def test_sequences_wrap_from_int_max_to_zero(sequence: int, increment: int):
    """``DefaultRecordBatch.incrementSequence``: past Integer.MAX_VALUE the sequence goes on from 0."""
    total = sequence + increment
    expected = total if total <= INT32_MAX else total - (INT32_MAX + 1)
    assert increment_sequence(sequence, increment) == expected
