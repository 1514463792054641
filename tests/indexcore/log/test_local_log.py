"""``local_log``: what an interrupted cleaning leaves, finished as Kafka's ``LogLoader`` finishes it, and the
replacement's files (the crash points of the whole swap: tests/jobs/test_crash_points.py)."""

from __future__ import annotations

from pathlib import Path

from segdex.indexcore.log.local_log import complete_swaps
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
