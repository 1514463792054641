"""Tests written for the mutation run's survivors in ``log/log_cleaner_manager.py`` (issue 42): Kafka's
``LogCleanerManager`` arithmetic at each of its edges, on segment facts written here."""

from __future__ import annotations

import pytest

from segdex.indexcore.config.log_config import LONG_MAX
from segdex.indexcore.log import log_cleaner_manager as m
from segdex.indexcore.log.log_cleaner_manager import LogToClean, SegmentFacts

NOW = 1_800_000_000_000


def _segs(*facts: tuple[int, int, int, int]) -> list[SegmentFacts]:
    return [SegmentFacts(*f) for f in facts]


# base, size, largest timestamp, first batch timestamp
SEGS = _segs((0, 100, NOW - 50, NOW - 90), (10, 200, NOW - 5, NOW - 40), (20, 300, NOW, NOW - 1))


def test_a_segment_range_backwards_is_refused_by_its_bounds():
    assert m.segments(SEGS, 5, 5) == []
    with pytest.raises(ValueError, match="^from offset 20 which is greater than limit offset 10$"):
        m.segments(SEGS, 20, 10)


def test_no_non_active_segment_lies_past_the_active_ones_base():
    assert m.non_active_segments_from(SEGS, 25) == []
    assert [s.base_offset for s in m.non_active_segments_from(SEGS, 10)] == [10]


def test_a_checkpoint_at_the_log_start_or_end_is_kept():
    for checkpoint in (0, 30):
        offsets = m.cleanable_offsets(SEGS, 0, 30, 30, checkpoint, NOW, 0)
        assert (offsets.first_dirty_offset, offsets.force_update_checkpoint) == (checkpoint, False)
    offsets = m.cleanable_offsets(SEGS, 5, 30, 30, 4, NOW, 0)
    assert (offsets.first_dirty_offset, offsets.force_update_checkpoint) == (5, True)


def test_a_compaction_lag_of_one_ms_holds_back_a_segment_written_within_it():
    offsets = m.cleanable_offsets(SEGS, 0, 30, 30, None, NOW, 1)
    assert offsets.first_uncleanable_dirty_offset == 20  # the active segment: none within 1 ms
    offsets = m.cleanable_offsets(SEGS, 0, 30, 30, None, NOW, 6)
    assert offsets.first_uncleanable_dirty_offset == 10  # segment 10's largest timestamp is 5 ms old
    fresh = _segs((0, 100, NOW - 50, NOW - 90), (10, 200, NOW, NOW - 40), (20, 300, NOW, NOW - 1))
    assert m.cleanable_offsets(fresh, 0, 30, 30, None, NOW, 1).first_uncleanable_dirty_offset == 10  # written now


def test_the_high_watermark_is_clamped_to_the_log_and_defaults_to_its_end():
    assert m.clamped_high_watermark(None, 3, 30) == 30
    assert m.clamped_high_watermark(12, 3, 30) == 12
    assert (m.clamped_high_watermark(1, 3, 30), m.clamped_high_watermark(99, 3, 30)) == (3, 30)


def test_the_last_stable_offset_is_the_first_unstable_one_only_below_the_high_watermark():
    assert m.last_stable_offset(None, 30) == 30
    assert m.last_stable_offset(12, 30) == 12
    assert m.last_stable_offset(30, 30) == 30 and m.last_stable_offset(31, 30) == 30


def test_the_clean_bytes_are_those_below_the_first_dirty_offset():
    log = LogToClean.of(SEGS, 10, 20, False)
    assert (log.first_uncleanable_offset, log.clean_bytes, log.cleanable_bytes) == (20, 100, 200)


def test_would_clean_needs_bytes_and_the_lag_or_the_ratio():
    assert not LogToClean(0, 0, 0, 0, True).would_clean(0.5)  # nothing at all
    assert not LogToClean(0, 0, 1, 0, True).would_clean(0.5)  # one clean byte, nothing dirty: ratio 0
    assert LogToClean(0, 10, 0, 1, True).would_clean(0.99)  # one dirty byte past the lag
    assert not LogToClean(0, 10, 9, 1, False).would_clean(0.5)  # ratio 0.1
    assert LogToClean(0, 10, 1, 9, False).would_clean(0.5)


def test_the_oldest_dirty_age_counts_first_batch_timestamps_of_non_active_segments():
    assert m.oldest_dirty_age_ms(SEGS, 0, NOW) == 90
    assert m.oldest_dirty_age_ms(SEGS, 10, NOW) == 40
    assert m.oldest_dirty_age_ms(SEGS, 20, NOW) is None  # only the active segment
    unknown = _segs((0, 1, NOW, LONG_MAX), (10, 1, NOW, 0), (20, 1, NOW, NOW))
    assert m.oldest_dirty_age_ms(unknown, 0, NOW) is None  # no first batch timestamp known
    assert m.oldest_dirty_age_ms(_segs((0, 1, NOW, 1), (20, 1, NOW, NOW)), 0, NOW) == NOW - 1  # 1 is a timestamp


def test_the_compaction_delay_is_past_the_lag_from_the_oldest_first_batch():
    assert m.max_compaction_delay(SEGS, 0, NOW, 50) == 40  # NOW - 90 is 40 ms before NOW - 50
    assert m.max_compaction_delay(SEGS, 0, NOW, 90) == 0 and m.max_compaction_delay(SEGS, 0, NOW, 89) == 1
    assert m.max_compaction_delay(SEGS, 0, NOW, -5) == 90  # a negative lag counts as 0
    zero = _segs((0, 1, NOW, 0), (10, 1, NOW, 1), (20, 1, NOW, NOW))
    assert m.max_compaction_delay(zero, 0, NOW, 0) == NOW - 1  # a timestamp of 0 is no timestamp; 1 is one
    assert m.max_compaction_delay(_segs((0, 1, NOW, LONG_MAX), (20, 1, NOW, NOW)), 0, NOW, 0) == 0


def test_the_cleaning_view_carries_the_oldest_dirty_age_from_its_first_dirty_offset():
    from segdex.indexcore.config.log_config import LogConfig

    config = LogConfig(cleanup_policy="compact")
    assert m.cleaning_view(SEGS, 0, 25, 25, None, NOW, config).oldest_dirty_age_ms == 90
    assert m.cleaning_view(SEGS, 0, 25, 25, 10, NOW, config).oldest_dirty_age_ms == 40  # the checkpoint's segment on
