"""Kafka's ``LogCleaner`` for one partition directory, offline: load it as a broker's start does, ask
``LogCleanerManager`` whether and where it would be cleaned, and run one ``Cleaner`` round in memory, to say what
the round would leave (``plan_cleaning``: a ``CleaningPlan``) or to write it as Kafka's cleaner does
(``clean_partition``: ``LocalLog.replaceSegments``, every replaced file kept in a quarantine first).

The load is ``LogLoader``'s (every segment recovered, producers expired at ``now``): a partition whose load would
truncate or fail is not planned (``error``; ``segdex recover`` first). A round that would rebuild a snappy batch is
not planned either where the snappy kernel is not built (``error``).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

from segdex.indexcore.config.cleaner_config import CleanerConfig
from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.errors import SegdexError
from segdex.indexcore.fs.atomic_file import remove_temporaries
from segdex.indexcore.log.cleaner import Cleaner, CleanerSegment, CleaningRound, LastRecord, LogCleaningException
from segdex.indexcore.log.local_log import complete_swaps, replace_segments, replaced_files
from segdex.indexcore.log.log_cleaner_manager import (
    SegmentFacts,
    clamped_high_watermark,
    cleaning_view,
    last_stable_offset,
    segment_facts,
)
from segdex.indexcore.log.log_loader import LogLoader
from segdex.indexcore.log.log_segments import segment_logs
from segdex.indexcore.log.producer_state import ProducerStateManager
from segdex.indexcore.log.quarantine import keep_in_quarantine
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
    tombstones_removed: int | None = None
    aborted_removed: int | None = None  # records of aborted transactions the round removes
    keys: int | None = None  # keys in the offset map
    error: str | None = None  # why it could not be planned (or applied)
    applied: bool = False  # the round was written into the partition
    quarantine: str | None = None  # where the files it replaced are kept
    finished: str | None = None  # what an interrupted earlier run left, finished as Kafka's load would
    rounds: int = 0  # rounds applied, or planned (--until-clean: more than one)
    bytes_freed: int = 0  # by the rounds applied

    def followed_by(self, later: CleaningPlan) -> CleaningPlan:
        """This round's plan and the next one's, as one (``--until-clean``): the choice, range start and ratio of
        the first; the end offset, what is left and whether the map filled, of the last. A later round reads the
        earlier one's output again (every segment below its end offset) plus original segments: only those count
        as before."""
        def originals(first: int | None, then_read: int | None, then_written: int | None) -> int | None:
            if None in (first, then_read, then_written):
                return None
            return first + then_read - then_written

        return dataclasses.replace(
            self, end_offset=later.end_offset, map_full=later.map_full,
            segments_before=originals(self.segments_before, later.segments_before, self.segments_after),
            segments_after=later.segments_after,
            bytes_before=originals(self.bytes_before, later.bytes_before, self.bytes_after),
            bytes_after=later.bytes_after,
            records_before=originals(self.records_before, later.records_before, self.records_after),
            records_after=later.records_after, tombstones_kept=later.tombstones_kept,
            tombstones_removed=(self.tombstones_removed or 0) + (later.tombstones_removed or 0),
            aborted_removed=(self.aborted_removed or 0) + (later.aborted_removed or 0), keys=later.keys,
            error=later.error or self.error, applied=self.applied or later.applied,
            quarantine=later.quarantine or self.quarantine, rounds=self.rounds + later.rounds,
            bytes_freed=self.bytes_freed + later.bytes_freed)


@dataclass
class LoadedForCleaning:
    """A partition as Kafka's load leaves it, as the cleaner reads it: its segments, their facts for
    ``LogCleanerManager``, the log start and end offsets, the producer state at the end."""

    segments: list[CleanerSegment]
    facts: list[SegmentFacts]
    log_start_offset: int
    log_end_offset: int
    producer_state: ProducerStateManager

    def active_producers(self) -> dict[int, LastRecord]:
        """``UnifiedLog.lastRecordsOfActiveProducers``."""
        return {pid: LastRecord(e.last_data_offset if e.last_data_offset >= 0 else None, e.producer_epoch)
                for pid, e in self.producer_state.producers.items()}


def load_for_cleaning(partition_dir: str, config: LogConfig, now_ms: int,
                      log_start_offset_checkpoint: int = 0) -> LoadedForCleaning:
    """The partition loaded as ``LogLoader`` loads it at ``now_ms``; ``LogCleaningException`` when a segment is not
    whole (the broker's load would truncate or fail)."""
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
        mtime_ms = os.stat(path).st_mtime_ns // 1_000_000
        segs.append(CleanerSegment(path, base, r.size_bytes, mtime_ms, r.offset_index, len(r.time_index),
                                   list(r.txn_index.aborted), r.next_offset))
        facts.append(segment_facts(path, base, r))
    loaded = loader.finish()
    return LoadedForCleaning(segs, facts, loaded.log_start_offset, loaded.log_end_offset,
                             loader.recovery.producer_state)


def plan_cleaning(partition_dir: str, config: LogConfig, cleaner: CleanerConfig, now_ms: int,
                  log_start_offset_checkpoint: int = 0, high_watermark: int | None = None,
                  checkpoint: int | None = None, until_clean: bool = False) -> CleaningPlan:
    """``LogCleaner.cleanLog`` for one partition as a plan: the ``LogCleanerManager`` choice, then one round of
    ``Cleaner.doClean`` in memory with this thread's offset map (``CleanerConfig``); with ``until_clean``, while
    the offset map fills, the next rounds too, each over the segments the last one left (in memory, as a
    broker's cleaner holds the log between its passes), until the range is clean."""
    return _plan_round(partition_dir, config, cleaner, now_ms, log_start_offset_checkpoint, high_watermark,
                       checkpoint, until_clean, keep_files=until_clean)[0]


def clean_partition(partition_dir: str, config: LogConfig, cleaner: CleanerConfig, now_ms: int,
                    log_start_offset_checkpoint: int = 0, high_watermark: int | None = None,
                    checkpoint: int | None = None, quarantine: str | None = None, run_id: str = "",
                    force: bool = False) -> CleaningPlan:
    """One partition cleaned (``LogCleaner.cleanLog`` applied) when Kafka's cleaner would clean it now (or ``force``):
    each cleaned segment replaces its sources as ``LocalLog.replaceSegments`` does (``local_log``), every file it
    removes first kept under ``quarantine`` (None: discarded). The log dir's ``cleaner-offset-checkpoint`` is the
    caller's to write (``end_offset``), once per log dir. The caller holds the log dir's ``.lock``."""
    # an interrupted run's files: its temporaries, and the swap as Kafka's load would finish it
    finished = [f"removed {os.path.basename(t)}" for t in remove_temporaries(partition_dir)]
    finished += complete_swaps(partition_dir)
    plan, round_ = _plan_round(partition_dir, config, cleaner, now_ms, log_start_offset_checkpoint,
                               high_watermark, checkpoint)
    plan.finished = "; ".join(finished) or None
    if plan.error or round_ is None or not (plan.would_clean or force):
        return plan
    files = [f for c in round_.segments for f in replaced_files(partition_dir, c)]
    need = sum(len(c.log) + len(c.offset_index) + len(c.time_index) + len(c.txn_index or b"")
               for c in round_.segments)
    short = _short_of_room(partition_dir, need) or (
        quarantine and _short_of_room(quarantine, sum(os.path.getsize(f) for f in files)))
    if short:
        plan.error = f"not applied: {short}; nothing was changed"
        return plan
    if quarantine is not None:
        manifest = keep_in_quarantine(partition_dir, files, quarantine, run_id,
                                      f"segdex clean: replaced by cleaned segments "
                                      f"{', '.join(str(c.base_offset) for c in round_.segments)}")
        plan.quarantine = os.path.dirname(manifest.pieces[0].quarantined) if manifest.pieces else None
    for cleaned in round_.segments:
        replace_segments(partition_dir, cleaned)
    plan.applied = True
    plan.bytes_freed = plan.bytes_before - plan.bytes_after
    return plan


def _short_of_room(path: str, need: int) -> str | None:
    """Why the filesystem of ``path`` cannot take ``need`` more bytes (with 1 MiB to spare), else None."""
    while not os.path.exists(path) and os.path.dirname(path) != path:  # a quarantine not created yet
        path = os.path.dirname(path)
    st = os.statvfs(path)
    free = st.f_bavail * st.f_frsize
    if free < need + (1 << 20):
        return f"{path}: {free:,} bytes free, {need:,} needed"
    return None


def _plan_round(partition_dir: str, config: LogConfig, cleaner: CleanerConfig, now_ms: int,
                log_start_offset_checkpoint: int, high_watermark: int | None,
                checkpoint: int | None, until_clean: bool = False,
                keep_files: bool = True) -> tuple[CleaningPlan, CleaningRound | None]:
    plan = CleaningPlan(checkpoint=checkpoint)
    try:
        loaded = load_for_cleaning(partition_dir, config, now_ms, log_start_offset_checkpoint)
    except (LogCleaningException, SegdexError, OSError) as e:
        plan.error = f"not loaded: {getattr(e, 'strerror', None) or e}"
        return plan, None
    start, end = loaded.log_start_offset, loaded.log_end_offset
    hw = clamped_high_watermark(high_watermark, start, end)
    lso = last_stable_offset(loaded.producer_state.first_unstable_offset(start), hw)
    view = cleaning_view(loaded.facts, start, end, lso, checkpoint, now_ms, config)
    ratio = view.log.cleanable_ratio
    plan.first_dirty_offset = view.offsets.first_dirty_offset
    plan.first_uncleanable_offset = view.log.first_uncleanable_offset
    plan.dirty_ratio = None if ratio != ratio else ratio
    plan.would_clean = view.would_clean
    if view.log.cleanable_bytes == 0:
        plan.why = "nothing cleanable (the active segment, the last stable offset or min.compaction.lag.ms)"
        return plan, None
    if view.max_compaction_delay > 0:
        plan.why = f"max.compaction.lag.ms passed {view.max_compaction_delay} ms ago"
    elif view.would_clean:
        plan.why = f"dirty ratio {ratio:.3f} > min.cleanable.dirty.ratio {config.min_cleanable_dirty_ratio}"
    else:
        plan.why = f"dirty ratio {ratio:.3f} <= min.cleanable.dirty.ratio {config.min_cleanable_dirty_ratio}"
    offset_map = SkimpyOffsetMap(cleaner.offset_map_memory, cleaner.hash_algorithm)
    cleaning = Cleaner(offset_map, cleaner.dedupe_buffer_load_factor, keep_files, cleaner.thread_io_buffer_size)
    try:
        round_ = cleaning.clean(loaded.segments, view.log, start, hw, loaded.active_producers(), config, now_ms)
    except (UnsupportedCompressionException, SegdexError, OSError) as e:
        plan.error = _round_error(e)
        return plan, None
    _round_plan(plan, round_, view.log.first_uncleanable_offset)
    if until_clean:
        segs, facts = loaded.segments, loaded.facts
        previous = round_
        while plan.map_full:
            segs, facts = previous.swapped(segs, facts, config.segment_index_bytes)
            view = cleaning_view(facts, start, end, lso, previous.end_offset, now_ms, config)
            if view.log.cleanable_bytes == 0:
                break
            try:
                later = cleaning.clean(segs, view.log, start, hw, loaded.active_producers(), config, now_ms)
            except (UnsupportedCompressionException, SegdexError, OSError) as e:
                plan.error = _round_error(e, f"round {plan.rounds + 1}")
                break
            if later.end_offset <= previous.end_offset:  # no progress: an offset map too small for a key
                plan.error = f"round {plan.rounds + 1} would not get past offset {previous.end_offset}"
                break
            plan = plan.followed_by(_round_plan(CleaningPlan(), later, view.log.first_uncleanable_offset))
            previous = later
    return plan, round_


def _round_error(e: Exception, where: str = "") -> str:
    """A plan's error for a round that raised: where Kafka's own round throws, its failure is the answer; anything
    else is a round segdex did not plan."""
    if isinstance(e, LogCleaningException) and e.kafka_exception:
        return f"{where}: {e}" if where else str(e)
    why = f"{getattr(e, 'strerror', None) or e}"
    if isinstance(e, UnsupportedCompressionException):
        why += " (snappy batches are rebuilt by the _snappy kernel, not built here)"
    return f"{where} not planned: {why}" if where else f"not planned: {why}"


def _round_plan(plan: CleaningPlan, round_: CleaningRound, first_uncleanable_offset: int) -> CleaningPlan:
    """``plan`` filled with one round's figures."""
    replaced = [b for c in round_.segments for b in c.replaces]
    plan.end_offset = round_.end_offset
    plan.map_full = round_.end_offset < first_uncleanable_offset
    plan.segments_before, plan.segments_after = len(replaced), len(round_.segments)
    plan.bytes_before, plan.bytes_after = round_.stats.bytes_read, round_.stats.bytes_written
    plan.records_before, plan.records_after = round_.stats.records_read, round_.stats.records_kept
    plan.tombstones_kept, plan.keys = round_.stats.tombstones_kept, round_.stats.map_keys
    plan.tombstones_removed = round_.stats.tombstones_removed
    plan.aborted_removed = round_.stats.aborted_removed
    plan.rounds = 1
    return plan
