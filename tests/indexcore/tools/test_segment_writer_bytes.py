"""The sample-data writer's bytes against Kafka's: compressed payloads as Kafka's producer frames them (the
fixtures' LZ4 batches byte for byte, the xerial snappy header), and v2 batch fields laid out by hand from the
protocol guide (expected values never come from segdex's readers)."""

from __future__ import annotations

import struct
from collections.abc import Iterator

import pytest

from segdex.indexcore.record.compression import compress
from segdex.indexcore.tools.segment_writer import build_batch
from tests.support.fixtures import FIXTURES
from tests.support.kafka_bytes import RECORD_BATCH_V2_HEADER as V2_HEADER
from tests.support.kafka_bytes import decompress
from tests.support.kafka_bytes import varint as zz

GZIP, SNAPPY, LZ4 = 1, 2, 3
LOG_APPEND_TIME_FLAG = 0x08  # attributes bit 3; bits 0-2 the codec


def fixture_payloads(case: str) -> Iterator[bytes]:
    """The compressed payload (the bytes after the 61-byte header) of every batch of a case's broker log."""
    data = (FIXTURES / case / "broker" / "00000000000000000000.log").read_bytes()
    pos = 0
    while pos + V2_HEADER.size <= len(data):
        size = struct.unpack_from(">i", data, pos + 8)[0] + 12
        yield data[pos + V2_HEADER.size:pos + size]
        pos += size


def test_lz4_frames_are_the_bytes_kafkas_producer_wrote():
    """Every batch of the v2_lz4 fixture, decompressed and compressed again: Kafka's frame, byte for byte (FLG
    0x60: independent blocks, no checksums, no content size; BD 0x40: 64 KiB blocks)."""
    payloads = list(fixture_payloads("v2_lz4"))
    assert len(payloads) > 100
    for payload in payloads:
        assert payload[4:6] == b"\x60\x40"
        assert compress(LZ4, decompress(LZ4, payload)) == payload


def test_lz4_blocks_stay_independent_past_one_block():
    """A payload of several 64 KiB blocks (the fixtures' batches fit in one, where the LZ4 library makes blocks
    independent anyway): still FLG 0x60, BD 0x40, which KafkaLZ4BlockInputStream requires."""
    data = bytes((i * 7919) % 251 for i in range(300_000))
    frame = compress(LZ4, data)
    assert frame[:6] == b"\x04\x22\x4d\x18\x60\x40"
    assert decompress(LZ4, frame) == data


def test_snappy_has_the_xerial_header_kafka_writes():
    """snappy-java's SnappyOutputStream header (magic, version 1, compatible version 1), then int32-length
    chunks: as in every batch of the v2_snappy fixture."""
    for payload in fixture_payloads("v2_snappy"):
        ours = compress(SNAPPY, decompress(SNAPPY, payload))
        assert ours[:16] == payload[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
        assert struct.unpack_from(">i", ours, 16)[0] == len(ours) - 20


def test_compress_names_an_unknown_codec():
    with pytest.raises(ValueError) as e:
        compress(7, b"x")
    assert str(e.value) == "Unknown compression codec id 7"


def test_record_headers_are_written():
    """A (timestamp, key, value, headers) tuple: the record carries its headers (count 1, key "h", value b"x")."""
    batch = build_batch(0, [(1000, b"k", b"v", [("h", b"x")])])
    body = (b"\x00" + zz(0) + zz(0) + zz(1) + b"k" + zz(1) + b"v"
            + zz(1) + zz(1) + b"h" + zz(1) + b"x")  # the header count is a signed varint too
    assert batch[V2_HEADER.size:] == zz(len(body)) + body


def test_base_timestamp_overrides_the_first_records():
    """``base_timestamp=900`` with a record at 1000: baseTimestamp 900 and the record's delta 100."""
    batch = build_batch(0, [(1000, b"k", b"v")], base_timestamp=900)
    fields = V2_HEADER.unpack_from(batch)
    assert fields[7] == 900 and fields[8] == 1000
    assert batch[V2_HEADER.size + 2:V2_HEADER.size + 4] == zz(100)  # after the length and attributes bytes


def test_an_empty_batch_covers_no_offsets_and_keeps_the_timestamp_given():
    """No records: lastOffsetDelta -1 (its last offset is base - 1), count 0, maxTimestamp -1, and baseTimestamp
    the one given (or -1)."""
    fields = V2_HEADER.unpack_from(build_batch(7, [], base_timestamp=5))
    assert (fields[0], fields[6], fields[7], fields[8], fields[12]) == (7, -1, 5, -1, 0)
    fields = V2_HEADER.unpack_from(build_batch(7, []))
    assert (fields[6], fields[7]) == (-1, -1)


def test_log_append_time_keeps_the_codec_bits():
    """LogAppendTime on a gzip batch: attributes 0x08 | 0x01, maxTimestamp the append time."""
    fields = V2_HEADER.unpack_from(build_batch(0, [(1000, b"k", b"v")], compression=GZIP, log_append_time=5000))
    assert fields[5] == LOG_APPEND_TIME_FLAG | GZIP and fields[8] == 5000
