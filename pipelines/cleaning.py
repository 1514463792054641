"""``segdex clean`` over many log dirs: every partition of a compacted topic planned in a task of its own
(``indexcore.log.log_cleaner.plan_cleaning``: Kafka's load, ``LogCleanerManager``'s choice, one ``Cleaner`` round
counted), or with ``apply`` cleaned (``clean_partition``, group by group) under each log dir's lock, the
checkpoints written after; the ``cleaning`` Delta table.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import socket
from datetime import UTC, datetime
from typing import Any

from segdex.indexcore.config.cleaner_config import CleanerConfig
from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.fs.atomic_file import remove_temporaries
from segdex.indexcore.log.checkpoints import (
    CorruptCheckpointException,
    read_offset_checkpoint,
    write_offset_checkpoint,
)
from segdex.indexcore.log.cleaner import THREADS_ENV
from segdex.indexcore.log.layout import CLEANER_OFFSET_CHECKPOINT
from segdex.indexcore.log.log_cleaner import CleaningPlan, clean_partition, plan_cleaning
from segdex.indexcore.log.log_dir import held_by
from segdex.indexcore.log.quarantine import QuarantineSession

from . import metadata_store as ms
from . import runs, spark_tasks
from .reindex import Discovery, acquire_locks, discover, unloadable_log_dirs
from .scan import PartitionTask
from .schemas import CLEANING_TABLE, CleaningRow

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


def _compacted(found: Discovery) -> list[PartitionTask]:
    """The partitions a cleaner works on (compacted topics; the KRaft metadata log and ``-future`` dirs aside),
    the biggest first."""
    return sorted((t for t in found.tasks if t.config.compact and t.read_only is None and not t.future
                   and t.stray is None), key=lambda t: -t.size_bytes)


def strays(found: Discovery) -> list[tuple[str, str]]:
    """(partition dir, why) of the compacted partitions left alone as stray replicas: the broker renames them
    ``-stray`` at its start and its cleaner never takes them."""
    return [(t.path, t.stray) for t in found.tasks if t.stray is not None and t.config.compact]


def round_threads(tasks: int) -> int | None:
    """Threads for each partition's rounds: the cores the tasks leave (all of them for one partition: Kafka's
    one thread per partition, beaten on the emergency case); None where ``SEGDEX_CLEAN_THREADS`` says."""
    if os.environ.get(THREADS_ENV):
        return None
    return max(1, len(os.sched_getaffinity(0)) // max(1, tasks))


def plan_task(now_ms: int, cleaner: CleanerConfig, until_clean: bool, task: PartitionTask,
              threads: int | None = None) -> CleaningPlan:
    """One partition's plan (a task's work)."""
    return plan_cleaning(task.path, task.config, cleaner, now_ms, task.log_start_offset or 0, task.high_watermark,
                         task.cleaner_checkpoint, until_clean, threads)


def plan(spark: Any, log_dirs: list[str], config: LogConfig, topic_configs: dict[str, LogConfig],
         cleaner: CleanerConfig, now_ms: int, until_clean: bool = False) -> CleaningRun:
    """Plan every compacted partition of ``log_dirs`` (the KRaft metadata log and ``-future`` dirs aside); with
    ``until_clean`` every round Kafka's cleaner would need (counts only)."""
    found = discover(log_dirs, config, topic_configs, now_ms=now_ms)
    tasks = _compacted(found)
    plans = spark_tasks.run_tasks(spark, tasks, functools.partial(plan_task, now_ms, cleaner, until_clean,
                                                                   threads=round_threads(len(tasks))),
                                  "segdex clean")
    return CleaningRun(runs.new_run_id("clean"), now_ms, found, list(zip(tasks, plans, strict=True)))


def apply_task(now_ms: int, cleaner: CleanerConfig, quarantine: str | None, run_id: str, until_clean: bool,
               task: PartitionTask, threads: int | None = None) -> CleaningPlan:
    """One partition cleaned as Kafka would clean it now (a task's work), while the driver holds the lock; with
    ``until_clean``, round after round while the offset map fills (each from the last one's end offset, as
    Kafka's next cleaning would start), the last round's plan returned with the count."""
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
        rounds = total.rounds if total is not None else 0
        plan = clean_partition(task.path, task.config, cleaner, now_ms, task.log_start_offset or 0,
                               task.high_watermark, checkpoint, quarantine, run_id, force=rounds > 0,
                               session=session, threads=threads)
        plan.rounds = int(plan.applied)
        if total is None:
            total = plan
        elif plan.applied:
            total = total.followed_by(plan)
        else:  # the range was clean after all, or this round failed: what the rounds applied did stands
            total.error = plan.error
            return total
        if not (until_clean and plan.applied and plan.map_full):
            return total
        checkpoint = plan.end_offset


def apply(spark: Any, log_dirs: list[str], config: LogConfig, topic_configs: dict[str, LogConfig],
          cleaner: CleanerConfig, now_ms: int, quarantine: str | None, until_clean: bool = False,
          allow_unloadable: bool = False) -> CleaningRun:
    """Clean every compacted partition Kafka's cleaner would clean now, one round each, under each log dir's
    ``.lock`` (a dir a broker holds is refused, as is one a broker's start trips on unless ``allow_unloadable``:
    ``reindex.discover``); then each log dir's ``cleaner-offset-checkpoint`` takes the rounds' end offsets
    (Kafka's ``doneCleaning``), while the lock is still held."""
    unlocked = [] if allow_unloadable else unloadable_log_dirs(log_dirs)  # refused by discover, never locked
    locks, refused = acquire_locks([d for d in log_dirs if os.path.realpath(d) not in unlocked])
    try:
        owner = (socket.gethostname(), os.getpid())
        found = discover([lk.log_dir for lk in locks] + unlocked, config, topic_configs, owner, now_ms,
                         allow_unloadable)
        found.refused[:0] = refused
        for lock in locks:  # a killed run's temporaries (the checkpoint's): ours to remove, under the lock
            if lock.log_dir in found.listed:
                found.removed += remove_temporaries(lock.log_dir)
        tasks = _compacted(found)
        run_id = runs.new_run_id("clean")
        plans = spark_tasks.run_tasks(spark, tasks, functools.partial(apply_task, now_ms, cleaner, quarantine,
                                                                      run_id, until_clean,
                                                                      threads=round_threads(len(tasks))),
                                      "segdex clean --apply")
        done = list(zip(tasks, plans, strict=True))
        for log_dir in sorted({t.log_dir for t, p in done if p.applied}):
            _done_cleaning(log_dir, [(t, p) for t, p in done if p.applied and t.log_dir == log_dir])
        return CleaningRun(run_id, now_ms, found, done)
    finally:
        for lock in locks:
            lock.release()


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


def record(spark: Any, metadata_path: str, run: CleaningRun) -> int:
    """Append the run's rows to the ``cleaning`` table."""
    return ms.MetadataStore(metadata_path, spark).append(CLEANING_TABLE, run.rows())
