"""Kafka's ``Lz4BlockInputStream`` (``common.compress``): an LZ4 frame's blocks as Kafka's readers decompress them.

The frame, little-endian::

    magic int32 (0x184D2204) | FLG uint8 | BD uint8 | [content size int64] | HC uint8 |
    blocks: size int32 (high bit: stored uncompressed) | data | [checksum int32] ... | end mark int32 0 |
    [content checksum int32]

FLG: reserved bits 0-1 (0), content checksum (bit 2), content size (3), block checksum (4), block independence (5:
must be 1), version (6-7: must be 1). BD: reserved bits 0-3 and 7 (0), the maximum block size 2^(2n+8) in bits 4-6
(n from 4 to 7). HC is the second byte of the XXH32 of the descriptor (FLG through the content size); a v0 message's
is not checked (old writers got it wrong). The header is read when the stream opens; a block when a read needs it,
so the blocks before a damaged one are delivered. Bytes after the end mark are never read; the content checksum is
skipped, not checked."""

from __future__ import annotations

import struct

import lz4.block
import xxhash

from segdex.indexcore.errors import JavaException

MAGIC = 0x184D2204
PREMATURE_EOS = "Stream ended prematurely"
NOT_SUPPORTED = "Stream unsupported (invalid magic bytes)"
BLOCK_HASH_MISMATCH = "Block checksum mismatch"
DESCRIPTOR_HASH_MISMATCH = "Stream frame descriptor corrupted"
INCOMPRESSIBLE = 0x80000000  # LZ4_FRAME_INCOMPRESSIBLE_MASK: a block stored as it is
INT32_LE = struct.Struct("<i")
IO_EXCEPTION = "java.io.IOException"
RUNTIME_EXCEPTION = "java.lang.RuntimeException"
BUFFER_UNDERFLOW = "java.nio.BufferUnderflowException"


def _flg(flg: int) -> None:
    """``FLG.fromByte``'s ``validate``."""
    if flg & 3:
        raise JavaException(RUNTIME_EXCEPTION, "Reserved bits must be 0", io=False)
    if not flg >> 5 & 1:
        raise JavaException(RUNTIME_EXCEPTION, "Dependent block stream is unsupported", io=False)
    if flg >> 6 & 3 != 1:
        raise JavaException(RUNTIME_EXCEPTION, f"Version {flg >> 6 & 3} is unsupported", io=False)


def _bd(bd: int) -> int:
    """``BD.fromByte``'s ``validate``, then ``getBlockMaximumSize``."""
    if bd & 15:
        raise JavaException(RUNTIME_EXCEPTION, "Reserved2 field must be 0", io=False)
    if not 4 <= bd >> 4 & 7 <= 7:
        raise JavaException(RUNTIME_EXCEPTION, "Block size value must be between 4 and 7", io=False)
    if bd >> 7:
        raise JavaException(RUNTIME_EXCEPTION, "Reserved3 field must be 0", io=False)
    return 1 << (2 * (bd >> 4 & 7) + 8)


class Lz4BlockInputStream:
    """``Lz4BlockInputStream(in, bufferSupplier, ignoreFlagDescriptorChecksum)`` over ``data``; the constructor
    reads the header (``readHeader``) and raises what it throws."""

    __slots__ = ("data", "pos", "flg", "max_block_size", "block", "block_pos", "finished")

    def __init__(self, data: bytes, ignore_flag_descriptor_checksum: bool = False) -> None:
        self.data, self.pos = data, 0
        self.block: bytes | None = None
        self.block_pos, self.finished = 0, False
        self._read_header(ignore_flag_descriptor_checksum)

    def _get_int(self) -> int:
        """``ByteBuffer.getInt`` (little-endian): ``BufferUnderflowException`` where fewer than 4 bytes remain."""
        if len(self.data) - self.pos < 4:
            raise JavaException(BUFFER_UNDERFLOW, io=False)
        self.pos += 4
        return INT32_LE.unpack_from(self.data, self.pos - 4)[0]

    def _read_header(self, ignore_checksum: bool) -> None:
        data = self.data
        if len(data) < 6:
            raise JavaException(IO_EXCEPTION, PREMATURE_EOS)
        if INT32_LE.unpack_from(data, 0)[0] != MAGIC:
            raise JavaException(IO_EXCEPTION, NOT_SUPPORTED)
        self.flg = data[4]
        _flg(self.flg)
        self.max_block_size = _bd(data[5])
        self.pos = 6
        if self.flg >> 3 & 1:  # content size: skipped
            if len(data) - self.pos < 8:
                raise JavaException(IO_EXCEPTION, PREMATURE_EOS)
            self.pos += 8
        if ignore_checksum:
            if self.pos + 1 > len(data):  # Buffer.position past the limit
                raise JavaException("java.lang.IllegalArgumentException",
                                    f"newPosition > limit: ({self.pos + 1} > {len(data)})", io=False)
            self.pos += 1
            return
        digest = xxhash.xxh32_intdigest(data[4:self.pos], 0)
        if self.pos >= len(data):
            raise JavaException(BUFFER_UNDERFLOW, io=False)
        self.pos += 1
        if data[self.pos - 1] != digest >> 8 & 0xFF:
            raise JavaException(IO_EXCEPTION, DESCRIPTOR_HASH_MISMATCH)

    def _read_block(self) -> None:
        """``readBlock``: the next block decompressed (or its stored bytes), its checksum checked where the frame
        has them; the end mark finishes the stream."""
        if len(self.data) - self.pos < 4:
            raise JavaException(IO_EXCEPTION, PREMATURE_EOS)
        size = self._get_int()
        compressed = not size & INCOMPRESSIBLE
        size &= ~INCOMPRESSIBLE & 0xFFFFFFFF
        if size == 0:
            self.finished = True
            if self.flg >> 2 & 1:
                self._get_int()  # the content checksum: read, not checked
            return
        if size > self.max_block_size:
            raise JavaException(IO_EXCEPTION, f"Block size {size} exceeded max: {self.max_block_size}")
        if len(self.data) - self.pos < size:
            raise JavaException(IO_EXCEPTION, PREMATURE_EOS)
        raw = self.data[self.pos:self.pos + size]
        if compressed:
            try:  # LZ4SafeDecompressor.decompress into the frame's maximum block size
                self.block = lz4.block.decompress(raw, uncompressed_size=self.max_block_size)
            except lz4.block.LZ4BlockError as e:
                raise JavaException(IO_EXCEPTION, f"net.jpountz.lz4.LZ4Exception: {e}") from None
        else:
            self.block = raw
        self.block_pos = 0
        self.pos += size
        if self.flg >> 4 & 1 and xxhash.xxh32_intdigest(raw, 0) != self._get_int() & 0xFFFFFFFF:
            raise JavaException(IO_EXCEPTION, BLOCK_HASH_MISMATCH)

    def available(self) -> int:
        return 0 if self.block is None else len(self.block) - self.block_pos

    def read(self, n: int) -> bytes | None:
        """``read(b, off, n)``: the rest of the current block, at most ``n`` bytes; the next block read first where
        the current one is done; None at the end mark."""
        if self.finished:
            return None
        if self.available() == 0:
            self._read_block()
        if self.finished:
            return None
        n = min(n, self.available())
        self.block_pos += n
        return self.block[self.block_pos - n:self.block_pos]
