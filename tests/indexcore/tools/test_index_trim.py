"""indexcore.index_compaction, file by file: what ``check_index_file`` and ``check_partition`` report for one
``.index``/``.timeindex`` of a closed segment.

Expected values come from Kafka: the index files the broker wrote in the ``multi_segment_partition_retention``
fixture and their sizes and entries as case.json records them (``segments``, and ``liveSegmentsBeforeClose`` for
the preallocated length of the active segment's indexes, ``segment.index.bytes`` rounded down to whole entries as
``AbstractIndex`` does); or from bytes built here with struct.pack from the index formats (offset index entry:
int32 relative offset, int32 position; time index entry: int64 timestamp, int32 relative offset). A closed
segment's index is exactly ``entries x entry size`` bytes (``AbstractIndex.trimToValidSize``).
"""

from __future__ import annotations

import io
import os
import shutil
import struct
from pathlib import Path

import pytest

from segdex.indexcore.tools import index_trim as index_compaction
from segdex.indexcore.tools.index_trim import (
    STATUS_CORRUPT,
    STATUS_OK,
    STATUS_OVERLONG,
    STATUS_UNREADABLE,
    IndexFileCheck,
    check_index_file,
    check_partition,
    trim,
)
from tests.support.fixtures import FIXTURES, load_case

CASE = "multi_segment_partition_retention"
OFFSET_ENTRY = struct.Struct(">ii")  # relative offset, physical position
TIME_ENTRY = struct.Struct(">qi")  # timestamp, relative offset
SIZES = {".index": OFFSET_ENTRY.size, ".timeindex": TIME_ENTRY.size}


def kafka_segments() -> list[dict]:
    """The segments of the case as Kafka left them after a clean shutdown, by base offset."""
    return sorted(load_case(CASE)["broker"]["segments"], key=lambda s: s["baseOffset"])


def kafka_file(base: int, suffix: str) -> Path:
    return FIXTURES / CASE / "broker" / f"{base:020d}{suffix}"


def entry_count(segment: dict, suffix: str) -> int:
    return len(segment["indexEntries" if suffix == ".index" else "timeindexEntries"])


def file_size(segment: dict, suffix: str) -> int:
    return segment["indexFileSize" if suffix == ".index" else "timeindexFileSize"]


def copy_kafka_index(dest: Path, base: int, suffix: str) -> Path:
    target = dest / f"{base:020d}{suffix}"
    shutil.copyfile(kafka_file(base, suffix), target)
    return target


def pad_with_zeros(path: Path, length: int) -> None:
    with open(path, "ab") as f:
        f.write(bytes(length - path.stat().st_size))


class ReadSpy:
    """A file object that records (position, bytes read) of every read, to see what the check reads."""

    def __init__(self, f: io.BufferedReader, reads: list[tuple[int, int]]) -> None:
        self._f = f
        self._reads = reads

    def __enter__(self) -> ReadSpy:
        return self

    def __exit__(self, *exc: object) -> None:
        self._f.close()

    def seek(self, *args: int) -> int:
        return self._f.seek(*args)

    def read(self, n: int | None = -1) -> bytes:
        position = self._f.tell()
        data = self._f.read(n)
        self._reads.append((position, len(data)))
        return data


@pytest.fixture
def spied_reads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    reads: list[tuple[int, int]] = []
    real = index_compaction.open_regular
    monkeypatch.setattr(index_compaction, "open_regular", lambda path: ReadSpy(real(path), reads))
    return reads


@pytest.mark.parametrize("suffix", [".index", ".timeindex"])
def test_kafkas_trimmed_index_is_ok_from_its_last_entry(tmp_path, suffix, spied_reads):
    """A closed segment's index as Kafka trims it (entries x entry size, last slot an entry) is already trimmed:
    reported with Kafka's size and entry count, and only its last slot is read (a log dir holds thousands)."""
    segment = kafka_segments()[2]  # base 410: .index 200 bytes (25 entries), .timeindex 312 bytes (26 entries)
    path = copy_kafka_index(tmp_path, segment["baseOffset"], suffix)
    size, entries = file_size(segment, suffix), entry_count(segment, suffix)
    assert size == entries * SIZES[suffix]
    check = check_index_file(str(path), suffix, 410)
    assert check == IndexFileCheck(str(path), 410, suffix, size, size, entries, STATUS_OK, "")
    assert type(check.entries) is int
    assert check.reclaimable_bytes == 0
    assert spied_reads == [(size - SIZES[suffix], SIZES[suffix])]


def test_last_entry_of_only_zero_and_0x58_bytes_is_still_an_entry(tmp_path, spied_reads):
    """An entry is all-zero or not: a last entry (relative offset 88, position 22528) whose bytes are only 0x00
    and 0x58 ('X') marks the file as trimmed like any other."""
    data = OFFSET_ENTRY.pack(40, 10240) + OFFSET_ENTRY.pack(0x58, 0x5800)
    assert set(data[8:]) == {0x00, 0x58}
    path = tmp_path / "00000000000000001000.index"
    path.write_bytes(data)
    assert check_index_file(str(path), ".index", 1000) == IndexFileCheck(
        str(path), 1000, ".index", 16, 16, 2, STATUS_OK, "")
    assert spied_reads == [(8, 8)]


@pytest.mark.parametrize("suffix", [".index", ".timeindex"])
def test_index_preallocated_by_a_crash_is_overlong(tmp_path, suffix):
    """A broker that dies while a segment is active leaves its index preallocated to segment.index.bytes rounded
    down to whole entries (the length Kafka reports for the active segment before close); the valid part is
    Kafka's trimmed file and the rest is reported as reclaimable zeros."""
    case = load_case(CASE)
    segment = kafka_segments()[0]
    path = copy_kafka_index(tmp_path, 0, suffix)
    active = case["broker"]["liveSegmentsBeforeClose"][-1]
    prealloc = active["indexFileLength" if suffix == ".index" else "timeindexFileLength"]
    assert prealloc == case["topic_config"]["segment.index.bytes"] // SIZES[suffix] * SIZES[suffix]
    pad_with_zeros(path, prealloc)
    valid, entries = file_size(segment, suffix), entry_count(segment, suffix)
    check = check_index_file(str(path), suffix, 0)
    assert check == IndexFileCheck(str(path), 0, suffix, prealloc, valid, entries, STATUS_OVERLONG,
                                   f"{prealloc - valid} bytes after its {entries} entries are zeros")
    assert check.reclaimable_bytes == prealloc - valid


def test_overlong_index_with_positions_past_16_mib(tmp_path):
    """Positions in a segment of the default 1 GiB segment.bytes pass 16 MiB (0x01000000): a preallocated index
    holding such entries is read from its first byte and reported overlong with all its entries."""
    entries = [(1000, 8_000_000), (2000, 16_000_000), (3000, 24_000_000), (4000, 33_554_432)]
    path = tmp_path / "00000000000000500000.index"
    path.write_bytes(b"".join(OFFSET_ENTRY.pack(*e) for e in entries) + bytes(8 * 500))
    assert check_index_file(str(path), ".index", 500_000) == IndexFileCheck(
        str(path), 500_000, ".index", 4032, 32, 4, STATUS_OVERLONG, "4000 bytes after its 4 entries are zeros")


def test_overlong_index_not_a_multiple_of_the_entry_size(tmp_path):
    """A zero tail that does not end on an entry boundary (a copy cut short) is still only zeros after the
    entries: overlong, and its valid size is Kafka's file."""
    path = copy_kafka_index(tmp_path, 208, ".timeindex")  # 300 bytes, 25 entries
    pad_with_zeros(path, 300 + 12 * 3 + 5)
    assert check_index_file(str(path), ".timeindex", 208) == IndexFileCheck(
        str(path), 208, ".timeindex", 341, 300, 25, STATUS_OVERLONG, "41 bytes after its 25 entries are zeros")


@pytest.mark.parametrize("suffix", [".index", ".timeindex"])
def test_empty_index_is_already_trimmed(tmp_path, suffix):
    """A closed segment smaller than index.interval.bytes has no index entry: Kafka trims its index to 0 bytes,
    which is a trimmed file with nothing to reclaim."""
    path = tmp_path / f"00000000000000000500{suffix}"
    path.write_bytes(b"")
    check = check_index_file(str(path), suffix, 500)
    assert check == IndexFileCheck(str(path), 500, suffix, 0, 0, 0, STATUS_OK, "")
    assert check.reclaimable_bytes == 0


def test_non_zero_bytes_after_the_entries_off_an_entry_boundary_are_corrupt(tmp_path):
    """Bytes after the entries must be zeros: a non-zero tail that is not a whole entry makes the file corrupt,
    with its size and the rebuild hint, and nothing counted as reclaimable."""
    path = copy_kafka_index(tmp_path, 208, ".index")  # 200 bytes, 25 entries
    with open(path, "ab") as f:
        f.write(b"\x01\x02\x03\x04")
    check = check_index_file(str(path), ".index", 208)
    assert check == IndexFileCheck(
        str(path), 208, ".index", 204, 204, 0, STATUS_CORRUPT,
        f"{path}: non-zero bytes after the 25 entries (200 bytes): not a zero-padded index; "
        f"run `segdex rebuild` on its partition")
    assert check.reclaimable_bytes == 0


def test_garbage_inside_a_zero_tail_is_corrupt(tmp_path):
    """A preallocated time index with a non-zero byte inside its zero tail is not Kafka's padding: corrupt."""
    path = copy_kafka_index(tmp_path, 0, ".timeindex")  # 300 bytes, 25 entries
    pad_with_zeros(path, 1200)
    data = bytearray(path.read_bytes())
    data[600] = 9
    path.write_bytes(bytes(data))
    assert check_index_file(str(path), ".timeindex", 0) == IndexFileCheck(
        str(path), 0, ".timeindex", 1200, 1200, 0, STATUS_CORRUPT,
        f"{path}: non-zero bytes after the 25 entries (300 bytes): not a zero-padded index; "
        f"run `segdex rebuild` on its partition")


def test_missing_index_file_is_unreadable(tmp_path):
    """An index that vanished (a broker deleting the segment meanwhile) is unreadable, with the OS's reason."""
    path = tmp_path / "00000000000000000042.timeindex"
    assert check_index_file(str(path), ".timeindex", 42) == IndexFileCheck(
        str(path), 42, ".timeindex", 0, 0, 0, STATUS_UNREADABLE, f"{path}: No such file or directory")


def test_directory_named_like_an_index_is_unreadable(tmp_path):
    """Kafka only reads regular files: a directory with an index's name is reported, not opened."""
    path = tmp_path / "00000000000000000042.index"
    path.mkdir()
    assert check_index_file(str(path), ".index", 42) == IndexFileCheck(
        str(path), 42, ".index", 0, 0, 0, STATUS_UNREADABLE, f"{path}: cannot read: a directory, not a regular file")


def test_fifo_named_like_an_index_is_unreadable(tmp_path):
    """A FIFO with an index's name would block a reader forever: reported as unreadable without blocking."""
    path = tmp_path / "00000000000000000007.timeindex"
    os.mkfifo(path)
    assert check_index_file(str(path), ".timeindex", 7) == IndexFileCheck(
        str(path), 7, ".timeindex", 0, 0, 0, STATUS_UNREADABLE, f"{path}: cannot read: a FIFO, not a regular file")


def test_partition_checks_every_closed_segment_past_a_misnamed_log(tmp_path, monkeypatch):
    """Every segment but the active one (the highest base offset) has its indexes checked, in base-offset order,
    even when a misnamed ``.log`` file (19 digits) is listed before them."""
    broker = FIXTURES / CASE / "broker"
    for f in broker.iterdir():
        if not f.name.endswith(".batches.json"):
            shutil.copyfile(f, tmp_path / f.name)
    (tmp_path / "0000000000000000000.log").write_bytes(b"")  # not a segment: 19 digits
    real_listdir = os.listdir
    monkeypatch.setattr(os, "listdir", lambda p: sorted(real_listdir(p)))  # the misnamed file comes first
    checks = check_partition(str(tmp_path))
    expected = [IndexFileCheck(str(tmp_path / f"{s['baseOffset']:020d}{suffix}"), s["baseOffset"], suffix,
                               file_size(s, suffix), file_size(s, suffix), entry_count(s, suffix), STATUS_OK, "")
                for s in kafka_segments()[:-1] for suffix in (".index", ".timeindex")]
    assert len(expected) == 14
    assert checks == expected


def _segment_at_time_zero(part: Path, first_ts: int, first_records: int = 1) -> Path:
    """A closed segment 0 (a segment 9 follows) whose first batch holds ``first_records`` records at ``first_ts``
    and whose later records are all at time 0; returns its .timeindex path."""
    from segdex.indexcore.tools.segment_writer import build_batch, segment_name

    part.mkdir(parents=True)
    data = build_batch(0, [(first_ts, b"k", b"v")] * first_records)
    data += build_batch(first_records, [(0, b"k", b"w")] * 3)
    (part / segment_name(0)).write_bytes(data)
    (part / segment_name(9)).write_bytes(b"")
    return part / segment_name(0, ".timeindex")


def test_a_time_entry_of_timestamp_0_at_the_base_offset_is_an_entry(tmp_path):
    """The time index Kafka writes when the first batch is one record at time 0 and nothing later is newer:
    one entry (0, 0), twelve zero bytes (``maybeAppend`` takes 0 over the empty index's -1; Kafka's recovery
    writes the same, test_kafka_oracle). It is trimmed already, and a preallocated copy trims back to it."""
    index = _segment_at_time_zero(tmp_path / "t-0", 0)
    index.write_bytes(bytes(12))
    check = check_index_file(str(index), ".timeindex", 0)
    assert (check.status, check.entries, check.valid_bytes) == ("ok", 1, 12)
    index.write_bytes(bytes(12 * 1000))
    check = trim(check_index_file(str(index), ".timeindex", 0))
    assert (check.status, check.entries, check.valid_bytes, index.read_bytes()) == ("trimmed", 1, 12, bytes(12))
    assert [(c.suffix, c.status, c.entries) for c in check_partition(str(index.parent))] == [(".timeindex", "ok", 1)]


@pytest.mark.parametrize(("first_ts", "first_records"), [(5, 1), (0, 2)], ids=["newer-first", "two-offsets"])
def test_zero_slots_are_padding_when_no_entry_can_be_zero(tmp_path, first_ts, first_records):
    """A first batch at another time, or of two offsets (its entry would be at relative offset 1): an all-zero
    first slot cannot be an entry, so the zeros are padding."""
    index = _segment_at_time_zero(tmp_path / "t-0", first_ts, first_records)
    index.write_bytes(bytes(12 * 3))
    check = check_index_file(str(index), ".timeindex", 0)
    assert (check.status, check.entries, check.valid_bytes) == ("overlong", 0, 0)


def test_a_zero_first_entry_followed_by_entries_and_padding(tmp_path):
    """(0, 0), then (5, 3) as Kafka appends a newer timestamp later, then preallocated zeros: two entries."""
    index = _segment_at_time_zero(tmp_path / "t-0", 0)
    entries = bytes(12) + TIME_ENTRY.pack(5, 3)
    index.write_bytes(entries + bytes(12 * 10))
    check = check_index_file(str(index), ".timeindex", 0)
    assert (check.status, check.entries, check.valid_bytes) == ("overlong", 2, 24)


def test_an_empty_log_has_no_time_entry_to_keep(tmp_path):
    """An empty .log has no first batch: twelve zero bytes in its time index are padding."""
    index = _segment_at_time_zero(tmp_path / "t-0", 0)
    (tmp_path / "t-0" / "00000000000000000000.log").write_bytes(b"")
    index.write_bytes(bytes(12))
    check = check_index_file(str(index), ".timeindex", 0)
    assert (check.status, check.entries, check.valid_bytes) == ("overlong", 0, 0)


def test_without_a_readable_log_a_zero_first_slot_is_kept(tmp_path):
    """When the .log cannot be read, whether the zero slot is Kafka's entry (0, 0) cannot be told: it is kept."""
    index = _segment_at_time_zero(tmp_path / "t-0", 0)
    (tmp_path / "t-0" / "00000000000000000000.log").unlink()
    index.write_bytes(bytes(12 * 4))
    check = check_index_file(str(index), ".timeindex", 0)
    assert (check.status, check.entries, check.valid_bytes) == ("overlong", 1, 12)
