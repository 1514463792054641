"""Kafka's ``LogCleaner`` for one partition directory, offline and in memory: load it as a broker's start does, ask
``LogCleanerManager`` whether and where it would be cleaned, and run one ``Cleaner`` round without writing, to
say what the round would leave (``CleaningPlan``).

The load is ``LogLoader``'s (every segment recovered, producers expired at ``now``): a partition whose load would
truncate or fail is not planned (``error``; ``segdex recover`` first). A round that would rebuild a compressed
batch is not planned either until the codecs are Kafka's bytes (``error``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from segdex.indexcore.config.cleaner_config import CleanerConfig
from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.errors import SegdexError
from segdex.indexcore.log.cleaner import Cleaner, CleanerSegment, LastRecord, LogCleaningException
from segdex.indexcore.log.log_cleaner_manager import SegmentFacts, cleaning_view, last_stable_offset
from segdex.indexcore.log.log_loader import LogLoader
from segdex.indexcore.log.log_segment import LogSegment
from segdex.indexcore.log.log_segments import segment_logs
from segdex.indexcore.log.skimpy_offset_map import SkimpyOffsetMap
from segdex.indexcore.record.memory_records_builder import UnsupportedCompressionException
from segdex.indexcore.status import SegmentStatus


@dataclass
class CleaningPlan:
    """What Kafka's cleaner would do to one partition at ``now``: whether it would take it (and why), the range,
    and one round's effect on the segments it rewrites (the whole log below ``end_offset``)."""

    would_clean: bool | None = None
    why: str = ""
    checkpoint: int | None = None
    first_dirty_offset: int | None = None
    first_uncleanable_offset: int | None = None
    dirty_ratio: float | None = None
    end_offset: int | None = None  # the cleaner-offset-checkpoint after the round
    map_full: bool | None = None  # the offset map filled: more rounds needed for the rest
    segments_before: int | None = None
    segments_after: int | None = None
    bytes_before: int | None = None
    bytes_after: int | None = None
    records_before: int | None = None
    records_after: int | None = None
    tombstones_kept: int | None = None
    keys: int | None = None  # keys in the offset map
    error: str | None = None  # why it could not be planned


def _load(partition_dir: str, config: LogConfig, now_ms: int, log_start_offset_checkpoint: int):
    logs, _ = segment_logs(partition_dir)
    if not logs:
        raise LogCleaningException("no segment")
    loader = LogLoader(partition_dir, config, now_ms, log_start_offset_checkpoint)
    segs, facts = [], []
    for base, path in logs:
        seg = loader.recover_segment(path, base)
        if seg.status != SegmentStatus.OK or seg.result is None:
            why = seg.reason.cause if seg.reason else seg.status
            raise LogCleaningException(f"{os.path.basename(path)}: {seg.status}: {why}; the broker's load would not "
                                       f"leave it as it is (segdex recover first)")
        r = seg.result
        st = os.stat(path)
        segs.append(CleanerSegment(path, base, st.st_size, st.st_mtime_ns // 1_000_000, r.offset_index,
                                   len(r.time_index), list(r.txn_index.aborted), r.next_offset))
        log_segment = LogSegment(path, base)
        facts.append(SegmentFacts(base, st.st_size, log_segment.largest_timestamp(r.time_index)[0],
                                  log_segment.first_batch_timestamp()))
    loaded = loader.finish()
    return segs, facts, loaded, loader.recovery.producer_state


def plan_cleaning(partition_dir: str, config: LogConfig, cleaner: CleanerConfig, now_ms: int,
                  log_start_offset_checkpoint: int = 0, high_watermark: int | None = None,
                  checkpoint: int | None = None) -> CleaningPlan:
    """``LogCleaner.cleanLog`` for one partition as a plan: the ``LogCleanerManager`` choice, then one round of
    ``Cleaner.doClean`` in memory with this thread's offset map (``CleanerConfig``)."""
    plan = CleaningPlan(checkpoint=checkpoint)
    try:
        segs, facts, loaded, state = _load(partition_dir, config, now_ms, log_start_offset_checkpoint)
    except (LogCleaningException, SegdexError, OSError) as e:
        plan.error = f"not loaded: {getattr(e, 'strerror', None) or e}"
        return plan
    start, end = loaded.log_start_offset, loaded.log_end_offset
    hw = min(max(high_watermark if high_watermark is not None else end, start), end)
    lso = last_stable_offset(state.first_unstable_offset(start), hw)
    view = cleaning_view(facts, start, end, lso, checkpoint, now_ms, config)
    ratio = view.log.cleanable_ratio
    plan.first_dirty_offset = view.offsets.first_dirty_offset
    plan.first_uncleanable_offset = view.log.first_uncleanable_offset
    plan.dirty_ratio = None if ratio != ratio else ratio
    plan.would_clean = view.would_clean
    if view.log.cleanable_bytes == 0:
        plan.why = "nothing cleanable (the active segment, the last stable offset or min.compaction.lag.ms)"
        return plan
    if view.max_compaction_delay > 0:
        plan.why = f"max.compaction.lag.ms passed {view.max_compaction_delay} ms ago"
    elif view.would_clean:
        plan.why = f"dirty ratio {ratio:.3f} > min.cleanable.dirty.ratio {config.min_cleanable_dirty_ratio}"
    else:
        plan.why = f"dirty ratio {ratio:.3f} <= min.cleanable.dirty.ratio {config.min_cleanable_dirty_ratio}"
    active = {pid: LastRecord(e.last_data_offset if e.last_data_offset >= 0 else None, e.producer_epoch)
              for pid, e in state.producers.items()}
    offset_map = SkimpyOffsetMap(cleaner.offset_map_memory, cleaner.hash_algorithm)
    try:
        round_ = Cleaner(offset_map, cleaner.dedupe_buffer_load_factor).clean(segs, view.log, start, hw, active,
                                                                               config, now_ms)
    except UnsupportedCompressionException as e:
        plan.error = f"not planned: {e} (only uncompressed batches are rebuilt so far)"
        return plan
    except (LogCleaningException, SegdexError, OSError) as e:
        plan.error = f"not planned: {getattr(e, 'strerror', None) or e}"
        return plan
    replaced = [b for c in round_.segments for b in c.replaces]
    plan.end_offset = round_.end_offset
    plan.map_full = round_.end_offset < view.log.first_uncleanable_offset
    plan.segments_before, plan.segments_after = len(replaced), len(round_.segments)
    plan.bytes_before, plan.bytes_after = round_.stats.bytes_read, round_.stats.bytes_written
    plan.records_before, plan.records_after = round_.stats.records_read, round_.stats.records_kept
    plan.tombstones_kept, plan.keys = round_.stats.tombstones_kept, round_.stats.map_keys
    return plan
