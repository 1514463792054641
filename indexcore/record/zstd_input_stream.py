"""zstd-jni's ``ZstdInputStreamNoFinalizer`` (1.5.7, as Kafka 4.4's ``ZstdCompression`` opens it): zstd frames as
Kafka's readers decompress them.

Each read runs libzstd's ``ZSTD_decompressStream`` (1.5.7, the version zstd-jni bundles, through zstandard's
binding) as zstd-jni's ``readInternal`` does: the input is taken from the payload up to ``ZSTD_DStreamInSize``
bytes at a time, and the output goes into the caller's buffer until it is full or a frame ends. libzstd emits a
block's bytes only once the whole block is decoded, so a damaged or cut block delivers none of its bytes, and a read
that meets the failure loses what it had decoded in that call. The end of the payload inside a frame is "Truncated
source"; after a frame, the end of the stream; bytes after a frame begin another (not a frame: an error)."""

from __future__ import annotations

from zstandard._cffi import ffi, lib

from segdex.indexcore.errors import JavaException

ZSTD_IO_EXCEPTION = "com.github.luben.zstd.ZstdIOException"
SRC_BUFF_SIZE = lib.ZSTD_DStreamInSize()  # recommendedDInSize


class ZstdInputStreamNoFinalizer:
    """``ZstdInputStreamNoFinalizer(new ByteBufferInputStream(payload), pool)`` over ``data``: nothing is read when
    it opens."""

    __slots__ = ("data", "data_pos", "dctx", "src", "src_size", "src_pos", "need_read", "frame_finished")

    def __init__(self, data: bytes) -> None:
        self.data, self.data_pos = data, 0
        self.dctx = ffi.gc(lib.ZSTD_createDStream(), lib.ZSTD_freeDStream)
        lib.ZSTD_initDStream(self.dctx)
        self.src, self.src_size, self.src_pos = ffi.NULL, 0, 0
        self.need_read, self.frame_finished = True, True

    def _in_available(self) -> int:
        return len(self.data) - self.data_pos

    def _read_internal(self, n: int) -> bytes | None:
        """``readInternal(dst, 0, n)``."""
        out = ffi.new("char[]", n)
        output = ffi.new("ZSTD_outBuffer *")
        output.dst, output.size, output.pos = out, n, 0
        last = -1
        while output.pos < n and last < output.pos:
            if self.need_read and (self._in_available() > 0 or output.pos == 0):
                chunk = self.data[self.data_pos:self.data_pos + SRC_BUFF_SIZE]
                self.data_pos += len(chunk)
                self.src_pos = 0
                if not chunk:  # ByteBufferInputStream: -1 at its end
                    self.src_size = 0
                    if self.frame_finished:
                        return None
                    raise JavaException(ZSTD_IO_EXCEPTION, "Truncated source")
                self.src, self.src_size = ffi.from_buffer(chunk), len(chunk)
                self.frame_finished = False
            last = output.pos
            source = ffi.new("ZSTD_inBuffer *")
            source.src, source.size, source.pos = self.src, self.src_size, self.src_pos
            size = lib.ZSTD_decompressStream(self.dctx, output, source)
            self.src_pos = source.pos
            if lib.ZSTD_isError(size):
                raise JavaException(ZSTD_IO_EXCEPTION, ffi.string(lib.ZSTD_getErrorName(size)).decode())
            if size == 0:  # a frame completed
                self.frame_finished = True
                self.need_read = self.src_pos == self.src_size
                return ffi.buffer(out, output.pos)[:]
            self.need_read = output.pos < n
        return ffi.buffer(out, output.pos)[:]

    def read(self, n: int) -> bytes | None:
        """``read(dst, 0, n)``: ``readInternal`` until it gives a byte or the end."""
        if n == 0:
            return b""
        while True:
            got = self._read_internal(n)
            if got is None or got:
                return got

    def available(self) -> int:
        return 1 if not self.need_read else self._in_available()
