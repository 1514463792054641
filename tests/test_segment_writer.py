"""The segment writer produces Kafka's exact bytes: checked against Kafka-written fixtures and by parsing back."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest

from segdex.indexcore.log.log_segment import recover, recover_file
from segdex.indexcore.record.file_records import batches, open_log
from segdex.indexcore.record.record_batch import RECORD_BATCH_V2, CompressionType, ensure_valid
from segdex.indexcore.record.records import Record, control_record, records
from segdex.indexcore.tools.segment_writer import (
    LOG_APPEND_TIME,
    SegmentWriter,
    build_batch,
    build_legacy,
    legacy_message,
    segment_name,
    uniform_batches,
    uniform_segment,
    varint,
    write_partition,
)


def _batches_of(data: bytes) -> list:
    return list(batches(data))


def _rebuild(buf, b) -> bytes:
    """Re-encode a fixture batch from its decoded records and header fields."""
    if b.magic == 2 and b.attributes & 0x08 and not b.is_control:
        # LogAppendTime records decode to the batch time; read their own timestamps with the flag cleared.
        plain = bytearray(buf[b.position:b.position + b.size_in_bytes])
        plain[22] &= ~0x08
        (flagless,) = _batches_of(bytes(plain))
        recs = list(records(bytes(plain), flagless))
    else:
        recs = list(records(buf, b))
    if b.magic < 2:
        ts_type = LOG_APPEND_TIME if b.magic == 1 and b.attributes & 0x08 else 0
        return build_legacy(recs[0].offset if recs else b.base_offset, recs, magic=b.magic,
                            compression=b.compression_type, timestamp_type=ts_type)
    header = RECORD_BATCH_V2.unpack_from(buf, b.position)
    kwargs = dict(compression=b.compression_type, producer_id=b.producer_id, producer_epoch=b.producer_epoch,
                  base_sequence=b.base_sequence, partition_leader_epoch=b.partition_leader_epoch,
                  is_transactional=b.is_transactional, base_timestamp=header[7], max_timestamp=header[8],
                  timestamp_type=1 if b.attributes & 0x08 else 0)
    if b.is_control:
        return build_batch(b.base_offset, [], control=control_record(buf, b), control_timestamp=recs[0].timestamp,
                           **kwargs)
    return build_batch(b.base_offset, recs, **kwargs)


def test_varint_examples():
    # Zig-zag: 0, -1, 1, -2, 63, 64, 300 as in the protocol guide's examples and protobuf's.
    assert [varint(v) for v in (0, -1, 1, -2, 63, 64, 300)] == [
        b"\x00", b"\x01", b"\x02", b"\x03", b"\x7e", b"\x80\x01", b"\xd8\x04"]
    assert varint(-(2**63)) == b"\xff" * 9 + b"\x01"


def test_fixture_batches_reencode_identically(kafka_fixtures: Path, fixture_case: str):
    """Uncompressed batches (v2, control markers, v0/v1 messages) rebuild byte for byte from their records;
    compressed ones (Kafka's Java codecs differ from cramjam's bytes) rebuild to the same records and header."""
    logs = sorted((kafka_fixtures / fixture_case).glob("*/*.log"))
    checked = 0
    for log in logs:
        with open_log(log) as buf:
            try:
                found = list(batches(buf))
            except Exception:  # corrupt fixtures: their iteration stops with an error part way
                found = []
            for b in found:
                try:
                    ensure_valid(buf, b)
                except Exception:
                    continue
                raw = bytes(buf[b.position:b.position + b.size_in_bytes])
                out = _rebuild(buf, b)
                if b.compression_type == CompressionType.NONE:
                    assert out == raw, f"{log} batch at {b.position}"
                else:
                    (again,) = _batches_of(out)
                    assert list(records(out, again)) == list(records(buf, b))
                    assert (again.magic, again.base_offset, again.last_offset, again.attributes, again.max_timestamp,
                            again.producer_id, again.partition_leader_epoch) == (
                        b.magic, b.base_offset, b.last_offset, b.attributes, b.max_timestamp, b.producer_id,
                        b.partition_leader_epoch)
                checked += 1
    if fixture_case != "empty_segment":
        assert checked


@pytest.mark.parametrize("codec", list(CompressionType))
def test_v2_round_trip(codec: CompressionType):
    recs = [Record(100, 1_700_000_000_000, b"k1", b"v" * 300, [("h", b"x"), ("empty", None)]),
            Record(101, 1_699_999_999_000, None, b"", []),
            Record(104, 1_700_000_000_500, b"", None, [])]
    data = build_batch(100, recs, compression=codec, producer_id=9, producer_epoch=2, base_sequence=5,
                       partition_leader_epoch=7)
    (b,) = _batches_of(data)
    ensure_valid(data, b)
    assert (b.base_offset, b.last_offset, b.compression_type, b.max_timestamp, b.records_count) == (
        100, 104, codec, 1_700_000_000_500, 3)
    assert (b.producer_id, b.producer_epoch, b.base_sequence, b.partition_leader_epoch) == (9, 2, 5, 7)
    assert not b.is_transactional and not b.is_control
    assert list(records(data, b)) == recs


def test_log_append_time_and_transactions():
    data = build_batch(0, [(10, b"a", b"b"), (20, b"c", b"d")], log_append_time=999, producer_id=4,
                       producer_epoch=0, base_sequence=0, is_transactional=True)
    (b,) = _batches_of(data)
    ensure_valid(data, b)
    assert b.timestamp_type == "LogAppendTime" and b.max_timestamp == 999 and b.is_transactional
    assert [r.timestamp for r in records(data, b)] == [999, 999]


@pytest.mark.parametrize("ctype", ["ABORT", "COMMIT"])
def test_control_batches(ctype: str):
    data = build_batch(42, [], control=(ctype, 17), control_timestamp=123, producer_id=4, producer_epoch=1)
    (b,) = _batches_of(data)
    ensure_valid(data, b)
    assert b.is_control and b.is_transactional and b.base_offset == b.last_offset == 42
    assert control_record(data, b) == (ctype, 17)


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.GZIP, CompressionType.SNAPPY,
                                   CompressionType.LZ4])
def test_legacy_round_trip(magic: int, codec: CompressionType):
    recs = [Record(50 + i, 1000 + i, b"k%d" % i, b"value-%d" % i) for i in range(4)]
    data = build_legacy(50, recs, magic=magic, compression=codec)
    found = _batches_of(data)
    for b in found:
        ensure_valid(data, b)
    decoded = [r for b in found for r in records(data, b)]
    expected_ts = [r.timestamp if magic else -1 for r in recs]
    assert [(r.offset, r.key, r.value) for r in decoded] == [(r.offset, r.key, r.value) for r in recs]
    assert [r.timestamp for r in decoded] == expected_ts
    if codec == CompressionType.NONE:
        assert len(found) == 4
    else:
        (wrapper,) = found
        assert wrapper.last_offset == 53 and wrapper.compression_type == codec
        assert wrapper.max_timestamp == (1003 if magic else -1)


def test_legacy_message_layout():
    msg = legacy_message(7, None, b"abc", magic=0)
    # offset, size, crc, magic, attributes, key length -1, value length, value
    assert msg[:12] == (7).to_bytes(8, "big") + (14 + 3).to_bytes(4, "big")
    assert int.from_bytes(msg[12:16], "big") == zlib.crc32(msg[16:])
    assert msg[16:] == b"\x00\x00" + b"\xff\xff\xff\xff" + b"\x00\x00\x00\x03abc"


def test_segment_writer_rolls_by_size(tmp_path: Path):
    batch_list = [build_batch(i * 2, [(1000 + i, b"k", b"x" * 100), (1000 + i, b"k", b"y")]) for i in range(50)]
    paths = write_partition(tmp_path, "t", 3, batch_list, segment_bytes=1000)
    assert all(p.parent == tmp_path / "t-3" for p in paths)
    assert len(paths) > 1
    offsets = [int(p.name[:20]) for p in paths]
    assert [p.name for p in paths] == [segment_name(o) for o in offsets] and offsets[0] == 0
    total = b"".join(p.read_bytes() for p in paths)
    assert total == b"".join(batch_list)
    for p, base in zip(paths, offsets, strict=True):
        assert p.stat().st_size <= 1000
        r = recover_file(p, base)
        assert r.stop_reason is None and r.error is None and r.first_offset == base
    assert write_partition(tmp_path, "empty", 0, []) == [tmp_path / "empty-0" / segment_name(0)]


def test_segment_writer_explicit_first_offset(tmp_path: Path):
    with SegmentWriter(tmp_path, "t", 0, segment_bytes=10) as w:
        w.append(build_legacy(5, [(1, b"a", b"b"), (2, b"c", b"d")], magic=1, compression=1), first_offset=5)
        w.append(build_batch(7, [(3, None, b"x")]))
    assert [p.name for p in w.paths] == [segment_name(5), segment_name(7)]


def test_uniform_segment(tmp_path: Path):
    path = tmp_path / segment_name(1000)
    size = uniform_segment(path, 200_000, base_offset=1000, records_per_batch=3, value_size=50, timestamp_step=2,
                           chunk_bytes=4096)
    data = path.read_bytes()
    assert len(data) == size >= 200_000
    found = _batches_of(data)
    assert found[0].base_offset == 1000
    for i, b in enumerate(found):
        ensure_valid(data, b)
        assert b.base_offset == 1000 + 3 * i and b.last_offset == b.base_offset + 2
        assert b.max_timestamp == 1_700_000_000_000 + 2 * i
    assert [r.offset for r in records(data, found[5])] == [1015, 1016, 1017]
    r = recover(data, 1000)
    assert r.valid_bytes == size and r.batch_count == len(found) and r.record_count == 3 * len(found)
    assert next(uniform_batches(1, compression=CompressionType.ZSTD))[22] & 0x07 == CompressionType.ZSTD
