"""``log_loader.complete_swaps``: what an interrupted cleaning leaves, finished as Kafka's ``LogLoader`` finishes
it before a partition loads (the crash points of the whole swap: tests/jobs/test_crash_points.py)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from segdex.indexcore.errors import CorruptRecordException
from segdex.indexcore.log.log_loader import complete_swaps
from segdex.indexcore.tools.segment_writer import build_batch, segment_name

T = 1_700_000_000_000


def _segment(part: Path, base: int, n: int, suffix: str = "") -> bytes:
    data = b"".join(build_batch(base + i, [(T + i, b"k", b"v")]) for i in range(n))
    (part / (segment_name(base) + suffix)).write_bytes(data)
    return data


def test_a_swap_is_completed_and_an_unfinished_cleaning_rolled_back(tmp_path: Path):
    part = tmp_path / "t-0"
    part.mkdir()
    _segment(part, 0, 5)
    _segment(part, 5, 5)
    (part / (segment_name(5)[:-4] + ".index")).write_bytes(b"")
    _segment(part, 10, 5)  # the active segment: beyond the swap's offsets
    swapped = _segment(part, 0, 10, ".swap")  # a cleaned 0..9 renamed .swap, the old ones still live
    (part / (segment_name(0)[:-4] + ".index.swap")).write_bytes(b"\0" * 8)
    (part / (segment_name(10)[:-4] + ".timeindex.cleaned")).write_bytes(b"")  # an unfinished later cleaning
    _segment(part, 12, 1, ".swap")  # its swap, above the lowest .cleaned base: never finished
    (part / (segment_name(5) + ".deleted")).write_bytes(b"x")
    done = complete_swaps(str(part))
    assert sorted(p.name for p in part.iterdir()) == [segment_name(0)[:-4] + ".index", segment_name(0),
                                                      segment_name(10)]
    assert (part / segment_name(0)).read_bytes() == swapped
    assert any("replaced by" in d for d in done) and any("never finished" in d for d in done)
    assert complete_swaps(str(part)) == []  # nothing left over


def test_nothing_left_over_is_nothing_done(tmp_path: Path):
    part = tmp_path / "t-0"
    part.mkdir()
    _segment(part, 0, 3)
    assert complete_swaps(str(part)) == []
    assert [p.name for p in part.iterdir()] == [segment_name(0)]


def test_index_swaps_left_after_the_log_was_swapped_in_are_renamed_in(tmp_path: Path):
    """Killed between the ``.log.swap`` rename and its indexes' (the crash-point walk found a ``.txnindex.swap``
    left behind): Kafka's load renames every ``.swap`` in, indexes too, and deletes nothing live."""
    part = tmp_path / "t-0"
    part.mkdir()
    cleaned = _segment(part, 0, 10)  # already swapped in
    for suffix in (".index", ".timeindex", ".txnindex"):
        (part / (segment_name(0)[:-4] + suffix + ".swap")).write_bytes(suffix.encode())
    _segment(part, 10, 2)
    (part / (segment_name(10)[:-4] + ".snapshot")).write_bytes(b"s")
    (part / "00000000000000000005.checkpoint.deleted").write_bytes(b"k")  # a KRaft snapshot's: LogLoader leaves it
    done = complete_swaps(str(part))
    indexes = [segment_name(0)[:-4] + s for s in (".index", ".timeindex", ".txnindex")]
    assert sorted(p.name for p in part.iterdir()) == sorted([
        "00000000000000000005.checkpoint.deleted", segment_name(0), segment_name(10),
        segment_name(10)[:-4] + ".snapshot", *indexes])
    assert (part / segment_name(0)).read_bytes() == cleaned
    assert (part / (segment_name(0)[:-4] + ".txnindex")).read_bytes() == b".txnindex"
    assert sum("renamed" in d for d in done) == 3


def test_a_swap_at_the_lowest_cleaned_offset_goes_and_the_covered_range_with_its_snapshots(tmp_path: Path):
    """``offsetFromFile(swap) >= minCleanedFileOffset`` removes the swap (not only above it); a ``.log.swap``
    covering offsets 0..7 removes every live file numbered in that range, producer snapshots included."""
    part = tmp_path / "t-0"
    part.mkdir()
    _segment(part, 0, 4)
    _segment(part, 4, 4)
    (part / (segment_name(4)[:-4] + ".snapshot")).write_bytes(b"s")
    _segment(part, 8, 4)
    (part / (segment_name(8)[:-4] + ".snapshot")).write_bytes(b"s")
    swapped = _segment(part, 0, 8, ".swap")
    _segment(part, 8, 2, ".swap")  # at the lowest .cleaned base: its operation never finished
    (part / (segment_name(8) + ".cleaned")).write_bytes(b"")
    complete_swaps(str(part))
    assert sorted(p.name for p in part.iterdir()) == [segment_name(0), segment_name(8),
                                                      segment_name(8)[:-4] + ".snapshot"]
    assert (part / segment_name(0)).read_bytes() == swapped


def test_a_swapped_segment_with_a_corrupt_tail_fails_as_kafkas_read_next_offset_does(tmp_path: Path):
    part = tmp_path / "t-0"
    part.mkdir()
    _segment(part, 0, 3)
    data = _segment(part, 0, 3, ".swap") + struct.pack(">qi", 3, 3) + b"\0" * 20  # a size below any batch's
    (part / (segment_name(0) + ".swap")).write_bytes(data)
    with pytest.raises(CorruptRecordException):
        complete_swaps(str(part))


def test_an_empty_swapped_segment_covers_no_offsets(tmp_path: Path):
    part = tmp_path / "t-0"
    part.mkdir()
    live = _segment(part, 5, 3)
    (part / (segment_name(0) + ".swap")).write_bytes(b"")
    assert complete_swaps(str(part)) == [f"renamed {segment_name(0)}.swap in"]
    assert (part / segment_name(5)).read_bytes() == live and (part / segment_name(0)).read_bytes() == b""


def test_every_live_file_from_the_swaps_lowest_base_goes(tmp_path: Path):
    part = tmp_path / "t-0"
    part.mkdir()
    _segment(part, 0, 3)
    timeindex = segment_name(0)[:-4] + ".timeindex"
    (part / timeindex).write_bytes(b"\0" * 12)  # live, with no .timeindex.swap to replace it
    swapped = _segment(part, 0, 3, ".swap")
    done = complete_swaps(str(part))
    assert f"removed {timeindex} (replaced by the swap)" in done
    assert sorted(p.name for p in part.iterdir()) == [segment_name(0)]
    assert (part / segment_name(0)).read_bytes() == swapped
