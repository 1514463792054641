"""Decompression of batch payloads with cramjam, including Kafka's xerial snappy framing; compression as the
sample-data writer needs it (LZ4 frames with python-lz4, laid out as Kafka's producer lays them)."""

from __future__ import annotations

import importlib
import struct
import zlib
from dataclasses import dataclass

import cramjam
import lz4.frame

from segdex.indexcore.errors import CorruptRecordException, DecompressionException, UnknownCompressionTypeException
from segdex.indexcore.record.record_batch import CompressionType, compression_name

# Kafka's SnappyOutputStream (xerial snappy-java) writes this header, then [int32 length][raw snappy] blocks.
XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER_SIZE = 16
XERIAL_BLOCK_SIZE = 32 * 1024  # SnappyOutputStream's default block (Kafka's SnappyFactory keeps it)
INT32 = struct.Struct(">i")


KNOWN_CODECS = frozenset(int(c) for c in CompressionType)  # the ids CompressionType.forId knows: 0 to 4


def for_id(codec: int) -> CompressionType:
    """``CompressionType.forId``: the compression type a batch's attributes name (their low three bits). Kafka
    knows ids 0 to 4 (``KNOWN_CODECS``); any other (a damaged batch's) throws ``IllegalArgumentException``
    (``UnknownCompressionTypeException`` here), which is what a reader of the batch's records meets first."""
    if codec not in KNOWN_CODECS:
        raise UnknownCompressionTypeException(f"Unknown compression type id: {codec}")
    return CompressionType(codec)


def snappy_java_raw():
    """snappy-java 1.1.10's raw compression (the ``_snappy`` kernel: Google snappy 1.1.10 as its jar builds it), or
    None where the kernel is not built."""
    try:
        # by name, as the other kernels: a compiled module an import-graph tool cannot see
        return importlib.import_module(f"{__package__}._snappy").compress_raw
    except ImportError:
        return None


def xerial_snappy(data: bytes, compress_raw=None) -> bytes:
    """``SnappyOutputStream`` over ``data``: the header, then each 32 KiB block compressed on its own, its
    length first (``compress_raw``: snappy-java's when built, else cramjam's, which decodes the same)."""
    raw = compress_raw or snappy_java_raw() or (lambda b: bytes(cramjam.snappy.compress_raw(b)))
    out = [XERIAL_MAGIC, struct.pack(">ii", 1, 1)]
    for at in range(0, len(data), XERIAL_BLOCK_SIZE):
        block = raw(data[at:at + XERIAL_BLOCK_SIZE])
        out += [INT32.pack(len(block)), block]
    return b"".join(out)


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
    except CorruptRecordException as e:
        raise DecompressionException(str(e)) from e
    except Exception as e:  # cramjam raises its own DecompressionError and ValueError
        raise DecompressionException(f"Cannot decompress {compression_name(codec)} payload: {e}") from e
    raise DecompressionException(f"Unknown compression codec id {codec}")


@dataclass(frozen=True)
class RecordStream:
    """A compressed batch's payload as Kafka's decompressing stream (``Compression.wrapForInput``) gives it to a
    reader: ``data``, the bytes it delivers; ``opening``, the exception opening it throws (``KafkaException``'s
    text: its cause's ``toString``; None: it opens); ``failed``, whether a read past ``data`` throws an
    ``IOException`` (the compressed bytes end early or are corrupt) instead of giving -1 (the stream's end)."""

    data: bytes
    opening: str | None = None
    failed: bool = False


_GZIP_HEADER = 10  # magic (2), method, flags, mtime (4), extra flags, OS


def record_stream(codec: int, data: bytes) -> RecordStream:
    """The payload as Kafka's reader streams it. Gzip (``GZIPInputStream`` under ``ChunkedBytesStream``) delivers
    every byte its inflater makes before the compressed bytes fail it: a header that is not gzip's fails the
    opening (``ZipException``, or ``EOFException`` where it is cut), and a stream cut short, corrupt, or whose
    trailer does not match fails the read past the bytes made so far. Another codec's payload is decompressed
    whole: where it cannot be, every read fails (the bytes it would make first are not worked out)."""
    if codec != CompressionType.GZIP:
        try:
            return RecordStream(decompress(codec, data))
        except DecompressionException:
            return RecordStream(b"", failed=True)
    # GZIPInputStream.readHeader: the magic, then the method; a header cut short is an EOFException
    if len(data) >= 2 and data[:2] != b"\x1f\x8b":
        return RecordStream(b"", "java.util.zip.ZipException: Not in GZIP format")
    if len(data) >= 3 and data[2] != 8:
        return RecordStream(b"", "java.util.zip.ZipException: Unsupported compression method")
    if len(data) < _GZIP_HEADER:
        return RecordStream(b"", "java.io.EOFException")
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(data)
        return RecordStream(out, failed=not inflater.eof)
    except zlib.error:  # the bytes made before the failing one: fed one at a time
        inflater, made = zlib.decompressobj(16 + zlib.MAX_WBITS), []
        try:
            for i in range(len(data)):
                made.append(inflater.decompress(data[i:i + 1]))
        except zlib.error:
            pass
        return RecordStream(b"".join(made), failed=True)


# LZ4 frame descriptor (FLG byte after the 4-byte magic): bit 5 says blocks are independent. Kafka's
# KafkaLZ4BlockInputStream refuses frames without it ("Dependent block stream is unsupported").
LZ4_FLG_OFFSET = 4
LZ4_BLOCK_INDEPENDENCE = 0x20


def kafka_can_decompress(codec: int, data: bytes) -> str | None:
    """Why Kafka's own decompressing reader would refuse a payload segdex's codecs accept, or None.

    Only LZ4 differs: Kafka reads only frames of independent blocks (as its producers write them)."""
    if codec == CompressionType.LZ4 and len(data) > LZ4_FLG_OFFSET and not (
            data[LZ4_FLG_OFFSET] & LZ4_BLOCK_INDEPENDENCE):
        return "Dependent block stream is unsupported"
    return None


def compress(codec: int, data: bytes) -> bytes:
    """Compress a payload as Kafka's producers do (xerial framing for snappy, LZ4 frames)."""
    if codec == CompressionType.NONE:
        return bytes(data)
    if codec == CompressionType.GZIP:
        return bytes(cramjam.gzip.compress(data))
    if codec == CompressionType.SNAPPY:
        return xerial_snappy(bytes(data))
    if codec == CompressionType.LZ4:
        # The frame KafkaLZ4BlockOutputStream writes: FLG 0x60 (version 1, independent blocks, no block or
        # content checksum, no content size), BD 0x40 (64 KiB blocks). python-lz4 gives its bytes exactly.
        return lz4.frame.compress(data, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False,
                                  block_checksum=False, content_checksum=False, store_size=False)
    if codec == CompressionType.ZSTD:
        return bytes(cramjam.zstd.compress(data))
    raise ValueError(f"Unknown compression codec id {codec}")
