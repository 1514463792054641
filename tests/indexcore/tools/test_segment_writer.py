"""The segment writer produces Kafka's exact bytes: checked against Kafka-written fixtures and by parsing back."""

from __future__ import annotations

import gzip
import os
import struct
import zlib
from pathlib import Path

import pytest

from segdex.indexcore.index.transaction_index import TransactionIndex
from segdex.indexcore.log.log_segment import recover, recover_file
from segdex.indexcore.record.file_records import batches, open_log
from segdex.indexcore.record.record_batch import RECORD_BATCH_V2, CompressionType, ensure_valid
from segdex.indexcore.record.records import Record, control_record, records
from segdex.indexcore.tools.segment_writer import (
    LOG_APPEND_TIME,
    SegmentWriter,
    build_batch,
    build_legacy,
    segment_name,
    uniform_batches,
    uniform_segment,
    varint,
    write_partition,
)
from segdex.indexcore.tools.segment_writer import build_control_record as write_control_record
from segdex.indexcore.tools.segment_writer import legacy_message as write_legacy_message
from tests.support.kafka_bytes import legacy_message as _v1  # a magic 0/1 message laid out from the message format


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
    msg = write_legacy_message(7, None, b"abc", magic=0)
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


# ------------------------------------------------------------------ from test_files_units.py


LOG_0 = "00000000000000000000.log"


LOG_100 = "00000000000000000100.log"


def log_name(offset: int) -> str:
    """Kafka's segment file name: the base offset zero-padded to 20 digits."""
    return f"{offset:020d}.log"


_v1_message = _v1  # a magic 1 message laid out from the message format


def test_write_partition_names_a_segment_after_the_given_first_offset(tmp_path: Path):
    """A compressed magic 1 wrapper carries its last inner offset (7); given as ``(bytes, 5)`` its segment is named
    after the first offset, 5, as Kafka names a segment after the first offset it holds."""
    wrapper = build_legacy(5, [(1, b"a", b"b"), (2, b"c", b"d"), (3, b"e", b"f")], magic=1, compression=1)
    assert struct.unpack_from(">q", wrapper, 0)[0] == 7  # the wrapper's own offset field
    paths = write_partition(tmp_path, "t", 0, [(wrapper, 5)])
    assert paths == [tmp_path / "t-0" / log_name(5)]
    assert paths[0].read_bytes() == wrapper


def test_write_partition_reuses_an_existing_partition_directory(tmp_path: Path):
    """Writing into a partition directory that already exists (a second run, or one made beforehand) works."""
    part = tmp_path / "t-2"
    part.mkdir()
    b0 = build_batch(0, [(1000, b"k", b"v")])
    assert write_partition(tmp_path, "t", 2, [b0]) == [part / LOG_0]
    b1 = build_batch(1, [(1001, b"k", b"w")])
    with SegmentWriter(tmp_path, "t", 2) as w:
        w.append(b1)
    assert w.paths == [part / log_name(1)]
    assert sorted(os.listdir(part)) == [LOG_0, log_name(1)]
    assert (part / LOG_0).read_bytes() == b0 and (part / log_name(1)).read_bytes() == b1


def test_no_roll_on_an_empty_segment_even_for_an_oversized_append(tmp_path: Path):
    """A roll never happens on an empty segment: a batch larger than ``segment_bytes`` goes into the freshly
    rolled (empty) segment instead of rolling again."""
    batch = build_batch(105, [(1000, b"k", b"x" * 100)])
    with SegmentWriter(tmp_path, "t", 0, segment_bytes=len(batch) - 1) as w:
        w.roll(100)
        w.append(batch)
    assert w.paths == [tmp_path / "t-0" / LOG_100]
    assert (tmp_path / "t-0" / LOG_100).read_bytes() == batch


def test_a_one_byte_segment_rolls_before_an_append_past_segment_bytes(tmp_path: Path):
    """Any non-empty segment (even one byte) rolls before an append that would take it past ``segment_bytes``."""
    batch = build_batch(1, [(1000, b"k", b"v")])
    with SegmentWriter(tmp_path, "t", 0, segment_bytes=len(batch)) as w:
        w.append(b"\x00", first_offset=0)
        w.append(batch)
    part = tmp_path / "t-0"
    assert w.paths == [part / LOG_0, part / log_name(1)]
    assert (part / LOG_0).read_bytes() == b"\x00" and (part / log_name(1)).read_bytes() == batch


def test_transaction_index_carries_its_segments_base_offset():
    """Kafka's ``TransactionIndex(startOffset, file)``: a recovered segment's index starts at the base offset."""
    assert TransactionIndex(100).start_offset == 100
    r = recover(build_batch(100, [(1000, b"k", b"v")]), 100)
    assert r.txn_index.start_offset == 100 and len(r.txn_index) == 0


def test_legacy_messages_stamped_with_log_append_time():
    """A v1 message set written with LogAppendTime: attribute bit 3 set and the append time as each message's
    timestamp, whether the type or only the time is given."""
    from segdex.indexcore.tools.segment_writer import LOG_APPEND_TIME, build_batch

    want = _v1_message(5, 0x08, 99, b"k", b"v") + _v1_message(6, 0x08, 99, b"k", b"w")
    records = [(1, b"k", b"v"), (2, b"k", b"w")]
    assert build_batch(5, records, magic=1, log_append_time=99) == want
    assert build_batch(5, records, magic=1, timestamp_type=LOG_APPEND_TIME) == (
        _v1_message(5, 0x08, 1, b"k", b"v") + _v1_message(6, 0x08, 2, b"k", b"w"))


def test_an_end_marker_without_a_time_is_at_time_zero():
    """``control=`` without ``control_timestamp``: the marker's record and the batch's timestamps are 0."""
    from segdex.indexcore.tools.segment_writer import build_batch

    batch = build_batch(3, [], control=("COMMIT", 2), producer_id=7, producer_epoch=0)
    base_ts, max_ts = struct.unpack_from(">qq", batch, 27)
    assert (base_ts, max_ts) == (0, 0)


# ------------------------------------------------------------------ from test_small_modules_units.py


TS = 1_700_000_000_000


def test_a_legacy_message_is_magic_1_unless_told():
    assert write_legacy_message(3, b"k", b"v", timestamp=TS) == _v1(3, 0, TS, b"k", b"v")
    assert write_legacy_message(3, None, b"v", magic=0) == _v1(3, 0, 0, None, b"v", magic=0)


def test_legacy_messages_with_create_time():
    recs = [(TS, b"a", b"1"), (TS + 7, None, b"2")]
    assert build_legacy(40, recs) == _v1(40, 0, TS, b"a", b"1") + _v1(41, 0, TS + 7, None, b"2")


def test_legacy_messages_with_log_append_time():
    """LogAppendTime (attribute bit 3) with the broker's time on every message of magic 1, none on magic 0."""
    recs = [(TS, b"a", b"1"), (TS + 7, None, b"2")]
    lat = TS + 500
    expected = _v1(40, 8, lat, b"a", b"1") + _v1(41, 8, lat, None, b"2")
    assert build_legacy(40, recs, log_append_time=lat) == expected
    assert build_legacy(40, recs, magic=1, timestamp_type=1, log_append_time=lat) == expected
    assert build_legacy(40, recs, magic=0, log_append_time=lat) == _v1(40, 0, 0, b"a", b"1", 0) + _v1(
        41, 0, 0, None, b"2", 0)


def test_a_compressed_legacy_wrapper_with_log_append_time():
    """The wrapper: last offset, codec | LogAppendTime bit, the broker's time; inner messages keep theirs,
    with offsets relative to the first (magic 1)."""
    recs = [(TS, b"a", b"1"), (TS + 7, None, b"2")]
    lat = TS + 500
    data = build_legacy(40, recs, compression=1, log_append_time=lat)
    offset, size, crc, magic, attributes, timestamp, key_len, value_len = struct.unpack_from(">qiIbbqii", data)
    assert (offset, size, magic, attributes, timestamp, key_len) == (41, len(data) - 12, 1, 1 | 8, lat, -1)
    assert crc == zlib.crc32(data[16:])
    inner = gzip.decompress(data[34:34 + value_len])
    assert inner == _v1(0, 0, TS, b"a", b"1") + _v1(1, 0, TS + 7, None, b"2")
    plain = build_legacy(40, recs, compression=1)
    assert struct.unpack_from(">bq", plain, 17) == (1, TS + 7)  # CreateTime: the wrapper has the max timestamp


def test_a_control_record_of_a_numeric_type():
    """A control type given by id (one Kafka does not know, say) is written as given."""
    r = write_control_record((5, 3), TS, 9)
    assert (r.offset, r.timestamp, r.key, r.value) == (9, TS, struct.pack(">hh", 0, 5), struct.pack(">hi", 0, 3))
    r = write_control_record(("COMMIT", 4), TS, 9)
    assert (r.key, r.value) == (struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 4))
