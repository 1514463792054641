"""``LogSegment.readNextOffset`` and ``LogSegment.largestTimestamp`` on segments as they lie on disk: as a broker
reads them (the startup preview) against Kafka's batch listing of every fixture, and in the tolerant mode
retention's facts use, where the two differ on purpose."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest

from segdex.indexcore.errors import SegdexError
from segdex.indexcore.index.abstract_index import WARM_INDEX_BYTES
from segdex.indexcore.log.log_segment import LogSegment, _base_offset, search_for_offset_from_position
from segdex.indexcore.tools.segment_writer import build_batch, build_legacy
from tests.support.fixtures import FIXTURES, fixture_case_names
from tests.support.log_segments import TS

WARM_ENTRIES = WARM_INDEX_BYTES // 8  # index entries in the warm section

CASES = [n for n in fixture_case_names() if not n.startswith("corrupt")]


@pytest.mark.parametrize("name", CASES)
def test_next_offset_is_kafkas(name: str, tmp_path: Path):
    for log in sorted((FIXTURES / name / "broker").glob("*.log")):
        kafka = json.loads(log.with_name(log.name.replace(".log", ".batches.json")).read_text())
        base = int(log.name[:20])
        want = kafka[-1]["lastOffset"] + 1 if kafka else base
        shutil.copy(log, tmp_path / log.name)
        index = log.with_suffix(".index")
        if index.exists():
            shutil.copy(index, tmp_path / index.name)
        assert LogSegment(str(tmp_path / log.name), base).read_next_offset() == want, log
        (tmp_path / index.name).unlink(missing_ok=True)  # no index: a scan from the first batch
        assert LogSegment(str(tmp_path / log.name), base).read_next_offset() == want, log


def test_next_offset_from_an_index_with_more_entries_than_the_warm_section(tmp_path: Path):
    """3,000 one-record batches indexed at interval 1: the last entry lies far past the warm section's start."""
    from segdex.indexcore.config.log_config import LogConfig
    from segdex.indexcore.log.log_segments import PartitionRecovery
    from segdex.indexcore.tools.segment_writer import build_batch

    log = tmp_path / "00000000000000000500.log"
    log.write_bytes(b"".join(build_batch(500 + 2 * i, [(1, b"k", b"v"), (2, b"k", b"w")]) for i in range(3000)))
    seg = PartitionRecovery(LogConfig(index_interval_bytes=1)).recover_segment(str(log), 500)
    log.with_suffix(".index").write_bytes(seg.files[".index"])
    assert len(seg.files[".index"]) // 8 > 2 * WARM_ENTRIES
    assert LogSegment(str(log), 500).read_next_offset() == 500 + 6000
    # an index whose last entry was lost: the scan goes on from the entry before it
    log.with_suffix(".index").write_bytes(seg.files[".index"][:-8])
    assert LogSegment(str(log), 500).read_next_offset() == 500 + 6000


def test_next_offset_reads_only_from_the_last_index_entry(tmp_path: Path):
    """Kafka reads the next offset from the batch the offset index's last entry points at: a batch broken before
    that position is never read (it is, by a segment recovery, which is another matter)."""
    from segdex.indexcore.config.log_config import LogConfig
    from segdex.indexcore.log.log_segments import PartitionRecovery
    from segdex.indexcore.tools.segment_writer import build_batch

    log = tmp_path / "00000000000000000000.log"
    batches = [build_batch(i, [(1, b"k", b"v" * 20)]) for i in range(400)]
    log.write_bytes(b"".join(batches))
    seg = PartitionRecovery(LogConfig(index_interval_bytes=4096)).recover_segment(str(log), 0)
    index = seg.files[".index"]
    log.with_suffix(".index").write_bytes(index)
    last_position = struct.unpack(">ii", index[-8:])[1]
    assert last_position > 10 * len(batches[0])
    data = bytearray(log.read_bytes())
    struct.pack_into(">i", data, len(batches[0]) * 3 + 8, 5)  # batch 3's size: below any batch's
    log.write_bytes(bytes(data))
    assert LogSegment(str(log), 0).read_next_offset() == 400
    log.with_suffix(".index").unlink()  # no index: the read starts at 0 and meets the broken batch
    from segdex.indexcore.errors import CorruptRecordException
    with pytest.raises(CorruptRecordException):
        LogSegment(str(log), 0).read_next_offset()


def _three_batches(tmp_path: Path) -> tuple[Path, list[bytes]]:
    from segdex.indexcore.tools.segment_writer import build_batch

    log = tmp_path / "00000000000000000100.log"
    batches = [build_batch(100 + i, [(1_700_000_000_000 + i, b"k", b"v" * 30)]) for i in range(3)]
    log.write_bytes(b"".join(batches))
    return log, batches


def test_a_corrupt_tail_raises_as_kafka_reads_and_ends_the_tolerant_read(tmp_path: Path):
    """A zero-filled tail (a size field of 0) after three batches: Kafka's read throws; retention's facts take the
    offset after the last whole batch."""
    from segdex.indexcore.errors import CorruptRecordException

    log, _ = _three_batches(tmp_path)
    with open(log, "ab") as f:
        f.write(bytes(40))
    segment = LogSegment(str(log), 100)
    with pytest.raises(CorruptRecordException):
        segment.read_next_offset()
    assert segment.read_next_offset(tolerate_damage=True) == 103


def test_zero_filled_index_slots_are_entries_only_to_kafka(tmp_path: Path):
    """An active segment's preallocated ``.index``: one real entry then zero slots. Kafka counts the zero slots,
    so its last entry is (base, 0) and the read starts at 0; the tolerant read starts at the real entry's position.
    Both end at the same offset on a sound log; a broken first batch tells them apart."""
    from segdex.indexcore.errors import CorruptRecordException

    log, batches = _three_batches(tmp_path)
    log.with_suffix(".index").write_bytes(struct.pack(">ii", 2, 2 * len(batches[0])) + bytes(8 * 10))
    segment = LogSegment(str(log), 100)
    assert segment.read_next_offset() == segment.read_next_offset(tolerate_damage=True) == 103
    data = bytearray(log.read_bytes())
    struct.pack_into(">i", data, 8, 5)  # the first batch's size: below any batch's
    log.write_bytes(bytes(data))
    with pytest.raises(CorruptRecordException):
        segment.read_next_offset()
    assert segment.read_next_offset(tolerate_damage=True) == 103


def test_an_index_past_every_batch_falls_back_to_a_full_read_only_when_tolerant(tmp_path: Path):
    """An index whose last entry points past the end of the file (a stale copy): Kafka finds no batch from there
    and answers the base offset; the tolerant read starts again from the first batch."""
    log, _ = _three_batches(tmp_path)
    log.with_suffix(".index").write_bytes(struct.pack(">ii", 7, 100_000))
    segment = LogSegment(str(log), 100)
    assert segment.read_next_offset() == 100
    assert segment.read_next_offset(tolerate_damage=True) == 103


def test_largest_timestamp_from_the_recovered_index_or_the_file(tmp_path: Path):
    """The time index recovery rebuilt when given, else the ``.timeindex`` on disk; the mtime when neither has a
    timestamp."""
    import os

    from segdex.indexcore.index.time_index import TimeIndex
    from segdex.indexcore.log.log_segment import TIMESTAMP_FROM_MTIME, TIMESTAMP_FROM_TIME_INDEX

    log, _ = _three_batches(tmp_path)
    os.utime(log, ns=(1_600_000_000_123_000_000, 1_600_000_000_123_456_789))
    segment = LogSegment(str(log), 100)
    assert segment.largest_timestamp() == (1_600_000_000_123, TIMESTAMP_FROM_MTIME)
    recovered = segment.recover().time_index
    assert segment.largest_timestamp(recovered) == (1_700_000_000_002, TIMESTAMP_FROM_TIME_INDEX)
    log.with_suffix(".timeindex").write_bytes(recovered.to_bytes(preallocate=True))
    assert segment.largest_timestamp() == (1_700_000_000_002, TIMESTAMP_FROM_TIME_INDEX)
    assert segment.largest_timestamp(TimeIndex(100)) == (1_600_000_000_123, TIMESTAMP_FROM_MTIME)


def _magic_damaged(base: int, codec_byte: int) -> bytes:
    """A v2 batch whose magic byte reads -1 (0xFF) and whose CRC's first byte (what a read of the older formats
    takes for its attributes) is ``codec_byte``."""
    data = bytearray(build_batch(base, [(TS, b"k", b"v")]))
    data[16], data[17] = 0xFF, codec_byte
    return bytes(data)


@pytest.mark.parametrize(("codec_byte", "raised"), [
    (0x00, None),  # uncompressed: its own record, the log header's offset
    (0x11, "org.apache.kafka.common.InvalidRecordException: Invalid wrapper magic found in legacy deep record "
           "iterator -1"),  # gzip: opened as a wrapper
    (0x4C, "org.apache.kafka.common.InvalidRecordException: Invalid wrapper magic found in legacy deep record "
           "iterator -1"),  # zstd: the wrapper's magic byte is checked first
    (0xF5, "java.lang.IllegalArgumentException: Unknown compression type id: 5"),
])
def test_the_search_loads_a_batch_whose_magic_reads_negative_as_an_older_format(codec_byte: int, raised: str | None):
    """``FileRecords.searchForOffsetFromPosition`` asks each batch it passes for its base offset: a v2 batch whose
    magic byte reads below 2 as a signed byte is loaded as a message of the older formats
    (``AbstractLegacyRecordBatch.baseOffset``), which throws unless it is uncompressed."""
    buf = build_batch(0, [(TS, b"a", b"1")]) + _magic_damaged(1, codec_byte) + build_batch(2, [(TS, b"b", b"1")])
    if raised is None:
        assert search_for_offset_from_position(buf, 2, 0).base_offset == 2
        return
    with pytest.raises(SegdexError) as e:
        search_for_offset_from_position(buf, 2, 0)
    assert f"{e.value.kafka_class}: {e.value}" == raised
    assert e.value.position == len(build_batch(0, [(TS, b"a", b"1")]))  # the damaged batch's
    assert search_for_offset_from_position(buf, 0, 0).base_offset == 0  # found before the damaged batch


def test_the_search_takes_a_compressed_legacy_wrappers_first_inner_offset():
    """A gzip v1 wrapper's base offset is its first inner message's (the deep iterator's), not the wrapper's own
    (its last); a zstd-flagged one is refused as the deep iterator refuses it."""
    wrapper = build_legacy(5, [(TS, b"a", b"1"), (TS, b"b", b"2"), (TS, b"c", b"3")], compression=1)
    buf = build_legacy(0, [(TS, b"z", b"0")]) + wrapper
    found = search_for_offset_from_position(buf, 5, 0)
    assert (found.position, _base_offset(buf, found)) == (len(buf) - len(wrapper), 5)
    assert found.base_offset == 7  # the wrapper's own offset
    assert search_for_offset_from_position(buf, 6, 0).position == found.position  # held by the wrapper
    zstd = bytearray(wrapper)
    zstd[17] = (zstd[17] & ~7) | 4
    with pytest.raises(SegdexError, match="Invalid wrapper compressionType found in legacy deep record iterator 1"):
        search_for_offset_from_position(bytes(zstd), 5, 0)


def test_a_compressed_legacy_wrapper_holding_no_message_has_no_base_offset():
    """A gzip v1 wrapper whose payload decompresses to nothing: the deep iterator finds no inner message, and
    ``AbstractLegacyRecordBatch.baseOffset`` throws ``InvalidRecordException`` at the wrapper's position."""
    import gzip

    from segdex.indexcore.errors import InvalidRecordException
    from segdex.indexcore.record.file_records import batches
    from segdex.indexcore.tools.segment_writer import legacy_message

    first = build_legacy(0, [(TS, b"z", b"0")])
    buf = first + legacy_message(1, None, gzip.compress(b""), attributes=1)
    with pytest.raises(InvalidRecordException, match="^Found invalid compressed record set with no inner records$") \
            as e:
        _base_offset(buf, list(batches(buf))[1])
    assert e.value.position == len(first)


def _spaced(tmp_path: Path) -> tuple[bytes, list[int]]:
    """Batches of offsets 0-2, 3-5, 6-8 and, after a gap, 20-21: the bytes and each batch's position."""
    from segdex.indexcore.record.file_records import batches
    from segdex.indexcore.tools.segment_writer import build_batch

    data = b"".join(build_batch(base, [(1, b"k", b"v")] * n) for base, n in ((0, 3), (3, 3), (6, 3), (20, 2)))
    return data, [b.position for b in batches(data, 0)]


@pytest.mark.parametrize(("target", "start", "found"), [
    (3, 0, 1),  # a batch at the target offset
    (5, 0, 1),  # its last offset reaches the target (the next batch's base is past it)
    (4, 0, 1),
    (6, 0, 2),
    (-1, 0, 0),  # every base past the target, none before: the first batch
    (12, 0, 3),  # in the gap: the batch before does not reach it, the next one
    (21, 0, 3),  # the end: the last batch reaches it
    (22, 0, None),  # past the last offset
    (1, 1, 1),  # from the second batch's position: the first batch is not read
])
def test_the_batch_searched_from_a_position_is_kafkas_search_for_offset(tmp_path: Path, target: int, start: int,
                                                                         found: int | None):
    """``FileRecords.searchForOffsetFromPosition``: the batch at the target, else the one before the first base
    past it where its last offset reaches the target, else that first batch; at the end the last batch where it
    reaches the target."""
    from segdex.indexcore.log.log_segment import search_for_offset_from_position

    data, positions = _spaced(tmp_path)
    batch = search_for_offset_from_position(data, target, positions[start])
    assert (batch.position if batch is not None else None) == (positions[found] if found is not None else None)


@pytest.mark.parametrize(("attributes", "raised"), [
    (0, None),
    (4, "org.apache.kafka.common.InvalidRecordException: Invalid wrapper compressionType found in legacy deep record "
        "iterator 1"),
    (5, "java.lang.IllegalArgumentException: Unknown compression type id: 5"),
    (7, "java.lang.IllegalArgumentException: Unknown compression type id: 7"),
])
def test_a_legacy_message_naming_no_compression_type_fails_the_search(tmp_path: Path, attributes: int,
                                                                       raised: str | None):
    """``FileChannelRecordBatch.baseOffset`` loads a v0/v1 message whole, and its attributes must name a codec
    (ids 0-4): 5 and 7 throw ``IllegalArgumentException``; zstd (4) is one, but the deep iterator refuses it in a
    message of the older formats; ``readNextOffset`` passes both on, as Kafka 4.4's clean start of such a
    segment throws them (asked of its ``LogLoader``)."""
    from segdex.indexcore.tools.segment_writer import legacy_message

    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(legacy_message(0, b"k", b"v", attributes=attributes) + legacy_message(1, b"k", b"v"))
    if raised is None:
        assert LogSegment(str(log), 0).read_next_offset() == 2
        return
    with pytest.raises(SegdexError) as e:
        LogSegment(str(log), 0).read_next_offset()
    assert f"{e.value.kafka_class}: {e.value}" == raised


@pytest.mark.parametrize("magic", [7, 2])
def test_a_last_message_too_short_for_a_v2_header_fails_next_offset_as_kafkas_read(tmp_path: Path, magic: int):
    """A v1 message of 41 bytes whose magic byte reads 7 (the case Kafka 4.4 was asked in test_cleaner.py) or 2:
    found from the index's last entry by its log header's offset, then loaded as a v2 batch, whose 61-byte header
    the 41 bytes cannot give: Kafka's ``KafkaException``, naming the read's slice (from the entry's position)."""
    from segdex.indexcore.errors import KafkaReadException
    from segdex.indexcore.tools.segment_writer import build_batch, legacy_message

    log = tmp_path / "00000000000000000000.log"
    first = build_batch(0, [(1, b"k", b"v")] * 2)
    last = bytearray(legacy_message(2, b"k", b"vvvvvv", timestamp=1))
    assert len(last) == 41
    last[16] = magic
    log.write_bytes(first + bytes(last))
    size = len(first) + 41
    for entry, start in ((b"", 0), (struct.pack(">ii", 2, len(first)), len(first))):
        log.with_suffix(".index").write_bytes(entry)
        with pytest.raises(KafkaReadException) as e:
            LogSegment(str(log), 0).read_next_offset()
        assert str(e.value) == (f"Failed to load record batch at position {len(first)} from FileRecords(size="
                                f"{size - start}, file={log.resolve()}, start={start}, end={size})")
    log.write_bytes(first + legacy_message(2, b"k", b"vvvvvv", timestamp=1))  # magic 1: whole, read as v1
    assert LogSegment(str(log), 0).read_next_offset() == 3


def test_a_last_batch_of_exactly_a_v2_header_is_whole(tmp_path: Path):
    """An empty v2 batch (61 bytes, its header alone) ending the segment: its header is whole, its next offset
    read; and a v2 batch's codec bits are not checked by the search (only a legacy message is loaded whole)."""
    from segdex.indexcore.record.memory_records_builder import empty_header
    from segdex.indexcore.tools.segment_writer import build_batch

    log = tmp_path / "00000000000000000000.log"
    empty = empty_header(2, 4, 0, 0, 1, -1, -1, -1)
    assert len(empty) == 61
    first = bytearray(build_batch(0, [(1, b"k", b"v")] * 2))
    log.write_bytes(bytes(first) + empty)
    assert LogSegment(str(log), 0).read_next_offset() == 5
    first[22] |= 6  # the low byte of its attributes: codec 6, which no codec is
    log.write_bytes(bytes(first) + empty)
    assert LogSegment(str(log), 0).read_next_offset() == 5
