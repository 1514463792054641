"""Java's ``GZIPInputStream`` (JDK 17, with an 8 KiB input buffer, as Kafka 4.4's ``GzipCompression`` opens it): a
gzip member as Kafka's readers decompress it.

The member::

    magic uint16 (1f 8b) | method uint8 (8) | flags uint8 | mtime uint32 | extra flags uint8 | OS uint8 |
    [extra: length uint16 | bytes] | [name: bytes up to 0] | [comment: bytes up to 0] | [header CRC uint16] |
    deflate data | CRC-32 uint32 | size uint32   (little-endian)

The header is read when the stream opens (``readHeader``): a wrong magic or method is a ``ZipException``, a header
cut short an ``EOFException``. The deflate data goes through zlib as ``Inflater.inflate`` drives it
(``InflaterInputStream.read``): each read is one inflate into the caller's buffer over the input taken 8 KiB at a
time, which gives what it made before the input ran out; a damaged byte fails the whole inflate, losing what that
call had made (``ZipException`` with zlib's words). The input's end inside the data is "Unexpected end of ZLIB input
stream"; a trailer that does not match is "Corrupt GZIP trailer". Bytes after the trailer are read as another
member's header, and ignored where they are not one."""

from __future__ import annotations

import zlib

from segdex.indexcore.errors import JavaException

INPUT_BUFFER_SIZE = 8 * 1024  # GzipCompression: new GZIPInputStream(in, 8 * 1024)
FHCRC, FEXTRA, FNAME, FCOMMENT = 2, 4, 8, 16
ZIP_EXCEPTION = "java.util.zip.ZipException"
EOF_EXCEPTION = "java.io.EOFException"


class _Input:
    """The ``ByteBufferInputStream`` under the stream, or the trailer's ``SequenceInputStream`` (the inflater's
    unread input first)."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data, self.pos = data, pos

    def read_ubyte(self) -> int:
        """``readUByte``: ``EOFException`` at the end."""
        if self.pos >= len(self.data):
            raise JavaException(EOF_EXCEPTION)
        self.pos += 1
        return self.data[self.pos - 1]

    def read_ushort(self) -> int:
        low = self.read_ubyte()
        return self.read_ubyte() << 8 | low

    def read_uint(self) -> int:
        low = self.read_ushort()
        return self.read_ushort() << 16 | low

    def skip_bytes(self, n: int) -> None:
        if len(self.data) - self.pos < n:
            raise JavaException(EOF_EXCEPTION)
        self.pos += n


def read_header(source: _Input) -> int:
    """``readHeader``: the member's header read and checked; its length."""
    start, crc_from = source.pos, source.pos
    if source.read_ushort() != 0x8B1F:
        raise JavaException(ZIP_EXCEPTION, "Not in GZIP format")
    if source.read_ubyte() != 8:
        raise JavaException(ZIP_EXCEPTION, "Unsupported compression method")
    flags = source.read_ubyte()
    source.skip_bytes(6)
    if flags & FEXTRA:
        source.skip_bytes(source.read_ushort())
    if flags & FNAME:
        while source.read_ubyte() != 0:
            pass
    if flags & FCOMMENT:
        while source.read_ubyte() != 0:
            pass
    if flags & FHCRC:
        expected = zlib.crc32(source.data[crc_from:source.pos]) & 0xFFFF
        if source.read_ushort() != expected:
            raise JavaException(ZIP_EXCEPTION, "Corrupt GZIP header")
    return source.pos - start


class GZIPInputStream:
    """``GZIPInputStream(in, 8192)`` over ``data``; the constructor reads the header and raises what it throws."""

    __slots__ = ("input", "inflater", "pending", "crc", "written", "eos", "reach_eof")

    def __init__(self, data: bytes) -> None:
        self.input = _Input(data)
        read_header(self.input)
        self._reset()
        self.eos = False
        self.reach_eof = False  # InflaterInputStream's reachEOF: set at a member's end, never cleared

    def _reset(self) -> None:
        self.inflater = zlib.decompressobj(-zlib.MAX_WBITS)  # Inflater(nowrap = true)
        self.pending, self.crc, self.written = b"", 0, 0

    def _fill(self) -> None:
        """``InflaterInputStream.fill``: the next 8 KiB of input."""
        source = self.input
        if source.pos >= len(source.data):
            raise JavaException(EOF_EXCEPTION, "Unexpected end of ZLIB input stream")
        self.pending = source.data[source.pos:source.pos + INPUT_BUFFER_SIZE]
        source.pos += len(self.pending)

    def _inflate(self, n: int) -> bytes | None:
        """``InflaterInputStream.read``: inflates until it makes a byte (None: the data's end)."""
        while True:
            if self.inflater.eof:
                self.reach_eof = True
                return None
            if not self.pending:
                self._fill()
            try:
                out = self.inflater.decompress(self.pending, n)
            except zlib.error as e:
                raise JavaException(ZIP_EXCEPTION, str(e).split(": ", 1)[-1]) from None
            self.pending = self.inflater.unused_data if self.inflater.eof else self.inflater.unconsumed_tail
            if out:
                self.written += len(out)
                self.crc = zlib.crc32(out, self.crc)
                return out

    def _read_trailer(self) -> bool:
        """``readTrailer``: the CRC and size checked; True where the stream ends (no member follows)."""
        remaining = len(self.pending)
        rest = self.input.data[self.input.pos:]
        trailer = _Input(self.pending + rest)
        if trailer.read_uint() != self.crc or trailer.read_uint() != self.written & 0xFFFFFFFF:
            raise JavaException(ZIP_EXCEPTION, "Corrupt GZIP trailer")
        if self.input.pos < len(self.input.data) or remaining > 26:  # another member?
            try:
                read_header(trailer)
            except JavaException:
                return True
            self.input = _Input(trailer.data, trailer.pos)
            self._reset()
            return False
        return True

    def read(self, n: int) -> bytes | None:
        """``read(b, off, n)``: up to ``n`` bytes of one inflate; None at the end (checked first: a read of
        none there is the end too)."""
        if self.eos:
            return None
        if n == 0:
            return b""
        while not self.eos:
            out = self._inflate(n)
            if out is not None:
                return out
            if self._read_trailer():
                self.eos = True
        return None

    def available(self) -> int:
        """``InflaterInputStream.available``: 0 once a member's end was reached (``reachEOF``, which nothing clears
        when a second member follows), else 1."""
        if self.inflater.eof:
            self.reach_eof = True
        return 0 if self.reach_eof else 1
