"""Reindex or verify whole log directories with Spark, and record what was found in Delta.

Driver: check locks, list partition directories and checkpoints, resolve each topic's config, pack partitions
into byte-balanced groups (one Spark task each), run ``scan.scan_group`` on the executors, collect plain rows,
then MERGE them into ``segments`` and ``partitions`` and append the run to ``runs``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import heapq
import json
import os
import socket
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from segdex.indexcore.config.log_config import INDEX_CONFIGS, LogConfig, TopicConfigResolver, is_cluster_metadata
from segdex.indexcore.errors import SegdexError
from segdex.indexcore.fs.atomic_file import remove_temporaries
from segdex.indexcore.log.checkpoints import CorruptCheckpointException, read_offset_checkpoint
from segdex.indexcore.log.layout import CLEAN_SHUTDOWN_FILE, CLEANER_OFFSET_CHECKPOINT
from segdex.indexcore.log.log_dir import (
    LogDirLock,
    LogDirLockedException,
    ensure_not_locked,
    list_log_dir,
)
from segdex.indexcore.log.log_manager import read_checkpoints
from segdex.indexcore.log.log_segments import segment_logs
from segdex.indexcore.log.unloadable import Unloadable, unloadable_refusal
from segdex.indexcore.metadata.metadata_image import most_advanced_image, stray_replicas
from segdex.indexcore.status import ExitStatus

from . import coordinators, preflight, schemas, spark_tasks
from .cluster_metadata import cluster_tables
from .coordinators import COORDINATOR_TOPICS, CoordinatorTables
from .engine import Engine
from .interrupts import RunInterrupted, ignored_signals, stop_on_signals, stop_spark
from .metadata_store import MetadataStore, Scope
from .run_context import RunContext, RunRequest
from .runs import new_run_id
from .scan import (
    PartitionOutcome,
    PartitionTask,
    SegmentSpan,
    complete_partition,
    partition_size,
    scan_item,
)
from .schemas import PartitionRow, RunRow, SegmentRow, TopicConfigRow
from .ticker import Ticker

# A partition is split into spans only above this many bytes: a split costs a second wave of tasks.
SPAN_MIN_BYTES = 256 << 20
METADATA_LOG_NOTE = ("the KRaft metadata log (__cluster_metadata): verified, never rewritten; it follows "
                     "metadata.* settings and its own snapshots")



@dataclass
class Discovery:
    """What the driver found before any Spark work."""

    tasks: list[PartitionTask] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why): not scanned, no harm
    refused: list[tuple[str, str]] = field(default_factory=list)  # (log dir, why): needs attention
    unloadable: list[Unloadable] = field(default_factory=list)  # what a broker's start trips on (every log dir)
    listed: list[str] = field(default_factory=list)  # log dirs whose partition directories were all listed
    notes: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)  # temporaries of an interrupted run, removed under the lock

    @property
    def total_bytes(self) -> int:
        return sum(t.size_bytes for t in self.tasks)

    @property
    def total_segments(self) -> int:
        return sum(t.segment_count for t in self.tasks)


@dataclass
class RunSummary:
    run_id: str
    command: str
    exit_status: int
    run_row: RunRow
    outcomes: list[PartitionOutcome]
    discovery: Discovery
    wall_seconds: float
    phases: dict[str, float] = field(default_factory=dict)  # discover, scan (the Spark job), metadata
    metadata_path: str = ""
    found: Counter = field(default_factory=Counter)  # segment statuses as found, before any rewrite
    on_defaults: list[str] = field(default_factory=list)  # topics whose index settings nobody gave
    coordination: CoordinatorTables | None = None  # groups, transactions and the restore check
    driver_peak_bytes: int | None = None  # the command's own peak memory (the CLI fills it)

    @property
    def segment_rows(self) -> list[SegmentRow]:
        return [r for o in self.outcomes for r in o.segments]


def discover(log_dirs: list[str], config: LogConfig, topic_configs: dict[str, LogConfig] | None = None,
             lock_owner: tuple[str, int] | None = None, now_ms: int | None = None,
             allow_unloadable: bool = False) -> Discovery:
    """Lock check, then every live and ``-future`` partition directory of each log dir with its checkpoints.

    Log dirs are keyed by their real path (a symlink and its target are one log dir). With ``lock_owner`` (the
    writing commands), the caller already holds each dir's ``.lock`` and the tasks carry who holds it; then a log
    dir holding what a broker's start trips on (``Discovery.unloadable``) is refused, nothing is written there,
    unless ``allow_unloadable``. Each task carries what its broker's start trips on, for the startup preview.
    """
    topic_configs = topic_configs or {}
    found = Discovery()
    seen: set[str] = set()
    for raw in log_dirs:
        log_dir = os.path.realpath(raw)
        if log_dir in seen:
            continue
        seen.add(log_dir)
        try:
            ensure_not_locked(log_dir)
            listing = list_log_dir(log_dir)
        except LogDirLockedException as e:
            found.refused.append((log_dir, str(e)))
            continue
        except (SegdexError, OSError) as e:
            found.refused.append((log_dir, f"{log_dir}: not a readable log dir: {getattr(e, 'strerror', None) or e}"))
            continue
        found.skipped.extend(listing.skipped)
        found.unloadable.extend(listing.unloadable)
        if listing.unloadable and lock_owner is not None and not allow_unloadable:
            found.refused.append((log_dir, unloadable_refusal(log_dir, listing.unloadable)))
            continue
        found.listed.append(log_dir)
        try:
            cps = read_checkpoints(log_dir)
            recovery, start, hw = cps.recovery_points, cps.log_start_offsets, cps.high_watermarks
        except (CorruptCheckpointException, OSError) as e:
            found.notes.append(f"{log_dir}: checkpoint files ignored: {e}")
            recovery, start, hw = {}, {}, {}
        try:
            cleaner = read_offset_checkpoint(os.path.join(log_dir, CLEANER_OFFSET_CHECKPOINT))
        except (CorruptCheckpointException, OSError) as e:
            found.notes.append(f"{log_dir}: {CLEANER_OFFSET_CHECKPOINT} ignored: {e}")
            cleaner = {}
        clean_shutdown = os.path.exists(os.path.join(log_dir, CLEAN_SHUTDOWN_FILE))
        for p in listing.partitions:
            size, count = partition_size(p.path)
            key = (p.topic, p.partition)
            read_only = METADATA_LOG_NOTE if is_cluster_metadata(p.topic) else None
            found.tasks.append(PartitionTask(
                log_dir=log_dir, path=p.path, topic=p.topic, partition=p.partition, future=p.kind == "future",
                config=topic_configs.get(p.topic, config), size_bytes=size, segment_count=count,
                log_start_offset=start.get(key), recovery_point=recovery.get(key), high_watermark=hw.get(key),
                lock_owner=lock_owner, read_only=read_only, now_ms=now_ms, clean_shutdown=clean_shutdown,
                cleaner_checkpoint=cleaner.get(key), unloadable=_bearing_on(listing.unloadable, p.path)))
    _mark_strays(found)
    return found


def _mark_strays(found: Discovery) -> None:
    """Each task its broker renames ``-stray`` after loading it (the metadata log's image); a metadata log that
    cannot be read marks none (the config resolution has said why)."""
    try:
        strays = stray_replicas(found.listed)
    except (SegdexError, OSError):
        return
    found.tasks = [dataclasses.replace(t, stray=strays[t.path]) if t.path in strays else t for t in found.tasks]


def _bearing_on(problems: list[Unloadable], partition_dir: str) -> tuple[Unloadable, ...]:
    """What a partition's startup preview must know: any failure in its log dir, and its own misread files."""
    return tuple(u for u in problems if u.fails or os.path.dirname(u.path) == partition_dir)


def plan_groups(tasks: list[PartitionTask], groups: int) -> list[list[PartitionTask]]:
    """Pack partitions into at most ``groups`` lists of similar byte totals (largest first); biggest groups first."""
    groups = max(1, min(groups, len(tasks)))
    heap = [(0, i, []) for i in range(groups)]
    for task in sorted(tasks, key=lambda t: (-t.size_bytes, -t.segment_count, t.path)):
        total, i, members = heapq.heappop(heap)
        members.append(task)
        heapq.heappush(heap, (total + task.size_bytes + 4096 * max(1, task.segment_count), i, members))
    packed = sorted(heap, key=lambda g: -g[0])
    return [members for _, _, members in packed if members]


def rescanned_scope(discovery: Discovery, outcomes: list[PartitionOutcome]) -> Scope | None:
    """The rows this run replaces: every row of the log dirs it listed (rows without a new row are gone:
    segments deleted by retention, partitions moved away), except partitions that could not be scanned."""
    if not discovery.listed:
        return None
    keep = frozenset((o.partition.log_dir, o.partition.topic, o.partition.partition, o.partition.future)
                     for o in outcomes
                     if o.partition and o.partition.segment_count == 0 and o.partition.status != "ok")
    return Scope("log_dir", frozenset(discovery.listed), ("log_dir", "topic", "partition", "future"), keep)


@dataclass(frozen=True)
class ProgressSnapshot:
    """How far the scan is: segments and bytes done of the totals, the rate so far and the time left."""

    segments_done: int
    total_segments: int
    bytes_done: int
    total_bytes: int
    elapsed_s: float

    @property
    def rate(self) -> float:
        return self.bytes_done / max(self.elapsed_s, 1e-6)

    @property
    def left_s(self) -> float | None:
        return (self.total_bytes - self.bytes_done) / self.rate if self.rate > 0 else None


class Progress(Ticker):
    """Driver-side progress from the tasks as they go (``spark_tasks.ProgressChannel``: each task reports every
    segment it finishes); every ``interval`` seconds a ``ProgressSnapshot`` goes to ``report`` (the CLI shows
    it). ``scan`` runs without one when executors cannot reach this process."""

    def __init__(self, total_segments: int, total_bytes: int, report: Callable[[ProgressSnapshot], None],
                 channel: spark_tasks.ProgressChannel, interval: float = 1.0) -> None:
        super().__init__(interval, "segdex-progress")
        self.total_segments, self.total_bytes = total_segments, total_bytes
        self.report, self.channel = report, channel

    def snapshot(self) -> ProgressSnapshot:
        return ProgressSnapshot(min(self.channel.segments, self.total_segments), self.total_segments,
                                min(self.channel.bytes, self.total_bytes), self.total_bytes,
                                time.monotonic() - self.started)

    def tick(self, elapsed_s: float) -> None:
        self.report(self.snapshot())


def plan_spans(tasks: list[PartitionTask], slots: int) -> tuple[list[PartitionTask], list[SegmentSpan]]:
    """Split partitions bigger than one task's share of the bytes (and than ``SPAN_MIN_BYTES``) into spans of
    consecutive segments of about that share, so that one huge partition spreads over every core; returns the
    partitions left whole and the spans (in offset order per partition).

    A coordinator partition (``__consumer_offsets``, ``__transaction_state``) stays whole: its task replays every
    record in order for the coordinator's load from the bytes its scan maps (``coordinators.CoordinatorLoad``), a
    pass far slower than the scan itself, so spans would gain little and make the load read their segments again."""
    share = max(SPAN_MIN_BYTES, -(-sum(t.size_bytes for t in tasks) // max(1, slots)))
    whole: list[PartitionTask] = []
    spans: list[SegmentSpan] = []
    for task in tasks:
        if task.size_bytes < 2 * share or task.segment_count < 2 or task.topic in COORDINATOR_TOPICS:
            whole.append(task)
            continue
        cut: list[SegmentSpan] = []
        members: list[tuple[int, str]] = []
        size = 0
        try:
            logs, _ = segment_logs(task.path)
            for base, path in logs:
                members.append((base, path))
                size += os.path.getsize(path)
                if size >= share:
                    cut.append(SegmentSpan(task, tuple(members), size))
                    members, size = [], 0
        except OSError:  # the partition's own task reports what cannot be read
            cut = []
        if members:
            cut.append(SegmentSpan(task, tuple(members), size))
        if len(cut) < 2:
            whole.append(task)
        else:
            spans.extend(cut)
    return whole, spans


def scan(spark: Engine, discovery: Discovery, ctx: RunContext,
         progress: Callable[[ProgressSnapshot], None] | None = None) -> list[PartitionOutcome]:
    """Run the scan of every discovered partition as Spark tasks (``spark_tasks.run_tasks``: DataFrame
    operations only, classic Spark or Spark Connect); returns the outcomes on the driver.

    Tasks are planned by bytes: groups of whole partitions, and spans of the partitions too big for one task
    (``plan_spans``), recovered segment by segment on their own in the same wave. A second wave then completes
    each split partition in order from its spans' results (producer state, ``.txnindex``, leader epochs,
    snapshots: ``PartitionRecovery``), which leaves the same bytes as one task recovering it whole."""
    if not discovery.tasks:
        return []
    cpus = spark_tasks.parallelism(spark)
    slots = cpus * 4
    whole, spans = plan_spans(discovery.tasks, slots)
    groups: list[Any] = plan_groups(whole, max(1, slots - len(spans))) if whole else []
    items = sorted(groups + spans, key=lambda i: -(i.size_bytes if isinstance(i, SegmentSpan)
                                                   else sum(t.size_bytes for t in i)))
    if cpus > 1 and len(items) >= cpus:  # every CPU has a task: a CRC helper thread per task only competes
        ctx = dataclasses.replace(ctx, single_threaded_kernel=True)
    description = f"segdex {ctx.command}: {len(discovery.tasks)} partitions, {discovery.total_segments} segments"

    # module functions, not closures: they pickle by name (the one-host engine needs no cloudpickle, no pyspark)
    run_item, complete = functools.partial(scan_item, ctx), functools.partial(complete_partition, ctx)
    host = spark_tasks.driver_host(spark) if progress else None
    with contextlib.ExitStack() as stack:
        sender = None
        if progress is not None and host is not None:
            channel = stack.enter_context(spark_tasks.ProgressChannel(host))
            stack.enter_context(Progress(discovery.total_segments, discovery.total_bytes, progress, channel))
            sender = channel.sender
        results = spark_tasks.run_tasks(spark, items, run_item, description, sender)
        outcomes = [o for item, r in zip(items, results, strict=True) if not isinstance(item, SegmentSpan)
                    for o in r]
        if spans:
            split: dict[str, tuple[PartitionTask, dict]] = {}
            for item, r in zip(items, results, strict=True):
                if isinstance(item, SegmentSpan):
                    split.setdefault(item.task.path, (item.task, {}))[1].update(r)
            done = spark_tasks.run_tasks(spark, list(split.values()), complete,
                                         f"{description}: split partitions in order", sender)
            outcomes += [o for r in done for o in r]
    return outcomes


class RunFailed(SegdexError):
    """A run that failed after it had changed files; ``changed`` says what it had changed."""

    def __init__(self, message: str, changed: str) -> None:
        super().__init__(message)
        self.changed = changed


def unloadable_log_dirs(log_dirs: list[str]) -> list[str]:
    """The log dirs (real paths) a broker's start trips on as they are: a writing run takes no ``.lock`` there (a
    stopped broker's dir has none; taking it would create one), ``discover`` refuses them. A dir that cannot be
    listed is left to the rest of the run, which says why."""
    found = []
    for log_dir in dict.fromkeys(os.path.realpath(d) for d in log_dirs):
        try:
            if list_log_dir(log_dir).unloadable:
                found.append(log_dir)
        except (SegdexError, OSError):
            continue
    return found


def acquire_locks(log_dirs: list[str]) -> tuple[list[LogDirLock], list[tuple[str, str]]]:
    """Take each log dir's ``.lock`` (reindex writes under it); returns the locks held and the dirs refused."""
    locks, refused = [], []
    for raw in dict.fromkeys(os.path.realpath(d) for d in log_dirs):
        lock = LogDirLock(raw)
        try:
            lock.acquire()
        except LogDirLockedException as e:
            refused.append((raw, str(e)))
            continue
        except OSError as e:
            refused.append((raw, f"{raw}: cannot take its .lock: {e.strerror or e}"))
            continue
        locks.append(lock)
    return locks, refused


def _preflight(discovery: Discovery, writing: bool, metadata_path: str) -> None:
    """Before any change: room for the metadata (PreflightError) and on each log dir's filesystem (log dirs
    without it are refused, nothing is written there)."""
    needs = [(metadata_path, preflight.metadata_bytes(metadata_path, discovery.total_segments))]
    if writing:
        per_dir: dict[str, int] = {}
        for t in discovery.tasks:
            if t.read_only is None:
                segments = max(1, t.segment_count)
                per_dir[t.log_dir] = per_dir.get(t.log_dir, 0) + segments * preflight.index_bytes_bound(
                    t.size_bytes // segments, t.config.index_interval_bytes)
        needs += sorted(per_dir.items())
    for shortage in preflight.check_room(needs):
        if metadata_path in shortage.paths:
            raise preflight.PreflightError(f"{shortage} (metadata tables in {metadata_path}); nothing was changed")
        for log_dir in shortage.paths:
            discovery.refused.append((log_dir, f"{shortage}; nothing was written there"))
        gone = set(shortage.paths)
        discovery.tasks = [t for t in discovery.tasks if t.log_dir not in gone]
        discovery.listed = [d for d in discovery.listed if d not in gone]


def _clean_after_interrupt(spark: Engine, discovery: Discovery) -> int:
    """Stop Spark so that no task writes on, then remove the temporaries its killed tasks left (under the
    locks, which the caller still holds); returns how many were removed."""
    stop_spark(spark)
    removed = 0
    for t in discovery.tasks:
        if t.read_only is None:
            with contextlib.suppress(OSError):
                removed += len(remove_temporaries(t.path))
    return removed


class RunHooks(Protocol):
    """Driver-side steps a command adds to the run, both while the log dirs' locks are held (``recover``: remove
    the clean-shutdown markers first; write checkpoints and markers last)."""

    def before_scan(self, discovery: Discovery, ctx: RunContext) -> None: ...

    def after_scan(self, discovery: Discovery, outcomes: list[PartitionOutcome]) -> None: ...


def run(spark: Engine, mode: str, request: RunRequest, progress: Callable[[ProgressSnapshot], None] | None = None,
        hooks: RunHooks | None = None) -> RunSummary:
    """The whole ``segdex reindex``/``verify``/``recover``: lock, discover, check, scan in Spark, print problems,
    write Delta. The run's ``RunContext`` (``mode`` is its command) goes to every task; ``hooks`` add the
    command's own driver steps.

    Reindex holds every log dir's ``.lock`` from before the listing until its last write is durable (executors
    write under the driver's lock, see ``scan.scan_group``). Raises ``preflight.PreflightError`` before any change
    when the metadata destination is unusable, ``RunInterrupted`` after a clean stop on SIGTERM/SIGINT, and
    ``RunFailed`` when the metadata could not be written after index files were. With ``request.resolver`` (the
    configs as the command resolved them, with their sources), each topic's effective config is recorded in
    ``topic_configs`` and the summary names the topics whose index settings nobody gave. A writing run leaves alone
    (refused) a log dir a broker's start trips on, unless ``request.allow_unloadable`` (see ``discover``).
    """
    t0 = time.monotonic()
    # ValueError for another mode
    ctx = RunContext(mode, new_run_id(mode), datetime.now(UTC), request.native, request.normalize)
    writing = ctx.writing
    log_dirs, metadata_path = request.log_dirs, request.metadata_path
    preflight.check_metadata_destination(metadata_path)  # before the locks: a bad path leaves no trace
    unlocked = unloadable_log_dirs(log_dirs) if writing and not request.allow_unloadable else []
    locks, refused = acquire_locks([d for d in log_dirs if os.path.realpath(d) not in unlocked]) if writing \
        else ([], [])
    try:
        owner = (socket.gethostname(), os.getpid()) if writing else None
        discovery = discover([lk.log_dir for lk in locks] + unlocked if writing else log_dirs, request.config,
                             dict(request.topic_configs), owner, request.now_ms, request.allow_unloadable)
        discovery.refused[:0] = refused
        _preflight(discovery, writing, metadata_path)
        for lock in locks:
            if lock.log_dir in discovery.listed:
                discovery.removed += remove_temporaries(lock.log_dir)
        if hooks is not None:
            hooks.before_scan(discovery, ctx)
        t_discovered = time.monotonic()
        try:
            with stop_on_signals(spark):
                outcomes = scan(spark, discovery, ctx, progress)
                if hooks is not None:
                    hooks.after_scan(discovery, outcomes)
        except RunInterrupted as e:
            with ignored_signals():
                e.detail = (f"stopped the Spark job and removed {_clean_after_interrupt(spark, discovery)} temporary "
                            f"files; index files already replaced are whole; re-run to finish")
            raise
        t_scanned = time.monotonic()
    finally:
        for lock in locks:
            lock.release()
    return _finish(spark, _Scanned(discovery, outcomes, ctx), request, (t0, t_discovered, t_scanned))


@dataclass
class _Scanned:
    """What the scan left for the driver to record: the discovery, the outcomes and the run's context."""

    discovery: Discovery
    outcomes: list[PartitionOutcome]
    ctx: RunContext


def _config_rows(discovery: Discovery, resolver: TopicConfigResolver | None, run_id: str,
                 at: datetime) -> tuple[list[TopicConfigRow], list[str]]:
    """``topic_configs`` rows for the topics scanned, and those whose index settings are Kafka's defaults only."""
    if resolver is None:
        return [], []
    topics = sorted({t.topic for t in discovery.tasks if t.read_only is None})
    rows, assumed = [], []
    for topic in topics:
        resolved = resolver.resolve(topic)
        rows += [TopicConfigRow(**r, run_id=run_id, recorded_at=at) for r in resolved.rows()]
        if len(resolved.assumed(INDEX_CONFIGS)) == len(INDEX_CONFIGS):
            assumed.append(topic)
    return rows, assumed


def _finish(spark: Engine, scanned: _Scanned, request: RunRequest, times: tuple[float, float, float]) -> RunSummary:
    """Record segments, partitions and the run in Delta; the summary of the run."""
    discovery, outcomes, ctx = scanned.discovery, scanned.outcomes, scanned.ctx
    log_dirs, metadata_path = request.log_dirs, request.metadata_path
    t0, t_discovered, t_scanned = times
    coordination = coordinators.build(outcomes, ctx, log_dirs)
    attention = (bool(discovery.refused) or bool(discovery.unloadable) or any(o.attention for o in outcomes)
                 or bool(coordination.restore_problems) or bool(coordination.problems))
    exit_status = int(ExitStatus.ATTENTION if attention else ExitStatus.OK)
    found: Counter = Counter()
    for o in outcomes:
        found.update(o.found)
    segment_rows = [r for o in outcomes for r in o.segments]
    partition_rows = [o.partition for o in outcomes if o.partition]
    written = sum(o.files_written for o in outcomes)
    run_row = RunRow(
        run_id=ctx.run_id, command=ctx.command, arguments=json.dumps(list(request.arguments)),
        log_dirs=json.dumps([os.path.realpath(d) for d in log_dirs]),
        started_at=ctx.scanned_at, ended_at=datetime.now(UTC),
        partitions=len(partition_rows), segments=len(segment_rows),
        bytes=sum(o.bytes for o in outcomes),
        **{f"count_{s}": found.get(s, 0) for s in schemas.STATUSES},
        files_written=written, files_failed=sum(o.files_failed for o in outcomes),
        skipped=len(discovery.skipped) + len(discovery.refused) + len(discovery.unloadable),
        exit_status=exit_status,
    )
    config_rows, on_defaults = _config_rows(discovery, request.resolver, ctx.run_id, ctx.scanned_at)
    tables = [(schemas.TOPIC_CONFIGS_TABLE, config_rows, None)] if config_rows else []
    tables += _cluster_merges(discovery.listed or log_dirs, ctx.run_id, ctx.scanned_at)
    try:
        _record(MetadataStore(metadata_path, spark), scanned, _Rows(segment_rows, partition_rows, run_row, tables),
                coordination)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # also a writer's panic; the index files are done: say what changed
        changed = (f"{written} index files were rewritten in {sum(1 for o in outcomes if o.files_written)} "
                   f"partitions before the failure (they are whole and valid)" if written else "no file was changed")
        raise RunFailed(f"cannot record the metadata in {metadata_path}: {_one_line(e)}", changed) from e
    phases = {"discover": t_discovered - t0, "scan": t_scanned - t_discovered, "metadata": time.monotonic() - t_scanned}
    return RunSummary(ctx.run_id, ctx.command, exit_status, run_row, outcomes, discovery, time.monotonic() - t0,
                      phases, metadata_path, found, on_defaults, coordination)


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"


def _cluster_merges(log_dirs: list[str], run_id: str, at: datetime) -> list[tuple[Any, list, Scope | None]]:
    """The ``topics`` and ``brokers`` merges from the metadata log among ``log_dirs`` (none without one, or where
    it cannot be read: the config resolution has said why)."""
    try:
        found = most_advanced_image([d for d in log_dirs if os.path.isdir(d)])
    except (SegdexError, OSError):
        return []
    if found is None:
        return []
    cluster = cluster_tables(found[0], found[1], run_id, at)
    return [(schemas.TOPICS_TABLE, cluster.topics, cluster.topic_scope),
            (schemas.BROKERS_TABLE, cluster.brokers, cluster.broker_scope)]


@dataclass
class _Rows:
    """A run's rows for the tables: segments, partitions, the run's own row, and more (table, rows, scope)
    merges (``topic_configs``, ``topics``, ``brokers``)."""

    segments: list[SegmentRow]
    partitions: list[PartitionRow]
    run: RunRow
    tables: list[tuple[Any, list, Scope | None]] = field(default_factory=list)


def _record(store: MetadataStore, scanned: _Scanned, found: _Rows,
            coordination: CoordinatorTables | None = None) -> None:
    """Every table's merge of the run, side by side, then the run's row."""
    discovery, segment_rows, partition_rows = scanned.discovery, found.segments, found.partitions
    merges: list[tuple[Any, list, Scope | None]] = list(found.tables)  # (table, rows, scope), one commit each
    scope = rescanned_scope(discovery, scanned.outcomes)
    if segment_rows or scope:
        merges.append((schemas.SEGMENTS_TABLE, segment_rows, scope))
    if partition_rows or scope:
        merges.append((schemas.PARTITIONS_TABLE, partition_rows, scope))
    if coordination is not None:
        listed = Scope("log_dir", frozenset(discovery.listed)) if discovery.listed else None
        for table, rows in zip(schemas.COORDINATOR_TABLES, (coordination.group_offsets, coordination.groups,
                                                             coordination.transactions,
                                                             coordination.open_transactions), strict=True):
            if rows or (listed is not None and store.exists(table.name)):
                merges.append((table, rows, listed))
    # one table each, so they commit side by side (the writers release the GIL); the run's row only after all
    with ThreadPoolExecutor(max(1, len(merges))) as pool:
        for done in [pool.submit(store.upsert, table, rows, sc) for table, rows, sc in merges]:
            done.result()
    store.upsert(schemas.RUNS_TABLE, [found.run])
