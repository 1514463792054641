"""``LogCleanerManager``'s choice for a compacted partition against Kafka 4.4's own (``KafkaOracle cleanable``:
``cleanableOffsets``, ``maxCompactionDelay`` and ``LogToClean`` on the same files at the same clock), over
generated partitions with every kind of checkpoint (none, inside the log, below its start, past its end),
``min.compaction.lag.ms``, ``max.compaction.lag.ms`` and open transactions; plus the rules one by one."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.log.log_cleaner_manager import (
    LONG_MAX,
    LogToClean,
    SegmentFacts,
    cleanable_offsets,
    cleaning_view,
    last_stable_offset,
    segments,
)
from segdex.indexcore.log.log_segments import PartitionRecovery, segment_logs
from segdex.indexcore.tools.segment_writer import segment_name
from tests.support.compacted_partitions import HOUR_MS, compacted_partition

T0 = 1_700_000_000_000
DAY_MS = 24 * HOUR_MS


def _facts(part: Path) -> tuple[list[SegmentFacts], int, int | None]:
    """segdex's side: the partition recovered in order, its segments as the cleaner reads them, the log end
    offset and the first unstable offset."""
    logs, _ = segment_logs(part)
    recovery = PartitionRecovery()
    facts = []
    for base, path in logs:
        seg = recovery.recover_segment(path, base)
        facts.append(SegmentFacts(base, Path(path).stat().st_size,
                                  seg.segment.largest_timestamp(seg.result.time_index)[0],
                                  seg.segment.first_batch_timestamp()))
        leo = seg.result.next_offset
    return facts, leo, recovery.producer_state.first_unstable_offset(logs[0][0])


def test_the_choice_equals_kafkas_for_generated_partitions(kafka44, tmp_path: Path):
    rng = random.Random(2026_11_26)
    would = forced = lagged = 0
    for i in range(60):
        segs, last_ts = compacted_partition(rng, T0)
        ours, theirs = tmp_path / f"ours{i}" / "c-0", tmp_path / f"theirs{i}" / "c-0"
        ours.mkdir(parents=True)
        for base, data in segs.items():
            (ours / segment_name(base)).write_bytes(data)
        shutil.copytree(ours, theirs)
        facts, leo, unstable = _facts(ours)
        start = facts[0].base_offset
        checkpoint = rng.choice([None, rng.randint(start, leo), max(0, start - 1), leo + 5])
        config = LogConfig(cleanup_policy="compact",
                           min_compaction_lag_ms=rng.choice([0, HOUR_MS, 2 * DAY_MS]),
                           max_compaction_lag_ms=rng.choice([LONG_MAX, HOUR_MS, 3 * DAY_MS]),
                           min_cleanable_dirty_ratio=rng.choice([0.1, 0.5, 0.9]))
        now = last_ts + rng.choice([0, HOUR_MS, 5 * DAY_MS])
        hw = leo if unstable is not None or rng.random() < 0.7 else rng.randint(start, leo)
        answer = kafka44.cleanable(theirs, now, start, hw, checkpoint, config={
            "cleanup.policy": "compact", "min.compaction.lag.ms": config.min_compaction_lag_ms,
            "max.compaction.lag.ms": config.max_compaction_lag_ms,
            "min.cleanable.dirty.ratio": config.min_cleanable_dirty_ratio})
        assert "exception" not in answer, answer
        lso = last_stable_offset(unstable, hw)
        assert (lso, leo) == (answer["lastStableOffset"], answer["logEndOffset"]), i
        view = cleaning_view(facts, start, leo, lso, checkpoint, now, config)
        mine = {"firstDirtyOffset": view.offsets.first_dirty_offset,
                "firstUncleanableDirtyOffset": view.offsets.first_uncleanable_dirty_offset,
                "forceUpdateCheckpoint": view.offsets.force_update_checkpoint,
                "maxCompactionDelay": view.max_compaction_delay,
                "firstUncleanableOffset": view.log.first_uncleanable_offset, "cleanBytes": view.log.clean_bytes,
                "cleanableBytes": view.log.cleanable_bytes, "totalBytes": view.log.total_bytes,
                "cleanableRatio": view.log.cleanable_ratio}
        nan = "NaN (no bytes at all)"  # Java's 0.0 / 0, and NaN equals nothing
        theirs = {k: nan if answer[k] != answer[k] else answer[k] for k in mine}
        assert {k: nan if v != v else v for k, v in mine.items()} == theirs, i
        would += view.would_clean
        forced += view.offsets.force_update_checkpoint
        lagged += view.max_compaction_delay > 0
    assert would > 10 and forced > 5 and lagged > 5  # the cases covered each rule


def _segs(*spec: tuple[int, int, int]) -> list[SegmentFacts]:
    return [SegmentFacts(base, size, ts, ts) for base, size, ts in spec]


def test_segments_is_log_segments_values():
    segs = _segs((0, 10, 1), (10, 10, 2), (20, 10, 3), (30, 5, 4))
    assert [s.base_offset for s in segments(segs, 15, 30)] == [10, 20]  # from the segment holding 15
    assert [s.base_offset for s in segments(segs, -1, 20)] == [0, 10]
    assert segments(segs, 20, 20) == []
    with pytest.raises(ValueError):
        segments(segs, 20, 10)


def test_a_checkpoint_outside_the_log_restarts_from_its_start_and_is_rewritten():
    segs = _segs((100, 10, 1), (110, 10, 2), (120, 10, 3))
    assert cleanable_offsets(segs, 100, 125, 125, None, 0, 0).first_dirty_offset == 100
    inside = cleanable_offsets(segs, 100, 125, 125, 115, 0, 0)
    assert (inside.first_dirty_offset, inside.force_update_checkpoint) == (115, False)
    for outside in (99, 126):
        o = cleanable_offsets(segs, 100, 125, 125, outside, 0, 0)
        assert (o.first_dirty_offset, o.force_update_checkpoint) == (100, True)
    # never past the active segment or the last stable offset; a young segment holds the rest back
    assert cleanable_offsets(segs, 100, 125, 112, None, 0, 0).first_uncleanable_dirty_offset == 112
    assert cleanable_offsets(segs, 100, 125, 125, None, 0, 0).first_uncleanable_dirty_offset == 120
    assert cleanable_offsets(segs, 100, 125, 125, None, now_ms=3, min_compaction_lag_ms=2) \
        .first_uncleanable_dirty_offset == 110  # segment 110's largest timestamp 2 > 3 - 2


def test_log_to_clean_counts_a_half_cleaned_segment_twice_and_rounds_to_a_segment():
    segs = _segs((0, 10, 1), (10, 20, 2), (20, 40, 3), (30, 5, 4))
    ltc = LogToClean.of(segs, first_dirty=15, uncleanable=25, need_compaction_now=False)
    assert (ltc.clean_bytes, ltc.cleanable_bytes, ltc.first_uncleanable_offset) == (30, 20, 20)
    assert ltc.cleanable_ratio == 20 / 50
    assert not ltc.would_clean(0.4) and ltc.would_clean(0.39)  # strictly above the ratio
    assert LogToClean(0, 0, 0, 0, True).would_clean(0.0) is False  # nothing at all to clean
