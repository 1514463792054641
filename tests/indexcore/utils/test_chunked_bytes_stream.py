"""``ChunkedBytesStream`` and ``Utils.readFully``: which source reads each of the reader's reads makes (the sizes
decide what a failing source had delivered). The codecs' streams under it are judged against Kafka's in
tests/indexcore/record/test_decompressing_streams.py."""

from __future__ import annotations

import pytest

from segdex.indexcore.errors import JavaException
from segdex.indexcore.utils.chunked_bytes_stream import ChunkedBytesStream, read_fully


class _Source:
    """A source over ``data`` giving at most ``step`` bytes a read, that fails past ``fail_at`` bytes; the sizes
    asked are kept."""

    def __init__(self, data: bytes, step: int = 1 << 30, fail_at: int | None = None) -> None:
        self.data, self.pos, self.step, self.fail_at, self.asked = data, 0, step, fail_at, []

    def read(self, n: int) -> bytes | None:
        self.asked.append(n)
        if self.fail_at is not None and self.pos + min(n, self.step) > self.fail_at:
            raise JavaException("java.io.IOException", "failed")
        if self.pos >= len(self.data):
            return None
        out = self.data[self.pos:self.pos + min(n, self.step)]
        self.pos += len(out)
        return out

    def available(self) -> int:
        """As ``Lz4BlockInputStream``'s: what is left of the block last read (a read takes it whole here)."""
        return 0 if self.step < 1 << 30 else len(self.data) - self.pos


DATA = bytes(range(256)) * 40


def test_reads_go_through_the_buffer_a_chunk_at_a_time():
    source = _Source(DATA)
    stream = ChunkedBytesStream(source, 100)
    assert [stream.read() for _ in range(3)] == [0, 1, 2]
    assert read_fully(stream, 150) == DATA[3:153]
    assert source.asked == [100, 100]  # the buffer refilled once; 47 bytes of it left


def test_a_read_as_large_as_the_buffer_skips_it_once_it_is_empty():
    source = _Source(DATA)
    stream = ChunkedBytesStream(source, 100)
    assert read_fully(stream, 100) == DATA[:100] and read_fully(stream, 250) == DATA[100:350]
    assert source.asked == [100, 250]


def test_a_read_returns_what_it_has_where_the_source_has_nothing_available():
    source = _Source(DATA, step=30)
    stream = ChunkedBytesStream(source, 100)
    assert stream.read_into(70) == DATA[:30]  # one fill of 30, then nothing available: a short read
    assert read_fully(stream, 70) == DATA[30:100]  # readFully asks again until it has them all


def test_a_source_that_fails_loses_the_read_it_failed_in_not_the_ones_before():
    source = _Source(DATA, fail_at=250)
    stream = ChunkedBytesStream(source, 100)
    assert read_fully(stream, 200) == DATA[:200]
    with pytest.raises(JavaException):
        stream.read()  # the fill of 200-300 fails: bytes 200-249 are never delivered
    assert stream.read_into(0) == b""


def test_the_end_is_minus_one_and_read_fully_stops_short_there():
    stream = ChunkedBytesStream(_Source(DATA[:10]), 100)
    assert read_fully(stream, 20) == DATA[:10] and stream.read() == -1 and stream.read_into(5) is None


def test_a_read_past_the_buffers_end_refills_it():
    """A read whose bytes lie on both sides of the buffer's end takes the rest of the buffer, then a fill: the
    bytes come in order, none twice, none lost."""
    source = _Source(DATA)
    stream = ChunkedBytesStream(source, 100)
    assert read_fully(stream, 60) == DATA[:60] and read_fully(stream, 60) == DATA[60:120]
    assert source.asked == [100, 100]


class _Hopeful(_Source):
    """A source that says a byte is available until a read finds its end (``InflaterInputStream.available`` before
    its inflater has met the end of the data)."""

    def available(self) -> int:
        return 1


def test_a_read_that_meets_the_end_after_some_bytes_returns_those_bytes():
    """``ChunkedBytesStream.read(b, off, len)``: reads until ``len`` or nothing is available; a read that then
    finds the end returns what the earlier ones got (``n`` when ``n > 0``, as ``BufferedInputStream.read``), and
    the next one is -1."""
    stream = ChunkedBytesStream(_Hopeful(DATA[:25], step=10), 100)
    assert stream.read_into(50) == DATA[:25]
    assert stream.read_into(5) is None
