"""``retention_policy`` at its edges, as pure functions (found by mutation testing): the size pass when the excess
is exactly a segment's size, retention.bytes=0, a log start offset past the log end, and the notes and blocked
reasons a plan carries. Expected values follow Kafka's rules (``deleteRetentionSizeBreachedSegments``:
``diff - segment.size >= 0``; ``retention.bytes >= 0`` turns the pass on)."""

from __future__ import annotations

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.retention.policy import PartitionFacts, SegmentFacts, plan_retention

NOW = 10_000_000


def facts(sizes: list[int], leo: int | None = None, lso: int = 0, hw: int | None = None,
          stamps: list[int] | None = None) -> PartitionFacts:
    segs = [SegmentFacts(i * 10, size, (stamps or [NOW - 1] * len(sizes))[i]) for i, size in enumerate(sizes)]
    leo = len(sizes) * 10 if leo is None else leo
    return PartitionFacts("t", 0, segs, leo, lso, leo if hw is None else hw)


def test_size_pass_deletes_a_segment_exactly_covered_by_the_excess():
    # log 300 bytes, retention.bytes 200: excess 100 == the first segment's size, so it goes (>= 0), and no more
    plan = plan_retention(facts([100, 100, 100]), LogConfig(retention_bytes=200, retention_ms=-1), NOW)
    assert [d.base_offset for d in plan.deletions] == [0]
    assert plan.deletions[0].reason == "log size exceeds retention.bytes=200 by 100 bytes >= segment size 100"
    assert "retention.bytes: kept segment 10: remaining excess 0 bytes < its size 100" in plan.notes


def test_retention_bytes_zero_deletes_every_eligible_segment():
    plan = plan_retention(facts([100, 100, 100]), LogConfig(retention_bytes=0, retention_ms=-1), NOW)
    assert [d.base_offset for d in plan.deletions] == [0, 10, 20] and plan.roll_offset == 30
    assert plan.log_start_offset_after == 30


def test_retention_bytes_equal_to_the_log_size_deletes_nothing():
    plan = plan_retention(facts([100, 100]), LogConfig(retention_bytes=200, retention_ms=-1), NOW)
    assert plan.deletions == []


def test_log_start_offset_past_the_log_end_is_not_touched():
    plan = plan_retention(facts([100, 100], lso=25, leo=20), LogConfig(), NOW)
    assert plan.skipped == ("log start offset 25 is beyond the log end offset 20: a broker would delete every "
                            "segment when loading this partition; not touching it")
    assert plan.deletions == [] and plan.blocked == []


def test_notes_and_blocked_reasons():
    plan = plan_retention(facts([100, 100], stamps=[NOW + 5, NOW - 1]), LogConfig(retention_ms=1000), NOW)
    [(seg, why)] = plan.blocked
    assert seg.base_offset == 0
    assert why.startswith(f"largest timestamp {NOW + 5} (time_index) is 5 ms after now ({NOW})")
    assert (f"retention.ms: kept segment 0: largest timestamp {NOW + 5} (a future timestamp) is -5 ms old <= "
            f"retention.ms=1000") in plan.notes
    assert "log_start_offset: kept segment 0: it holds the log start offset 0" in plan.notes
    # the last segment holds the log end, not a log start offset worth a note
    last = plan_retention(facts([100]), LogConfig(retention_ms=-1), NOW)
    assert not any(n.startswith("log_start_offset") for n in last.notes)
    old = plan_retention(facts([100, 100], stamps=[NOW - 5000, NOW - 1]), LogConfig(retention_ms=1000), NOW)
    assert "retention.ms: kept segment 10: largest timestamp 9999999 is 1 ms old <= retention.ms=1000" in old.notes


def test_log_start_offset_at_the_log_end_is_planned():
    """After deleteRecords up to the log end, every segment but the last lies below the log start: the log
    start offset pass deletes them (the last one holds the log end), and future timestamps are still reported."""
    plan = plan_retention(facts([100, 100], lso=20, leo=20, stamps=[NOW - 1, NOW + 7]), LogConfig(retention_ms=-1),
                          NOW)
    assert plan.skipped is None
    assert [(d.base_offset, d.rule) for d in plan.deletions] == [(0, "log_start_offset")]
    assert [s.base_offset for s, _ in plan.blocked] == [10]


def test_no_log_start_offset_entry_reads_as_zero():
    f = facts([100, 100])
    f.log_start_offset = None
    plan = plan_retention(f, LogConfig(retention_ms=-1), NOW)
    assert plan.log_start_offset_before == 0 and plan.deletions == []


def test_a_plan_in_full():
    """Every field of a plan that deletes, with the rule and reason of each deletion, the epochs cut at the new
    log start offset, and a timestamp exactly now (not blocked)."""
    from segdex.indexcore.retention.policy import Deletion, RetentionPlan

    f = facts([100, 100, 100], stamps=[NOW - 5000, NOW, NOW])
    f.leader_epochs = [(0, 0), (1, 15), (2, 25)]
    plan = plan_retention(f, LogConfig(retention_ms=1000), NOW)
    assert plan == RetentionPlan(
        "t", 0, deletions=[Deletion(0, 10, 100, NOW - 5000, "retention.ms",
                                    f"largest timestamp {NOW - 5000} (time_index) is 5000 ms old > retention.ms=1000")],
        blocked=[], notes=plan.notes, log_start_offset_before=0, log_start_offset_after=10, log_end_offset=30,
        high_watermark=30, roll_offset=None, leader_epochs_before=[(0, 0), (1, 15), (2, 25)],
        leader_epochs_after=[(0, 10), (1, 15), (2, 25)], skipped=None, base_offsets_before=[0, 10, 20])
    assert plan.bytes_freed == 100 and plan.deleted_count == 1 and plan.remaining_base_offsets == [10, 20]
    # nothing deleted: the epochs stay as they were, and an unknown high watermark plans nothing
    kept = plan_retention(f, LogConfig(retention_ms=-1), NOW)
    assert kept.leader_epochs_after == f.leader_epochs and kept.high_watermark == 30
    f.high_watermark = None
    assert plan_retention(f, LogConfig(), NOW).skipped == (
        "no high watermark known (no entry in replication-offset-checkpoint): Kafka deletes no segment until the "
        "high watermark is initialized")
    assert plan_retention(PartitionFacts("t", 0, [], 7, None, 7), LogConfig(), NOW).skipped == "no segments"


def test_rolling_when_every_segment_goes_and_compacted_topics():
    plan = plan_retention(facts([100, 100], stamps=[1, 2]), LogConfig(retention_ms=1000), NOW)
    assert plan.roll_offset == 20 and plan.remaining_base_offsets == [20] and plan.log_start_offset_after == 20
    compacted = plan_retention(facts([100, 100], stamps=[1, 2], lso=12), LogConfig(cleanup_policy="compact"), NOW)
    assert [d.base_offset for d in compacted.deletions] == [0]  # only the log start offset pass
    assert "cleanup.policy=compact: only the log start offset pass runs" in compacted.notes
    assert compacted.deletions[0].rule == "log_start_offset"
