"""``segdex clean`` over many log dirs: every partition of a compacted topic planned in a task of its own
(``indexcore.log.log_cleaner.plan_cleaning``: Kafka's load, ``LogCleanerManager``'s choice, one ``Cleaner`` round
counted), or with ``apply`` cleaned (``clean_partition``, group by group) under each log dir's lock, the
checkpoints written after; the ``cleaning`` Delta table.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import socket
from collections.abc import Callable
from datetime import UTC, datetime

from segdex.indexcore.config.cleaner_config import CleanerConfig
from segdex.indexcore.fs.atomic_file import remove_temporaries
from segdex.indexcore.log.checkpoints import (
    CorruptCheckpointException,
    read_offset_checkpoint,
    write_offset_checkpoint,
)
from segdex.indexcore.log.cleaner import THREADS_ENV, usable_cores
from segdex.indexcore.log.layout import CLEANER_OFFSET_CHECKPOINT
from segdex.indexcore.log.log_cleaner import CleaningPlan, clean_partition, plan_cleaning
from segdex.indexcore.log.log_dir import held_by
from segdex.indexcore.log.quarantine import QuarantineSession

from . import metadata_store as ms
from . import runs, spark_tasks
from .engine import Engine
from .reindex import Discovery, acquire_locks, discover, unloadable_log_dirs
from .run_context import RunRequest
from .scan import PartitionTask
from .schemas import CLEANING_TABLE, CleaningRow
from .ticker import Ticker

STATUS_PLANNED = "planned"  # Kafka's cleaner would take it now
STATUS_NOT_DUE = "not_due"  # compacted, but below its dirty ratio (or nothing cleanable)
STATUS_ERROR = "error"
STATUS_APPLIED = "applied"  # --apply: the round was written


@dataclasses.dataclass
class CleaningRun:
    """A ``segdex clean`` run: its id and clock, what discovery found, one (task, plan) per compacted
    partition."""

    run_id: str
    now_ms: int
    discovery: Discovery
    plans: list[tuple[PartitionTask, CleaningPlan]]
    # a plan's: what --apply (and a broker's next start) does first with an interrupted cleaning's files
    leftovers: dict[str, str] = dataclasses.field(default_factory=dict)
    # --until-clean: the partitions that may need more than max_rounds rounds (nothing was run)
    over_bound: list[tuple[PartitionTask, RoundBound]] = dataclasses.field(default_factory=list)
    max_rounds: int | None = None

    def rows(self) -> list[CleaningRow]:
        run_at = datetime.fromtimestamp(self.now_ms / 1000, UTC)
        out = []
        for task, p in self.plans:
            status = (STATUS_ERROR if p.error else STATUS_APPLIED if p.applied else STATUS_PLANNED if p.would_clean
                      else STATUS_NOT_DUE)
            fields = {f.name: getattr(p, f.name) for f in dataclasses.fields(CleaningPlan)}
            out.append(CleaningRow(run_id=self.run_id, log_dir=task.log_dir, topic=task.topic,
                                   partition=task.partition, status=status, now_ms=self.now_ms, run_at=run_at,
                                   **fields))
        return out


@dataclasses.dataclass(frozen=True)
class RoundBound:
    """At most how many rounds ``--until-clean`` needs for a partition: its dirty offsets (from the checkpoint,
    else the log start, to the active segment's base) over the keys one round's offset map takes. An upper bound:
    a round takes as many distinct keys, and no range holds more keys than offsets."""

    first_offset: int
    end_offset: int
    keys_per_round: int

    @property
    def rounds(self) -> int:
        return max(0, -(-(self.end_offset - self.first_offset) // self.keys_per_round))


def keys_per_round(cleaner: CleanerConfig, at_least: int = 1) -> int:
    """``Cleaner.buildOffsetMap``'s fill point: ``SkimpyOffsetMap``'s slots (a key's hash and its offset each)
    times the load factor (at least ``at_least``)."""
    slots = cleaner.offset_map_memory // (hashlib.new(cleaner.hash_algorithm).digest_size + 8)
    return max(at_least, int(slots * cleaner.dedupe_buffer_load_factor))


def round_bound(task: PartitionTask, cleaner: CleanerConfig) -> RoundBound:
    """The partition's ``RoundBound``, from its segment file names alone (nothing is read)."""
    try:
        bases = sorted(int(n[:20]) for n in os.listdir(task.path) if n.endswith(".log") and n[:20].isdigit())
    except OSError:
        bases = []
    if not bases:
        return RoundBound(0, 0, keys_per_round(cleaner))
    first = max(bases[0], task.log_start_offset or 0, task.cleaner_checkpoint or 0)
    return RoundBound(first, max(first, bases[-1]), keys_per_round(cleaner))


def over_bound(tasks: list[PartitionTask], cleaner: CleanerConfig,
               max_rounds: int | None) -> list[tuple[PartitionTask, RoundBound]]:
    """The partitions whose ``RoundBound`` passes ``max_rounds`` (none without a bound)."""
    if max_rounds is None:
        return []
    bounds = [(t, round_bound(t, cleaner)) for t in tasks]
    return [(t, b) for t, b in bounds if b.rounds > max_rounds]


def pending_leftovers(partition_dir: str) -> str | None:
    """What ``--apply`` does first in a partition (and a broker's next start, ``LogLoader``) with an interrupted
    cleaning's files, read-only: ``.deleted`` files removed, ``.cleaned`` files removed with the ``.swap`` files at
    or above the lowest of them, the other ``.swap`` files renamed in over the segments they cover
    (``local_log.complete_swaps`` does it); None when there is none."""
    try:
        names = sorted(os.listdir(partition_dir))
    except OSError:
        return None
    deleted = [n for n in names if n.endswith(".deleted") and not n.endswith(".checkpoint.deleted")]
    cleaned = [n for n in names if n.endswith(".cleaned")]
    swaps = [n for n in names if n.endswith(".swap")]
    low = min((int(n.split(".")[0]) for n in cleaned if n.split(".")[0].isdigit()), default=None)
    dropped = [n for n in swaps if low is not None and n.split(".")[0].isdigit() and int(n.split(".")[0]) >= low]
    kept = [n for n in swaps if n not in dropped]

    def some(files: list[str]) -> str:
        return ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")

    said = []
    if deleted:
        said.append(f"removes {some(deleted)} (an interrupted replace's old files)")
    if cleaned or dropped:
        said.append(f"removes {some(cleaned + dropped)} (a cleaning that never finished)")
    if kept:
        said.append(f"renames {some(kept)} in, over the segments they cover (a swap that finished)")
    return "; ".join(said) or None


class RoundProgress(Ticker):
    """Driver-side progress of a run's rounds (``spark_tasks.ProgressChannel``: each task reports every round
    it finishes, and its bytes): ``report(rounds, bytes, elapsed_s)`` when a round was added (at most once a
    second) and every ``heartbeat`` seconds without one."""

    def __init__(self, channel: spark_tasks.ProgressChannel, report: Callable[[int, int, float], None],
                 heartbeat: float = 10.0) -> None:
        super().__init__(1.0, "segdex-clean-progress")
        self.channel, self.report, self.heartbeat = channel, report, heartbeat
        self._said, self._last = 0, 0.0

    def tick(self, elapsed_s: float) -> None:
        if self.channel.segments != self._said or elapsed_s - self._last >= self.heartbeat:
            self._said, self._last = self.channel.segments, elapsed_s
            self.report(self._said, self.channel.bytes, elapsed_s)


def _run(spark: Engine, tasks: list[PartitionTask], fn: Callable[[PartitionTask], CleaningPlan], description: str,
         progress: Callable[[int, int, float], None] | None) -> list[CleaningPlan]:
    """``spark_tasks.run_tasks`` with the rounds' progress when asked for (and the tasks can reach the driver)."""
    host = spark_tasks.driver_host(spark) if progress is not None and tasks else None
    if host is None:
        return spark_tasks.run_tasks(spark, tasks, fn, description)
    with spark_tasks.ProgressChannel(host) as channel, RoundProgress(channel, progress):
        return spark_tasks.run_tasks(spark, tasks, fn, description, channel.sender)


def _compacted(found: Discovery) -> list[PartitionTask]:
    """The partitions a cleaner works on (compacted topics; the KRaft metadata log and ``-future`` dirs aside),
    the biggest first."""
    return sorted((t for t in found.tasks if t.config.compact and t.read_only is None and not t.future
                   and t.stray is None), key=lambda t: -t.size_bytes)


def strays(found: Discovery) -> list[tuple[str, str]]:
    """(partition dir, why) of the compacted partitions left alone as stray replicas: the broker renames them
    ``-stray`` at its start and its cleaner never takes them."""
    return [(t.path, t.stray) for t in found.tasks if t.stray is not None and t.config.compact]


@dataclasses.dataclass(frozen=True)
class Rounds:
    """How many rounds a run takes: one, or every round to the end (``until_clean``) up to ``max_rounds`` a
    partition (None: no bound), and where each finished round is reported (``progress(rounds, bytes,
    elapsed_s)``, None: nowhere), and how many threads each partition's round takes (``round_threads``)."""

    until_clean: bool = False
    max_rounds: int | None = None
    progress: Callable[[int, int, float], None] | None = None
    threads: int | None = None  # a partition's round on this many threads (None: SEGDEX_CLEAN_THREADS, else cores)


def round_threads(tasks: int) -> int | None:
    """Threads for each partition's round: the cores this process may run on shared among the ``tasks`` (all of
    them for a lone partition, which Kafka cleans on one thread; one each where the engine already runs a task per
    core); None where ``SEGDEX_CLEAN_THREADS`` says (the ``Cleaner`` reads it). A split round is the one-thread
    round's bytes, its groups opened, written and swapped in one after the other in the same order."""
    if os.environ.get(THREADS_ENV):
        return None
    return max(1, usable_cores() // max(1, tasks))


def plan_task(now_ms: int, cleaner: CleanerConfig, rounds: Rounds, task: PartitionTask) -> CleaningPlan:
    """One partition's plan (a task's work) on ``rounds.threads``; each ``--until-clean`` round reported to the
    driver's progress as it is planned (one round: when it is)."""
    def each_round(cleaned_bytes: int) -> None:
        spark_tasks.report(1, cleaned_bytes)

    planned = plan_cleaning(task.path, task.config, cleaner, now_ms, task.log_start_offset or 0,
                            task.high_watermark, task.cleaner_checkpoint, rounds.until_clean, rounds.threads,
                            task.clean_shutdown, task.recovery_point, each_round if rounds.until_clean else None)
    if not rounds.until_clean:  # one round: said when it is planned
        spark_tasks.report(planned.rounds, planned.bytes_before or 0)
    return planned


def plan(spark: Engine, request: RunRequest, cleaner: CleanerConfig, rounds: Rounds | None = None) -> CleaningRun:
    """Plan every compacted partition of ``request.log_dirs`` (the KRaft metadata log and ``-future`` dirs aside)
    at ``request.now_ms``; with ``rounds.until_clean`` every round Kafka's cleaner would need (counts only), unless
    a partition may need more than ``rounds.max_rounds`` (then nothing is planned: ``CleaningRun.over_bound``).
    Each partition's leftovers of an interrupted cleaning are named (``pending_leftovers``)."""
    rounds = rounds or Rounds()
    until_clean, max_rounds, progress = rounds.until_clean, rounds.max_rounds, rounds.progress
    now_ms = _now_ms(request)
    found = discover(request.log_dirs, request.config, dict(request.topic_configs), now_ms=now_ms)
    tasks = _compacted(found)
    leftovers = {t.path: line for t in tasks if (line := pending_leftovers(t.path))}
    bound = over_bound(tasks, cleaner, max_rounds) if until_clean else []
    if bound:
        return CleaningRun(runs.new_run_id("clean"), now_ms, found, [], leftovers, bound, max_rounds)
    task_rounds = dataclasses.replace(rounds, progress=None, threads=round_threads(len(tasks)))
    plans = _run(spark, tasks, functools.partial(plan_task, now_ms, cleaner, task_rounds), "segdex clean", progress)
    return CleaningRun(runs.new_run_id("clean"), now_ms, found, list(zip(tasks, plans, strict=True)), leftovers,
                       max_rounds=max_rounds)


def apply_task(now_ms: int, cleaner: CleanerConfig, quarantine: str | None, run_id: str, rounds: Rounds,
               task: PartitionTask) -> CleaningPlan:
    """One partition cleaned as Kafka would clean it now (a task's work), while the driver holds the lock; with
    ``rounds.until_clean``, round after round while the offset map fills (each from the last one's end offset, as
    Kafka's next cleaning would start), at most ``rounds.max_rounds``, the last round's plan returned with the
    count. Each round applied is reported to the driver's progress."""
    until_clean, max_rounds = rounds.until_clean, rounds.max_rounds
    checkpoint, total = task.cleaner_checkpoint, None
    # one quarantine for all rounds: each original file kept once, the manifest's restore lines the dir before the run
    session = (QuarantineSession(task.path, quarantine, run_id, "segdex clean: replaced by cleaned segments")
               if quarantine is not None else None)
    while True:
        why = held_by(task.log_dir, task.lock_owner)
        if why:
            if total is None:
                return CleaningPlan(error=f"refused: {why}")
            total.error = f"refused after {total.rounds} rounds: {why}"
            return total
        # after a first round, the rest of the range is cleaned whatever its dirty ratio: until it is clean
        done = total.rounds if total is not None else 0
        plan = clean_partition(task.path, task.config, cleaner, now_ms, task.log_start_offset or 0,
                               task.high_watermark, checkpoint, quarantine, run_id, force=done > 0,
                               session=session, threads=rounds.threads, clean_shutdown=task.clean_shutdown,
                               recovery_point=task.recovery_point)
        plan.rounds = int(plan.applied)
        if plan.applied:
            spark_tasks.report(1, plan.bytes_before or 0)
        if total is None:
            total = plan
        elif plan.applied:
            total = total.followed_by(plan)
        else:  # the range was clean after all, or this round failed: what the rounds applied did stands
            total.error, total.swapped_groups = plan.error, plan.swapped_groups
            return total
        if not (until_clean and plan.applied and plan.map_full) or (max_rounds and total.rounds >= max_rounds):
            return total
        if checkpoint is not None and plan.end_offset <= checkpoint:  # as the plan says it: no round gets on
            total.error = f"round {total.rounds + 1} would not get past offset {checkpoint}"
            return total
        checkpoint = plan.end_offset


def apply(spark: Engine, request: RunRequest, cleaner: CleanerConfig, rounds: Rounds | None = None) -> CleaningRun:
    """Clean every compacted partition Kafka's cleaner would clean at ``request.now_ms``, one round each (every
    round to the end with ``rounds.until_clean``, at most ``rounds.max_rounds``), under each log dir's ``.lock``
    (a dir a broker holds is refused, as is one a broker's start trips on unless ``request.allow_unloadable``:
    ``reindex.discover``), replaced segments kept in ``request.quarantine`` (None: nowhere); then each log dir's
    ``cleaner-offset-checkpoint`` takes the rounds' end offsets (Kafka's ``doneCleaning``), while the lock is
    still held."""
    rounds = rounds or Rounds()
    until_clean, max_rounds, progress = rounds.until_clean, rounds.max_rounds, rounds.progress
    log_dirs, allow_unloadable, quarantine, now_ms = (request.log_dirs, request.allow_unloadable,
                                                      request.quarantine, _now_ms(request))
    config, topic_configs = request.config, dict(request.topic_configs)
    if until_clean and max_rounds is not None:  # said before any change, the .lock's creation included
        found = discover(log_dirs, config, topic_configs, now_ms=now_ms)
        bound = over_bound(_compacted(found), cleaner, max_rounds)
        if bound:
            return CleaningRun(runs.new_run_id("clean"), now_ms, found, [], {}, bound, max_rounds)
    unlocked = [] if allow_unloadable else unloadable_log_dirs(log_dirs)  # refused by discover, never locked
    locks, refused = acquire_locks([d for d in log_dirs if os.path.realpath(d) not in unlocked])
    try:
        owner = (socket.gethostname(), os.getpid())
        found = discover([lk.log_dir for lk in locks] + unlocked, config, topic_configs, owner, now_ms,
                         allow_unloadable)
        found.refused[:0] = refused
        tasks = _compacted(found)
        run_id = runs.new_run_id("clean")
        for lock in locks:  # a killed run's temporaries (the checkpoint's): ours to remove, under the lock
            if lock.log_dir in found.listed:
                found.removed += remove_temporaries(lock.log_dir)
        task_fn = functools.partial(apply_task, now_ms, cleaner, quarantine, run_id,
                                    dataclasses.replace(rounds, progress=None, threads=round_threads(len(tasks))))
        plans = _run(spark, tasks, task_fn, "segdex clean --apply", progress)
        done = list(zip(tasks, plans, strict=True))
        for log_dir in sorted({t.log_dir for t, p in done if p.applied}):
            _done_cleaning(log_dir, [(t, p) for t, p in done if p.applied and t.log_dir == log_dir])
        return CleaningRun(run_id, now_ms, found, done, max_rounds=max_rounds)
    finally:
        for lock in locks:
            lock.release()


def _now_ms(request: RunRequest) -> int:
    """The cleaner's clock: the request's, which a cleaning run needs."""
    if request.now_ms is None:
        raise ValueError("a cleaning run needs the request's now_ms (the cleaner's clock)")
    return request.now_ms


def _done_cleaning(log_dir: str, done: list[tuple[PartitionTask, CleaningPlan]]) -> None:
    """``LogCleanerManager.doneCleaning``: the log dir's checkpoint entries of the partitions cleaned, the others
    kept (a checkpoint Kafka cannot read is replaced, as Kafka's next write would)."""
    path = os.path.join(log_dir, CLEANER_OFFSET_CHECKPOINT)
    try:
        offsets = read_offset_checkpoint(path)
    except (CorruptCheckpointException, OSError):
        offsets = {}
    for task, plan in done:  # the last applied round's end (a round Kafka would not take after it ends nothing)
        offsets[(task.topic, task.partition)] = plan.end_offset if plan.applied else plan.checkpoint
    write_offset_checkpoint(path, offsets)


def record(spark: Engine, metadata_path: str, run: CleaningRun) -> int:
    """Append the run's rows to the ``cleaning`` table."""
    return ms.MetadataStore(metadata_path, spark).append(CLEANING_TABLE, run.rows())
