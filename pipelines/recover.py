"""``segdex recover`` with Spark: Kafka's startup recovery of whole log dirs done offline, then the state a clean
shutdown leaves, so the broker's next start re-reads nothing.

Driver, under every log dir's ``.lock``: remove each ``.kafka_cleanshutdown`` first; executors recover their
partitions as ``reindex`` does and also write the producer snapshots and ``leader-epoch-checkpoint`` Kafka's load
leaves (``scan.scan_partition`` in ``recover`` mode); then, per log dir, the driver writes the recovery-point and
log-start-offset checkpoints and, only when every partition there came out clean, the marker, last.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from segdex.indexcore.config.log_config import is_cluster_metadata
from segdex.indexcore.log.log_manager import (
    PartitionState,
    finish_log_dir,
    read_checkpoints,
    remove_clean_shutdown_marker,
)
from segdex.indexcore.log.quarantine import check_quarantine_dir

from . import reindex
from .engine import Engine
from .reindex import Discovery, ProgressSnapshot, RunSummary
from .run_context import MODE_RECOVER, RunContext, RunRequest
from .scan import PartitionOutcome


@dataclass
class LogDirResult:
    """What recover left in one log dir."""

    log_dir: str
    marker: bool = False  # .kafka_cleanshutdown written: the broker's next start re-reads nothing here
    marker_removed: bool = False  # one was there before the run
    clean: int = 0  # partitions recovered whole
    not_clean: list[str] = field(default_factory=list)  # "<topic>-<n>": left for the broker's own recovery
    error: str | None = None  # the checkpoints or the marker could not be written


@dataclass
class RecoverSummary:
    run: RunSummary
    log_dirs: list[LogDirResult]
    now_ms: int

    @property
    def exit_status(self) -> int:
        if self.run.exit_status:
            return self.run.exit_status
        return 1 if any(not d.marker for d in self.log_dirs) else 0


class RecoverHooks:
    """``recover``'s driver steps around the scan, under every log dir's ``.lock``: remove each
    ``.kafka_cleanshutdown`` first (and give the tasks the quarantine of ``--truncate``); after the scan, per log
    dir, the recovery-point and log-start-offset checkpoints and, only when every partition there came out clean,
    the marker, last."""

    def __init__(self, quarantine: str | None) -> None:
        self.quarantine = quarantine
        self.results: dict[str, LogDirResult] = {}

    def before_scan(self, discovery: Discovery, ctx: RunContext) -> None:
        for log_dir in discovery.listed:
            self.results[log_dir] = LogDirResult(log_dir, marker_removed=remove_clean_shutdown_marker(log_dir))
        if self.quarantine is not None:
            discovery.tasks = [replace(t, quarantine=self.quarantine, run_id=ctx.run_id) for t in discovery.tasks]

    def after_scan(self, discovery: Discovery, outcomes: list[PartitionOutcome]) -> None:
        by_dir: dict[str, list[PartitionState]] = {d: [] for d in self.results}
        for task, out in zip(_tasks_in_order(discovery, outcomes), outcomes, strict=True):
            if task.log_dir not in by_dir or is_cluster_metadata(task.topic):
                continue  # the metadata log is no LogManager log: its own raft layer loads it
            loaded = out.loaded or PartitionState(task.topic, task.partition, False)
            ok = out.partition is not None and out.partition.status == "ok"
            by_dir[task.log_dir].append(replace(loaded, clean=loaded.clean and ok))
        failing = {u.path for u in discovery.unloadable if u.fails}  # the start fails there: no marker promises
        for log_dir, states in by_dir.items():
            r = self.results[log_dir]
            r.clean = sum(1 for s in states if s.clean)
            r.not_clean = [f"{s.topic}-{s.partition}" for s in states if not s.clean]
            try:
                r.marker = finish_log_dir(log_dir, states, read_checkpoints(log_dir),
                                          marker=not any(_within(p, log_dir) for p in failing))
            except OSError as e:
                r.error = f"checkpoints or marker not written: {e.strerror or e}"


def run(spark: Engine, request: RunRequest,
        progress: Callable[[ProgressSnapshot], None] | None = None) -> RecoverSummary:
    """Recover every partition of ``request.log_dirs``; ``request.now_ms`` is the broker clock for producer expiry
    (default: now). With ``request.quarantine`` (``--truncate``), corrupt tails are cut as Kafka's recovery cuts
    them, every removed byte kept there (``indexcore.quarantine``). A log dir a broker's start trips on is left
    alone unless ``request.allow_unloadable`` (``reindex.discover``). Every index file is left as Kafka's recovery
    writes it (``normalize``, whatever the request says). Raises what ``reindex.run`` raises, and UsageException
    for a quarantine inside a log dir."""
    quarantine = request.quarantine
    if quarantine is not None:
        quarantine = check_quarantine_dir(quarantine, request.log_dirs)
    now_ms = int(time.time() * 1000) if request.now_ms is None else request.now_ms
    hooks = RecoverHooks(quarantine)
    summary = reindex.run(spark, MODE_RECOVER, replace(request, normalize=True, now_ms=now_ms, quarantine=quarantine),
                          progress, hooks)
    return RecoverSummary(summary, list(hooks.results.values()), now_ms)


def _tasks_in_order(discovery: Discovery, outcomes: list[PartitionOutcome]) -> list:
    """The task of each outcome: outcomes come back grouped, so match them by partition row."""
    by_key = {(t.log_dir, t.topic, t.partition, t.future): t for t in discovery.tasks}
    out = []
    for o in outcomes:
        p = o.partition
        out.append(by_key[(p.log_dir, p.topic, p.partition, p.future)])
    return out


def _within(path: str, log_dir: str) -> bool:
    """Whether ``path`` is in ``log_dir`` (a directory of it, or a file of one of its partitions)."""
    return os.path.realpath(path).startswith(log_dir + os.sep)
