"""Batch payloads' codecs. ``wrap_for_input`` opens a payload as Kafka's record readers read it (``Compression.
wrapForInput``: each codec's own decompressing stream under a ``ChunkedBytesStream``, so that a damaged payload
delivers what Kafka's delivers, then fails where Kafka's fails); ``compress`` writes what the sample-data writer
needs (LZ4 frames with python-lz4, laid out as Kafka's producer lays them)."""

from __future__ import annotations

import importlib
import struct

import cramjam
import lz4.frame

from segdex.indexcore.errors import (
    JavaException,
    KafkaReadException,
    UnknownCompressionTypeException,
)
from segdex.indexcore.record.gzip_input_stream import GZIPInputStream
from segdex.indexcore.record.lz4_block_input_stream import Lz4BlockInputStream
from segdex.indexcore.record.record_batch import CompressionType
from segdex.indexcore.record.snappy_input_stream import SnappyInputStream
from segdex.indexcore.record.zstd_input_stream import ZstdInputStreamNoFinalizer
from segdex.indexcore.utils.chunked_bytes_stream import ChunkedBytesStream

# Kafka's SnappyOutputStream (xerial snappy-java) writes this header, then [int32 length][raw snappy] blocks.
XERIAL_MAGIC = b"\x82SNAPPY\x00"
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


# Compression.decompressionOutputSize: the ChunkedBytesStream buffer each codec's stream is read through
DECOMPRESSION_OUTPUT_SIZE = {CompressionType.GZIP: 16 * 1024, CompressionType.SNAPPY: 2 * 1024,
                             CompressionType.LZ4: 2 * 1024, CompressionType.ZSTD: 16 * 1024}


def wrap_for_input(codec: int, data: bytes, magic: int = 2) -> ChunkedBytesStream:
    """``Compression.wrapForInput``: a compressed payload as Kafka's readers read it, the codec's own decompressing
    stream (``GZIPInputStream``, xerial's ``SnappyInputStream``, Kafka's ``Lz4BlockInputStream``, zstd-jni's
    ``ZstdInputStreamNoFinalizer``) under a ``ChunkedBytesStream``. Opening the codec's stream reads its header
    (snappy without one: the whole payload); what that throws is a ``KafkaException`` whose text is the cause's
    ``toString`` (``KafkaReadException``). The stream's reads raise ``JavaException``: an ``IOException``, which the
    record readers wrap, or another throwable, which they pass on."""
    try:
        if codec == CompressionType.GZIP:
            source = GZIPInputStream(data)
        elif codec == CompressionType.SNAPPY:
            source = SnappyInputStream(data)
        elif codec == CompressionType.LZ4:
            source = Lz4BlockInputStream(data, ignore_flag_descriptor_checksum=magic == 0)
        elif codec == CompressionType.ZSTD:
            source = ZstdInputStreamNoFinalizer(data)
        else:
            raise ValueError(f"No decompressing stream for codec id {codec}")
    except JavaException as e:
        raise KafkaReadException(e.to_string()) from None
    return ChunkedBytesStream(source, DECOMPRESSION_OUTPUT_SIZE[codec])


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
