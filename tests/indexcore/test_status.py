"""Segment statuses and reasons."""

from __future__ import annotations

from pathlib import Path

from segdex.indexcore.status import Reason, SegmentStatus


def test_reasons_relative_to_the_partition_directory(tmp_path: Path):
    part = tmp_path / "logs" / "t-0"
    own = str(part / "00000000000000000000.log")
    index = str(part / "00000000000000000000.index")
    assert Reason("torn").relative_to(str(part), own) == "torn"
    assert Reason("torn", own, 5).relative_to(str(part), own) == "torn"
    assert Reason("torn", index, 5).relative_to(str(part), own) == "00000000000000000000.index: torn"
    assert Reason("torn", index).relative_to(str(part)) == "00000000000000000000.index: torn"
    assert Reason("torn", str(tmp_path / "logs" / "leader-epoch-checkpoint")).relative_to(str(part), own) == (
        "../leader-epoch-checkpoint: torn")
    assert Reason("torn", "leader-epoch-checkpoint").relative_to(str(part), own) == "leader-epoch-checkpoint: torn"


def test_the_worst_of_no_status_is_the_default():
    assert SegmentStatus.worst([]) is SegmentStatus.OK
    assert SegmentStatus.worst([], SegmentStatus.MISSING) is SegmentStatus.MISSING
    assert SegmentStatus.worst(["ok", "missing", "equivalent"], SegmentStatus.ERROR) is SegmentStatus.MISSING
