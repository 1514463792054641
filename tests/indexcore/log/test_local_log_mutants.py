"""Tests written for the mutation run's survivors in ``log/local_log.py`` (issue 42): ``complete_swaps`` on a
swapped segment with a corrupt tail, an empty one, and a live file at the swap's lowest base without a swap of its
own. A file of its own, so that work on local_log.py merges without conflicts."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from segdex.indexcore.errors import CorruptRecordException
from segdex.indexcore.log.local_log import complete_swaps
from segdex.indexcore.tools.segment_writer import build_batch, segment_name

T = 1_700_000_000_000


def _segment(part: Path, base: int, n: int, suffix: str = "") -> bytes:
    data = b"".join(build_batch(base + i, [(T + i, b"k", b"v")]) for i in range(n))
    (part / (segment_name(base) + suffix)).write_bytes(data)
    return data


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
