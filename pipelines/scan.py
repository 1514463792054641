"""The work of one Spark task: scan the segments of whole partitions, one scan class per command.

``VerifyScan`` reads and predicts the broker's next start, ``ReindexScan`` also rebuilds missing or corrupt index
files in place, ``RecoverScan`` does what Kafka's load and a clean shutdown leave (producer snapshots,
leader-epoch-checkpoint, ``--truncate``). Plain Python over indexcore, no Spark: tasks get picklable
``PartitionTask``s and a ``RunContext`` and return ``PartitionOutcome``s holding typed rows (``schemas``). A
partition's segments are recovered in offset order by one ``PartitionRecovery`` (producer state and leader epochs
carry over, as in Kafka's ``LogLoader``).
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from dataclasses import dataclass, field, fields, replace
from typing import Any

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.errors import SegdexError
from segdex.indexcore.fs.atomic_file import is_temporary, remove_temporaries
from segdex.indexcore.log import scan as kernel_scan
from segdex.indexcore.log.checkpoints import CorruptCheckpointException
from segdex.indexcore.log.layout import INDEX_FILE_SUFFIX, LEADER_EPOCH_CHECKPOINT, LOG_FILE_SUFFIX, index_paths
from segdex.indexcore.log.log_cleaner_manager import (
    CleaningView,
    clamped_high_watermark,
    cleaning_view,
    last_stable_offset,
    segment_facts,
)
from segdex.indexcore.log.log_dir import held_by, partition_findings
from segdex.indexcore.log.log_loader import (
    LogLoader,
    SegmentOnDisk,
    StartupPreview,
    preview_start,
    producer_state_after_start,
    snapshot_files_in,
)
from segdex.indexcore.log.log_manager import PartitionState
from segdex.indexcore.log.log_segments import (
    PartitionRecovery,
    SegmentRecovery,
    SpeculativeSegment,
    segment_logs,
    speculate_segment,
)
from segdex.indexcore.log.quarantine import truncate_with_quarantine
from segdex.indexcore.log.unloadable import Unloadable
from segdex.indexcore.status import Reason, SegmentStatus
from segdex.indexcore.tools.index_verifier import verify_segment

from . import spark_tasks
from .batch_write import PendingWrites
from .coordinators import COORDINATOR_TOPICS, CoordinatorLoad, PartitionCoordination, coordination
from .run_context import MODE_RECOVER, MODE_REINDEX, MODE_VERIFY, RunContext
from .schemas import PartitionRow, SegmentRow

FUTURE_NOTE = "future replica directory (-future)"
STRAY_NOTE = "a stray replica (LogManager.isStrayKraftReplica): the broker renames it"


@dataclass(frozen=True)
class PartitionTask:
    """One partition directory to scan, with its topic's resolved config and checkpoint facts."""

    log_dir: str
    path: str
    topic: str
    partition: int
    future: bool
    config: LogConfig
    size_bytes: int = 0
    segment_count: int = 0
    log_start_offset: int | None = None
    recovery_point: int | None = None
    high_watermark: int | None = None
    lock_owner: tuple[str, int] | None = None  # (host, pid) of the driver holding the log dir's .lock (reindex)
    read_only: str | None = None  # why this partition is never written (the KRaft metadata log), else None
    now_ms: int | None = None  # recover: the broker clock its load would see (producer expiry)
    quarantine: str | None = None  # recover --truncate: cut corrupt tails as Kafka does, keeping them here
    run_id: str = ""
    clean_shutdown: bool = False  # the log dir holds .kafka_cleanshutdown: the broker's next start skips recovery
    cleaner_checkpoint: int | None = None  # its entry in the log dir's cleaner-offset-checkpoint
    unloadable: tuple[Unloadable, ...] = ()  # what its broker's start trips on: failures in its log dir, own misreads
    stray: str | None = None  # why its broker renames it <dir>.<uuid>-stray after loading it (the metadata log)


@dataclass(frozen=True)
class SegmentSpan:
    """Consecutive segments of one partition too big for one task, recovered on their own in a task of their
    own (``scan_span``) while other tasks do the partition's other spans; the partition's own task then completes
    them in order (``scan_group`` with ``precomputed``)."""

    task: PartitionTask
    segments: tuple[tuple[int, str], ...]  # (base offset, .log path), in offset order
    size_bytes: int


def scan_span(span: SegmentSpan, ctx: RunContext) -> dict[int, SpeculativeSegment]:
    """The span's segments recovered on their own (``speculate_segment``), by base offset; a segment that cannot
    be (unreadable, corrupt) is left out, for the partition's task to recover in order."""
    out = {}
    for base, path in span.segments:
        spec = speculate_segment(path, base, span.task.config, ctx.native)
        if spec is not None:
            out[base] = spec
        spark_tasks.report(1, spec.size if spec is not None else 0)
    return out


@dataclass
class PartitionOutcome:
    """What a task returns for one partition (plain data, picklable)."""

    segments: list[SegmentRow] = field(default_factory=list)
    partition: PartitionRow | None = None
    messages: list[str] = field(default_factory=list)  # problems to print on the driver
    found: Counter = field(default_factory=Counter)  # status as found, per segment
    files_written: int = 0
    bytes: int = 0
    attention: bool = False
    staged: dict[str, int] = field(default_factory=dict)  # index files staged, not yet committed
    files_failed: int = 0  # index files that could not be written (their segment's row says why)
    removed: list[str] = field(default_factory=list)  # temporaries a killed run left, removed under the lock
    notes: list[str] = field(default_factory=list)  # information, not problems
    findings: list[str] = field(default_factory=list)  # leftovers Kafka's loader acts on: "kind file-name"
    # recover: the partition as its load left it; clean means recovered whole with every file written, so the log
    # dir's checkpoints may say so
    loaded: PartitionState | None = None
    startup: StartupPreview | None = None  # verify: what the broker's next start does to this partition
    cleaning: CleaningView | None = None  # verify, compacted topics: what Kafka's log cleaner would do next
    coordination: PartitionCoordination | None = None  # open transactions, a coordinator partition's load


def partition_size(path: str) -> tuple[int, int]:
    """(bytes of .log files, number of .log files) of a partition directory; (0, 0) when unreadable."""
    try:
        logs, _ = segment_logs(path)
    except OSError:
        return 0, 0
    total = 0
    for _, p in logs:
        try:
            total += os.path.getsize(p)
        except OSError:
            pass
    return total, len(logs)


def _segment_row(task: PartitionTask, seg: SegmentRecovery, status: str, reason: str, ctx: RunContext) -> SegmentRow:
    r = seg.result
    try:
        st = os.stat(seg.log_path)
        size, mtime_ms = st.st_size, st.st_mtime_ns // 1_000_000
    except OSError:
        size, mtime_ms = (r.size_bytes if r else None), None
    if task.future:
        reason = f"{FUTURE_NOTE}; {reason}" if reason else FUTURE_NOTE
    return SegmentRow(
        log_dir=task.log_dir, topic=task.topic, partition=task.partition, base_offset=seg.base_offset,
        segment_file=os.path.basename(seg.log_path), future=task.future,
        next_offset=r.next_offset if r else None,
        max_timestamp=r.max_timestamp if r else None,
        offset_of_max_timestamp=r.offset_of_max_timestamp if r else None,
        size_bytes=size,
        log_mtime_ms=mtime_ms,
        valid_bytes=r.valid_bytes if r else None,
        batch_count=r.batch_count if r else None,
        record_count=r.record_count if r else None,
        index_entries=len(r.offset_index) if r else None,
        time_index_entries=len(r.time_index) if r else None,
        txn_index_entries=len(r.txn_index) if r else None,
        magic=max(r.magics) if r and r.magics else None,
        codecs=",".join(sorted(r.codecs)) if r and r.codecs else None,
        status=status, reason=reason, run_id=ctx.run_id, scanned_at=ctx.scanned_at,
    )


def _shown(reason: Reason | None, log_path: str) -> str:
    """A reason as a row shows it: the row says which segment, so other files are named relative to it."""
    return reason.relative_to(os.path.dirname(log_path), own_file=log_path) if reason else ""


def _list_partition(task: PartitionTask, writing: bool, out: PartitionOutcome) -> list[tuple[int, str]]:
    """The partition's segments, with its misnamed files, leftovers and Kafka-load findings reported."""
    logs, misnamed = segment_logs(task.path)
    said = {os.path.basename(u.path) for u in task.unloadable if os.path.dirname(u.path) == task.path}
    for name in (m for m in misnamed if m not in said):  # what a broker trips on: said by discovery
        out.messages.append(f"misnamed: {os.path.join(task.path, name)}: not a segment file name "
                            f"(expected a 20-digit base offset, e.g. 00000000000000001000.log)")
        out.attention = True
    for finding in partition_findings(task.path):
        out.messages.append(f"{finding.kind}: {finding.path}: {finding.message}")
        out.findings.append(f"{finding.kind} {os.path.basename(finding.path)}")
        out.attention = out.attention or finding.attention
    if writing:
        out.removed = remove_temporaries(task.path)
    else:
        leftovers = sorted(n for n in os.listdir(task.path) if is_temporary(n))
        for name in leftovers:
            out.notes.append(f"leftover: {os.path.join(task.path, name)}: temporary file of an interrupted segdex "
                             f"run (`segdex reindex` removes it)")
    return logs


class VerifyScan:
    """``verify`` of one partition directory: every segment recovered in memory and its index files checked,
    nothing written; what the broker's next start does to the partition predicted (``LogLoader``'s dry run,
    ``preview_start``).

    Subclasses write: ``ReindexScan`` and ``RecoverScan``. Rows record the state after the run (a segment whose
    indexes were rewritten is ``ok``); ``found`` counts the statuses as found before any rewrite. Index files are
    staged in ``pending`` when given (the caller commits them, see ``scan_group``), else committed at the end of
    the partition, and only while the driver holds the log dir's ``.lock``.
    """

    writes = False  # whether the command writes into log dirs
    previews = True  # whether it predicts the broker's next start (verify only: the others change the dir)

    def __init__(self, task: PartitionTask, ctx: RunContext, pending: PendingWrites | None = None,
                 precomputed: dict[int, SpeculativeSegment] | None = None) -> None:
        self.task, self.ctx, self.pending = task, ctx, pending
        self.precomputed = precomputed  # segments already recovered on their own (``scan_span``)
        self.out = PartitionOutcome()
        self.writing = self.writes and task.read_only is None  # the KRaft metadata log is never written
        self.staged_writes = pending if pending is not None else PendingWrites()
        self.staged_rows: dict[str, int] = {}  # target path -> index of its segment row (-1: a partition file)
        self.on_disk: list[SegmentOnDisk] | None = None  # the segments as the broker's start will find them
        self.recovery_state: PartitionRecovery | None = None  # producer state and leader epochs after the scan
        self.coordinator_load: CoordinatorLoad | None = None  # a coordinator partition's load, fed by the scan

    def run(self) -> PartitionOutcome:
        task, out = self.task, self.out
        try:
            if self.writing and (why := held_by(task.log_dir, task.lock_owner)):
                out.messages.append(f"refused: {why}")
                out.attention = True
                out.partition = _partition_row(task, [], SegmentStatus.ERROR, why, self.ctx)
                return out
            logs = _list_partition(task, self.writing, out)
        except OSError as e:
            reason = f"{task.path}: cannot list: {e.strerror or e}"
            out.messages.append(f"unreadable: {reason}")
            out.attention = True
            out.partition = _partition_row(task, [], SegmentStatus.UNREADABLE, reason, self.ctx)
            return out
        recovery = self.open_recovery()
        if recovery is None:
            return out
        self.recovery_state = getattr(recovery, "recovery", recovery)
        if task.read_only is None and task.topic in COORDINATOR_TOPICS:
            self.coordinator_load = CoordinatorLoad(task, logs)
            self.recovery_state.reader = self.coordinator_load.feed  # the load reads what the scan maps
        for i, (base, log_path) in enumerate(logs):
            if self._segment(recovery, logs, i, base, log_path):
                break
        self.recovery_state.reader = None
        self.finish()
        if task.read_only is None:
            out.coordination = coordination(task, self.recovery_state.producer_state, self.coordinator_load)
        _commit_or_keep(out, self.staged_writes, self.staged_rows, self.pending is None)
        summarize(task, out, self.ctx)
        return out

    def open_recovery(self) -> PartitionRecovery | LogLoader | None:
        """What recovers the segments in order; None (with the partition's row set) when the partition is not
        scanned."""
        if self.previews and self.task.read_only is None:
            self.on_disk = []
        return PartitionRecovery(self.task.config, self.precomputed)

    def _segment(self, recovery: PartitionRecovery | LogLoader, logs: list[tuple[int, str]], i: int, base: int,
                 log_path: str) -> bool:
        """Scan one segment into its row; True when the later segments are not scanned (moved to quarantine)."""
        task, out = self.task, self.out
        completed = self.recovery_state.completed
        seg = recovery.recover_segment(log_path, base, self.ctx.native)
        self.on_disk = _on_disk(self.on_disk, seg)
        # the metadata log's active segment is never closed by Kafka, even at a clean stop
        verdict = verify_segment(seg, never_closed=task.read_only is not None and base == logs[-1][0])
        status, reason = verdict.status, verdict.reason
        out.found[status] += 1
        if seg.result is not None:
            out.bytes += seg.result.size_bytes
        if self.recovery_state.completed == completed:  # one completed from its span was reported by the span's task
            spark_tasks.report(1, seg.result.size_bytes if seg.result is not None else 0)
        status, reason, stop = self.act(seg, logs[i + 1:], status, reason)
        if SegmentStatus(status).needs_attention:
            out.attention = True
            out.messages.append(f"{status}: {task.topic}-{task.partition}/{os.path.basename(log_path)}: "
                                f"{_shown(reason, log_path)}")
        out.segments.append(_segment_row(task, seg, status, _shown(reason, log_path), self.ctx))
        return stop

    def act(self, seg: SegmentRecovery, later: list[tuple[int, str]], status: SegmentStatus,
            reason: Reason | None) -> tuple[SegmentStatus, Reason | None, bool]:
        """What the command does to a segment it checked: the row's status and reason after it, and whether
        the later segments are gone. ``verify`` does nothing."""
        return status, reason, False

    def finish(self) -> None:
        """After the last segment: the startup preview and, for a compacted topic, the cleaner's view (none where
        ``on_disk`` was not kept)."""
        _preview(self.task, self.on_disk, self.out)
        self.out.cleaning = _cleaning_view(self.task, self.on_disk, self.recovery_state, self.ctx)


class ReindexScan(VerifyScan):
    """``reindex``: rebuild in place the index files that are missing or corrupt (the valid part of a corrupt tail
    included); valid ones that differ from a rebuild (``equivalent``) too with ``normalize``."""

    writes = True
    previews = False
    normalizes = False  # rewrite equivalent index files whatever the run's --normalize (recover)

    def rewrites(self, status: SegmentStatus) -> bool:
        status = SegmentStatus(status)
        return status.rebuildable or ((self.normalizes or self.ctx.normalize) and status is SegmentStatus.EQUIVALENT)

    def stage(self, seg: SegmentRecovery, status: SegmentStatus, reason: Reason | None,
              force: bool = False) -> tuple[SegmentStatus, Reason | None]:
        """Stage the segment's rebuilt index files where the command rewrites them (or ``force``)."""
        if self.writing and seg.files and (force or self.rewrites(status)):
            status, reason = _stage(seg, status, reason, self.staged_writes, self.staged_rows, self.out)
        return status, reason

    def act(self, seg: SegmentRecovery, later: list[tuple[int, str]], status: SegmentStatus,
            reason: Reason | None) -> tuple[SegmentStatus, Reason | None, bool]:
        return *self.stage(seg, status, reason), False


class RecoverScan(ReindexScan):
    """``recover``: what Kafka's load with no clean-shutdown marker leaves, then a clean shutdown: every index file
    as Kafka's recovery writes it, the producer snapshots and ``leader-epoch-checkpoint`` (``LogLoader``); with
    ``--truncate`` (``task.quarantine``), corrupt tails cut as Kafka cuts them, every removed byte kept."""

    normalizes = True

    def open_recovery(self) -> PartitionRecovery | LogLoader | None:
        if not self.writing:
            return PartitionRecovery(self.task.config, self.precomputed)
        self.loader = _open_loader(self.task, self.out, self.ctx, self.precomputed)
        return self.loader

    def act(self, seg: SegmentRecovery, later: list[tuple[int, str]], status: SegmentStatus,
            reason: Reason | None) -> tuple[SegmentStatus, Reason | None, bool]:
        truncated = moved_later = False
        if self.writing and self.task.quarantine and status == SegmentStatus.CORRUPT_LOG_TAIL:
            gone = [p for _, p in later] if self.loader.truncates_later(seg) else []
            status, reason = _truncate(self.task, seg, gone, self.out, status, reason)
            truncated = status == SegmentStatus.OK
            moved_later = truncated and bool(gone)
            if truncated:  # the files changed under the load fed so far: it reads them again once the scan is done
                self.coordinator_load = self.recovery_state.reader = None
        return *self.stage(seg, status, reason, force=truncated), moved_later

    def finish(self) -> None:
        if self.writing:
            _stage_load(self.task, self.loader, self.out, self.staged_writes, self.staged_rows)


SCANS: dict[str, type[VerifyScan]] = {MODE_VERIFY: VerifyScan, MODE_REINDEX: ReindexScan, MODE_RECOVER: RecoverScan}


def scan_partition(task: PartitionTask, ctx: RunContext, pending: PendingWrites | None = None,
                   precomputed: dict[int, SpeculativeSegment] | None = None) -> PartitionOutcome:
    """Scan one partition directory as the run's command does (``SCANS``); ``precomputed``: its segments already
    recovered by ``scan_span`` tasks."""
    return SCANS[ctx.command](task, ctx, pending, precomputed).run()


def _on_disk(on_disk: list[SegmentOnDisk] | None, seg: SegmentRecovery) -> list[SegmentOnDisk] | None:
    """The segment as the broker's start will find it; None once a segment could not be read (no preview)."""
    if on_disk is None or seg.result is None:
        return None
    present = os.path.exists(index_paths(seg.log_path)[INDEX_FILE_SUFFIX])
    on_disk.append(SegmentOnDisk(seg.base_offset, seg.log_path, seg.result, present))
    return on_disk


def _preview(task: PartitionTask, on_disk: list[SegmentOnDisk] | None, out: PartitionOutcome) -> None:
    """verify: what the broker's next start does here; data it would lose is a problem to print."""
    if on_disk is None:
        return
    try:
        out.startup = preview_start(on_disk, task.clean_shutdown, task.recovery_point, task.log_start_offset,
                                    producer_state=not task.config.legacy_record_version,
                                    unloadable=task.unloadable, config=task.config)
    except OSError as e:
        out.notes.append(f"note: {task.path}: no startup preview: {e.strerror or e}")
        return
    if task.stray is not None:  # LogManager loads it, then the metadata publisher renames it
        out.startup.notes.append(f"{STRAY_NOTE} {os.path.basename(task.path)}.<uuid>-stray after its load: "
                                 f"{task.stray}")
    where = f"{task.topic}-{task.partition}"
    if out.startup.loses_data:
        out.attention = True
        out.messages.append(f"startup: {where}: {startup_loss(out.startup)}")
    for note in out.startup.notes:
        out.attention = True
        if not any(note.startswith(u.effect) for u in task.unloadable):  # those: one line per log dir, from discovery
            out.messages.append(f"startup: {where}: {note}")


def startup_loss(p: StartupPreview) -> str:
    """ "starting the broker now deletes 6 segments, 386,970 bytes, offsets 298..1536" """
    parts = []
    if p.deleted:
        parts.append(f"{len(p.deleted)} segment{'s' if len(p.deleted) != 1 else ''}")
    parts.append(f"{p.lost_bytes:,} bytes")
    if p.lost_offsets is not None:
        first, last = p.lost_offsets
        parts.append(f"offsets {first}..{last}" if last is not None else f"offsets from {first}")
    verb = "deletes" if p.deleted else "cuts"
    return f"starting the broker now {verb} {', '.join(parts)}"


def _commit_or_keep(out: PartitionOutcome, writes: PendingWrites, staged_rows: dict[str, int], commit: bool) -> None:
    """Commit the partition's staged files now, or leave them staged for the group's commit (``scan_group``)."""
    if commit:
        fail_writes(out, staged_rows, writes.commit())
    else:
        out.staged = staged_rows


def _open_loader(task: PartitionTask, out: PartitionOutcome, ctx: RunContext,
                 precomputed: dict[int, SpeculativeSegment] | None = None) -> LogLoader | None:
    """recover: the partition's ``LogLoader``, or None with an error row (a leader-epoch-checkpoint Kafka cannot
    read fails the broker's load of the partition)."""
    try:
        return LogLoader(task.path, task.config, task.now_ms or 0, task.log_start_offset or 0, precomputed)
    except (CorruptCheckpointException, OSError) as e:
        why = f"leader-epoch-checkpoint: {getattr(e, 'strerror', None) or e}"
        out.messages.append(f"error: {task.path}: {why}; the broker would not load this partition")
        out.attention = True
        out.partition = _partition_row(task, [], SegmentStatus.ERROR, why, ctx)
        out.loaded = PartitionState(task.topic, task.partition, False)
        return None


def _truncate(task: PartitionTask, seg: SegmentRecovery, later: list[str], out: PartitionOutcome,
              status: SegmentStatus, reason: Reason | None) -> tuple[SegmentStatus, Reason | None]:
    """recover --truncate: cut the segment at its first invalid batch and move the later segments away, every
    removed byte kept in the quarantine; returns the row's status and reason (unchanged when that failed)."""
    valid, size = seg.result.valid_bytes, seg.result.size_bytes
    why = seg.result.stop_reason or "corrupt tail"
    try:
        manifest = truncate_with_quarantine(task.path, seg.log_path, valid, later, task.quarantine, task.run_id, why)
    except OSError as e:
        out.attention = True
        out.messages.append(f"error: {seg.log_path}: not truncated: {e.strerror or e}; nothing was removed")
        return status, reason
    where = os.path.dirname(manifest.pieces[0].quarantined)
    note = (f"truncated at byte {valid} as Kafka's recovery would ({why}): {size - valid} bytes"
            + (f" and {len(later)} later segments" if later else "") + f" kept in {where} (manifest.json)")
    out.notes.append(f"truncated: {seg.log_path}: {note}")
    return SegmentStatus.OK, Reason(note, seg.log_path)


def _stage_load(task: PartitionTask, loader: LogLoader, out: PartitionOutcome, writes: PendingWrites,
                staged_rows: dict[str, int]) -> None:
    """recover: when every segment came out ``ok``, stage the producer snapshots and the leader-epoch-checkpoint
    Kafka's load leaves, and delete the snapshot files it would delete; otherwise leave them to the broker."""
    clean = not out.attention and all(r.status == SegmentStatus.OK for r in out.segments)
    out.loaded = PartitionState(task.topic, task.partition, clean and bool(out.segments))
    if not out.segments:
        out.attention = True
        out.messages.append(f"no segments: {task.path}: no .log file; the broker creates an empty segment there")
    if not out.loaded.clean:
        return
    loaded = loader.finish()
    wanted = loaded.snapshot_files()
    if loaded.leader_epoch_checkpoint is not None:
        wanted[LEADER_EPOCH_CHECKPOINT] = loaded.leader_epoch_checkpoint
    template = os.path.join(task.path, out.segments[-1].segment_file)
    try:
        for name in snapshot_files_in(task.path):
            if name not in wanted:
                os.unlink(os.path.join(task.path, name))
        if loaded.leader_epoch_checkpoint is None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(task.path, LEADER_EPOCH_CHECKPOINT))
        for name, data in wanted.items():
            path = os.path.join(task.path, name)
            if writes.stage(path, data, template=template):
                staged_rows[path] = -1  # not a segment's file
                out.files_written += 1
    except OSError as e:
        out.loaded = replace(out.loaded, clean=False)
        out.attention = True
        out.messages.append(f"error: {task.path}: producer snapshots not written: {e.strerror or e}")
        return
    out.loaded = replace(out.loaded, log_start_offset=loaded.log_start_offset, log_end_offset=loaded.log_end_offset,
                         first_base_offset=loader.bases[0] if loader.bases else None,
                         snapshots=len(loaded.snapshots))


def _stage(seg: SegmentRecovery, status: SegmentStatus, reason: Reason | None, writes: PendingWrites,
           staged_rows: dict[str, int], out: PartitionOutcome) -> tuple[SegmentStatus, Reason | None]:
    """Stage a segment's rebuilt index files (its row is the next of ``out.segments``); returns the row's status
    and reason after the (pending) write."""
    row = len(out.segments)
    stem = seg.log_path[: -len(LOG_FILE_SUFFIX)]
    mine: list[str] = []
    try:
        for suffix, data in seg.files.items():
            if data is not None and writes.stage(stem + suffix, data, template=seg.log_path):
                mine.append(stem + suffix)
    except OSError as e:  # ENOSPC, EACCES, EPERM on the owner...: none of this segment's files is replaced
        writes.discard(set(mine))
        out.files_failed += sum(1 for data in seg.files.values() if data is not None)
        out.attention = True
        note = f"index files not written: {e.strerror or e}"
        return SegmentStatus.ERROR, (reason or Reason("", seg.log_path)).joined(note)
    for target in mine:
        staged_rows[target] = row
    out.files_written += len(mine)
    if status != SegmentStatus.CORRUPT_LOG_TAIL:
        return SegmentStatus.OK, None
    return status, reason


def fail_writes(out: PartitionOutcome, staged_rows: dict[str, int], errors: list[tuple[str, str]]) -> None:
    """Mark the segments whose index files could not be replaced (the files there are the old ones): the row
    becomes ``error`` with why, and the file counts as failed, not written."""
    for path, why in errors:
        out.attention = True
        out.messages.append(f"error: {path}: not written: {why}")
        if out.loaded is not None:
            out.loaded = replace(out.loaded, clean=False)
        i = staged_rows.get(path)
        if i is not None and i < 0:  # a partition-level file (recover's snapshots, leader-epoch-checkpoint)
            out.files_written -= 1
            out.files_failed += 1
        elif i is not None:
            out.files_written -= 1
            out.files_failed += 1
            row = out.segments[i]
            row.status = SegmentStatus.ERROR
            note = f"{os.path.basename(path)} not written: {why}"
            row.reason = f"{row.reason}; {note}" if row.reason else note


def summarize(task: PartitionTask, out: PartitionOutcome, ctx: RunContext) -> None:
    """(Re)compute the partition row from the segment rows."""
    worst = SegmentStatus.worst([r.status for r in out.segments])
    counts = Counter(r.status for r in out.segments)
    reason = "" if worst == SegmentStatus.OK else ", ".join(
        f"{n} {s}" for s, n in sorted(counts.items()) if s != SegmentStatus.OK)
    if out.findings:  # files Kafka's loader will delete or swap in: the partition's reason keeps them too
        reason = "; ".join(x for x in (reason, "; ".join(out.findings)) if x)
    out.partition = _partition_row(task, out.segments, worst, reason, ctx, out)


def _partition_row(task: PartitionTask, segments: list[SegmentRow], status: str, reason: str, ctx: RunContext,
                   out: PartitionOutcome | None = None) -> PartitionRow:
    """The partition's row: from its segment rows, and from ``out``'s startup preview and cleaner view (none for
    a partition that could not be scanned)."""
    startup, cleaning = (out.startup, out.cleaning) if out is not None else (None, None)
    last = segments[-1] if segments else None
    stamps = [r.max_timestamp for r in segments if r.max_timestamp is not None]
    if task.future:
        reason = f"{FUTURE_NOTE}; {reason}" if reason else FUTURE_NOTE
    return PartitionRow(
        log_dir=task.log_dir, topic=task.topic, partition=task.partition, future=task.future,
        log_start_offset=task.log_start_offset, recovery_point=task.recovery_point,
        high_watermark=task.high_watermark,
        log_end_offset=last.next_offset if last else None,
        segment_count=len(segments),
        size_bytes=sum(r.size_bytes or 0 for r in segments),
        max_timestamp=max(stamps) if stamps else None,
        status=status, reason=reason, run_id=ctx.run_id, scanned_at=ctx.scanned_at,
        **_startup_columns(startup), **_cleaner_columns(task, cleaning),
    )


def _cleaner_columns(task: PartitionTask, view: CleaningView | None) -> dict[str, Any]:
    """The partitions table's cleaner view (verify, compacted topics; None elsewhere)."""
    if view is None:
        return dict.fromkeys(f.name for f in fields(PartitionRow) if f.name.startswith("cleaner_"))
    ratio = view.log.cleanable_ratio
    return {"cleaner_checkpoint": task.cleaner_checkpoint,
            "cleaner_first_dirty_offset": view.offsets.first_dirty_offset,
            "cleaner_first_uncleanable_offset": view.log.first_uncleanable_offset,
            "cleaner_dirty_ratio": None if ratio != ratio else ratio, "cleaner_would_clean": view.would_clean,
            "cleaner_oldest_dirty_age_ms": view.oldest_dirty_age_ms}


def _cleaning_view(task: PartitionTask, on_disk: list[SegmentOnDisk] | None, recovery: PartitionRecovery | None,
                   ctx: RunContext) -> CleaningView | None:
    """verify: ``LogCleanerManager``'s view of a compacted partition as the scan found it (its segments'
    timestamps as Kafka's load rebuilds the indexes, the transactions its load leaves for the last stable offset,
    the high watermark checkpointed, clamped to the log as the broker clamps it), at the scan's clock."""
    if not on_disk or recovery is None or task.read_only is not None or not task.config.compact:
        return None
    try:
        facts = [segment_facts(s.log_path, s.base_offset, s.result) for s in on_disk]
    except (OSError, SegdexError):
        return None
    start = max(task.log_start_offset or 0, on_disk[0].base_offset)
    end = on_disk[-1].result.next_offset
    hw = clamped_high_watermark(task.high_watermark, start, end)
    # the transactions the broker's load leaves (a clean start without a snapshot has none; those its last replay
    # completed count until the high watermark passes their markers), else the scan's replay's
    try:
        state = producer_state_after_start(on_disk, task.clean_shutdown, task.recovery_point, task.log_start_offset,
                                           task.config)
    except OSError:  # a file gone since the scan read it: the scan's own replay
        state = None
    state = (state or recovery.producer_state).copy()
    state.remove_unreplicated_transactions(hw)
    lso = last_stable_offset(state.first_unstable_offset(start), hw)
    now = int(ctx.scanned_at.timestamp() * 1000)
    return cleaning_view(facts, start, end, lso, task.cleaner_checkpoint, now, task.config)


def _startup_columns(p: StartupPreview | None) -> dict[str, Any]:
    """The partitions table's startup preview (verify only; None in other modes and where it is unknown)."""
    if p is None:
        return dict.fromkeys(f.name for f in fields(PartitionRow) if f.name.startswith("startup_"))
    return {"startup_action": p.action, "startup_recovered_segments": len(p.recovered),
            "startup_log_end_offset": p.log_end_offset, "startup_deleted_segments": len(p.deleted),
            "startup_lost_bytes": p.lost_bytes, "startup_note": "; ".join(p.notes) or None}


def scan_group(tasks: list[PartitionTask], ctx: RunContext,
               precomputed: dict[str, dict[int, SpeculativeSegment]] | None = None) -> list[PartitionOutcome]:
    """Scan a group of partitions one after another (one Spark task's share); index files of the whole group
    are made durable with one flush and then renamed into place (see ``batch_write``), after checking that the
    driver still holds each log dir's ``.lock``. ``precomputed``: by partition path, segments ``scan_span``
    tasks recovered already."""
    pending = PendingWrites()
    precomputed = precomputed or {}
    try:
        outcomes = [scan_partition(t, ctx, pending, precomputed.get(t.path)) for t in tasks]
        commit_group(tasks, outcomes, pending, ctx)
    except BaseException:
        pending.discard()
        raise
    return outcomes


def commit_group(tasks: list[PartitionTask], outcomes: list[PartitionOutcome], pending: PendingWrites,
                 ctx: RunContext) -> None:
    """Replace the staged index files of a group, except in log dirs whose ``.lock`` the driver no longer holds
    (a broker may be starting there); every file not replaced turns its segment's row to ``error``."""
    lost: dict[str, str] = {}
    for t, o in zip(tasks, outcomes, strict=True):
        if o.staged and t.log_dir not in lost:
            why = held_by(t.log_dir, t.lock_owner)
            if why:
                lost[t.log_dir] = why
    errors = [(target, lost[t.log_dir]) for t, o in zip(tasks, outcomes, strict=True)
              if t.log_dir in lost for target in o.staged]
    pending.discard({target for target, _ in errors})
    errors += pending.commit()
    for task, out in zip(tasks, outcomes, strict=True):
        mine = [(p, why) for p, why in errors if p in out.staged]
        if mine:
            fail_writes(out, out.staged, mine)
            summarize(task, out, ctx)
        out.staged = {}


def scan_item(ctx: RunContext, item: list[PartitionTask] | SegmentSpan) -> list[PartitionOutcome] | dict:
    """One task of a scan's first wave: a group of whole partitions (``scan_group``) or a span (``scan_span``)."""
    kernel_scan.use_single_threaded(ctx.single_threaded_kernel)
    return scan_span(item, ctx) if isinstance(item, SegmentSpan) else scan_group(item, ctx)


def complete_partition(ctx: RunContext, item: tuple[PartitionTask, dict[int, SpeculativeSegment]]
                       ) -> list[PartitionOutcome]:
    """One task of the second wave: a split partition scanned in order, its spans' segments completed."""
    task, precomputed = item
    kernel_scan.use_single_threaded(False)  # few tasks, little left to scan: a helper thread may help
    return scan_group([task], ctx, {task.path: precomputed})
