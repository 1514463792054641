"""Deep iteration: the records inside a batch (v2 records, legacy inner messages, control records)."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field

from segdex.indexcore.errors import (
    ILLEGAL_ARGUMENT,
    INDEX_OUT_OF_BOUNDS,
    BufferBoundsException,
    CorruptRecordException,
    InvalidRecordException,
    JavaException,
    KafkaReadException,
    RecoveryFailedException,
)
from segdex.indexcore.record.compression import for_id, wrap_for_input
from segdex.indexcore.record.default_record import stream_records, uncompressed_records
from segdex.indexcore.record.record_batch import (
    LEGACY_CRC_FROM,
    LOG_ENTRY_HEADER,
    LOG_OVERHEAD,
    MESSAGE_V0,
    MESSAGE_V1,
    NO_TIMESTAMP,
    RECORD_BATCH_OVERHEAD,
    RECORD_BATCH_V2,
    RECORD_OVERHEAD_V0,
    TIMESTAMP_TYPE_MASK,
    RecordBatch,
)
from segdex.indexcore.utils.chunked_bytes_stream import ChunkedBytesStream, read_fully

INT32 = struct.Struct(">i")
# the readers of a v0/v1 message, by the order they ask for its fields (LegacyRecord.read)
WHOLE, KEYS, FILTER = "whole", "keys", "filter"
# Control record key: version int16, type int16; value: version int16, coordinatorEpoch int32.
CONTROL_KEY = struct.Struct(">hh")
END_TXN_MARKER_VALUE = struct.Struct(">hi")
CONTROL_TYPES = {0: "ABORT", 1: "COMMIT"}
# ControlRecordType.fromTypeId's other names (Kafka 4.4); any other id is UNKNOWN
OTHER_CONTROL_TYPES = {2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER", 4: "SNAPSHOT_FOOTER", 5: "KRAFT_VERSION",
                       6: "KRAFT_VOTERS"}


@dataclass(slots=True)
class Record:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)
    crc: int | None = None  # legacy messages only: the message's own CRC-32 (of its bytes from magic on)
    valid: bool | None = None  # legacy messages only: that CRC matches (``LegacyRecord.isValid``)
    # a legacy message read for a reader that has not asked for its fields yet (``KEYS``, ``FILTER``), a field past
    # its end: what asking throws, for the key (``hasKey``, ``key``), whether it has a value (``hasValue``: the
    # value's length) and the value (``key`` or ``value`` is then b"": the message has one)
    key_error: BufferBoundsException | None = None
    value_size_error: BufferBoundsException | None = None
    value_error: BufferBoundsException | None = None


def count_or_null(batch: RecordBatch) -> int | None:
    """``RecordBatch.countOrNull``: a v2 batch's record count (None for the older formats, counted by reading
    them); past the end of a v2 batch shorter than its header, ``IndexOutOfBoundsException``."""
    if batch.magic < 2:
        return None
    if batch.size_in_bytes < RECORD_BATCH_OVERHEAD:
        raise BufferBoundsException(INDEX_OUT_OF_BOUNDS)
    return batch.records_count


def v2_records(buf, batch: RecordBatch) -> Iterator[Record]:
    """The records of a magic 2 batch as ``DefaultRecordBatch``'s iterators read them (``default_record``): an
    uncompressed batch's from its own buffer, a compressed one's from its decompressed payload; ``iterator`` asks
    ``count_or_null`` first, then for the record count (negative: refused)."""
    count_or_null(batch)
    start = batch.position
    header = RECORD_BATCH_V2.unpack_from(buf, start)
    base_offset, base_timestamp, max_timestamp, count = header[0], header[7], header[8], header[12]
    log_append_time = max_timestamp if batch.attributes & TIMESTAMP_TYPE_MASK else None
    if count < 0:
        raise InvalidRecordException(f"Found invalid record count {count} in magic v{batch.magic} batch")
    if batch.compression_type:
        stream = wrap_for_input(batch.compression_type, bytes(buf[start + RECORD_BATCH_OVERHEAD:
                                                                  start + batch.size_in_bytes]), batch.magic)
        read = stream_records(stream, count, base_offset, base_timestamp, log_append_time)
    else:
        read = uncompressed_records(buf, start + RECORD_BATCH_OVERHEAD, start + batch.size_in_bytes, count,
                                    base_offset, base_timestamp, log_append_time)
    for offset, timestamp, key, value, headers in read:
        yield Record(offset, timestamp, key, value, [(k.decode("utf-8", "replace"), v) for k, v in headers])


def _legacy_size(data, at: int, end: int) -> int:
    """A legacy message's key or value length (``ByteBuffer.getInt``): ``IndexOutOfBoundsException`` past the
    message's end."""
    if at + 4 > end:
        raise BufferBoundsException(INDEX_OUT_OF_BOUNDS)
    return INT32.unpack_from(data, at)[0]


def _legacy_bytes(data, at: int, size: int, end: int) -> bytes | None:
    """The key or value of length ``size`` whose length field is at ``at`` (``Utils.sizeDelimited``: -1 is null);
    bytes past the message's end are the slice's ``IllegalArgumentException`` (``newLimit > capacity``)."""
    if size < 0:
        return None
    if at + 4 + size > end:
        raise BufferBoundsException(ILLEGAL_ARGUMENT, f"newLimit > capacity: ({size} > {end - at - 4})")
    return bytes(data[at + 4:at + 4 + size])


@dataclass(slots=True)
class LegacyRecord:
    """``LegacyRecord``: one message of the older formats, log header first::

        offset int64 | size int32 | crc uint32 | magic int8 | attributes int8 | [timestamp int64] | key | value

    The timestamp is there unless the magic byte is 0 (``keySizeOffset``: any other magic, a damaged one too, is
    read in the v1 layout). The CRC-32 covers the bytes from the magic byte on (``isValid``)."""

    offset: int
    magic: int  # the byte as unsigned (only 0 and 1 are told apart)
    attributes: int
    timestamp: int  # NO_TIMESTAMP for magic 0
    key: bytes | None
    value: bytes | None
    crc: int
    valid: bool
    key_error: BufferBoundsException | None = None  # as ``Record.key_error``
    value_size_error: BufferBoundsException | None = None  # as ``Record.value_size_error``
    value_error: BufferBoundsException | None = None  # as ``Record.value_error``

    @classmethod
    def read(cls, data, pos: int, end: int, reader: str = WHOLE) -> LegacyRecord:
        """The message of ``data[pos:end]``. ``LegacyRecord`` reads a field where it is asked for, so a field past
        the message's end throws where the ``reader`` asks for it:

        - ``WHOLE`` (a deep iteration, kafka-dump-log): the key's length, the value's, the key, the value;
        - ``KEYS`` (the cleaner's offset map): the key's length, then the key only where the map takes it (its
          error kept in ``key_error``); the value not read (None);
        - ``FILTER`` (the cleaner's ``filterBatch``): nothing until asked: the key where the offset map has it,
          whether it has a value where it is kept, the value where the batch is rebuilt."""
        magic = data[pos + LEGACY_CRC_FROM]  # the byte the CRC's span starts at (only 0 and 1 are told apart)
        if magic == 0:
            offset, _size, crc, _, attributes = MESSAGE_V0.unpack_from(data, pos)
            timestamp, p = NO_TIMESTAMP, pos + MESSAGE_V0.size
        else:  # a size field of at least RECORD_OVERHEAD_V0 holds the timestamp; the key's length may lie past it
            offset, _size, crc, _, attributes, timestamp = MESSAGE_V1.unpack_from(data, pos)
            p = pos + MESSAGE_V1.size
        key, value, key_size_error, value_size_error, key_error, value_error = _fields(data, p, end)
        if reader == WHOLE:  # asked in this order, each at once
            for error in (key_size_error, value_size_error, key_error, value_error):
                if error is not None:
                    raise error
        elif reader == KEYS:  # the key's length at once, the key when the map takes it, never the value
            if key_size_error is not None:
                raise key_size_error
            value = value_size_error = value_error = None
        else:  # FILTER: nothing at once; the key's length is the first thing both the key and the value ask for
            key_error = key_size_error or key_error
        valid = zlib.crc32(memoryview(data)[pos + LEGACY_CRC_FROM:end]) & 0xFFFFFFFF == crc
        return cls(offset, magic, attributes & 0xFF, timestamp, key, value, crc, valid, key_error, value_size_error,
                   value_error)

    def record(self, offset: int, timestamp: int) -> Record:
        """The message as a ``Record`` at ``offset`` and ``timestamp`` (an inner message's absolute ones)."""
        return Record(offset, timestamp, self.key, self.value, crc=self.crc, valid=self.valid, key_error=self.key_error,
                      value_size_error=self.value_size_error, value_error=self.value_error)


def _fields(data, p: int, end: int) -> tuple:
    """A v0/v1 message's key and value from its key's length field at ``p``, each question's error kept rather than
    raised: (key, value, key_size_error, value_size_error, key_error, value_error). A field that cannot be read is
    b"" (the message has one); a key length past the end fails the value's length too (it lies after the key)."""
    try:
        key_size = _legacy_size(data, p, end)
    except BufferBoundsException as e:
        return b"", b"", e, e, None, None
    value_at = p + 4 + max(key_size, 0)
    key = value = key_error = value_error = None
    try:
        key = _legacy_bytes(data, p, key_size, end)
    except BufferBoundsException as e:
        key, key_error = b"", e
    try:
        value_size = _legacy_size(data, value_at, end)
    except BufferBoundsException as e:
        return key, b"", None, e, key_error, None
    try:
        value = _legacy_bytes(data, value_at, value_size, end)
    except BufferBoundsException as e:
        value, value_error = b"", e
    return key, value, None, None, key_error, value_error


def _outer_message(buf, batch: RecordBatch, reader: str = WHOLE) -> LegacyRecord:
    """A legacy batch's own message (``outerRecord``): its bytes are the batch's, whose size field ``batches``
    checked (at least ``RECORD_OVERHEAD_V0``, within the buffer). A copy:
    an error raised while reading it must not hold a view of the mapped file (which could not close then)."""
    data = bytes(buf[batch.position:batch.position + batch.size_in_bytes])
    return LegacyRecord.read(data, 0, len(data), reader)


def _inner_spans(stream: ChunkedBytesStream) -> tuple[bytes, list[tuple[int, int, int]]]:
    """``DataLogInputStream.nextBatch`` over a wrapper's decompressing stream, to its end: the inner messages' bytes
    (each with its log header) and (offset, start, end) of each in them. A size field below ``RECORD_OVERHEAD_V0``
    throws; a header or a message the stream cannot fill ends it quietly (``readFully`` comes up short:
    ``nextBatch`` returns null); the stream's ``IOException`` is a ``KafkaException`` whose text is its
    ``toString`` (``DeepRecordsIterator``), any other of its throwables passes as it is."""
    parts, spans, pos = [], [], 0
    try:
        while len(header := read_fully(stream, LOG_OVERHEAD)) == LOG_OVERHEAD:
            offset, size = LOG_ENTRY_HEADER.unpack(header)
            if size < RECORD_OVERHEAD_V0:
                raise CorruptRecordException(
                    f"Record size is less than the minimum record overhead ({RECORD_OVERHEAD_V0})")
            body = read_fully(stream, size)
            if len(body) < size:
                break
            parts += [header, body]
            spans.append((offset, pos, pos + LOG_OVERHEAD + size))
            pos += LOG_OVERHEAD + size
    except JavaException as e:
        if not e.io:
            raise
        raise KafkaReadException(e.to_string()) from None
    return b"".join(parts), spans


def legacy_records(buf, batch: RecordBatch, reader: str = WHOLE) -> Iterator[Record]:
    """Messages of a legacy batch (``AbstractLegacyRecordBatch.iterator``): the message itself, or the inner
    messages of a compressed wrapper (``DeepRecordsIterator``).

    Opening a wrapper throws ``InvalidRecordException`` for a magic byte other than 0 and 1, for zstd, for a
    null value, for a value holding no inner message, and (magic 1) for a wrapper offset below the last inner
    message's relative offset, unless it is 0 (librdkafka wrote 0: the inner offsets are then absolute). Inner
    messages are read as ``_inner_spans`` says; magic 1 wrappers turn relative offsets into absolute ones. An inner
    message of magic 1 takes the wrapper's timestamp when the wrapper says LogAppendTime; one of magic 0 has none;
    any other keeps its own. A compressed inner message throws when the iteration reaches it. ``reader``: whose
    order of questions (``LegacyRecord.read``)."""
    codec = batch.compression_type
    if codec == 0:
        outer = _outer_message(buf, batch, reader)
        yield outer.record(outer.offset, outer.timestamp)
        return
    if batch.magic not in (0, 1):  # the header's fields first; the key and value are read after these checks
        raise InvalidRecordException(f"Invalid wrapper magic found in legacy deep record iterator {batch.magic}")
    for_id(codec)  # the wrapper's compressionType(): ids 5 to 7 throw before anything else is read
    if codec == 4:
        raise InvalidRecordException(
            f"Invalid wrapper compressionType found in legacy deep record iterator {batch.magic}")
    outer = _outer_message(buf, batch)
    if outer.value is None:
        raise InvalidRecordException(f"Found invalid compressed record set with null value (magic = {outer.magic})")
    data, spans = _inner_spans(wrap_for_input(codec, outer.value, outer.magic))
    if not spans:
        raise InvalidRecordException("Found invalid compressed record set with no inner records")
    base = 0
    if outer.magic == 1 and outer.offset != 0:
        last = spans[-1][0]
        if outer.offset < last:
            raise InvalidRecordException(
                f"Found invalid wrapper offset in compressed v1 message set, wrapper offset '{outer.offset}' is less "
                f"than the last inner message offset '{last}' and it is not zero.")
        base = outer.offset - last
    log_append_time = outer.magic == 1 and bool(outer.attributes & TIMESTAMP_TYPE_MASK)
    for offset, start, end in spans:
        inner = LegacyRecord.read(data, start, end, reader)
        if inner.attributes & 0x07:
            raise InvalidRecordException("Inner messages must not be compressed")
        yield inner.record(base + offset, outer.timestamp if log_append_time and inner.magic == 1 else inner.timestamp)


def records(buf, batch: RecordBatch, reader: str = WHOLE) -> Iterator[Record]:
    """Deep iteration over any batch (``RecordBatch.iterator``). ``reader``: the order a v0/v1 message's fields
    are asked for (``LegacyRecord.read``); a v2 record is read whole either way (``DefaultRecord.readFrom``). A
    compressed v2 batch's records are all read before the first is given (``DefaultRecordBatch.iterator``: what
    the stream throws, it throws before any record)."""
    if batch.magic >= 2:
        return iter(list(v2_records(buf, batch))) if batch.compression_type else v2_records(buf, batch)
    return legacy_records(buf, batch, reader)


def streaming_iterator(buf, batch: RecordBatch, reader: str = WHOLE) -> Iterator[Record]:
    """``RecordBatch.streamingIterator``: the batch's records, as a reader that goes through them all (the log
    cleaner's) opens them. Asking whether the batch is compressed asks ``CompressionType.forId`` first, so a codec
    id Kafka does not know throws ``UnknownCompressionTypeException`` before any record is read, even from a batch
    that declares none. Either iterator then positions its buffer at the records (``RECORDS_OFFSET``), which throws
    for a v2 batch shorter than its header. ``reader``: as ``records``."""
    for_id(batch.compression_type)
    if batch.magic >= 2 and batch.size_in_bytes < RECORD_BATCH_OVERHEAD:
        raise BufferBoundsException(ILLEGAL_ARGUMENT,
                                    f"newPosition > limit: ({RECORD_BATCH_OVERHEAD} > {batch.size_in_bytes})")
    return v2_records(buf, batch) if batch.magic >= 2 else legacy_records(buf, batch, reader)


def end_txn_marker(buf, batch: RecordBatch) -> tuple[str, int, int] | None:
    """(controlType, coordinatorEpoch, record timestamp) of a control batch's first record, read as Kafka's
    recovery reads it (``ProducerAppendInfo.append`` -> ``EndTransactionMarker.deserialize``); None for a batch
    with no records.

    Raises what Kafka raises: ``InvalidRecordException`` (caught by recovery, which then truncates after this
    batch) for a key or value too short or with a negative version; ``RecoveryFailedException`` (Kafka's
    ``IllegalArgumentException`` or ``NullPointerException``, which escape recovery) for a missing key or value
    or a control type other than ABORT and COMMIT.
    """
    try:  # batch.iterator(): a compressed batch's records all read first
        first = next(records(buf, batch), None)
    except (KafkaReadException, JavaException) as e:
        raise RecoveryFailedException(f"control batch at offset {batch.base_offset}: {e} (Kafka: "
                                      f"{e.kafka_class.rsplit('.', 1)[1]})") from e
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
            raise RecoveryFailedException(f"Invalid control record type for end transaction marker "
                                          f"{OTHER_CONTROL_TYPES.get(ctype, 'UNKNOWN')} (Kafka: "
                                          f"IllegalArgumentException)")
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
