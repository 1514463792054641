"""``retention_policy`` at its edges, as pure functions (found by mutation testing): the size pass when the excess
is exactly a segment's size, retention.bytes=0, a log start offset past the log end, and the notes and blocked
reasons a plan carries. Expected values follow Kafka's rules (``deleteRetentionSizeBreachedSegments``:
``diff - segment.size >= 0``; ``retention.bytes >= 0`` turns the pass on)."""

from __future__ import annotations

from segdex.indexcore.log_config import LogConfig
from segdex.indexcore.retention_policy import PartitionFacts, SegmentFacts, plan_retention

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
