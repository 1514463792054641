"""Kafka's protocol primitives written out from the protocol guide, for tests that build message bytes by hand
(expected values must not come from segdex's own readers): big-endian integers, unsigned varints, non-flexible
strings and bytes (int16/int32 length, -1 for null) and compact strings (uvarint length + 1, 0 for null); the v2
record batch header and magic 0/1 messages of the message format."""

from __future__ import annotations

import struct
import zlib

import cramjam

# The v2 record batch header (DefaultRecordBatch, RECORD_BATCH_OVERHEAD = 61 bytes): baseOffset int64,
# batchLength int32, partitionLeaderEpoch int32, magic int8, crc uint32 (CRC-32C from attributes on), attributes
# int16, lastOffsetDelta int32, baseTimestamp int64, maxTimestamp int64, producerId int64, producerEpoch int16,
# baseSequence int32, records count int32
RECORD_BATCH_V2_HEADER = struct.Struct(">qiibIhiqqqhii")


def uv(n: int) -> bytes:
    """Kafka's ``ByteUtils.writeUnsignedVarint``: 7 bits a byte, low first, high bit = more."""
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def varint(n: int) -> bytes:
    """Kafka's ``ByteUtils.writeVarint``/``writeVarlong``: the unsigned varint of the zigzag (n << 1) ^ (n >> 63)."""
    return uv((n << 1) ^ (n >> 63))


def legacy_message(offset: int, attributes: int, timestamp: int, key: bytes | None, value: bytes | None,
                   magic: int = 1) -> bytes:
    """A magic 0/1 message: offset int64, size int32, crc uint32 (CRC-32 from magic to the end), magic int8,
    attributes int8, timestamp int64 (magic 1 only), key and value (int32 length, -1 for null, + bytes)."""
    body = struct.pack(">bb", magic, attributes) + (struct.pack(">q", timestamp) if magic else b"")
    for field in (key, value):
        body += b32(field)
    return struct.pack(">qiI", offset, len(body) + 4, zlib.crc32(body)) + body


def s16(text: str | None) -> bytes:
    """A non-flexible string: int16 length (-1: null) + UTF-8."""
    if text is None:
        return struct.pack(">h", -1)
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def cstr(text: str | None) -> bytes:
    """A flexible (compact) string: uvarint length + 1 (0: null) + UTF-8."""
    if text is None:
        return uv(0)
    raw = text.encode()
    return uv(len(raw) + 1) + raw


def b32(raw: bytes | None) -> bytes:
    """Non-flexible bytes: int32 length (-1: null) + the bytes."""
    return struct.pack(">i", -1) if raw is None else struct.pack(">i", len(raw)) + raw


def i8(v: int) -> bytes:
    return struct.pack(">b", v)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def decompress(codec: int, data: bytes) -> bytes:
    """A whole batch payload decoded by cramjam, not by segdex's readers (``record/compression.wrap_for_input``),
    for tests that compare the inner bytes of payloads Kafka wrote: gzip, snappy (xerial's ``SnappyOutputStream``
    framing, [int32 length][raw block] after a 16-byte header, or one raw block without it), LZ4 frames, zstd
    frames; codec 0 is the bytes themselves."""
    if codec == 0:
        return bytes(data)
    if codec == 2:
        if not data.startswith(b"\x82SNAPPY\x00"):
            return bytes(cramjam.snappy.decompress_raw(data))
        out, pos = bytearray(), 16
        while pos < len(data):
            (length,) = struct.unpack_from(">i", data, pos)
            out += cramjam.snappy.decompress_raw(data[pos + 4:pos + 4 + length])
            pos += 4 + length
        return bytes(out)
    return bytes({1: cramjam.gzip, 3: cramjam.lz4, 4: cramjam.zstd}[codec].decompress(data))
