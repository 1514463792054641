"""Retention over many log dirs and from the metadata tables; the ``retention_actions`` Delta table.

The Kafka rules live in ``indexcore.retention``; this module fans them out (one Spark task per log dir, or a
plain loop without Spark), shapes the outcome as rows, and plans "what if" retention from the ``segments`` and
``partitions`` tables without touching any disk.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from segdex.indexcore.config.log_config import CLUSTER_METADATA_TOPIC, LogConfig, TopicConfigResolver
from segdex.indexcore.errors import SegdexError
from segdex.indexcore.log.layout import filename_prefix_from_offset
from segdex.indexcore.log.log_segment import TIMESTAMP_FROM_MTIME, TIMESTAMP_FROM_TIME_INDEX
from segdex.indexcore.metadata.metadata_image import stray_replicas
from segdex.indexcore.retention.log_dirs import LogDirOutcome, as_resolver, run_log_dir
from segdex.indexcore.retention.policy import (
    ACTION_BLOCKED,
    ACTION_DELETE,
    ACTION_SKIPPED,
    PartitionFacts,
    RetentionPlan,
    SegmentFacts,
    plan_retention,
)
from segdex.pipelines import metadata_store as ms
from segdex.pipelines import runs
from segdex.pipelines.schemas import (  # noqa: F401 - re-exported
    RETENTION_ACTION_KEYS,
    RETENTION_ACTIONS,
    RETENTION_ACTIONS_SCHEMA,
    RETENTION_ACTIONS_TABLE,
    RetentionActionRow,
)
from segdex.pipelines.spark_tasks import run_tasks

from .engine import Engine

TIMESTAMP_UNKNOWN = "unknown"

STATUS_PLANNED = "planned"
STATUS_APPLIED = "applied"
STATUS_FAILED = "failed"
STATUS_WHAT_IF = "what_if"

SOURCE_DISK = "disk"
SOURCE_METADATA = "metadata"


def new_run_id() -> str:
    return runs.new_run_id("retention")


def run_disk(log_dirs: list[str], config: LogConfig | TopicConfigResolver, now_ms: int, apply: bool = False,
             spark: Engine | None = None, allow_unloadable: bool = False) -> list[LogDirOutcome]:
    """``indexcore.retention.run_log_dir`` for each log dir: one Spark task per log dir when ``spark`` is given
    (each task plans and applies its own dir under that dir's lock), else a loop in this process. ``config``: one
    for every topic, or a resolver (``as_resolver`` makes one with per-topic overrides)."""
    try:  # what the metadata log's image makes stray: left alone (a log dir without one: none)
        strays = stray_replicas([d for d in log_dirs if os.path.isdir(d)])
    except (SegdexError, OSError):
        strays = {}
    if spark is None or len(log_dirs) < 2:
        return [run_log_dir(d, config, now_ms, None, apply, allow_unloadable, strays) for d in log_dirs]
    return run_tasks(spark, log_dirs, lambda d: run_log_dir(d, config, now_ms, None, apply, allow_unloadable,
                                                            strays), "segdex retention")


@dataclass(frozen=True)
class RetentionRun:
    """What every ``retention_actions`` row of one run carries: its id, when it ran, and the clock it judged by."""

    run_id: str
    run_at: datetime
    now_ms: int


def plan_rows(plan: RetentionPlan, log_dir: str, status: str, source: str,
              run: RetentionRun) -> list[RetentionActionRow]:
    """A plan as ``retention_actions`` rows: one per deleted or blocked segment, one for a skipped partition."""
    common = {"run_id": run.run_id, "log_dir": log_dir, "topic": plan.topic, "partition": plan.partition,
              "status": status, "source": source, "now_ms": run.now_ms, "run_at": run.run_at,
              "log_start_offset_after": plan.log_start_offset_after}
    rows = []
    for d in plan.deletions:
        rows.append(RetentionActionRow(**common, base_offset=d.base_offset, action=ACTION_DELETE,
                                       segment=filename_prefix_from_offset(d.base_offset), rule=d.rule,
                                       bytes=d.size_bytes, upper_bound_offset=d.upper_bound_offset,
                                       largest_timestamp=d.largest_timestamp, reason=d.reason))
    for seg, why in plan.blocked:
        rows.append(RetentionActionRow(**common, base_offset=seg.base_offset, action=ACTION_BLOCKED,
                                       segment=filename_prefix_from_offset(seg.base_offset), rule="retention.ms",
                                       bytes=seg.size_bytes, upper_bound_offset=None,
                                       largest_timestamp=seg.largest_timestamp, reason=why))
    if plan.skipped:
        rows.append(RetentionActionRow(**common, base_offset=-1, action=ACTION_SKIPPED, segment=None, rule=None,
                                       bytes=0, upper_bound_offset=None, largest_timestamp=None,
                                       reason=plan.skipped))
    return rows


def outcome_rows(outcomes: Iterable[LogDirOutcome], run_id: str, run_at: datetime, now_ms: int,
                 applied: bool) -> list[RetentionActionRow]:
    """Rows for every partition of every log dir (status planned, or applied/failed after ``--apply``)."""
    rows = []
    for o in outcomes:
        for p in o.partitions:
            status = STATUS_PLANNED
            if applied:
                status = STATUS_FAILED if p.error else STATUS_APPLIED
            rows.extend(plan_rows(p.plan, o.log_dir, status, SOURCE_DISK, RetentionRun(run_id, run_at, now_ms)))
    return rows


def record_actions(spark: Engine, metadata_path: str, rows: Any) -> int:
    """Upsert rows (typed rows, dicts or a DataFrame) into ``<metadata>/retention_actions``; planned rows of a run
    become applied rows when the same run applies them."""
    return ms.MetadataStore(metadata_path, spark).upsert(RETENTION_ACTIONS_TABLE, rows)


def _plan_group(key: tuple, rows: Iterable[dict], config: LogConfig | TopicConfigResolver,
                run: RetentionRun) -> list[RetentionActionRow]:
    """One partition's retention planned from its ``segments`` and ``partitions`` rows (``what_if``)."""
    log_dir, topic, partition = key
    now_ms = run.now_ms
    rows = sorted(rows, key=lambda r: r["base_offset"])
    part = rows[0]
    segments = []
    for r in rows:
        ts = r["max_timestamp"]
        mtime = r.get("log_mtime_ms")
        if (ts is None or ts < 0) and mtime is not None:  # no time index entry: Kafka uses the .log mtime
            segments.append(SegmentFacts(r["base_offset"], r["size_bytes"] or 0, mtime, TIMESTAMP_FROM_MTIME))
        elif ts is None or ts < 0:  # tables written before log_mtime_ms existed
            segments.append(SegmentFacts(r["base_offset"], r["size_bytes"] or 0, now_ms, TIMESTAMP_UNKNOWN))
        else:
            segments.append(SegmentFacts(r["base_offset"], r["size_bytes"] or 0, ts, TIMESTAMP_FROM_TIME_INDEX))
    leo = part["log_end_offset"]
    if leo is None:
        leo = rows[-1]["next_offset"] if rows[-1]["next_offset"] is not None else rows[-1]["base_offset"]
    facts = PartitionFacts(topic, partition, segments, leo, part["log_start_offset"], part["high_watermark"])
    plan = plan_retention(facts, as_resolver(config)(topic), now_ms)
    return plan_rows(plan, log_dir, STATUS_WHAT_IF, SOURCE_METADATA, run)


def what_if(spark: Engine, metadata_path: str, config: LogConfig | TopicConfigResolver, now_ms: int,
            run_id: str | None = None, run_at: datetime | None = None) -> Any:
    """Retention planned from the ``segments`` and ``partitions`` tables alone, as a DataFrame of
    ``retention_actions`` rows (status ``what_if``); no log dir is read. One group per partition. ``config``: one
    for every topic, or a resolver (``as_resolver`` makes one with per-topic overrides)."""
    run = RetentionRun(run_id or new_run_id(), run_at or datetime.now(UTC), now_ms)
    segments = ms.read_table(spark, metadata_path, "segments")
    partitions = ms.read_table(spark, metadata_path, "partitions")
    keys = ["log_dir", "topic", "partition"]
    if "future" in segments.columns:
        segments = segments.where("future IS NULL OR NOT future")
    if "future" in partitions.columns:
        partitions = partitions.where("future IS NULL OR NOT future")
    # The KRaft metadata log follows its own retention (metadata.* settings and snapshots), never topic rules.
    segments = segments.where(segments.topic != CLUSTER_METADATA_TOPIC)
    if "log_mtime_ms" not in segments.columns:
        from pyspark.sql import functions as F

        segments = segments.withColumn("log_mtime_ms", F.lit(None).cast("long"))
    joined = (segments.select(*keys, "base_offset", "next_offset", "max_timestamp", "size_bytes", "log_mtime_ms")
              .join(partitions.select(*keys, "log_start_offset", "high_watermark", "log_end_offset"), keys, "left"))
    def plan(table: pa.Table) -> pa.Table:  # one partition's segments (DataFrame API: Spark Connect too)
        rows = table.to_pylist()
        key = (rows[0]["log_dir"], rows[0]["topic"], rows[0]["partition"])
        out = list(_plan_group(key, rows, config, run))
        return ms.to_arrow(out, RETENTION_ACTIONS_SCHEMA)

    schema = ms.spark_schema(RETENTION_ACTIONS_SCHEMA)
    return joined.groupBy(*keys).applyInArrow(plan, schema)

