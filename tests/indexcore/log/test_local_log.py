"""``local_log.replace_segments``: a cleaned segment in place of those it was made from, on real files (what the
log dir holds after it: the new files with Kafka's times and the old segments' attributes, the replaced segments
and their snapshots gone, nothing ``.cleaned``, ``.swap`` or ``.deleted`` left)."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from segdex.indexcore.errors import OffsetOutOfRangeException, OffsetReadException
from segdex.indexcore.index.offset_index import OffsetIndex
from segdex.indexcore.log.cleaner import CleanedSegment
from segdex.indexcore.log.local_log import (
    convert_to_offset_metadata_or_throw,
    open_cleaned_log,
    replace_segments,
    replaced_files,
)
from segdex.indexcore.tools.segment_writer import build_batch, segment_name

MTIME_MS = 1_700_000_123_456
SUFFIXES = (".log", ".index", ".timeindex", ".txnindex")


def _stem(part: Path, base: int) -> str:
    return str(part / f"{base:020d}")


def _partition(tmp_path: Path) -> Path:
    """Segments 0, 5 and 10 with every file (5's .txnindex too), snapshots at 5, 10 and 0, each old file mode
    0o640."""
    part = tmp_path / "t-0"
    part.mkdir()
    for base in (0, 5, 10):
        for suffix in SUFFIXES if base == 5 else SUFFIXES[:3]:
            Path(_stem(part, base) + suffix).write_bytes(f"old {base}{suffix}".encode())
            os.chmod(_stem(part, base) + suffix, 0o640)
        Path(_stem(part, base) + ".snapshot").write_bytes(b"snapshot")
    return part


def _cleaned(txn: bytes | None = None) -> CleanedSegment:
    return CleanedSegment(0, b"cleaned log", b"cleaned index", b"cleaned time", txn, MTIME_MS, [0, 5], 11)


def test_the_files_a_replacement_removes_are_the_old_segments_and_their_snapshots_but_its_own(tmp_path: Path):
    part = _partition(tmp_path)
    assert replaced_files(str(part), _cleaned()) == [
        _stem(part, 0) + s for s in SUFFIXES[:3]] + [_stem(part, 5) + s for s in SUFFIXES] + [
        _stem(part, 5) + ".snapshot"]


def test_a_cleaned_segment_takes_the_place_of_those_it_replaces(tmp_path: Path):
    part = _partition(tmp_path)
    written = replace_segments(str(part), _cleaned())
    assert written == [_stem(part, 0) + s for s in SUFFIXES[:3]]
    assert sorted(p.name for p in part.iterdir()) == sorted(
        [f"{0:020d}{s}" for s in (*SUFFIXES[:3], ".snapshot")] + [f"{10:020d}{s}" for s in (*SUFFIXES[:3],
                                                                                            ".snapshot")])
    contents = [Path(_stem(part, 0) + s).read_bytes() for s in SUFFIXES[:3]]
    assert contents == [b"cleaned log", b"cleaned index", b"cleaned time"]
    for path in written:  # Kafka's times on the log and its indexes; the replaced segment's mode
        st = os.stat(path)
        assert (st.st_mtime_ns // 1_000_000, st.st_mode & 0o777) == (MTIME_MS, 0o640), path
    assert Path(_stem(part, 10) + ".log").read_bytes() == b"old 10.log"


def test_a_transaction_index_is_written_with_the_time_it_is_written(tmp_path: Path):
    part = _partition(tmp_path)
    written = replace_segments(str(part), _cleaned(b"cleaned txn"))
    assert written == [_stem(part, 0) + s for s in SUFFIXES]
    txn = Path(_stem(part, 0) + ".txnindex")
    assert txn.read_bytes() == b"cleaned txn"
    assert txn.stat().st_mtime_ns // 1_000_000 != MTIME_MS  # Kafka sets no time on the .txnindex


def test_a_log_streamed_into_its_temporary_is_moved_into_place(tmp_path: Path):
    part = _partition(tmp_path)
    tmp, file = open_cleaned_log(str(part), 0)
    file.write(b"streamed log")
    file.close()
    assert os.path.dirname(tmp) == str(part) and os.stat(tmp).st_mode & 0o777 == 0o640  # the old .log's mode
    cleaned = _cleaned()
    cleaned.log = b""  # the round kept no bytes: they are in the temporary
    replace_segments(str(part), cleaned, log_written=tmp)
    assert Path(_stem(part, 0) + ".log").read_bytes() == b"streamed log" and not os.path.exists(tmp)
    assert os.stat(_stem(part, 0) + ".log").st_mtime_ns // 1_000_000 == MTIME_MS


# ------------------------------------------------------------------ LocalLog.convertToOffsetMetadataOrThrow

def _segment(tmp_path: Path, base: int, *counts: int, size_field_at: int | None = None) -> tuple:
    """A segment of batches of ``counts`` records each from ``base``; ``size_field_at``: that batch's size field 5."""
    data = bytearray()
    offset = base
    for i, count in enumerate(counts):
        batch = bytearray(build_batch(offset, [(0, b"k%d" % j, b"v") for j in range(count)]))
        if i == size_field_at:
            struct.pack_into(">i", batch, 8, 5)
        data += batch
        offset += count
    path = tmp_path / segment_name(base)
    path.write_bytes(bytes(data))
    return base, str(path), OffsetIndex.from_bytes(b"", base), None


def test_an_offset_is_read_from_its_floor_segment_only(tmp_path: Path):
    """The read starts at the floor segment of the offset: a damaged batch in an earlier segment is never read;
    the offset itself where a batch starts there, else the batch holding it, else the next segment's first."""
    segments = [_segment(tmp_path, 0, 2, 2, 2, size_field_at=1), _segment(tmp_path, 10, 3, 2),
                _segment(tmp_path, 20, 1)]
    assert convert_to_offset_metadata_or_throw(segments, 10, 21) == 10
    assert convert_to_offset_metadata_or_throw(segments, 14, 21) == 13  # held by the batch at 13
    assert convert_to_offset_metadata_or_throw(segments, 15, 21) == 20  # past segment 10: the next one's first
    assert convert_to_offset_metadata_or_throw(segments, 21, 21) == 21  # the log end offset itself


def test_an_offset_past_the_log_end_or_a_damaged_batch_on_the_way_fails_the_read(tmp_path: Path):
    """Past the log end: ``OffsetOutOfRangeException``; a size field below 14 between the index entry and the
    offset: ``CorruptRecordException``, named as Kafka names it, with its file."""
    segments = [_segment(tmp_path, 0, 2, 2, 2, size_field_at=1)]
    with pytest.raises(OffsetReadException) as e:
        convert_to_offset_metadata_or_throw(segments, 7, 6)
    assert str(e.value) == ("org.apache.kafka.common.errors.OffsetOutOfRangeException: offset 7 past the log end "
                            "offset 6")
    assert (type(e.value.cause), e.value.offset, e.value.log_path) == (OffsetOutOfRangeException, 7, None)
    with pytest.raises(OffsetReadException) as e:
        convert_to_offset_metadata_or_throw(segments, 4, 6)
    assert str(e.value) == ("org.apache.kafka.common.errors.CorruptRecordException: Found record size 5 smaller "
                            f"than minimum record overhead (14) in file {tmp_path / segment_name(0)}.")
    assert (e.value.offset, e.value.log_path) == (4, segments[0][1])
    assert convert_to_offset_metadata_or_throw(segments, 0, 6) == 0  # found before the damage


def test_a_segment_read_only_up_to_the_bytes_it_holds(tmp_path: Path):
    """A segment the load cuts (its bytes given): the read ends there, so a damaged batch past the cut is not
    read and the next segment's first batch is found; the whole file would meet it."""
    base, path, index, _ = _segment(tmp_path, 0, 2, 2, size_field_at=1)
    kept = len(build_batch(0, [(0, b"k0", b"v"), (0, b"k1", b"v")]))
    later = _segment(tmp_path, 10, 1)
    assert convert_to_offset_metadata_or_throw([(base, path, index, kept), later], 3, 11) == 10
    with pytest.raises(OffsetReadException):
        convert_to_offset_metadata_or_throw([(base, path, index, None), later], 3, 11)
