"""xerial snappy-java's ``SnappyInputStream`` (1.1.10, as Kafka 4.4's ``SnappyCompression`` opens it): the stream
``SnappyOutputStream`` writes, as Kafka's readers decompress it.

The stream::

    header: magic 8 bytes (\\x82SNAPPY\\x00) | version int32 | compatible version int32
    chunks: length int32 (big-endian) | raw snappy block of that length ...

A stream whose first 16 bytes are not that header (or that is shorter) is one raw snappy block, decompressed whole
when the stream opens. Otherwise a chunk is read and decompressed when a read needs it, so the chunks before a
damaged one are delivered; a read that reaches into a damaged chunk throws and loses the bytes it had copied from the
chunks before. A length field cut short ends the stream; a length field holding the magic's first four bytes starts
a concatenated stream's header. The raw blocks are decoded by cramjam (the snappy format's own checks: the varint
length, every tag's bounds, the length met exactly)."""

from __future__ import annotations

import struct

import cramjam

from segdex.indexcore.errors import JavaException

MAGIC = b"\x82SNAPPY\x00"
HEADER_SIZE = 16
MAGIC_HEADER_HEAD = struct.unpack(">i", MAGIC[:4])[0]
MAX_CHUNK_SIZE = 512 * 1024 * 1024
MINIMUM_COMPATIBLE_VERSION = 1
INT32 = struct.Struct(">i")
IO_EXCEPTION = "java.io.IOException"
SNAPPY_IO_EXCEPTION = "org.xerial.snappy.SnappyIOException"
SNAPPY_ERROR = "org.xerial.snappy.SnappyError"
# SnappyNative.throw_error: an IOException "<code name>(<code>)"
PARSING_ERROR = "PARSING_ERROR(2)"
FAILED_TO_UNCOMPRESS = "FAILED_TO_UNCOMPRESS(5)"
MAX_EXPANSION = 32  # snappy's densest tag, a 64-byte copy in 3 bytes, makes under 22 bytes per byte read


def _uncompressed_length(block: bytes) -> int:
    """``Snappy.uncompressedLength``: the block's leading varint32 (snappy's ``GetUncompressedLength``), as a Java
    int; a varint that is cut or longer than 32 bits is ``PARSING_ERROR``."""
    value = 0
    for i in range(5):
        if i >= len(block):
            break
        b = block[i]
        value |= (b & 0x7F) << (7 * i)
        if b < 0x80:
            if i == 4 and b > 15:  # past 32 bits
                break
            return value - (1 << 32) if value >= 1 << 31 else value
    raise JavaException(IO_EXCEPTION, PARSING_ERROR)


def _uncompress(block: bytes) -> bytes:
    """``Snappy.uncompress``: the raw block decoded (``FAILED_TO_UNCOMPRESS`` where it is not a valid block)."""
    length = _uncompressed_length(block)
    if length > MAX_EXPANSION * len(block):  # no block this short decodes to that many bytes (and none is made)
        raise JavaException(IO_EXCEPTION, FAILED_TO_UNCOMPRESS)
    try:
        return bytes(cramjam.snappy.decompress_raw(block))
    except Exception:  # cramjam's DecompressionError
        raise JavaException(IO_EXCEPTION, FAILED_TO_UNCOMPRESS) from None


def _java_grouped(n: int) -> str:
    """``String.format("%,d", n)`` in an English locale."""
    return f"{n:,}"


class SnappyInputStream:
    """``SnappyInputStream(in)`` over ``data``: the constructor reads the header (``readHeader``), or, where there
    is none, decompresses the whole of ``data`` as one raw block, and raises what that throws."""

    __slots__ = ("data", "pos", "finished_reading", "uncompressed", "cursor")

    def __init__(self, data: bytes) -> None:
        self.data, self.pos, self.finished_reading = data, 0, False
        self.uncompressed, self.cursor = b"", 0
        header = data[:HEADER_SIZE]
        self.pos = len(header)
        if not header:
            raise JavaException(SNAPPY_IO_EXCEPTION, "[EMPTY_INPUT] Cannot decompress empty stream")
        if len(header) < HEADER_SIZE or not header.startswith(MAGIC):
            self._read_fully()

    def _read_fully(self) -> None:
        """``readFully``: the whole input as one raw block."""
        self.pos, self.finished_reading = len(self.data), True
        length = _uncompressed_length(self.data)
        if length < 0:
            raise JavaException("java.lang.NegativeArraySizeException", str(length), io=False)
        self.uncompressed = _uncompress(self.data)

    def _read_next(self, n: int) -> bytes:
        """``readNext``: up to ``n`` bytes; fewer at the input's end, which finishes the reading."""
        out = self.data[self.pos:self.pos + n]
        self.pos += len(out)
        if len(out) < n:
            self.finished_reading = True
        return out

    def _has_next_chunk(self) -> bool:
        """``hasNextChunk``: the next chunk read and decompressed; False at the input's end."""
        if self.finished_reading:
            return False
        self.uncompressed, self.cursor = b"", 0
        head = self._read_next(4)
        if len(head) < 4:
            return False
        (chunk_size,) = INT32.unpack(head)
        if chunk_size == MAGIC_HEADER_HEAD:  # a concatenated stream's header
            rest = self._read_next(HEADER_SIZE - 4)
            if len(rest) < HEADER_SIZE - 4:
                raise JavaException(SNAPPY_IO_EXCEPTION,
                                    "[FAILED_TO_UNCOMPRESS] Insufficient header size in a concatenated block")
            header = head + rest
            if not header.startswith(MAGIC):
                return False
            version = INT32.unpack_from(header, 8)[0]
            if version < MINIMUM_COMPATIBLE_VERSION:
                raise JavaException(SNAPPY_IO_EXCEPTION, f"[INCOMPATIBLE_VERSION] Compressed with an incompatible "
                                    f"codec version {version}. At least version {MINIMUM_COMPATIBLE_VERSION} is "
                                    f"required")
            return self._has_next_chunk()
        if chunk_size < 0:
            raise JavaException(SNAPPY_ERROR, f"[INVALID_CHUNK_SIZE] chunkSize is too big or negative : {chunk_size}",
                                io=False)
        if chunk_size > MAX_CHUNK_SIZE:
            raise JavaException(SNAPPY_ERROR, f"[FAILED_TO_UNCOMPRESS] Received chunkSize "
                                f"{_java_grouped(chunk_size)} is greater than max configured chunk size "
                                f"{_java_grouped(MAX_CHUNK_SIZE)}", io=False)
        chunk = self.data[self.pos:self.pos + chunk_size]
        self.pos += len(chunk)
        if len(chunk) < chunk_size:
            raise JavaException(IO_EXCEPTION, "failed to read chunk")
        self.uncompressed = _uncompress(chunk)  # its length read first: PARSING_ERROR before FAILED_TO_UNCOMPRESS
        return True

    def available(self) -> int:
        if self.cursor < len(self.uncompressed):
            return len(self.uncompressed) - self.cursor
        return len(self.uncompressed) - self.cursor if self._has_next_chunk() else 0

    def read(self, n: int) -> bytes | None:
        """``read(b, off, n)``: ``n`` bytes, across chunks; fewer only at the end (None: none left). A chunk that
        fails throws, losing what this call had copied."""
        parts: list[bytes] = []
        written = 0
        while written < n:
            if self.cursor >= len(self.uncompressed):
                if self._has_next_chunk():
                    continue
                return b"".join(parts) if written else None
            take = self.uncompressed[self.cursor:self.cursor + n - written]
            self.cursor += len(take)
            written += len(take)
            parts.append(take)
        return b"".join(parts)
