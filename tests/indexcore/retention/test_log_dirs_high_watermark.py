"""Retention where the checkpointed high watermark is below the log start, inside a segment, or past the log end
(issue 15, point 4), planned and applied.

Kafka keeps the high watermark within [log start offset, log end offset] (``Partition.createLog`` ->
``UnifiedLog.updateHighWatermark``), and a segment is deletable only when its upper bound offset (the next
segment's base offset, or the log end offset) is <= the high watermark. The partition: three segments of 20
one-record batches, [0, 20), [20, 40), [40, 60), every timestamp old.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.log.checkpoints import write_offset_checkpoint
from segdex.indexcore.retention.log_dirs import run_log_dir
from segdex.indexcore.tools.segment_writer import build_batch, write_partition
from tests.support.fixtures import log_start_offset

OLD = 1_600_000_000_000
NOW = 1_800_000_000_000


def stage(root: Path, log_start: int, high_watermark: int) -> Path:
    log_dir = root / "logs"
    batches = [build_batch(i, [(OLD + i, b"k", b"v" * 100)]) for i in range(60)]
    write_partition(log_dir, "t", 0, batches, segment_bytes=20 * len(batches[0]))
    for log in (log_dir / "t-0").glob("*.log"):
        os.utime(log, ns=(OLD * 1_000_000, OLD * 1_000_000))
    write_offset_checkpoint(log_dir / "log-start-offset-checkpoint", {("t", 0): log_start})
    write_offset_checkpoint(log_dir / "replication-offset-checkpoint", {("t", 0): high_watermark})
    return log_dir


@pytest.mark.parametrize("log_start, high_watermark, clamped, deleted, log_start_after, roll", [
    # below the log start: raised to it, so the segment wholly below the log start goes (log start pass)
    (20, 5, 20, [0], 20, None),
    # inside segment [20, 40): only [0, 20) has its upper bound at or below it
    (0, 30, 30, [0], 20, None),
    # exactly at a segment boundary: [0, 20) and [20, 40)
    (0, 40, 40, [0, 20], 40, None),
    # past the log end: lowered to it; every segment goes, after a roll at the log end
    (0, 100, 60, [0, 20, 40], 60, 60),
])
def test_high_watermark_clamped_planned_and_applied(tmp_path, log_start, high_watermark, clamped, deleted,
                                                    log_start_after, roll):
    log_dir = stage(tmp_path, log_start, high_watermark)
    planned = run_log_dir(str(log_dir), LogConfig(), NOW)
    [p] = planned.partitions
    assert p.plan.high_watermark == clamped
    assert [d.base_offset for d in p.plan.deletions] == deleted
    assert p.plan.log_start_offset_after == log_start_after and p.plan.roll_offset == roll
    assert not list((log_dir / "t-0").glob("*.deleted"))  # planning changes nothing

    applied = run_log_dir(str(log_dir), LogConfig(), NOW, apply=True)
    assert not applied.error and [q.error for q in applied.partitions] == [None]
    part = log_dir / "t-0"
    assert sorted(int(f.name[:20]) for f in part.glob("*.log.deleted")) == deleted
    live = sorted(int(f.name[:20]) for f in part.glob("*.log"))
    assert live == [b for b in (0, 20, 40) if b not in deleted] + ([roll] if roll is not None else [])
    assert log_start_offset(log_dir, "t") == log_start_after
