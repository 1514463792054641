"""Batch validity (``ensure_valid``), v2 record parsing and payload decompression, on bytes packed here by hand.

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

import gzip
import struct
import zlib

import crc32c
import pytest

from segdex.indexcore.errors import (
    BufferBoundsException,
    CorruptRecordException,
    DecompressionException,
    InvalidRecordException,
)
from segdex.indexcore.log.log_segment import recover
from segdex.indexcore.record.compression import decompress
from segdex.indexcore.record.default_record import PREMATURE_EOF
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


# --- v2 records ---------------------------------------------------------------------------------------------


def test_ten_byte_varlong_timestamp_delta_is_read():
    """ByteUtils.readVarlong accepts 10 bytes: 2**62 zig-zags to 2**63, a 10-byte varlong."""
    ts_raw = zz(2**62)
    assert len(ts_raw) == 10
    data = v2_batch(framed(record_body(b"k", b"v", ts_raw=ts_raw)), 1, base_ts=0, max_ts=2**62)
    assert read_all(data) == [Record(100, 2**62, b"k", b"v", [])]


def test_eleven_byte_varint_is_too_long():
    """A varlong whose 10th byte still has its continuation bit set: ``ByteUtils``' ``IllegalArgumentException``,
    which ``DefaultRecord.readFrom`` turns into "Found invalid record structure"."""
    data = v2_batch(framed(record_body(b"k", b"v", ts_raw=b"\x80" * 10 + b"\x00")), 1)
    assert error_text(InvalidRecordException, read_all, data) == "Found invalid record structure"


def test_truncated_varint():
    """A record length varint cut by the end of the batch: ``uncompressedIterator``'s
    ``BufferUnderflowException``."""
    data = v2_batch(b"\x80", 1)
    assert error_text(InvalidRecordException, read_all, data) == PREMATURE_EOF


def test_a_five_byte_record_length_with_its_high_bit_set_escapes_the_iterator():
    """The record length's ``IllegalArgumentException`` is not the iterator's to catch: Kafka throws it as it
    is, with the value read so far in hexadecimal."""
    data = v2_batch(b"\xff\xff\xff\xff\x8f", 1)
    with pytest.raises(BufferBoundsException) as info:
        read_all(data)
    assert (info.value.kafka_class, str(info.value)) == (
        "java.lang.IllegalArgumentException", "Varint is too long, the most significant bit in the 5th byte is set, "
        "converted value: ffffffff")


def test_key_longer_than_the_batch():
    """A key length that runs past the batch, inside a record whose own length fits: the slice's
    ``IllegalArgumentException``, "Found invalid record structure"."""
    body = b"\x00" + zz(0) + zz(0) + zz(50) + b"abc"
    data = v2_batch(framed(body), 1)
    assert error_text(InvalidRecordException, read_all, data) == "Found invalid record structure"


def test_negative_record_count():
    """DefaultRecordBatch: 'Found invalid record count -1 in magic v2 batch'."""
    data = v2_batch(b"", -1)
    assert error_text(InvalidRecordException, read_all, data) == "Found invalid record count -1 in magic v2 batch"


def test_record_length_outside_the_payload():
    """A record length past the batch's end, or a negative one (read as the fields end, then refused)."""
    body = record_body(b"k", b"v")
    assert error_text(InvalidRecordException, read_all, v2_batch(zz(40) + body, 1)) == (
        f"Invalid record size: expected 40 bytes in record payload, but instead the buffer has only {len(body)} "
        f"remaining bytes.")
    assert error_text(InvalidRecordException, read_all, v2_batch(zz(-1) + body, 1)) == (
        f"Invalid record size: expected to read -1 bytes in record payload, but instead read {len(body)}")


def test_zero_record_length():
    """A record of length 0 cannot hold its attributes byte and fields: its size does not match them."""
    body = record_body(None, None)
    data = v2_batch(zz(0) + body, 1)
    assert error_text(InvalidRecordException, read_all, data) == (
        f"Invalid record size: expected to read 0 bytes in record payload, but instead read {len(body)}")


def test_record_longer_than_its_fields():
    """A record whose length counts two bytes more than its fields."""
    body = record_body(b"k", b"v") + b"\x00\x00"
    data = v2_batch(framed(body), 1)
    assert error_text(InvalidRecordException, read_all, data) == (
        f"Invalid record size: expected to read {len(body)} bytes in record payload, but instead read "
        f"{len(body) - 2}")


def test_bytes_after_the_last_declared_record():
    """The declared count is checked when the last record is read (Kafka's RecordIterator): 3 bytes remain."""
    payload = framed(record_body(b"a", b"1")) + b"\x01\x02\x03"
    data = v2_batch(payload, 1)
    it = v2_records(data, v2_view(data))
    with pytest.raises(InvalidRecordException) as info:
        next(it)
    assert str(info.value) == "Incorrect declared batch size, records still remaining in file"


def test_malformed_utf8_header_key_is_replaced():
    """Header keys are decoded as Utils.utf8 does (new String(bytes, UTF_8)): a malformed byte becomes U+FFFD."""
    body = record_body(b"k", b"v", offset_delta=1, headers=[(b"\xffh", b"x"), (b"ok", None)])
    data = v2_batch(framed(body), 1)
    assert read_all(data) == [Record(101, 1000, b"k", b"v", [("\ufffdh", b"x"), ("ok", None)])]


# --- decompression ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("codec", "name"), [(1, "gzip"), (2, "snappy"), (3, "lz4"), (4, "zstd")])
def test_undecodable_payload_names_its_codec(codec: int, name: str):
    """A payload its codec cannot decode: the text names Kafka's codec name and carries the codec's own reason."""
    with pytest.raises(DecompressionException) as info:
        decompress(codec, b"not compressed at all")
    cause = info.value.__cause__
    assert cause is not None
    assert str(info.value) == f"Cannot decompress {name} payload: {cause}"


def test_unknown_codec_id():
    """Codec ids 5..7 are not Kafka compression types (segdex's own text)."""
    assert error_text(DecompressionException, decompress, 7, b"") == "Unknown compression codec id 7"


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


# --- a compressed batch's records: StreamRecordIterator over the decompressed stream ----------------------------


def _gzip_batch(payload: bytes, count: int, **kw) -> bytes:
    return v2_batch(gzip.compress(payload, mtime=0), count, attributes=kw.pop("attributes", 0) | 1, **kw)


def test_a_stream_record_of_length_zero_is_an_invalid_structure():
    """``ByteBuffer.allocate(0)`` is no failure: the record's empty buffer has no attributes byte to read."""
    data = _gzip_batch(zz(0), 1)
    assert error_text(InvalidRecordException, read_all, data) == "Found invalid record structure"


def test_a_stream_that_ends_before_a_records_length_is_a_premature_end():
    """Past the stream's end ``read()`` gives -1, a byte with its high bit set: five of them make a varint Kafka
    refuses, which the stream iterator reads as a premature end. A negative length is refused in Kafka 4.4's
    words, and so is one past the reader's ceiling (Integer.MAX_VALUE - 8)."""
    one = framed(record_body(b"k", b"v"))
    assert error_text(InvalidRecordException, read_all, _gzip_batch(one, 2)) == PREMATURE_EOF
    assert error_text(InvalidRecordException, read_all, _gzip_batch(one + zz(-1), 2)) == (
        "Invalid record size: -1 is negative.")
    assert error_text(InvalidRecordException, read_all, _gzip_batch(one + zz(2**31 - 1), 2)) == (
        "Invalid record size: 2147483647 exceeds the configured maximum record size of 2147483639.")


def test_a_stream_that_ends_inside_a_record_says_so():
    body = record_body(b"k", b"v")
    data = _gzip_batch(zz(len(body) + 5) + body, 1)
    assert error_text(InvalidRecordException, read_all, data) == (
        f"Invalid record size: expected {len(body) + 5} bytes in record payload, but the record payload reached EOF.")


def test_a_stream_records_length_with_a_byte_0x7f_and_its_log_append_time():
    """A record of 8,150 bytes: its length's varint ends with the byte 0x7F (a positive byte, the varint's last);
    with LogAppendTime every record takes the batch's max timestamp."""
    body = record_body(b"k", b"v" * 8140)
    assert zz(len(body))[-1] == 0x7F
    data = _gzip_batch(framed(body), 1, attributes=0x08, max_ts=5555)
    assert [(r.key, len(r.value), r.timestamp) for r in read_all(data)] == [(b"k", 8140, 5555)]
