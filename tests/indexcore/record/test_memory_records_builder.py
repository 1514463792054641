"""``memory_records_builder``: a rebuilt batch is the bytes the segment writer (an independent encoder of Kafka's
format) writes for the same records; an empty header is 61 bytes keeping the offsets and producer fields; the
gzip wrapper is java.util.zip's. Kafka's own bytes for rebuilt batches: tests/indexcore/log/test_cleaner.py."""

from __future__ import annotations

import gzip
import zlib

import pytest

from segdex.indexcore.record.file_records import batches
from segdex.indexcore.record.memory_records_builder import (
    UnsupportedCompressionException,
    empty_header,
    java_gzip,
    rebuild_batch,
)
from segdex.indexcore.record.records import Record, records
from segdex.indexcore.tools.segment_writer import build_batch


def test_a_rebuilt_batch_is_the_writers_bytes():
    recs = [Record(10, 1000, b"k", b"v"), Record(11, 1005, b"k2", None, [("h", b"x")])]
    assert rebuild_batch(10, 11, 0, 3, 7, 1, 0, recs) == build_batch(
        10, [(1000, b"k", b"v"), (1005, b"k2", None, [("h", b"x")])], producer_id=7, producer_epoch=1,
        base_sequence=0, partition_leader_epoch=3)


def test_a_delete_horizon_is_the_base_timestamp_and_bit_6():
    batch = rebuild_batch(0, 4, 0, 0, -1, -1, -1, [Record(4, 900, b"k", None)], delete_horizon_ms=5000)
    header = next(batches(batch, 0))
    assert header.attributes & 0x40 and int.from_bytes(batch[27:35], "big") == 5000
    assert header.last_offset == 4 and [(r.offset, r.timestamp) for r in records(batch, header)] == [(4, 900)]


def test_an_empty_header_keeps_offsets_and_producer():
    h = empty_header(20, 24, 0x10 | 0x40 | 1, 2, 777, 9, 3, 100)
    b = next(batches(h, 0))
    assert len(h) == 61 and (b.base_offset, b.last_offset, b.max_timestamp) == (20, 24, 777)
    assert (b.producer_id, b.producer_epoch, b.base_sequence, b.attributes) == (9, 3, 100, 0x10)
    assert int.from_bytes(h[27:35], "big", signed=True) == -1


def test_java_gzip_and_an_unsupported_codec():
    data = b"kafka " * 1000
    out = java_gzip(data)
    assert out[:10] == bytes([0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF]) and gzip.decompress(out) == data
    deflater = zlib.compressobj(6, zlib.DEFLATED, -15, 8)
    assert out[10:-8] == deflater.compress(data) + deflater.flush()  # level 6, raw deflate, memLevel 8
    assert out[-8:] == zlib.crc32(data).to_bytes(4, "little") + len(data).to_bytes(4, "little")
    with pytest.raises(UnsupportedCompressionException, match="codec 5"):  # no such codec
        rebuild_batch(0, 0, 5, 0, -1, -1, -1, [Record(0, 1, b"k", b"v")])
