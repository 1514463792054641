"""Reindex or verify whole log directories with Spark, and record what was found in Delta.

Driver: check locks, list partition directories and checkpoints, resolve each topic's config, pack partitions
into byte-balanced groups (one Spark task each), run ``scan.scan_group`` on the executors, collect plain rows,
then MERGE them into ``segments`` and ``partitions`` and append the run to ``runs``.
"""

from __future__ import annotations

import heapq
import json
import os
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TextIO

from indexcore.checkpoints import CorruptCheckpointException
from indexcore.errors import SegdexError
from indexcore.log_config import LogConfig
from indexcore.log_dir import LogDirLockedException, ensure_not_locked, list_log_dir, read_checkpoints

from . import metadata_store, schemas
from .scan import MODE_REINDEX, MODE_VERIFY, PartitionOutcome, PartitionTask, partition_size, scan_group

EXIT_OK = 0
EXIT_ATTENTION = 1
MAX_PRINTED = 20  # problem lines printed per run; the tables hold them all


@dataclass
class Discovery:
    """What the driver found before any Spark work."""

    tasks: list[PartitionTask] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why): not scanned, no harm
    refused: list[tuple[str, str]] = field(default_factory=list)  # (log dir, why): needs attention
    listed: list[str] = field(default_factory=list)  # log dirs whose partition directories were all listed
    notes: list[str] = field(default_factory=list)

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
    run_row: dict[str, Any]
    outcomes: list[PartitionOutcome]
    discovery: Discovery
    wall_seconds: float
    phases: dict[str, float] = field(default_factory=dict)  # discover, scan (the Spark job), metadata

    @property
    def segment_rows(self) -> list[dict[str, Any]]:
        return [r for o in self.outcomes for r in o.segments]


def discover(log_dirs: list[str], config: LogConfig, topic_configs: dict[str, LogConfig] | None = None) -> Discovery:
    """Lock check, then every live and ``-future`` partition directory of each log dir with its checkpoints."""
    topic_configs = topic_configs or {}
    found = Discovery()
    for raw in log_dirs:
        log_dir = os.path.abspath(raw)
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
        found.listed.append(log_dir)
        try:
            cps = read_checkpoints(log_dir)
            recovery, start, hw = cps.recovery_points, cps.log_start_offsets, cps.high_watermarks
        except (CorruptCheckpointException, OSError) as e:
            found.notes.append(f"{log_dir}: checkpoint files ignored: {e}")
            recovery, start, hw = {}, {}, {}
        for p in listing.partitions:
            size, count = partition_size(p.path)
            key = (p.topic, p.partition)
            found.tasks.append(PartitionTask(
                log_dir=log_dir, path=p.path, topic=p.topic, partition=p.partition, future=p.kind == "future",
                config=topic_configs.get(p.topic, config), size_bytes=size, segment_count=count,
                log_start_offset=start.get(key), recovery_point=recovery.get(key), high_watermark=hw.get(key)))
    return found


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


def stale_rows_predicate(discovery: Discovery, outcomes: list[PartitionOutcome]) -> str | None:
    """Rows (alias ``t``) of the scanned log dirs that this run's rows replace: those without a row now are gone
    (segments deleted by retention, partitions moved away). Partitions that could not be scanned keep theirs."""
    dirs = [q for q in (metadata_store.sql_string(d) for d in discovery.listed) if q]
    if not dirs:
        return None
    keep = [o.partition for o in outcomes
            if o.partition and o.partition["segment_count"] == 0 and o.partition["status"] != "ok"]
    pred = f"t.log_dir IN ({', '.join(dirs)})"
    kept = []
    for p in keep:
        d, topic = metadata_store.sql_string(p["log_dir"]), metadata_store.sql_string(p["topic"])
        if d and topic:
            kept.append(f"(t.log_dir = {d} AND t.topic = {topic} AND t.partition = {int(p['partition'])})")
    if kept:
        pred += f" AND NOT ({' OR '.join(kept)})"
    return pred


def _fmt_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000:
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1000
    return f"{n:.1f} TB"


class Progress:
    """Driver-side progress line from accumulators updated as tasks finish: done, rate, time left."""

    def __init__(self, spark: Any, total_segments: int, total_bytes: int, out: TextIO | None = None,
                 interval: float = 2.0) -> None:
        sc = spark.sparkContext
        self.segments = sc.accumulator(0)
        self.bytes = sc.accumulator(0)
        self.total_segments, self.total_bytes = total_segments, total_bytes
        self.out, self.interval = out or sys.stderr, interval
        self._stop = threading.Event()
        self._start = time.monotonic()
        self._thread = threading.Thread(target=self._loop, name="segdex-progress", daemon=True)

    def line(self) -> str:
        elapsed = max(time.monotonic() - self._start, 1e-6)
        done_b, done_s = self.bytes.value, self.segments.value
        rate = done_b / elapsed
        left = (self.total_bytes - done_b) / rate if rate > 0 else float("nan")
        eta = f"{left:.0f}s" if left == left else "?"
        return (f"progress: {done_s}/{self.total_segments} segments, {_fmt_bytes(done_b)}/"
                f"{_fmt_bytes(self.total_bytes)}, {_fmt_bytes(rate)}/s, elapsed {elapsed:.0f}s, left ~{eta}")

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            print(self.line(), file=self.out, flush=True)

    def __enter__(self) -> Progress:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def new_run_id(command: str) -> str:
    return f"{command}-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"


def scan(spark: Any, discovery: Discovery, mode: str, run_id: str, scanned_at: datetime,
         native: bool | None = None, progress: bool = True, out: TextIO | None = None) -> list[PartitionOutcome]:
    """Run the scan of every discovered partition as Spark tasks; returns the outcomes on the driver."""
    if not discovery.tasks:
        return []
    sc = spark.sparkContext
    groups = plan_groups(discovery.tasks, max(1, sc.defaultParallelism) * 4)
    tracker = Progress(spark, discovery.total_segments, discovery.total_bytes, out)
    seg_acc, byte_acc = tracker.segments, tracker.bytes

    def run_group(group: list[PartitionTask]) -> list[PartitionOutcome]:
        outcomes = scan_group(group, mode, run_id, scanned_at, native)
        seg_acc.add(sum(len(o.segments) for o in outcomes))
        byte_acc.add(sum(t.size_bytes for t in group))
        return outcomes

    sc.setJobDescription(f"segdex {mode}: {len(discovery.tasks)} partitions, {discovery.total_segments} segments")
    rdd = sc.parallelize(groups, len(groups)).flatMap(run_group)
    if progress:
        with tracker:
            return rdd.collect()
    return rdd.collect()


def run(spark: Any, log_dirs: list[str], mode: str, metadata_path: str, config: LogConfig,
        topic_configs: dict[str, LogConfig] | None = None, arguments: list[str] | None = None,
        native: bool | None = None, progress: bool = True, out: TextIO | None = None,
        err: TextIO | None = None) -> RunSummary:
    """The whole ``segdex reindex``/``verify``: discover, scan in Spark, print problems, write Delta tables."""
    out, err = out or sys.stdout, err or sys.stderr
    if mode not in (MODE_REINDEX, MODE_VERIFY):
        raise ValueError(f"mode must be {MODE_REINDEX} or {MODE_VERIFY}, got {mode!r}")
    t0 = time.monotonic()
    started = datetime.now(UTC)
    run_id = new_run_id(mode)
    discovery = discover(log_dirs, config, topic_configs)
    for _log_dir, why in discovery.refused:
        print(f"refused: {why}", file=err)
    for path, why in discovery.skipped:
        print(f"skipped: {path}: {why}", file=out)
    for note in discovery.notes:
        print(f"note: {note}", file=err)
    t_discovered = time.monotonic()
    outcomes = scan(spark, discovery, mode, run_id, started, native, progress, err)
    t_scanned = time.monotonic()
    messages = [m for o in outcomes for m in o.messages]
    for msg in messages[:MAX_PRINTED]:
        print(msg, file=err)
    if len(messages) > MAX_PRINTED:
        print(f"... and {len(messages) - MAX_PRINTED} more (all in the segments table: "
              "segdex sql \"SELECT * FROM segments WHERE status <> 'ok'\")", file=err)
    attention = bool(discovery.refused) or any(o.attention for o in outcomes)
    exit_status = EXIT_ATTENTION if attention else EXIT_OK
    found: Counter = Counter()
    for o in outcomes:
        found.update(o.found)
    segment_rows = [r for o in outcomes for r in o.segments]
    partition_rows = [o.partition for o in outcomes if o.partition]
    stale = stale_rows_predicate(discovery, outcomes)
    if segment_rows or stale:
        metadata_store.write_table(spark, metadata_path, schemas.SEGMENTS, segment_rows, schemas.SEGMENTS_SCHEMA,
                                   schemas.SEGMENT_KEYS, update_when_changed=schemas.SEGMENT_FACTS,
                                   delete_unmatched=stale)
    if partition_rows or stale:
        metadata_store.write_table(spark, metadata_path, schemas.PARTITIONS, partition_rows,
                                   schemas.PARTITIONS_SCHEMA, schemas.PARTITION_KEYS,
                                   update_when_changed=schemas.PARTITION_FACTS, delete_unmatched=stale)
    run_row = {
        "run_id": run_id, "command": mode, "arguments": json.dumps(arguments or []),
        "log_dirs": json.dumps([os.path.abspath(d) for d in log_dirs]),
        "started_at": started, "ended_at": datetime.now(UTC),
        "partitions": len(partition_rows), "segments": len(segment_rows),
        "bytes": sum(o.bytes for o in outcomes),
        **{f"count_{s}": found.get(s, 0) for s in schemas.STATUSES},
        "files_written": sum(o.files_written for o in outcomes),
        "skipped": len(discovery.skipped) + len(discovery.refused),
        "exit_status": exit_status,
    }
    metadata_store.write_table(spark, metadata_path, schemas.RUNS, [run_row], schemas.RUNS_SCHEMA, schemas.RUN_KEYS)
    wall = time.monotonic() - t0
    counts = ", ".join(f"{s}={found[s]}" for s in schemas.STATUSES if found.get(s))
    verb = "rewrote" if mode == MODE_REINDEX else "would rewrite"
    files = run_row["files_written"] if mode == MODE_REINDEX else sum(
        found.get(s, 0) for s in ("equivalent", "missing", "corrupt_index"))
    unit = "index files" if mode == MODE_REINDEX else "segments"
    phases = {"discover": t_discovered - t0, "scan": t_scanned - t_discovered, "metadata": time.monotonic() - t_scanned}
    print(f"{mode} {run_id}: {len(partition_rows)} partitions, {len(segment_rows)} segments, "
          f"{_fmt_bytes(run_row['bytes'])} in {wall:.1f}s (" + ", ".join(f"{k} {v:.1f}s" for k, v in phases.items())
          + f"); found {counts or 'nothing'}; {verb} {files} {unit}; metadata in {metadata_path}", file=out)
    return RunSummary(run_id, mode, exit_status, run_row, outcomes, discovery, wall, phases)
