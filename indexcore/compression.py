"""Decompression of batch payloads with cramjam, including Kafka's xerial snappy framing."""

from __future__ import annotations

import struct

import cramjam

from .errors import CorruptRecordException
from .record_batch import CompressionType, compression_name

# Kafka's SnappyOutputStream (xerial snappy-java) writes this header, then [int32 length][raw snappy] blocks.
XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER_SIZE = 16
INT32 = struct.Struct(">i")


def _xerial_snappy(data: bytes) -> bytes:
    if not data.startswith(XERIAL_MAGIC):
        return bytes(cramjam.snappy.decompress_raw(data))
    out = bytearray()
    pos = XERIAL_HEADER_SIZE
    while pos < len(data):
        (length,) = INT32.unpack_from(data, pos)
        pos += 4
        if length < 0 or pos + length > len(data):
            raise CorruptRecordException("Truncated xerial snappy block")
        out += cramjam.snappy.decompress_raw(data[pos:pos + length])
        pos += length
    return bytes(out)


def decompress(codec: int, data: bytes) -> bytes:
    """Decompress a batch payload; any codec failure becomes CorruptRecordException."""
    try:
        if codec == CompressionType.NONE:
            return bytes(data)
        if codec == CompressionType.GZIP:
            return bytes(cramjam.gzip.decompress(data))
        if codec == CompressionType.SNAPPY:
            return _xerial_snappy(bytes(data))
        if codec == CompressionType.LZ4:
            return bytes(cramjam.lz4.decompress(data))
        if codec == CompressionType.ZSTD:
            return bytes(cramjam.zstd.decompress(data))
    except CorruptRecordException:
        raise
    except Exception as e:  # cramjam raises its own DecompressionError and ValueError
        raise CorruptRecordException(f"Cannot decompress {compression_name(codec)} payload: {e}") from e
    raise CorruptRecordException(f"Unknown compression codec id {codec}")


def compress(codec: int, data: bytes) -> bytes:
    """Compress a payload as Kafka's producers do (xerial framing for snappy, LZ4 frames)."""
    if codec == CompressionType.NONE:
        return bytes(data)
    if codec == CompressionType.GZIP:
        return bytes(cramjam.gzip.compress(data))
    if codec == CompressionType.SNAPPY:
        block = bytes(cramjam.snappy.compress_raw(data))
        return XERIAL_MAGIC + struct.pack(">ii", 1, 1) + INT32.pack(len(block)) + block
    if codec == CompressionType.LZ4:
        return bytes(cramjam.lz4.compress(data))
    if codec == CompressionType.ZSTD:
        return bytes(cramjam.zstd.compress(data))
    raise ValueError(f"Unknown compression codec id {codec}")
