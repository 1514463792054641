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


def test_the_rebuildable_codecs_are_kafkas_writers():
    """``_rebuildable_codecs`` (run once at import): every codec id, in order; snappy through the built kernel."""
    from segdex.indexcore.record.compression import snappy_java_raw, xerial_snappy
    from segdex.indexcore.record.memory_records_builder import _lz4, _rebuildable_codecs, _zstd

    codecs = _rebuildable_codecs()
    assert list(codecs) == [0, 1, 2, 3, 4]
    data = b"kafka " * 100
    assert codecs[0](data) == data and codecs[1] is java_gzip and codecs[3] is _lz4 and codecs[4] is _zstd
    assert codecs[2](data) == xerial_snappy(data, snappy_java_raw())


@pytest.mark.parametrize(("case", "codec"), [("v2_gzip", 1), ("v2_zstd", 4)])
def test_gzip_and_zstd_give_back_every_payload_kafka_wrote(case, codec):
    """Kafka's ``GzipCompression`` (deflate level 6, memLevel 8) and ``ZstdCompression`` (level 3, no content size,
    no checksum) over each batch's records of the fixture, byte for byte: other levels give other bytes for some
    of its 120 batches."""
    from segdex.indexcore.record.memory_records_builder import REBUILDABLE_CODECS
    from tests.support.fixtures import FIXTURES
    from tests.support.kafka_bytes import decompress

    log = (FIXTURES / case / "broker" / "00000000000000000000.log").read_bytes()
    payloads = [log[b.position + 61:b.position + b.size_in_bytes] for b in batches(log)]
    assert len(payloads) >= 100
    assert all(REBUILDABLE_CODECS[codec](decompress(codec, p)) == p for p in payloads)


def test_a_delete_horizon_or_log_append_time_of_0_is_one():
    """0 is a time (``>= 0``), -1 none: a horizon of 0 sets bit 6 and is the base timestamp; a log-append time of 0
    is the max timestamp."""
    batch = rebuild_batch(0, 0, 0, 0, -1, -1, -1, [Record(0, 900, b"k", None)], delete_horizon_ms=0)
    header = next(batches(batch, 0))
    assert header.attributes & 0x40 and int.from_bytes(batch[27:35], "big") == 0
    batch = rebuild_batch(0, 0, 0x08, 0, -1, -1, -1, [Record(0, 900, b"k", b"v")], log_append_time=0)
    assert next(batches(batch, 0)).max_timestamp == 0
