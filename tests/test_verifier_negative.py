"""The verifier must call wrong-but-plausible index files ``corrupt_index`` (issue 15, point 3).

Every index here is written by hand from the generator's own record of what it wrote (each batch's position is
the sum of the encoded lengths before it), not from segdex's recovery, so a verifier that stopped checking would
let these files pass as ``equivalent``.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from segdex.indexcore.index_verifier import verify_segment
from segdex.indexcore.log_config import LogConfig
from segdex.indexcore.log_segments import PartitionRecovery
from segdex.indexcore.segment_writer import build_batch, write_partition
from segdex.indexcore.status import SegmentStatus

START = 1_700_000_000_000
BATCHES = 20


@pytest.fixture
def segment(tmp_path) -> tuple[Path, list[int]]:
    """One segment of 20 one-record batches with rising timestamps; the batch start positions as written."""
    batches = [build_batch(i, [(START + 10 * i, b"k", b"v" * (50 + 7 * i))]) for i in range(BATCHES)]
    write_partition(tmp_path, "t", 0, batches)
    positions, at = [], 0
    for b in batches:
        positions.append(at)
        at += len(b)
    return tmp_path / "t-0" / "00000000000000000000.log", positions


def offset_index(entries: list[tuple[int, int]]) -> bytes:
    return b"".join(struct.pack(">ii", o, p) for o, p in entries)


def time_index(entries: list[tuple[int, int]]) -> bytes:
    return b"".join(struct.pack(">qi", t, o) for t, o in entries)


def verdict(log: Path, index: bytes, timeindex: bytes):
    log.with_suffix(".index").write_bytes(index)
    log.with_suffix(".timeindex").write_bytes(timeindex)
    seg = PartitionRecovery(LogConfig(index_interval_bytes=1)).recover_segment(str(log), 0)
    return verify_segment(seg)


def sound(positions: list[int]) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Valid sparse entries: every 5th batch, (offset, position) and (timestamp, offset)."""
    offsets = [(k, positions[k]) for k in range(5, BATCHES, 5)]
    times = [(START + 10 * k, k) for k in range(5, BATCHES, 5)] + [(START + 10 * (BATCHES - 1), BATCHES - 1)]
    return offsets, times


def test_sound_sparse_files_are_equivalent(segment):
    log, positions = segment
    offsets, times = sound(positions)
    v = verdict(log, offset_index(offsets), time_index(times))
    assert v.status == SegmentStatus.EQUIVALENT, v.reason


def test_offset_entry_pointing_inside_a_batch(segment):
    log, positions = segment
    offsets, times = sound(positions)
    offsets[1] = (offsets[1][0], offsets[1][1] + 10)  # still ordered, 10 bytes into batch 10
    v = verdict(log, offset_index(offsets), time_index(times))
    assert v.status == SegmentStatus.CORRUPT_INDEX
    assert v.reason.cause == f"offset index entry (10, {positions[10] + 10}) does not point at a batch start"
    assert v.reason.file == str(log.with_suffix(".index"))


def test_offset_entry_naming_an_offset_before_its_batch(segment):
    log, positions = segment
    offsets, times = sound(positions)
    offsets[1] = (8, positions[10])  # ordered after (5, ...), but a lookup of offset 8 would start past it
    v = verdict(log, offset_index(offsets), time_index(times))
    assert v.status == SegmentStatus.CORRUPT_INDEX
    assert v.reason.cause == (f"offset index entry (8, {positions[10]}): offset outside (9, 19] for the batch at "
                              f"that position")


def test_time_entry_with_a_wrong_but_ordered_offset(segment):
    log, positions = segment
    offsets, times = sound(positions)
    times[1] = (times[1][0], 9)  # (timestamp of batch 10, offset 9): ordered, but not that batch's last offset
    v = verdict(log, offset_index(offsets), time_index(times))
    assert v.status == SegmentStatus.CORRUPT_INDEX
    assert v.reason.cause == (f"time index entry ({START + 100}, 9) is not (max timestamp, last offset) of a batch "
                              f"that raised the segment's running max timestamp")
    assert v.reason.file == str(log.with_suffix(".timeindex"))


def test_final_time_entry_missing(segment):
    log, positions = segment
    offsets, times = sound(positions)
    v = verdict(log, offset_index(offsets), time_index(times[:-1]))
    assert v.status == SegmentStatus.CORRUPT_INDEX
    assert v.reason.cause == (f"time index does not end with the segment's largest timestamp "
                              f"{START + 10 * (BATCHES - 1)} (Kafka reads the last entry as the segment's max "
                              f"timestamp)")


def test_entries_past_the_valid_bytes(segment):
    log, positions = segment
    offsets, times = sound(positions)
    data = log.read_bytes()
    log.write_bytes(data[: positions[12]])  # the log now ends after batch 11: entry (15, ...) points past it
    v = verdict(log, offset_index(offsets), time_index(times))
    assert v.status == SegmentStatus.CORRUPT_INDEX
    assert v.reason.cause == f"offset index entry (15, {positions[15]}) lies beyond the valid bytes ({positions[12]})"
