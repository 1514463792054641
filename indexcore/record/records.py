"""Deep iteration: the records inside a batch (v2 records, legacy inner messages, control records)."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field

from segdex.indexcore.errors import (
    CorruptRecordException,
    DecompressionException,
    InvalidRecordException,
    RecoveryFailedException,
)
from segdex.indexcore.record.compression import decompress, for_id, kafka_can_decompress
from segdex.indexcore.record.record_batch import (
    LEGACY_CRC_FROM,
    LOG_ENTRY_HEADER,
    LOG_OVERHEAD,
    MESSAGE_V0,
    MESSAGE_V1,
    NO_TIMESTAMP,
    RECORD_BATCH_OVERHEAD,
    RECORD_BATCH_V2,
    TIMESTAMP_TYPE_MASK,
    RecordBatch,
)

INT32 = struct.Struct(">i")
# Control record key: version int16, type int16; value: version int16, coordinatorEpoch int32.
CONTROL_KEY = struct.Struct(">hh")
END_TXN_MARKER_VALUE = struct.Struct(">hi")
CONTROL_TYPES = {0: "ABORT", 1: "COMMIT"}


@dataclass(slots=True)
class Record:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)
    crc: int | None = None  # legacy messages only: the message's own CRC-32 (of its bytes from magic on)
    valid: bool | None = None  # legacy messages only: that CRC matches (``LegacyRecord.isValid``)


def _read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Zig-zag varint/varlong as in the Kafka protocol guide."""
    shift = 0
    raw = 0
    while True:
        if pos >= len(buf):
            raise CorruptRecordException("Truncated varint in record")
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift > 63:
            raise CorruptRecordException("Varint too long in record")
    return (raw >> 1) ^ -(raw & 1), pos


def _bytes_field(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    length, pos = _read_varint(buf, pos)
    if length < 0:
        return None, pos
    if pos + length > len(buf):
        raise CorruptRecordException("Record field runs past the end of the batch")
    return bytes(buf[pos:pos + length]), pos + length


def v2_records(buf, batch: RecordBatch) -> Iterator[Record]:
    """Decode the records of a magic 2 batch (decompressing its payload first)."""
    start = batch.position
    header = RECORD_BATCH_V2.unpack_from(buf, start)
    base_offset, base_timestamp, max_timestamp = header[0], header[7], header[8]
    count = header[12]
    payload = decompress(batch.compression_type, bytes(buf[start + RECORD_BATCH_OVERHEAD:
                                                          start + batch.size_in_bytes]))
    log_append_time = bool(batch.attributes & TIMESTAMP_TYPE_MASK)
    if count < 0:
        raise InvalidRecordException(f"Found invalid record count {count} in magic v{batch.magic} batch")
    pos = 0
    for i in range(count):
        length, pos = _read_varint(payload, pos)
        end = pos + length
        if length < 0 or end > len(payload):
            raise CorruptRecordException("Record length runs past the end of the batch")
        pos += 1  # attributes: unused
        ts_delta, pos = _read_varint(payload, pos)
        offset_delta, pos = _read_varint(payload, pos)
        key, pos = _bytes_field(payload, pos)
        value, pos = _bytes_field(payload, pos)
        n_headers, pos = _read_varint(payload, pos)
        headers = []
        for _h in range(max(n_headers, 0)):
            hkey, pos = _bytes_field(payload, pos)
            hval, pos = _bytes_field(payload, pos)
            headers.append(((hkey or b"").decode("utf-8", "replace"), hval))
        if pos != end:
            raise CorruptRecordException("Record size does not match its fields")
        timestamp = max_timestamp if log_append_time else base_timestamp + ts_delta
        # As Kafka's RecordIterator: the declared count is checked against the bytes when the last record
        # is read (so not at all for a batch declaring 0 records, nor by a reader of the first record only).
        if i == count - 1 and pos != len(payload):
            raise CorruptRecordException(f"Batch has {len(payload) - pos} bytes after its {count} records")
        yield Record(base_offset + offset_delta, timestamp, key, value, headers)


def _legacy_bytes(data, p: int, end: int) -> tuple[bytes | None, int]:
    """A legacy message's key or value: int32 length (-1: null), then the bytes; both within the message."""
    if p + 4 > end:
        raise CorruptRecordException("Legacy message too short for its key/value length fields")
    (length,) = INT32.unpack_from(data, p)
    p += 4
    if length < 0:
        return None, p
    if p + length > end:
        raise CorruptRecordException(f"Legacy message key/value of {length} bytes runs past the message")
    return bytes(data[p:p + length]), p + length


def _legacy_messages(data, magic_hint: int | None = None) -> Iterator[tuple[int, int, int, int, bytes | None,
                                                                          bytes | None, int, bool]]:
    """(offset, magic, attributes, timestamp, key, value, crc, crc matches) of each message in a legacy message
    set."""
    pos = 0
    while pos + LOG_OVERHEAD <= len(data):
        offset, size = LOG_ENTRY_HEADER.unpack_from(data, pos)
        end = pos + LOG_OVERHEAD + size
        if size < 14 or end > len(data):
            raise CorruptRecordException("Truncated inner message in compressed wrapper")
        magic = data[pos + 16]
        if pos + (MESSAGE_V1.size if magic == 1 else MESSAGE_V0.size) > end:
            raise CorruptRecordException("Inner message shorter than its header")
        if magic == 1:
            _, _, crc, _, attributes, timestamp = MESSAGE_V1.unpack_from(data, pos)
            p = pos + MESSAGE_V1.size
        else:
            _, _, crc, _, attributes = MESSAGE_V0.unpack_from(data, pos)
            timestamp = NO_TIMESTAMP
            p = pos + MESSAGE_V0.size
        key, p = _legacy_bytes(data, p, end)
        value, p = _legacy_bytes(data, p, end)
        valid = zlib.crc32(memoryview(data)[pos + LEGACY_CRC_FROM:end]) & 0xFFFFFFFF == crc
        yield offset, magic, attributes & 0xFF, timestamp, key, value, crc, valid
        pos = end
    if pos != len(data):
        raise CorruptRecordException("Trailing bytes after the last inner message")


def legacy_records(buf, batch: RecordBatch) -> Iterator[Record]:
    """Messages of a legacy batch: the message itself, or the inner messages of a compressed wrapper."""
    ((offset, _magic, attributes, timestamp, key, value, crc, valid),) = _legacy_messages(
        memoryview(buf)[batch.position:batch.position + batch.size_in_bytes])
    codec = attributes & 0x07
    if codec == 0:
        yield Record(offset, timestamp, key, value, crc=crc, valid=valid)
        return
    inner = list(_legacy_messages(decompress(codec, value or b"")))
    if not inner:
        return
    log_append_time = batch.magic >= 1 and bool(attributes & TIMESTAMP_TYPE_MASK)
    # Magic 1 inner offsets are relative; the wrapper carries the absolute offset of the last one.
    base = offset - inner[-1][0] if batch.magic >= 1 else 0
    for i_offset, _m, _a, i_ts, i_key, i_value, i_crc, i_valid in inner:
        ts = timestamp if log_append_time else i_ts
        yield Record(base + i_offset, ts, i_key, i_value, crc=i_crc, valid=i_valid)


def records(buf, batch: RecordBatch) -> Iterator[Record]:
    """Deep iteration over any batch."""
    if batch.magic >= 2:
        return v2_records(buf, batch)
    return legacy_records(buf, batch)


def streaming_iterator(buf, batch: RecordBatch) -> Iterator[Record]:
    """``RecordBatch.streamingIterator``: the batch's records, as a reader that goes through them all (the log
    cleaner's) opens them. Asking whether the batch is compressed asks ``CompressionType.forId`` first, so a codec
    id Kafka does not know throws ``UnknownCompressionTypeException`` before any record is read, even from a batch
    that declares none."""
    for_id(batch.compression_type)
    return records(buf, batch)


def end_txn_marker(buf, batch: RecordBatch) -> tuple[str, int, int] | None:
    """(controlType, coordinatorEpoch, record timestamp) of a control batch's first record, read as Kafka's
    recovery reads it (``ProducerAppendInfo.append`` -> ``EndTransactionMarker.deserialize``); None for a batch
    with no records.

    Raises what Kafka raises: ``InvalidRecordException`` (caught by recovery, which then truncates after this
    batch) for a key or value too short or with a negative version; ``RecoveryFailedException`` (Kafka's
    ``IllegalArgumentException`` or ``NullPointerException``, which escape recovery) for a missing key or value
    or a control type other than ABORT and COMMIT.
    """
    refusal = None
    if batch.compression_type:
        start = batch.position + RECORD_BATCH_OVERHEAD
        refusal = kafka_can_decompress(batch.compression_type, bytes(buf[start:start + 8]))
    if refusal is not None:
        raise RecoveryFailedException(f"control batch at offset {batch.base_offset}: {refusal} (Kafka: "
                                      f"KafkaException)")
    try:
        first = next(iter(v2_records(buf, batch)), None)
    except DecompressionException as e:
        raise RecoveryFailedException(f"control batch at offset {batch.base_offset}: {e} (Kafka: "
                                      f"KafkaException)") from e
    for record in [first] if first is not None else []:
        key, value = record.key, record.value
        if key is None:
            raise RecoveryFailedException(f"control record at offset {record.offset} has no key "
                                          f"(Kafka: NullPointerException)")
        if len(key) < CONTROL_KEY.size:
            raise InvalidRecordException(f"Invalid value size found for end control record key. Must have at "
                                         f"least {CONTROL_KEY.size} bytes, but found only {len(key)}")
        version, ctype = CONTROL_KEY.unpack_from(key)
        if version < 0:
            raise InvalidRecordException(f"Invalid version found for control record: {version}")
        if ctype not in CONTROL_TYPES:
            raise RecoveryFailedException(f"Invalid control record type for end transaction marker: {ctype} "
                                          f"(Kafka: IllegalArgumentException)")
        if value is None:
            raise RecoveryFailedException(f"end transaction marker at offset {record.offset} has no value "
                                          f"(Kafka: NullPointerException)")
        if len(value) < END_TXN_MARKER_VALUE.size:
            raise InvalidRecordException(f"Invalid value size found for end transaction marker. Must have at "
                                         f"least {END_TXN_MARKER_VALUE.size} bytes, but found only {len(value)}")
        value_version, coordinator_epoch = END_TXN_MARKER_VALUE.unpack_from(value)
        if value_version < 0:
            raise InvalidRecordException(f"Invalid version found for end transaction marker: {value_version}")
        return CONTROL_TYPES[ctype], coordinator_epoch, record.timestamp
    return None


def control_record(buf, batch: RecordBatch) -> tuple[str, int] | None:
    """(controlType, coordinatorEpoch) of a control batch's first record, or None for an empty batch; lenient,
    for display (an unknown type shows as ``UNKNOWN(n)``). Recovery uses ``end_txn_marker``."""
    for record in v2_records(buf, batch):
        if record.key is None or len(record.key) < CONTROL_KEY.size:
            raise CorruptRecordException("Control record has no valid key")
        _version, ctype = CONTROL_KEY.unpack_from(record.key)
        epoch = -1
        if record.value is not None and len(record.value) >= END_TXN_MARKER_VALUE.size:
            _v, epoch = END_TXN_MARKER_VALUE.unpack_from(record.value)
        return CONTROL_TYPES.get(ctype, f"UNKNOWN({ctype})"), epoch
    return None
