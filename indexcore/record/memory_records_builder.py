"""Writing magic-2 batches as Kafka's ``MemoryRecordsBuilder`` and ``DefaultRecordBatch.writeEmptyHeader`` do:
what the log cleaner writes where it rebuilds a batch.

A record (``DefaultRecord.writeTo``)::

    length: varint (bytes after it)    attributes: int8 (0)    timestampDelta: varlong
    offsetDelta: varint                keyLength: varint (-1: null) key
    valueLength: varint (-1: null) value                       headers: varint count, then per header
    headerKeyLength: varint, headerKey (UTF-8), headerValueLength: varint (-1: null), headerValue

The header's layout is ``batch_header``'s; the CRC-32C covers the attributes to the end.
"""

from __future__ import annotations

from collections.abc import Iterable

from segdex.indexcore.record import crc32c
from segdex.indexcore.record.batch_header import (
    ATTRIBUTES_OFFSET,
    COMPRESSION_CODEC_MASK,
    DELETE_HORIZON_FLAG_MASK,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    RECORD_BATCH_V2,
)
from segdex.indexcore.record.records import Record

NO_TIMESTAMP = -1


class UnsupportedCompressionException(Exception):
    """A batch that would be recompressed with a codec whose output is not yet known to be Kafka's bytes."""


def varint(value: int) -> bytes:
    """Zig-zag varint/varlong (``ByteUtils.writeVarint``/``writeVarlong``); any int, so that tests can also write
    the oversized ones a reader must refuse."""
    z = value << 1 if value >= 0 else (-value << 1) - 1
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _field(data: bytes | None) -> bytes:
    return varint(-1) if data is None else varint(len(data)) + data


def encode_record(offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None,
                  headers: Iterable[tuple[str | bytes, bytes | None]] = ()) -> bytes:
    """``DefaultRecord.writeTo``: one record, attributes 0 (header keys as UTF-8: a ``str`` is encoded, as Java's
    String is; ``bytes`` are written as given)."""
    headers = list(headers)
    body = bytearray(b"\x00")
    body += varint(timestamp_delta)
    body += varint(offset_delta)
    body += _field(key)
    body += _field(value)
    body += varint(len(headers))
    for hkey, hvalue in headers:
        body += _field(hkey.encode("utf-8") if isinstance(hkey, str) else hkey)
        body += _field(hvalue)
    return varint(len(body)) + bytes(body)


def _finish(header_fields: list, payload: bytes) -> bytes:
    """The batch: header fields in ``RECORD_BATCH_V2`` order (length and crc computed here), then the records."""
    header_fields[1] = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD + len(payload)
    header_fields[4] = 0
    out = bytearray(RECORD_BATCH_V2.pack(*header_fields)) + payload
    header_fields[4] = crc32c.crc32c(memoryview(out)[ATTRIBUTES_OFFSET:])
    RECORD_BATCH_V2.pack_into(out, 0, *header_fields)
    return bytes(out)


GZIP_HEADER = bytes([0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF])  # java.util.zip.GZIPOutputStream (JDK 16+: OS 255)


def java_gzip(data: bytes) -> bytes:
    """What Kafka's ``GzipCompression`` writes (``GZIPOutputStream`` over a ``Deflater`` at the default level, no
    flush until the end): its fixed header, raw deflate (level 6, 15-bit window, memLevel 8) and the CRC-32 and
    length trailer. Byte for byte where the JVM's zlib is this interpreter's (the JDK links the system libz)."""
    import struct
    import zlib

    deflater = zlib.compressobj(6, zlib.DEFLATED, -15, 8, zlib.Z_DEFAULT_STRATEGY)
    body = deflater.compress(data) + deflater.flush()
    return GZIP_HEADER + body + struct.pack("<II", zlib.crc32(data) & 0xFFFFFFFF, len(data) & 0xFFFFFFFF)


def _lz4(data: bytes) -> bytes:
    from segdex.indexcore.record.compression import CompressionType, compress

    return compress(CompressionType.LZ4, data)


def _zstd(data: bytes) -> bytes:
    """What Kafka's ``ZstdCompression`` writes (zstd-jni's ``ZstdOutputStreamNoFinalizer`` at level 3 behind a
    ``BufferedOutputStream``): a frame with no content size and no checksum, the data flushed as a block, then an
    empty last block when the stream closes. Byte for byte with the same zstd (1.5.7 in Kafka 4.4's zstd-jni
    1.5.7-17 and in zstandard 0.25)."""
    import zstandard

    c = zstandard.ZstdCompressor(level=3, write_content_size=False, write_checksum=False).compressobj()
    return c.compress(data) + c.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK) + c.flush(zstandard.COMPRESSOBJ_FLUSH_FINISH)


def _rebuildable_codecs() -> dict:
    """Codec -> Kafka's bytes for it; snappy only where the ``_snappy`` kernel (snappy-java's compression) is
    built."""
    from segdex.indexcore.record.compression import snappy_java_raw, xerial_snappy

    codecs = {0: lambda data: data, 1: java_gzip, 3: _lz4, 4: _zstd}
    raw = snappy_java_raw()
    if raw is not None:
        codecs[2] = lambda data: xerial_snappy(data, raw)
    return dict(sorted(codecs.items()))


REBUILDABLE_CODECS = _rebuildable_codecs()


def rebuild_batch(base_offset: int, last_offset: int, attributes: int, partition_leader_epoch: int,
                  producer_id: int, producer_epoch: int, base_sequence: int, records: list[Record],
                  log_append_time: int = NO_TIMESTAMP, delete_horizon_ms: int = NO_TIMESTAMP) -> bytes:
    """``MemoryRecordsBuilder`` over the kept records of a batch (``MemoryRecords.buildRetainedRecordsInto``):
    its base offset, producer fields, leader epoch and flags kept, its last offset kept
    (``overrideLastOffset``), the delete horizon as base timestamp when there is one (attribute bit 6) and the
    first record's timestamp otherwise; max timestamp the log-append time, or the largest record timestamp.
    Every codec is written as Kafka writes it (``REBUILDABLE_CODECS``); snappy raises
    ``UnsupportedCompressionException`` where its kernel is not built. ``records``: at least one (a batch that
    keeps none is left as an ``empty_header`` or dropped)."""
    codec = attributes & COMPRESSION_CODEC_MASK
    if codec not in REBUILDABLE_CODECS:
        raise UnsupportedCompressionException(f"rebuilding a batch compressed with codec {codec}")
    attributes &= ~DELETE_HORIZON_FLAG_MASK
    if delete_horizon_ms >= 0:
        attributes |= DELETE_HORIZON_FLAG_MASK
        base_timestamp = delete_horizon_ms
    else:
        base_timestamp = records[0].timestamp
    if log_append_time >= 0:
        max_timestamp = log_append_time
    else:
        max_timestamp = NO_TIMESTAMP
        for r in records:
            if r.timestamp > max_timestamp:
                max_timestamp = r.timestamp
    payload = REBUILDABLE_CODECS[codec](b"".join(encode_record(r.offset - base_offset, r.timestamp - base_timestamp,
                                                               r.key, r.value, r.headers) for r in records))
    return _finish([base_offset, 0, partition_leader_epoch, 2, 0, attributes, last_offset - base_offset,
                    base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence, len(records)], payload)


def empty_header(base_offset: int, last_offset: int, attributes: int, partition_leader_epoch: int,
                 max_timestamp: int, producer_id: int, producer_epoch: int, base_sequence: int) -> bytes:
    """``DefaultRecordBatch.writeEmptyHeader``: a batch of no records (61 bytes) keeping the offsets, the
    producer fields and the timestamp type, transactional and control flags; no codec, no delete horizon, base
    timestamp -1."""
    attributes &= ~(COMPRESSION_CODEC_MASK | DELETE_HORIZON_FLAG_MASK)
    batch = _finish([base_offset, 0, partition_leader_epoch, 2, 0, attributes, last_offset - base_offset,
                     NO_TIMESTAMP, max_timestamp, producer_id, producer_epoch, base_sequence, 0], b"")
    assert len(batch) == RECORD_BATCH_OVERHEAD
    return batch
