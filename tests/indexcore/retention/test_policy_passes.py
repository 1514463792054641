"""``retention_policy.plan_retention`` at edges the other retention tests leave open: the log start offsets a plan
reports when it cannot plan, future timestamps of a partition it does not touch, the size pass when the log size
equals retention.bytes, and the time pass over the empty segment rolled when every segment went.

Expected values follow Kafka's ``UnifiedLog`` (``deleteOldSegments`` and its passes): the log start offset is the
larger of the checkpoint entry and the first segment's base offset (``LogLoader``);
``deleteRetentionSizeBreachedSegments`` returns early only when ``retentionSize < 0 || size < retentionSize``
and deletes a segment while ``diff - segment.size >= 0``; ``deleteRetentionMsBreachedSegments`` deletes when
``now - largestTimestamp > retentionMs``; ``deletableSegments`` rolls an empty segment at the log end offset
(largest timestamp: its creation time, now) before deleting every segment.
"""

from __future__ import annotations

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.retention.policy import (
    Deletion,
    LogStartOffsetBreached,
    PartitionFacts,
    SegmentFacts,
    deletable_segments,
    plan_retention,
)

NOW = 10_000_000


def _facts(sizes: list[int], stamps: list[int], leo: int | None = None, lso: int | None = 0,
           hw: int | None = -1) -> PartitionFacts:
    """Segments at base offsets 0, 10, 20, ...; the high watermark at the log end unless given (None: unknown)."""
    segs = [SegmentFacts(i * 10, size, stamps[i]) for i, size in enumerate(sizes)]
    leo = len(sizes) * 10 if leo is None else leo
    return PartitionFacts("t", 0, segs, leo, lso, leo if hw == -1 else hw)


def test_an_unplannable_partition_reports_its_log_start_offset():
    """No high watermark: nothing is planned, and the plan reports the log start offset Kafka loads, the
    checkpoint entry 15 above the first segment's base 0, both before and after."""
    plan = plan_retention(_facts([100, 100, 100], [NOW - 1] * 3, lso=15, hw=None), LogConfig(), NOW)
    assert plan.skipped == ("no high watermark known (no entry in replication-offset-checkpoint): Kafka deletes no "
                            "segment until the high watermark is initialized")
    assert (plan.log_start_offset_before, plan.log_start_offset_after) == (15, 15)
    assert plan.deletions == [] and plan.high_watermark is None


def test_a_planned_partition_reports_a_log_start_offset_above_the_first_segment():
    """The log start offset pass deletes segment 0 (next base 10 <= 15); the log start offset stays 15."""
    plan = plan_retention(_facts([100, 100, 100], [NOW - 1] * 3, lso=15), LogConfig(retention_ms=-1), NOW)
    assert (plan.log_start_offset_before, plan.log_start_offset_after) == (15, 15)
    assert [(d.base_offset, d.rule) for d in plan.deletions] == [(0, "log_start_offset")]


def test_a_partition_beyond_its_log_end_reports_no_blocked_segments():
    """A log start offset past the log end offset leaves the partition untouched, so its future timestamps are
    not reported as blocking retention either."""
    plan = plan_retention(_facts([100, 100], [NOW + 50, NOW + 60], leo=20, lso=25), LogConfig(), NOW)
    assert plan.skipped == ("log start offset 25 is beyond the log end offset 20: a broker would delete every "
                            "segment when loading this partition; not touching it")
    assert plan.blocked == [] and plan.deletions == []
    assert (plan.log_start_offset_before, plan.log_start_offset_after) == (25, 25)


def test_size_pass_runs_when_the_log_size_equals_retention_bytes():
    """size == retention.bytes: Kafka's size pass runs (it returns early only when size < retentionSize) with
    diff 0, so it keeps the first segment and says why."""
    plan = plan_retention(_facts([100, 100], [NOW - 1] * 2), LogConfig(retention_bytes=200, retention_ms=-1), NOW)
    assert plan.deletions == []
    assert plan.notes == ["log_start_offset: kept segment 0: it holds the log start offset 0",
                          "retention.bytes: kept segment 0: remaining excess 0 bytes < its size 100"]


def test_size_pass_at_equal_size_deletes_a_leading_empty_segment():
    """diff 0 and a first segment of 0 bytes: ``diff - segment.size >= 0`` holds, so Kafka deletes it."""
    plan = plan_retention(_facts([0, 100, 100], [NOW - 1] * 3), LogConfig(retention_bytes=200, retention_ms=-1), NOW)
    assert plan.deletions == [Deletion(0, 10, 0, NOW - 1, "retention.bytes",
                                       "log size exceeds retention.bytes=200 by 0 bytes >= segment size 0")]
    assert plan.log_start_offset_after == 10 and plan.roll_offset is None
    assert plan.notes == ["log_start_offset: kept segment 0: it holds the log start offset 0",
                          "retention.bytes: kept segment 10: remaining excess 0 bytes < its size 100"]


def test_the_segment_rolled_by_the_size_pass_is_kept_by_the_time_pass():
    """retention.bytes=0 deletes every segment, so an empty segment is rolled at the log end offset 30 first; its
    largest timestamp is its creation time (now), so the time pass that follows keeps it (age 0 ms)."""
    plan = plan_retention(_facts([100, 100, 100], [NOW - 5000] * 3),
                          LogConfig(retention_bytes=0, retention_ms=1000), NOW)
    assert [(d.base_offset, d.rule) for d in plan.deletions] == [
        (0, "retention.bytes"), (10, "retention.bytes"), (20, "retention.bytes")]
    assert plan.roll_offset == 30 and plan.remaining_base_offsets == [30] and plan.log_start_offset_after == 30
    assert plan.notes == ["log_start_offset: kept segment 0: it holds the log start offset 0",
                          f"retention.ms: kept segment 30: largest timestamp {NOW} is 0 ms old <= retention.ms=1000"]


def test_the_last_segment_kept_by_the_log_start_offset_pass_gives_no_reason():
    """The log start offset pass never deletes the last segment (it has no next segment) and has no note for it:
    ``deletable_segments`` reports no reason."""
    only = [SegmentFacts(0, 100, NOW - 1)]
    assert deletable_segments(only, 10, 10, LogStartOffsetBreached(10)) == ([], None)
