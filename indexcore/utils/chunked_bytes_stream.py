"""Kafka's ``ChunkedBytesStream`` (``common.utils``): the buffer every decompressing stream of a batch is read
through, and ``Utils.readFully`` over it.

A source ``InputStream`` is an object with ``read(n)`` (Java's ``read(byte[], 0, n)``: up to ``n`` bytes, ``b""``
for a read of none, None for -1, the end) and ``available()``; its failures are raised as
``errors.JavaException``. What a reader gets before a source fails depends on the read sizes: a source read that
throws loses the bytes it had copied in that call, so the chunk sizes below decide which bytes were delivered."""

from __future__ import annotations

from typing import Protocol


class InputStream(Protocol):
    """A source stream as ``ChunkedBytesStream`` reads it."""

    def read(self, n: int) -> bytes | None: ...

    def available(self) -> int: ...


class ChunkedBytesStream:
    """``ChunkedBytesStream(in, bufferSupplier, intermediateBufSize, ...)``: reads of the source ``intermediateBufSize``
    bytes at a time into an intermediate buffer (``fill``); a ``read(b, off, len)`` with the buffer empty and ``len``
    at least its size reads the source directly (``read1``), and one that got fewer bytes than asked returns them
    where the source says none are ``available``."""

    __slots__ = ("source", "size", "buf", "pos")

    def __init__(self, source: InputStream, intermediate_buf_size: int) -> None:
        self.source, self.size, self.buf, self.pos = source, intermediate_buf_size, b"", 0

    def _fill(self) -> None:
        self.buf, self.pos = b"", 0  # pos = count = 0 before the source is asked: a throw leaves it empty
        self.buf = self.source.read(self.size) or b""

    def read(self) -> int:
        """``read()``: the next byte (0-255), -1 at the end."""
        if self.pos >= len(self.buf):
            self._fill()
            if self.pos >= len(self.buf):
                return -1
        self.pos += 1
        return self.buf[self.pos - 1]

    def _read1(self, n: int) -> bytes | None:
        avail = len(self.buf) - self.pos
        if avail <= 0:
            if n >= self.size:
                return self.source.read(n)
            self._fill()
            avail = len(self.buf) - self.pos
            if avail <= 0:
                return None
        out = self.buf[self.pos:self.pos + min(avail, n)]
        self.pos += len(out)
        return out

    def read_into(self, n: int) -> bytes | None:
        """``read(b, off, n)``: up to ``n`` bytes; ``b""`` where the source gave none, None for -1."""
        if n == 0:
            return b""
        parts: list[bytes] = []
        got = 0
        while True:
            chunk = self._read1(n - got)
            if not chunk:
                return b"".join(parts) if got else chunk
            parts.append(chunk)
            got += len(chunk)
            if got >= n or self.source.available() <= 0:
                return b"".join(parts)


def read_fully(stream: ChunkedBytesStream, n: int) -> bytes:
    """``Utils.readFully(InputStream, ByteBuffer)`` into a buffer of ``n`` bytes: reads until it is full or the
    stream ends; fewer than ``n`` bytes only at the end."""
    parts: list[bytes] = []
    got = 0
    while got < n:
        chunk = stream.read_into(n - got)
        if chunk is None:
            break
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)
