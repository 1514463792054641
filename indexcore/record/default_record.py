"""Kafka's ``DefaultRecord``: a v2 record, read as ``DefaultRecord.readFrom`` reads it, through the two iterators of
``DefaultRecordBatch`` (``uncompressedIterator`` over the batch's own buffer; ``StreamRecordIterator`` over the
decompressed stream of a compressed batch).

A record (every varint zig-zag and a Java ``int``, the timestamp delta a varlong, a Java ``long``)::

    length varint | attributes int8 | timestampDelta varlong | offsetDelta varint
    | keyLength varint | key | valueLength varint | value
    | headerCount varint | (headerKeyLength varint | headerKey | headerValueLength varint | headerValue) * headerCount

A length below 0 is null (a header key's is refused). Invariants, each checked where Kafka checks it, with its words:

- the record's ``length`` bytes are there (the batch's buffer, or the stream, holds them);
- its fields end exactly ``length`` bytes after the length field; a field read past the buffer's end (the batch's
  for an uncompressed batch: a field may run past its record's own length until then) is "Found invalid record
  structure";
- after the batch's last record (its declared count) no byte is left, in the batch or in the stream.

Varints are read as ``ByteUtils`` reads them (``utils.byte_utils``); a stream read past its end gives -1, which
reads as a byte with its high bit set.
"""

from __future__ import annotations

from collections.abc import Iterator

from segdex.indexcore.errors import (
    ILLEGAL_ARGUMENT,
    BufferBoundsException,
    InvalidRecordException,
    JavaException,
    KafkaReadException,
)
from segdex.indexcore.utils.byte_utils import IllegalArgument, int8, int64, read_varint, read_varlong
from segdex.indexcore.utils.chunked_bytes_stream import ChunkedBytesStream, read_fully

Fields = tuple[int, int, bytes | None, bytes | None, list[tuple[bytes, bytes | None]]]  # offset, timestamp, key,
# value, headers (key bytes, value)

PREMATURE_EOF = "Incorrect declared batch size, premature EOF reached"
STILL_REMAINING = "Incorrect declared batch size, records still remaining in file"


class _Underflow(Exception):
    """``BufferUnderflowException``: a read past the buffer's limit."""


class _Buffer:
    """A ``ByteBuffer``'s relative reads of ``data`` from ``pos`` up to ``limit``."""

    __slots__ = ("data", "pos", "limit")

    def __init__(self, data, pos: int, limit: int) -> None:
        self.data, self.pos, self.limit = data, pos, limit

    def get(self) -> int:
        """``get()``: a signed byte; past the limit, ``BufferUnderflowException``."""
        if self.pos >= self.limit:
            raise _Underflow
        self.pos += 1
        return int8(self.data[self.pos - 1])

    def read_bytes(self, length: int) -> bytes | None:
        """``Utils.readBytes``: null below 0; a slice whose limit is past the buffer's end is the slice's
        ``IllegalArgumentException``."""
        if length < 0:
            return None
        if length > self.limit - self.pos:
            raise IllegalArgument(f"newLimit > capacity: ({length} > {self.limit - self.pos})")
        out = bytes(self.data[self.pos:self.pos + length])
        self.pos += length
        return out


class _Stream:
    """A batch's decompressing stream (``ChunkedBytesStream``) as the record reader asks it: ``get`` is
    ``(byte) in.read()``, a signed byte (-1 at the end); ``read_fully`` is ``Utils.readFully``. Their failures are the
    stream's ``JavaException``."""

    __slots__ = ("stream",)

    def __init__(self, stream: ChunkedBytesStream) -> None:
        self.stream = stream

    def get(self) -> int:
        b = self.stream.read()
        return -1 if b < 0 else int8(b)

    def read_fully(self, size: int) -> bytes:
        return read_fully(self.stream, size)


def read_from(buffer: _Buffer, size: int, base_offset: int, base_timestamp: int,
              log_append_time: int | None) -> Fields:
    """``DefaultRecord.readFrom(ByteBuffer, sizeOfBodyInBytes, ...)``: the record whose length field (``size``) was
    just read."""
    remaining = buffer.limit - buffer.pos
    if remaining < size:
        raise InvalidRecordException(f"Invalid record size: expected {size} bytes in record payload, but instead the "
                                     f"buffer has only {remaining} remaining bytes.")
    try:
        start = buffer.pos
        buffer.get()  # attributes: unused
        timestamp = int64(base_timestamp + read_varlong(buffer.get))
        if log_append_time is not None:
            timestamp = log_append_time
        offset = int64(base_offset + read_varint(buffer.get))
        key = buffer.read_bytes(read_varint(buffer.get))
        value = buffer.read_bytes(read_varint(buffer.get))
        count = read_varint(buffer.get)
        if count < 0:
            raise InvalidRecordException(f"Found invalid number of record headers {count}")
        if count > buffer.limit - buffer.pos:
            raise InvalidRecordException(f"Found invalid number of record headers. {count} is larger than the "
                                         f"remaining size of the buffer")
        headers = []
        for _ in range(count):  # readHeaders
            key_size = read_varint(buffer.get)
            if key_size < 0:
                raise InvalidRecordException(f"Invalid negative header key size {key_size}")
            header_key = buffer.read_bytes(key_size)
            headers.append((header_key, buffer.read_bytes(read_varint(buffer.get))))
        if buffer.pos - start != size:
            raise InvalidRecordException(f"Invalid record size: expected to read {size} bytes in record payload, but "
                                         f"instead read {buffer.pos - start}")
    except (_Underflow, IllegalArgument):
        raise InvalidRecordException("Found invalid record structure") from None
    return offset, timestamp, key, value, headers


def uncompressed_records(data, start: int, limit: int, count: int, base_offset: int, base_timestamp: int,
                         log_append_time: int | None) -> Iterator[Fields]:
    """``uncompressedIterator``: ``count`` records from ``start`` in the batch's buffer, which ends at ``limit``
    (its size field's end); a length field past it is a premature end."""
    buffer = _Buffer(data, start, limit)
    for i in range(count):
        try:
            size = read_varint(buffer.get)
        except _Underflow:
            raise InvalidRecordException(PREMATURE_EOF) from None
        except IllegalArgument as e:  # not caught by the iterator: Kafka's reader throws it as it is
            raise BufferBoundsException(ILLEGAL_ARGUMENT, str(e)) from None
        fields = read_from(buffer, size, base_offset, base_timestamp, log_append_time)
        if i == count - 1 and buffer.pos < limit:
            raise InvalidRecordException(STILL_REMAINING)
        yield fields


MAX_RECORD_BODY = 2**31 - 1 - 8  # a reader's default ceiling (Kafka 4.4: max.decompressed.message.bytes' default)


def stream_records(stream: ChunkedBytesStream, count: int, base_offset: int, base_timestamp: int,
                   log_append_time: int | None, max_record_size: int = MAX_RECORD_BODY) -> Iterator[Fields]:
    """``StreamRecordIterator`` with ``DefaultRecord.readFrom(InputStream, ...)``: ``count`` records of a
    compressed batch's decompressing ``stream`` (``compression.wrap_for_input``). Each record's length field is read
    from the stream, its bytes into a buffer of that length (``Utils.readFully``), then read from that buffer alone.
    The stream's ``IOException`` is Kafka's ``KafkaException`` where the reader meets it: reading a record, or
    looking for a byte past the last record; any other throwable of the stream passes as it is. A record length
    below 0, or above ``max_record_size``, is refused before its bytes are read (Kafka 4.4's ``readFrom``)."""
    source = _Stream(stream)
    for i in range(count):
        try:
            size = read_varint(source.get)
            if size < 0:
                raise InvalidRecordException(f"Invalid record size: {size} is negative.")
            if size > max_record_size:
                raise InvalidRecordException(f"Invalid record size: {size} exceeds the configured maximum record size "
                                             f"of {max_record_size}.")
            body = source.read_fully(size)
        except IllegalArgument:
            raise InvalidRecordException(PREMATURE_EOF) from None
        except JavaException as e:
            if not e.io:
                raise
            raise KafkaReadException("Failed to decompress record stream") from None
        if len(body) != size:
            raise InvalidRecordException(f"Invalid record size: expected {size} bytes in record payload, but the "
                                         f"record payload reached EOF.")
        fields = read_from(_Buffer(body, 0, size), size, base_offset, base_timestamp, log_append_time)
        if i == count - 1:  # ensureNoneRemaining: one more byte read
            try:
                more = stream.read()
            except JavaException as e:
                if not e.io:
                    raise
                raise KafkaReadException("Error checking for remaining bytes after reading batch") from None
            if more != -1:
                raise InvalidRecordException(STILL_REMAINING)
        yield fields
