"""Every metadata table's schema, keys and fact columns: ``segments``, ``partitions``, ``runs``,
``retention_actions``, as ``TableSpec``s for ``metadata_store.MetadataStore``."""

from __future__ import annotations

import os
from dataclasses import dataclass

import pyarrow as pa

from segdex.indexcore.status import STATUSES as SEGMENT_STATUSES

DEFAULT_METADATA_PATH = "segdex-metadata"
METADATA_ENV = "SEGDEX_METADATA"

SEGMENTS = "segments"
PARTITIONS = "partitions"
RUNS = "runs"
TABLES = (SEGMENTS, PARTITIONS, RUNS)

TS = pa.timestamp("us", tz="UTC")

SEGMENTS_SCHEMA = pa.schema([
    pa.field("log_dir", pa.string(), nullable=False),
    pa.field("topic", pa.string(), nullable=False),
    pa.field("partition", pa.int32(), nullable=False),
    pa.field("base_offset", pa.int64(), nullable=False),
    pa.field("segment_file", pa.string()),
    pa.field("future", pa.bool_()),  # a -future replica directory: part of the key
    pa.field("next_offset", pa.int64()),
    pa.field("max_timestamp", pa.int64()),
    pa.field("offset_of_max_timestamp", pa.int64()),
    pa.field("size_bytes", pa.int64()),
    pa.field("log_mtime_ms", pa.int64()),  # the .log's mtime: Kafka's retention.ms fallback without timestamps
    pa.field("valid_bytes", pa.int64()),
    pa.field("batch_count", pa.int64()),
    pa.field("record_count", pa.int64()),
    pa.field("index_entries", pa.int64()),
    pa.field("time_index_entries", pa.int64()),
    pa.field("txn_index_entries", pa.int64()),
    pa.field("magic", pa.int32()),
    pa.field("codecs", pa.string()),
    pa.field("status", pa.string()),
    pa.field("reason", pa.string()),
    pa.field("run_id", pa.string()),
    pa.field("scanned_at", TS),
])
SEGMENT_KEYS = ("log_dir", "topic", "partition", "future", "base_offset")

PARTITIONS_SCHEMA = pa.schema([
    pa.field("log_dir", pa.string(), nullable=False),
    pa.field("topic", pa.string(), nullable=False),
    pa.field("partition", pa.int32(), nullable=False),
    pa.field("future", pa.bool_()),
    pa.field("log_start_offset", pa.int64()),
    pa.field("recovery_point", pa.int64()),
    pa.field("high_watermark", pa.int64()),
    pa.field("log_end_offset", pa.int64()),
    pa.field("segment_count", pa.int64()),
    pa.field("size_bytes", pa.int64()),
    pa.field("max_timestamp", pa.int64()),
    pa.field("status", pa.string()),
    pa.field("reason", pa.string()),
    pa.field("run_id", pa.string()),
    pa.field("scanned_at", TS),
    # what the broker's next start would do with the dir as verify found it (null outside verify)
    pa.field("startup_action", pa.string()),  # none | recover | truncate | fail
    pa.field("startup_recovered_segments", pa.int64()),  # segments its load re-reads
    pa.field("startup_log_end_offset", pa.int64()),
    pa.field("startup_deleted_segments", pa.int64()),
    pa.field("startup_lost_bytes", pa.int64()),  # .log bytes cut or deleted
    pa.field("startup_note", pa.string()),  # a load that fails, a marker in front of a corrupt log
])
PARTITION_KEYS = ("log_dir", "topic", "partition", "future")

STATUSES = tuple(str(s) for s in SEGMENT_STATUSES)  # runs.count_<status>, best first

RUNS_SCHEMA = pa.schema([
    pa.field("run_id", pa.string(), nullable=False),
    pa.field("command", pa.string()),
    pa.field("arguments", pa.string()),
    pa.field("log_dirs", pa.string()),
    pa.field("started_at", TS),
    pa.field("ended_at", TS),
    pa.field("partitions", pa.int64()),
    pa.field("segments", pa.int64()),
    pa.field("bytes", pa.int64()),
    *[pa.field(f"count_{s}", pa.int64()) for s in STATUSES],
    pa.field("files_written", pa.int64()),
    pa.field("skipped", pa.int64()),
    pa.field("exit_status", pa.int32()),
    pa.field("files_failed", pa.int64()),  # index files a reindex could not write (added after the first release)
])
RUN_KEYS = ("run_id",)

# Columns whose change rewrites a current row; run_id/scanned_at say which run last recorded new facts.
BOOKKEEPING = ("run_id", "scanned_at")
SEGMENT_FACTS = tuple(n for n in SEGMENTS_SCHEMA.names if n not in SEGMENT_KEYS + BOOKKEEPING)
PARTITION_FACTS = tuple(n for n in PARTITIONS_SCHEMA.names if n not in PARTITION_KEYS + BOOKKEEPING)


@dataclass(frozen=True)
class TableSpec:
    """A metadata table: its name, schema, merge keys, and the columns whose change rewrites a matched row
    (``facts``; None: every matched row is rewritten)."""

    name: str
    schema: pa.Schema
    keys: tuple[str, ...] = ()
    facts: tuple[str, ...] | None = None

    @property
    def fact_columns(self) -> tuple[str, ...]:
        return self.facts or ()


SEGMENTS_TABLE = TableSpec(SEGMENTS, SEGMENTS_SCHEMA, SEGMENT_KEYS, SEGMENT_FACTS)
PARTITIONS_TABLE = TableSpec(PARTITIONS, PARTITIONS_SCHEMA, PARTITION_KEYS, PARTITION_FACTS)
RUNS_TABLE = TableSpec(RUNS, RUNS_SCHEMA, RUN_KEYS)

TOPIC_CONFIGS = "topic_configs"
TOPIC_CONFIGS_SCHEMA = pa.schema([
    pa.field("topic", pa.string(), nullable=False),
    pa.field("config", pa.string(), nullable=False),  # Kafka's topic config name (index.interval.bytes, ...)
    pa.field("value", pa.string()),
    # where the value came from: --topic-config, internal topic, --config, --topic-configs (SOURCE),
    # server.properties (log.*), or "Kafka default" (assumed: nobody gave it)
    pa.field("source", pa.string()),
    pa.field("run_id", pa.string()),
    pa.field("recorded_at", TS),
])
TOPIC_CONFIG_KEYS = ("topic", "config")
TOPIC_CONFIGS_TABLE = TableSpec(TOPIC_CONFIGS, TOPIC_CONFIGS_SCHEMA, TOPIC_CONFIG_KEYS, ("value", "source"))

RETENTION_ACTIONS = "retention_actions"
RETENTION_ACTIONS_SCHEMA = pa.schema([
    pa.field("run_id", pa.string(), nullable=False),
    pa.field("log_dir", pa.string(), nullable=False),
    pa.field("topic", pa.string(), nullable=False),
    pa.field("partition", pa.int32(), nullable=False),
    pa.field("base_offset", pa.int64(), nullable=False),  # -1 on a partition-level (skipped) row
    pa.field("action", pa.string(), nullable=False),  # delete | blocked | skipped
    pa.field("segment", pa.string()),
    pa.field("rule", pa.string()),
    pa.field("bytes", pa.int64()),
    pa.field("upper_bound_offset", pa.int64()),
    pa.field("largest_timestamp", pa.int64()),
    pa.field("reason", pa.string()),
    pa.field("status", pa.string()),  # planned | applied | failed | what_if
    pa.field("source", pa.string()),  # disk | metadata
    pa.field("now_ms", pa.int64()),
    pa.field("log_start_offset_after", pa.int64()),
    pa.field("run_at", TS),
])
RETENTION_ACTION_KEYS = ("run_id", "log_dir", "topic", "partition", "base_offset", "action")
RETENTION_ACTIONS_TABLE = TableSpec(RETENTION_ACTIONS, RETENTION_ACTIONS_SCHEMA, RETENTION_ACTION_KEYS)


def default_metadata_path() -> str:
    """``$SEGDEX_METADATA``, else ``./segdex-metadata``."""
    return os.environ.get(METADATA_ENV) or DEFAULT_METADATA_PATH
