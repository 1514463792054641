"""Kafka's ``LogCleanerManager`` for one partition: where the next cleaning starts and stops, and whether Kafka's
cleaner would pick the partition now.

- First dirty offset (``cleanableOffsets``): the partition's entry in the log dir's ``cleaner-offset-checkpoint``;
  none, one below the log start offset or one past the log end offset gives the log start offset (and Kafka
  rewrites the checkpoint at once: ``force_update_checkpoint``).
- First uncleanable offset (same method): the smallest of the last stable offset, the active segment's base
  offset and, with ``min.compaction.lag.ms``, the base offset of the first non-active segment from the dirty one
  whose largest timestamp is younger than ``now - lag``; never below the first dirty offset.
- ``LogToClean`` cuts that offset back to a segment boundary and counts bytes; ``max_compaction_delay``
  (``maxCompactionDelay``) says whether ``max.compaction.lag.ms`` forces a cleaning now.

Segments are ``SegmentFacts`` in offset order, the last one active; ``segments(from, to)`` is
``LogSegments.values``: those with a base offset in ``[floor(from), to)``.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

from segdex.indexcore.log.log_segment import LogSegment, RecoveryResult

LONG_MAX = 2**63 - 1


@dataclass(frozen=True)
class SegmentFacts:
    """What the cleaner's choice reads of a segment."""

    base_offset: int
    size: int  # the .log's bytes (FileRecords.sizeInBytes)
    largest_timestamp: int  # LogSegment.largestTimestamp: the .timeindex's last entry, else the .log's mtime
    first_batch_timestamp: int = LONG_MAX  # LogSegment.getFirstBatchTimestamp: the first batch's max timestamp


@dataclass(frozen=True)
class OffsetsToClean:
    """``LogCleanerManager.OffsetsToClean``."""

    first_dirty_offset: int
    first_uncleanable_dirty_offset: int
    force_update_checkpoint: bool = False


def segments(segs: list, start: int, end: int) -> list:
    """``LogSegments.values(from, to)``: the segments (anything with a ``base_offset``, in offset order) with a
    base offset in ``[floorKey(from), to)`` (from the first segment when none lies at or below ``from``)."""
    if start == end:
        return []
    if end < start:
        raise ValueError(f"from offset {start} which is greater than limit offset {end}")  # Kafka's words
    lo = max(bisect.bisect_right(segs, start, key=_base) - 1, 0)
    return segs[lo:bisect.bisect_left(segs, end, key=_base)]


def _base(segment) -> int:
    return segment.base_offset


def non_active_segments_from(segs: list[SegmentFacts], start: int) -> list[SegmentFacts]:
    """``UnifiedLog.nonActiveLogSegmentsFrom``: none when ``start`` is past the active segment's base."""
    active = segs[-1].base_offset
    return [] if start > active else segments(segs, start, active)


def cleanable_offsets(segs: list[SegmentFacts], log_start_offset: int, log_end_offset: int,
                      last_stable_offset: int, checkpointed: int | None, now_ms: int,
                      min_compaction_lag_ms: int) -> OffsetsToClean:
    """``LogCleanerManager.cleanableOffsets``."""
    force = False
    first_dirty = log_start_offset if checkpointed is None else checkpointed
    if checkpointed is not None and (checkpointed < log_start_offset or checkpointed > log_end_offset):
        first_dirty, force = log_start_offset, True
    candidates = [last_stable_offset, segs[-1].base_offset]
    lag = max(min_compaction_lag_ms, 0)
    if lag > 0:
        for seg in non_active_segments_from(segs, first_dirty):
            if seg.largest_timestamp > now_ms - lag:
                candidates.append(seg.base_offset)
                break
    return OffsetsToClean(first_dirty, max(first_dirty, min(candidates)), force)


def calculate_cleanable_bytes(segs: list[SegmentFacts], first_dirty: int, uncleanable: int) -> tuple[int, int]:
    """``LogCleanerManager.calculateCleanableBytes``: (the base offset of the segment holding ``uncleanable``, or
    the active segment's; the bytes of the segments from the dirty one up to it)."""
    non_active = non_active_segments_from(segs, uncleanable)
    first_uncleanable = (non_active[0] if non_active else segs[-1]).base_offset
    cleanable = sum(s.size for s in segments(segs, min(first_dirty, first_uncleanable), first_uncleanable))
    return first_uncleanable, cleanable


def max_compaction_delay(segs: list[SegmentFacts], first_dirty: int, now_ms: int, max_compaction_lag_ms: int) -> int:
    """``LogCleanerManager.maxCompactionDelay``: how long past ``max.compaction.lag.ms`` the oldest dirty
    non-active segment's first batch is (0: not past it)."""
    stamps = [s.first_batch_timestamp for s in non_active_segments_from(segs, first_dirty)
              if s.first_batch_timestamp > 0]
    earliest = min(stamps) if stamps else LONG_MAX
    clean_until = now_ms - max(max_compaction_lag_ms, 0)
    return clean_until - earliest if earliest < clean_until else 0


@dataclass(frozen=True)
class LogToClean:
    """Kafka's ``LogToClean``: a partition's cleanable range and the dirty ratio Kafka compares with
    ``min.cleanable.dirty.ratio``. ``first_uncleanable_offset`` is segment-aligned: the cleaning's upper bound."""

    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    need_compaction_now: bool

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else math.nan  # Java's 0.0 / 0

    @classmethod
    def of(cls, segs: list[SegmentFacts], first_dirty: int, uncleanable: int,
           need_compaction_now: bool) -> LogToClean:
        clean = sum(s.size for s in segments(segs, -1, first_dirty))
        first_uncleanable, cleanable = calculate_cleanable_bytes(segs, first_dirty, uncleanable)
        return cls(first_dirty, first_uncleanable, clean, cleanable, need_compaction_now)

    def would_clean(self, min_cleanable_ratio: float) -> bool:
        """Whether ``grabFilthiestCompactedLog`` takes it: bytes to clean, and past the lag or the ratio."""
        return self.total_bytes > 0 and (
            (self.need_compaction_now and self.cleanable_bytes > 0) or self.cleanable_ratio > min_cleanable_ratio)


def segment_facts(log_path: str, base_offset: int, result: RecoveryResult) -> SegmentFacts:
    """What the cleaner's choice reads of a segment recovered as Kafka's load recovers it: its size, its largest
    timestamp as the rebuilt time index gives it, its first batch's timestamp."""
    segment = LogSegment(log_path, base_offset)
    return SegmentFacts(base_offset, result.size_bytes, segment.largest_timestamp(result.time_index)[0],
                        segment.first_batch_timestamp())


def clamped_high_watermark(high_watermark: int | None, log_start_offset: int, log_end_offset: int) -> int:
    """The checkpointed high watermark (None: none, the log end) clamped to the log, as the broker clamps it."""
    hw = high_watermark if high_watermark is not None else log_end_offset
    return min(max(hw, log_start_offset), log_end_offset)


def last_stable_offset(first_unstable_offset: int | None, high_watermark: int) -> int:
    """``UnifiedLog.lastStableOffset``: the first unstable offset when it lies below the high watermark, else the
    high watermark."""
    if first_unstable_offset is not None and first_unstable_offset < high_watermark:
        return first_unstable_offset
    return high_watermark


@dataclass(frozen=True)
class CleaningView:
    """What ``grabFilthiestCompactedLog`` sees of one compacted partition: its offsets to clean, its
    ``LogToClean`` and whether Kafka's cleaner would take it now (``min.cleanable.dirty.ratio`` or
    ``max.compaction.lag.ms``)."""

    offsets: OffsetsToClean
    log: LogToClean
    max_compaction_delay: int
    would_clean: bool
    oldest_dirty_age_ms: int | None = None  # see oldest_dirty_age_ms


def cleaning_view(segs: list[SegmentFacts], log_start_offset: int, log_end_offset: int, last_stable: int,
                  checkpointed: int | None, now_ms: int, config) -> CleaningView:
    """One partition's turn in ``LogCleanerManager.grabFilthiestCompactedLog`` (``config``: its ``LogConfig``)."""
    offsets = cleanable_offsets(segs, log_start_offset, log_end_offset, last_stable, checkpointed, now_ms,
                                config.min_compaction_lag_ms)
    delay = max_compaction_delay(segs, offsets.first_dirty_offset, now_ms, config.max_compaction_lag_ms)
    log = LogToClean.of(segs, offsets.first_dirty_offset, offsets.first_uncleanable_dirty_offset, delay > 0)
    return CleaningView(offsets, log, delay, log.would_clean(config.min_cleanable_dirty_ratio),
                        oldest_dirty_age_ms(segs, offsets.first_dirty_offset, now_ms))


def oldest_dirty_age_ms(segs: list[SegmentFacts], first_dirty: int, now_ms: int) -> int | None:
    """How long the oldest dirty data has waited: ``now`` minus the earliest first-batch timestamp of the
    non-active segments from the dirty one (what ``max.compaction.lag.ms`` is measured against); None when
    there is none."""
    stamps = [s.first_batch_timestamp for s in non_active_segments_from(segs, first_dirty)
              if 0 < s.first_batch_timestamp < LONG_MAX]
    return now_ms - min(stamps) if stamps else None
