"""``segdex clean``'s plan over many log dirs: every partition of a compacted topic planned in a task of its own
(``indexcore.log.log_cleaner.plan_cleaning``: Kafka's load, ``LogCleanerManager``'s choice, one ``Cleaner`` round
in memory), the ``cleaning`` Delta table. Nothing in a log dir changes.
"""

from __future__ import annotations

import dataclasses
import functools
from datetime import UTC, datetime
from typing import Any

from segdex.indexcore.config.cleaner_config import CleanerConfig
from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.log.log_cleaner import CleaningPlan, plan_cleaning

from . import metadata_store as ms
from . import runs, spark_tasks
from .reindex import Discovery, discover
from .scan import PartitionTask
from .schemas import CLEANING_TABLE, CleaningRow

STATUS_PLANNED = "planned"  # Kafka's cleaner would take it now
STATUS_NOT_DUE = "not_due"  # compacted, but below its dirty ratio (or nothing cleanable)
STATUS_ERROR = "error"


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
            status = STATUS_ERROR if p.error else STATUS_PLANNED if p.would_clean else STATUS_NOT_DUE
            fields = {f.name: getattr(p, f.name) for f in dataclasses.fields(CleaningPlan)}
            out.append(CleaningRow(run_id=self.run_id, log_dir=task.log_dir, topic=task.topic,
                                   partition=task.partition, status=status, now_ms=self.now_ms, run_at=run_at,
                                   **fields))
        return out


def plan_task(now_ms: int, cleaner: CleanerConfig, task: PartitionTask) -> CleaningPlan:
    """One partition's plan (a task's work)."""
    return plan_cleaning(task.path, task.config, cleaner, now_ms, task.log_start_offset or 0, task.high_watermark,
                         task.cleaner_checkpoint)


def plan(spark: Any, log_dirs: list[str], config: LogConfig, topic_configs: dict[str, LogConfig],
         cleaner: CleanerConfig, now_ms: int) -> CleaningRun:
    """Plan every compacted partition of ``log_dirs`` (the KRaft metadata log and ``-future`` dirs aside)."""
    found = discover(log_dirs, config, topic_configs, now_ms=now_ms)
    tasks = [t for t in found.tasks if t.config.compact and t.read_only is None and not t.future]
    tasks.sort(key=lambda t: -t.size_bytes)
    plans = spark_tasks.run_tasks(spark, tasks, functools.partial(plan_task, now_ms, cleaner), "segdex clean")
    return CleaningRun(runs.new_run_id("clean"), now_ms, found, list(zip(tasks, plans, strict=True)))


def record(spark: Any, metadata_path: str, run: CleaningRun) -> int:
    """Append the run's rows to the ``cleaning`` table."""
    return ms.MetadataStore(metadata_path, spark).append(CLEANING_TABLE, run.rows())
