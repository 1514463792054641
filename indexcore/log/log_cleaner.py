"""Kafka's ``LogCleaner`` for one partition directory, offline: load it as a broker's start does, ask
``LogCleanerManager`` whether and where it would be cleaned, and run one ``Cleaner`` round, to say what the round
would leave (``plan_cleaning``: a ``CleaningPlan``, counts only) or to write it as Kafka's cleaner does
(``clean_partition``: group by group, each streamed into its ``.cleaned`` files and swapped in by
``LocalLog.replaceSegments`` before the next, every replaced file kept in a quarantine first).

The load is ``LogLoader``'s (every segment recovered, producers expired at ``now``): a partition whose load would
truncate or fail is not planned (``error``; ``segdex recover`` first). A round that would rebuild a snappy batch is
not planned either where the snappy kernel is not built (``error``).

A damaged segment a broker's start does not re-read (the log dir's ``.kafka_cleanshutdown`` marker, or a segment
below the floor segment of the partition's recovery point) is served as it is, its indexes as on disk: Kafka's
cleaner then meets the damage while it reads (``cleaner.read_batch``). Where Kafka's round throws (a size field
below 14, a bad magic byte, a batch cut short or running past its segment's end), the round is refused before its
first write: the partition is left as it was, the error names the file, the byte position and Kafka's exception.
Where Kafka's round reads through it (a wrong CRC: the cleaner checks none), segdex's round does too, leaving
the bytes Kafka's leaves, and the plan's ``why`` says so.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace

from segdex.indexcore.config.cleaner_config import CleanerConfig
from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.errors import (
    CORRUPT_RECORD,
    BufferBoundsException,
    CorruptRecordException,
    InvalidRecordException,
    KafkaReadException,
    OffsetReadException,
    SegdexError,
    UnknownCompressionTypeException,
)
from segdex.indexcore.fs.atomic_file import remove_temporaries
from segdex.indexcore.fs.file_access import read_regular
from segdex.indexcore.index.offset_index import OffsetIndex
from segdex.indexcore.index.time_index import ENTRY_SIZE as TIME_INDEX_ENTRY_SIZE
from segdex.indexcore.index.transaction_index import parse_transaction_index
from segdex.indexcore.log.cleaner import (
    CleanedSegment,
    Cleaner,
    CleanerSegment,
    CleaningRound,
    GroupWriter,
    LastRecord,
    LogCleaningException,
    without_bytes,
)
from segdex.indexcore.log.layout import (
    INDEX_FILE_SUFFIX,
    SEGMENT_SUFFIXES,
    TIME_INDEX_FILE_SUFFIX,
    TXN_INDEX_FILE_SUFFIX,
    filename_prefix_from_offset,
    index_paths,
)
from segdex.indexcore.log.local_log import (
    convert_to_offset_metadata_or_throw,
    open_cleaned_log,
    replace_segments,
    replaced_files,
)
from segdex.indexcore.log.log_cleaner_manager import (
    SegmentFacts,
    clamped_high_watermark,
    cleaning_view,
    last_stable_offset,
    segment_facts,
)
from segdex.indexcore.log.log_loader import (
    ACTION_FAIL,
    LoadFailed,
    LogLoader,
    SegmentOnDisk,
    _floor_index,
    complete_swaps,
    start_dry_run,
)
from segdex.indexcore.log.log_segment import MAGIC_ABOVE_V2, LogSegment
from segdex.indexcore.log.log_segments import segment_logs
from segdex.indexcore.log.producer_snapshot import load_from_snapshot
from segdex.indexcore.log.producer_state import ProducerStateManager
from segdex.indexcore.log.quarantine import QuarantineSession
from segdex.indexcore.log.skimpy_offset_map import SkimpyOffsetMap
from segdex.indexcore.record.file_records import batches, open_log
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
    swapped_groups: int = 0  # a round that failed part way: the groups swapped in before it failed
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
    # damaged segments served as they are: (path, byte position of the first batch recovery finds invalid, why)
    as_is: list[tuple[str, int, str]] = dataclasses.field(default_factory=list)
    # UnifiedLog's firstUnstableOffsetMetadata after the load (None: no transaction open): ``_first_unstable``
    first_unstable_offset: int | None = None
    # the transactions of the log's own producer state after the load, as the start's dry run predicts them (open
    # ones, and those its last replay completed: ``LogLoader.producer_state_at_end``); None: ``producer_state``'s
    txn_state: ProducerStateManager | None = None

    def carried_through(self, round_: CleaningRound) -> str | None:
        """What a round that did not throw says of the damaged segments served as they are."""
        replaced = {b for c in round_.segments for b in c.replaces}
        notes = []
        for path, position, why in self.as_is:
            base = next(s.base_offset for s in self.segments if s.log_path == path)
            what = ("carried through as Kafka's round carries it (its cleaner checks no CRC)" if base in replaced
                    else "not read by this round")
            notes.append(f"{path} byte {position} ({why}): {what}")
        return "; ".join(notes) or None

    def first_unstable_at(self, high_watermark: int) -> int | None:
        """The first unstable offset once the broker sets the high watermark (``UnifiedLog.updateHighWatermark``:
        ``ProducerStateManager.onHighWatermarkUpdated`` drops the transactions the load's last replay completed
        whose marker lies below it, those at or above it still count; ``maybeIncrementFirstUnstableOffset`` then
        reads it from the log again, ``_first_unstable``)."""
        state = self.txn_state
        if state is None or not state.unreplicated_txns:
            return self.first_unstable_offset
        kept = state.copy()
        kept.remove_unreplicated_transactions(high_watermark)
        return _first_unstable(self.segments, kept.first_unstable_offset(self.log_start_offset), self.log_end_offset)

    def active_producers(self) -> dict[int, LastRecord]:
        """``UnifiedLog.lastRecordsOfActiveProducers``."""
        return {pid: LastRecord(e.last_data_offset if e.last_data_offset >= 0 else None, e.producer_epoch)
                for pid, e in self.producer_state.producers.items()}


def load_for_cleaning(partition_dir: str, config: LogConfig, now_ms: int,
                      log_start_offset_checkpoint: int = 0, clean_shutdown: bool = False,
                      recovery_point: int | None = None) -> LoadedForCleaning:
    """The partition loaded as ``LogLoader`` loads it at ``now_ms``; ``LogCleaningException`` when a segment is not
    whole and the broker's load would re-read it (truncate or fail). A damaged segment the load does not re-read
    (``clean_shutdown``: the log dir's marker; or below the floor segment of ``recovery_point``; its indexes on
    disk, not recovered when opened) is served as it is (``CleanerSegment.as_is``), as a broker serves it."""
    logs, _ = segment_logs(partition_dir)
    if not logs:
        raise LogCleaningException("no segment")
    loader = LogLoader(partition_dir, config, now_ms, log_start_offset_checkpoint)
    first_reread = len(logs) if clean_shutdown else _floor_index([b for b, _ in logs], recovery_point or 0)
    segs, facts, as_is, on_disk = [], [], [], []
    for i, (base, path) in enumerate(logs):
        seg = loader.recover_segment(path, base)
        on_disk.append(None if seg.result is None else SegmentOnDisk(
            base, path, seg.result, os.path.exists(index_paths(path)[INDEX_FILE_SUFFIX])))
        if seg.status != SegmentStatus.OK or seg.result is None:
            why = seg.reason.cause if seg.reason else seg.status
            served = _served_as_is(path, base, config, i == len(logs) - 1) if i < first_reread else None
            if served is None:
                raise LogCleaningException(f"{os.path.basename(path)}: {seg.status}: {why}; the broker's load would "
                                           f"not leave it as it is (segdex recover first)")
            segs.append(served[0])
            facts.append(served[1])
            as_is.append((os.path.abspath(path), seg.result.valid_bytes if seg.result else 0, str(why)))
            continue
        r = seg.result
        mtime_ms = os.stat(path).st_mtime_ns // 1_000_000
        # a magic byte above 2 passes recovery (the v2 CRC does not cover it) but not the cleaner's read
        bad_magic = MAGIC_ABOVE_V2 in r.magics
        offset_index, time_entries, fact = r.offset_index, len(r.time_index), segment_facts(path, base, r)
        aborted = list(r.txn_index.aborted)
        if i < first_reread and os.path.exists(index_paths(path)[INDEX_FILE_SUFFIX]):
            # not re-read by the start: its indexes as on disk (a cleaned segment's can differ from a rebuild's)
            offset_index, time_entries, largest = _indexes_on_disk(path, base, config)
            fact = dataclasses.replace(fact, largest_timestamp=largest)
            aborted = parse_transaction_index(_read(index_paths(path)[TXN_INDEX_FILE_SUFFIX]))
        segs.append(CleanerSegment(path, base, r.size_bytes, mtime_ms, offset_index, time_entries, aborted,
                                   r.next_offset, as_is=bad_magic, legacy=r.legacy))
        facts.append(fact)
        if bad_magic:
            as_is.append((os.path.abspath(path), _bad_magic_at(path), "a magic byte above 2"))
    txns = None
    if None not in on_disk:  # the load's own reads (its producer-state replay's searches) can throw
        dry = start_dry_run(on_disk, clean_shutdown, recovery_point, log_start_offset_checkpoint, config)
        if dry.out.action == ACTION_FAIL:
            raise LogCleaningException("; ".join(dry.out.notes))
        txns = dry.producer_state_at_end()
    loaded = loader.finish()
    leo = segs[-1].next_offset if segs[-1].as_is else loaded.log_end_offset
    producers = loader.recovery.producer_state
    if clean_shutdown:  # a clean start loads the snapshot at the log end (a replay of cleaned segments differs)
        producers = load_from_snapshot(partition_dir, leo, now_ms, config.producer_id_expiration_ms) or producers
    if txns is not None and not txns.producers:  # no producer at all (a clean start without a snapshot skips the
        producers = txns                         # rebuild), expired or not
    unstable = _first_unstable(segs, (producers if txns is None else txns).first_unstable_offset(
        loaded.log_start_offset), leo)
    return LoadedForCleaning(segs, facts, loaded.log_start_offset, leo, producers, as_is, unstable, txns)


def _first_unstable(segs: list[CleanerSegment], offset: int | None, log_end_offset: int) -> int | None:
    """The first unstable offset as the log's constructor leaves it (the dry run's
    ``maybe_increment_first_unstable_offset`` in ``log_loader``): the producer state's (a bare offset, not below the
    log start offset) made ``LogOffsetMetadata`` by ``convert_to_offset_metadata_or_throw``, whose offset Kafka 4.x
    takes from the batch its read finds. It is the offset itself but where its batch is gone: a damaged segment
    served as it is, cut before it (its next whole batch's base offset, in a later segment, then). What the read
    throws on the way fails the load, a clean start's too."""
    if offset is None:
        return None
    try:
        return convert_to_offset_metadata_or_throw([(s.base_offset, s.log_path, s.offset_index, None) for s in segs],
                                                   offset, log_end_offset)
    except OffsetReadException as e:
        raise LogCleaningException(f"the load: {e}: a broker's start reads the log from the first unstable offset "
                                   f"and fails there too") from None


def _bad_magic_at(path: str) -> int:
    """The position of the first batch whose magic byte is above 2."""
    with open_log(path) as buf:
        return next((b.position for b in batches(buf) if b.magic > 2), 0)


def _served_as_is(path: str, base: int, config: LogConfig,
                  last: bool) -> tuple[CleanerSegment, SegmentFacts] | None:
    """A damaged segment a clean start opens as it is (None: its load recovers it when it opens it, its
    ``.index`` missing or its ``.txnindex`` failing the sanity check; or the start fails on it): its ``.log``
    and indexes as on disk, what the cleaner's choice reads of it, its ``readNextOffset`` (or what that throws)."""
    files = index_paths(path)
    try:
        if LogLoader.recovered_when_opened(path, base, os.path.exists(files[INDEX_FILE_SUFFIX])) is not None:
            return None
    except LoadFailed:
        return None
    segment = LogSegment(path, base)
    error = None
    try:
        next_offset = segment.read_next_offset()
    except CorruptRecordException as e:
        if last:  # the log end offset: the load itself throws
            return None
        next_offset, error = base, f"{CORRUPT_RECORD}: {str(e).rstrip('.')} in file {os.path.abspath(path)}."
    except (InvalidRecordException, KafkaReadException, UnknownCompressionTypeException, BufferBoundsException) as e:
        if last:
            return None
        next_offset, error = base, f"{e.kafka_class}: {e}"
    try:
        first_timestamp = segment.first_batch_timestamp()
    except CorruptRecordException:  # the cleaner's choice throws on it
        return None
    offset_index, time_entries, largest = _indexes_on_disk(path, base, config)
    txn = parse_transaction_index(_read(files[TXN_INDEX_FILE_SUFFIX]))
    st = os.stat(path)
    mtime_ms = st.st_mtime_ns // 1_000_000
    seg = CleanerSegment(path, base, st.st_size, mtime_ms, offset_index, time_entries, txn, next_offset,
                         as_is=True, next_offset_error=error)
    return seg, SegmentFacts(base, st.st_size, largest, first_timestamp)


def _indexes_on_disk(path: str, base: int, config: LogConfig) -> tuple[OffsetIndex, int, int]:
    """A segment's indexes as a start that does not re-read it opens them: (its offset index, its time index's
    entries, ``LogSegment.largestTimestamp``)."""
    files = index_paths(path)
    offset_index = OffsetIndex.from_bytes(_read(files[INDEX_FILE_SUFFIX]), base, config.segment_index_bytes)
    time_entries = len(_read(files[TIME_INDEX_FILE_SUFFIX])) // TIME_INDEX_ENTRY_SIZE
    return offset_index, time_entries, LogSegment(path, base).largest_timestamp()[0]


def _read(path: str) -> bytes:
    """An index file's bytes as the cleaning load reads them (none: empty)."""
    return read_regular(path) or b""


def plan_cleaning(partition_dir: str, config: LogConfig, cleaner: CleanerConfig, now_ms: int,
                  log_start_offset_checkpoint: int = 0, high_watermark: int | None = None,
                  checkpoint: int | None = None, until_clean: bool = False, threads: int | None = None,
                  clean_shutdown: bool = False, recovery_point: int | None = None,
                  on_round: Callable[[int], None] | None = None) -> CleaningPlan:
    """``LogCleaner.cleanLog`` for one partition as a plan: the ``LogCleanerManager`` choice, then one round of
    ``Cleaner.doClean`` with this thread's offset map (``CleanerConfig``), its figures counted, no byte kept;
    with ``until_clean``, while the offset map fills, the next rounds too, each over the segments the last one
    left, as a broker's cleaner holds the log between its passes: a round a later one reads is written to a
    scratch directory (``tempfile``'s, outside every log dir; removed at the end), never held in memory.
    ``threads``: the round split over that many (``Cleaner``; None: ``SEGDEX_CLEAN_THREADS``, else the cores
    this process may run on). ``clean_shutdown`` (the log dir's marker) and ``recovery_point`` (the partition's
    checkpoint entry): what the load does not re-read (``load_for_cleaning``). ``on_round(bytes)``: told of each
    ``--until-clean`` round as it is planned, with the bytes it cleans (the progress of a long plan)."""
    plan, ctx = _prepare(partition_dir, config, cleaner, now_ms, log_start_offset_checkpoint, high_watermark,
                         checkpoint, threads, clean_shutdown, recovery_point)
    if ctx is None:
        return plan
    if not until_clean:
        try:
            round_ = ctx.clean()
        except (UnsupportedCompressionException, SegdexError, OSError) as e:
            plan.error = _round_error(e)
            return plan
        _say_carried(plan, ctx.loaded, round_)
        return _round_plan(plan, round_, ctx.view.log.first_uncleanable_offset)
    return _plan_rounds(plan, ctx, now_ms, config, on_round)


def _plan_rounds(plan: CleaningPlan, ctx: _Prepared, now_ms: int, config: LogConfig,
                 on_round: Callable[[int], None] | None) -> CleaningPlan:
    """``plan_cleaning``'s ``--until-clean``: round after round while the offset map fills, each over the segments
    the last one left (a round a later one reads written to a scratch directory, never held in memory)."""
    with tempfile.TemporaryDirectory(prefix="segdex-clean-plan-") as scratch:
        writer = _ScratchWriter(scratch, ctx.config.segment_index_bytes)
        segs, facts, previous = ctx.loaded.segments, ctx.loaded.facts, None
        while True:
            if previous is not None:
                segs, facts = previous.swapped(segs, facts, writer.take())
                ctx.view = cleaning_view(facts, ctx.start, ctx.loaded.log_end_offset, ctx.lso, previous.end_offset,
                                         now_ms, config)
                if ctx.view.log.cleanable_bytes == 0:
                    break
            writer.upper = ctx.view.log.first_uncleanable_offset
            try:
                round_ = ctx.clean(segs, writer)
            except (UnsupportedCompressionException, SegdexError, OSError) as e:
                if previous is None:
                    plan.error = _round_error(e)
                    return plan
                plan.error = _round_error(e, f"round {plan.rounds + 1}")
                break
            if previous is None:
                _say_carried(plan, ctx.loaded, round_)
                plan = step = _round_plan(plan, round_, ctx.view.log.first_uncleanable_offset)
            elif round_.end_offset <= previous.end_offset:  # no progress: an offset map too small for a key
                plan.error = f"round {plan.rounds + 1} would not get past offset {previous.end_offset}"
                break
            else:
                step = _round_plan(CleaningPlan(), round_, ctx.view.log.first_uncleanable_offset)
                plan = plan.followed_by(step)
            if on_round is not None:
                on_round(step.bytes_before or 0)
            if not plan.map_full:
                break
            previous = round_
    return plan


def clean_partition(partition_dir: str, config: LogConfig, cleaner: CleanerConfig, now_ms: int,
                    log_start_offset_checkpoint: int = 0, high_watermark: int | None = None,
                    checkpoint: int | None = None, quarantine: str | None = None, run_id: str = "",
                    force: bool = False, session: QuarantineSession | None = None,
                    threads: int | None = None, clean_shutdown: bool = False,
                    recovery_point: int | None = None) -> CleaningPlan:
    """One partition cleaned (``LogCleaner.cleanLog`` applied) when Kafka's cleaner would clean it now (or ``force``),
    streamed as Kafka's round streams it: each group cleaned into its ``.cleaned`` files while its segments are
    read, then swapped in (``LocalLog.replaceSegments``, ``local_log``) before the next group starts, every file it
    removes first kept under ``quarantine`` (None: discarded) through ``session`` (one per run and partition:
    across ``--until-clean`` rounds, each original file kept once). Memory: the offset map, the I/O buffers and one
    group's indexes. The log dir's ``cleaner-offset-checkpoint`` is the caller's to write (``end_offset``), once
    per log dir. The caller holds the log dir's ``.lock``.

    A round that throws part way (Kafka's round throws there too: a full index) leaves the groups before it swapped
    in, as Kafka's round leaves them, and the checkpoint where it was (``applied`` False).
    ``threads``: as ``plan_cleaning``'s (a split round opens, writes and swaps its groups one after the other in
    the same order; the groups it cleans ahead wait in memory). A damaged batch in a segment served as it is
    (``clean_shutdown``, ``recovery_point``: ``load_for_cleaning``) where Kafka's round throws is met before the
    first group is written: the partition is left as it was."""
    # an interrupted run's files: its temporaries, and the swap as Kafka's load would finish it
    finished = [f"removed {os.path.basename(t)}" for t in remove_temporaries(partition_dir)]
    finished += complete_swaps(partition_dir)
    plan, ctx = _prepare(partition_dir, config, cleaner, now_ms, log_start_offset_checkpoint, high_watermark,
                         checkpoint, threads, clean_shutdown, recovery_point)
    plan.finished = "; ".join(finished) or None
    if ctx is None or not (plan.would_clean or force):
        return plan
    if quarantine is not None and session is None:
        session = QuarantineSession(partition_dir, quarantine, run_id, "segdex clean: replaced by cleaned segments")
    writer = SwapWriter(partition_dir, session, quarantine)
    try:
        round_ = ctx.clean(writer=writer)
    except (UnsupportedCompressionException, SegdexError, OSError) as e:
        plan.error = (f"not applied: {e}" if isinstance(e, _ShortOfRoom) or writer.groups else _round_error(e))
        if writer.groups:
            plan.swapped_groups = writer.groups
            plan.error += (f"; the {writer.groups} cleaned segments before it were swapped in, as Kafka's round "
                           f"leaves them (cleaner-offset-checkpoint unchanged)")
            plan.quarantine = session.where if session is not None else None
            if plan.quarantine:
                plan.error += f"; the files they replaced are kept in {plan.quarantine}"
        elif not isinstance(e, _ShortOfRoom):
            plan.error += "; nothing was changed"
        return plan
    _say_carried(plan, ctx.loaded, round_)
    _round_plan(plan, round_, ctx.view.log.first_uncleanable_offset)
    plan.quarantine = session.where if session is not None and session.manifest.pieces else None
    plan.applied = True
    plan.bytes_freed = plan.bytes_before - plan.bytes_after
    return plan


def _say_carried(plan: CleaningPlan, loaded: LoadedForCleaning, round_: CleaningRound) -> None:
    """The plan's ``why`` says what a round that did not throw made of the damaged segments served as they are."""
    said = loaded.carried_through(round_)
    if said:
        plan.why = f"{plan.why}; damaged, served as it is: {said}"


class _ShortOfRoom(SegdexError):
    """A filesystem without room for the next write: the round stops before it."""


def _group_bases(group: list[CleanerSegment]) -> SimpleNamespace:
    """What ``local_log.replaced_files`` reads of a cleaned segment, known before it is written."""
    return SimpleNamespace(base_offset=group[0].base_offset, replaces=[s.base_offset for s in group])


class SwapWriter(GroupWriter):
    """An applied round's groups, each as Kafka's ``cleanSegments`` writes it: its replaced files kept in the
    quarantine, its ``.log`` streamed into a temporary, then ``replace_segments`` (the ``.cleaned`` files, the
    ``.swap`` renames, the old segments' ``.deleted``), before the next group is read."""

    writes_partition = True

    def __init__(self, partition_dir: str, session: QuarantineSession | None, quarantine: str | None) -> None:
        self.partition_dir = partition_dir
        self.session = session
        self.quarantine = quarantine
        self.groups = 0  # groups swapped in
        self.opened: collections.deque = collections.deque()  # (temporary, file) of the group open

    def _needs(self, group: list[CleanerSegment]) -> tuple[int, int]:
        """(bytes the group's cleaned files may take at most, bytes of the originals it replaces to keep)."""
        out = sum(s.size + len(s.offset_index) * 8 + (s.time_index_entries + 2) * 12 + 4096 for s in group)
        files = replaced_files(self.partition_dir, _group_bases(group))
        keep = self.session.to_keep(files) if self.session is not None else []
        return out, sum(os.path.getsize(f) for f in keep)

    def _short(self, out: int, keep: int) -> str | None:
        if not keep:
            return _short_of_room(self.partition_dir, out)
        if _same_filesystem(self.partition_dir, self.quarantine):
            return _short_of_room(self.partition_dir, out + keep)
        return _short_of_room(self.partition_dir, out) or _short_of_room(self.quarantine, keep)

    def begin(self, groups: list[list[CleanerSegment]], end_offset: int) -> None:
        """Room for the round before its first write. Beside the partition: the largest group's cleaned files
        (each group's sources go as it is swapped in). In a quarantine elsewhere: every original the round
        replaces. A quarantine on the log dir's filesystem holds its copies to the end while the cleaned groups
        take the place of their sources, so at group i the filesystem needs the groups' outputs so far plus group
        i's copies: the most of that over the round. (``Cleaner.clean`` has met the damage first, ``meet_damage``:
        where Kafka's round throws, nothing is written.)"""
        needs = [self._needs(g) for g in groups]
        if not needs:
            return
        if self.session is not None and _same_filesystem(self.partition_dir, self.quarantine):
            outputs, peak = 0, 0
            for o, k in needs:
                outputs += o
                peak = max(peak, outputs + k)
            short = _short_of_room(self.partition_dir, peak)
        else:
            short = self._short(max(o for o, _ in needs), sum(k for _, k in needs))
        if short:
            raise _ShortOfRoom(f"{short}; nothing was changed")

    def open(self, group: list[CleanerSegment]):
        if self.session is not None:
            short = self._short(*self._needs(group))
            if short:
                raise _ShortOfRoom(f"stopped before segment {group[0].base_offset}: {short}")
            self.session.keep(replaced_files(self.partition_dir, _group_bases(group)))
            # named before the first write: a run killed mid-group leaves restore lines that remove them too
            stem = os.path.join(self.partition_dir, filename_prefix_from_offset(group[0].base_offset))
            self.session.wrote([stem + suffix for suffix in SEGMENT_SUFFIXES])
        tmp, file = open_cleaned_log(self.partition_dir, group[0].base_offset)
        self.opened.append((tmp, file))
        return file

    def commit(self, cleaned: CleanedSegment, group: list[CleanerSegment]) -> CleanedSegment:
        """The group's streamed ``.log`` made durable and swapped in with its indexes (``replace_segments``). A
        failure before its temporary became the ``.cleaned`` file (a full disk at the last flush) removes it, so
        no stray temporary stays in the partition; after that, what is left is a
        ``.cleaned``/``.swap`` state Kafka's load finishes or rolls back."""
        tmp, file = self.opened[0]
        try:
            file.flush()
            os.fsync(file.fileno())
            file.close()
            written = replace_segments(self.partition_dir, cleaned, log_written=tmp)
        except BaseException:
            self.abort()
            raise
        self.opened.popleft()
        if self.session is not None:
            self.session.wrote(written)
        self.groups += 1
        return without_bytes(cleaned)

    def abort(self) -> None:
        """Every open group's temporary closed and removed (a close that cannot flush still frees it)."""
        while self.opened:
            tmp, file = self.opened.popleft()
            try:
                file.close()
            except OSError:
                pass
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)


class _ScratchWriter(GroupWriter):
    """A planned round's groups written to a scratch directory when a later round reads them (the round ends
    before ``upper``: the map filled), else only counted. ``take`` hands the next round the segments written
    (as ``CleanerSegment`` and their facts); a scratch file a later group replaces is removed once that group is
    written."""

    def __init__(self, scratch: str, max_index_size: int) -> None:
        self.scratch = scratch
        self.max_index_size = max_index_size
        self.upper = 0  # the round's first uncleanable offset
        self.spill = False
        self.opened: collections.deque = collections.deque()  # (path, file) of the group open
        self.new: list[tuple[CleanerSegment, SegmentFacts]] = []
        self.serial = 0

    def begin(self, groups: list[list[CleanerSegment]], end_offset: int) -> None:
        self.spill = end_offset < self.upper
        if self.spill:
            need = sum(s.size for g in groups for s in g)
            short = _short_of_room(self.scratch, need)
            if short:
                raise _ShortOfRoom(f"the planned rounds' scratch directory {short} (set TMPDIR elsewhere)")

    def streams(self) -> bool:
        return self.spill

    def open(self, group: list[CleanerSegment]):
        if not self.spill:
            return None
        self.serial += 1
        path = os.path.join(self.scratch, f"{group[0].base_offset:020d}.{self.serial}.log")
        file = open(path, "wb", buffering=1 << 20)  # noqa: SIM115 - closed in commit or abort
        self.opened.append((path, file))
        return file

    def commit(self, cleaned: CleanedSegment, group: list[CleanerSegment]) -> CleanedSegment:
        if self.spill:
            path, file = self.opened.popleft()
            file.close()
            self.new.append((cleaned.as_segment(self.max_index_size, path), cleaned.facts(path)))
        for seg in group:  # a scratch file of an earlier round: read for the last time
            if seg.log_path.startswith(self.scratch + os.sep):
                os.unlink(seg.log_path)
        return without_bytes(cleaned)

    def abort(self) -> None:
        while self.opened:
            self.opened.popleft()[1].close()

    def take(self) -> list[tuple[CleanerSegment, SegmentFacts]]:
        new, self.new = self.new, []
        return new


def _same_filesystem(a: str, b: str | None) -> bool:
    if b is None:
        return False
    while not os.path.exists(b) and os.path.dirname(b) != b:  # a quarantine not created yet
        b = os.path.dirname(b)
    return os.stat(a).st_dev == os.stat(b).st_dev


def _short_of_room(path: str, need: int) -> str | None:
    """Why the filesystem of ``path`` cannot take ``need`` more bytes (with 1 MiB to spare), else None."""
    while not os.path.exists(path) and os.path.dirname(path) != path:  # a quarantine not created yet
        path = os.path.dirname(path)
    st = os.statvfs(path)
    free = st.f_bavail * st.f_frsize
    if free < need + (1 << 20):
        return f"{path}: {free:,} bytes free, {need:,} needed"
    return None


@dataclass
class _Prepared:
    """A partition loaded and viewed for cleaning, its offset map made: what a round needs."""

    loaded: LoadedForCleaning
    view: object
    config: LogConfig
    cleaning: Cleaner
    start: int
    hw: int
    lso: int
    now_ms: int

    def clean(self, segs: list[CleanerSegment] | None = None, writer: GroupWriter | None = None) -> CleaningRound:
        return self.cleaning.clean(self.loaded.segments if segs is None else segs, self.view.log, self.start,
                                   self.hw, self.loaded.active_producers(), self.config, self.now_ms, writer)


def _prepare(partition_dir: str, config: LogConfig, cleaner: CleanerConfig, now_ms: int,
             log_start_offset_checkpoint: int, high_watermark: int | None, checkpoint: int | None,
             threads: int | None, clean_shutdown: bool,
             recovery_point: int | None) -> tuple[CleaningPlan, _Prepared | None]:
    """The partition loaded, ``LogCleanerManager``'s choice made; the round's context (None: no round)."""
    plan = CleaningPlan(checkpoint=checkpoint)
    try:
        loaded = load_for_cleaning(partition_dir, config, now_ms, log_start_offset_checkpoint, clean_shutdown,
                                   recovery_point)
    except (LogCleaningException, SegdexError, OSError) as e:
        plan.error = f"not loaded: {getattr(e, 'strerror', None) or e}"
        return plan, None
    start, end = loaded.log_start_offset, loaded.log_end_offset
    hw = clamped_high_watermark(high_watermark, start, end)
    lso = last_stable_offset(loaded.first_unstable_at(hw), hw)
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
    cleaning = Cleaner(offset_map, cleaner.dedupe_buffer_load_factor, False, cleaner.thread_io_buffer_size, threads,
                       cleaner.max_message_size)
    return plan, _Prepared(loaded, view, config, cleaning, start, hw, lso, now_ms)


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
