"""Every metadata table's schema, keys and fact columns: ``segments``, ``partitions``, ``runs``,
``retention_actions``, as ``TableSpec``s for ``metadata_store.MetadataStore``."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, make_dataclass
from datetime import datetime
from typing import Any

import pyarrow as pa

from segdex.indexcore.status import STATUSES as SEGMENT_STATUSES

DEFAULT_METADATA_PATH = "segdex-metadata"
METADATA_ENV = "SEGDEX_METADATA"

SEGMENTS = "segments"
PARTITIONS = "partitions"
RUNS = "runs"
TABLES = (SEGMENTS, PARTITIONS, RUNS)

TS = pa.timestamp("us", tz="UTC")

def column(arrow_type: pa.DataType, nullable: bool = True) -> Any:
    """A row field that is a table column: its Arrow type and nullability (``arrow_schema`` reads them)."""
    return field(metadata={"arrow": arrow_type, "nullable": nullable})


def arrow_schema(row: type) -> pa.Schema:
    """The table schema a row dataclass declares: its fields, in order, with their column types."""
    return pa.schema([pa.field(f.name, f.metadata["arrow"], nullable=f.metadata["nullable"]) for f in fields(row)])


def as_columns(row: Any) -> dict[str, Any]:
    """A typed row as the plain ``column -> value`` mapping the table writers take."""
    return {f.name: getattr(row, f.name) for f in fields(row)}


@dataclass
class SegmentRow:
    """A row of ``segments``: one segment as the run found it, or left it (a rewritten index makes it ``ok``)."""

    log_dir: str = column(pa.string(), nullable=False)
    topic: str = column(pa.string(), nullable=False)
    partition: int = column(pa.int32(), nullable=False)
    base_offset: int = column(pa.int64(), nullable=False)
    segment_file: str | None = column(pa.string())
    future: bool | None = column(pa.bool_())  # a -future replica directory: part of the key
    next_offset: int | None = column(pa.int64())
    max_timestamp: int | None = column(pa.int64())
    offset_of_max_timestamp: int | None = column(pa.int64())
    size_bytes: int | None = column(pa.int64())
    log_mtime_ms: int | None = column(pa.int64())  # the .log's mtime: Kafka's retention.ms fallback
    valid_bytes: int | None = column(pa.int64())
    batch_count: int | None = column(pa.int64())
    record_count: int | None = column(pa.int64())
    index_entries: int | None = column(pa.int64())
    time_index_entries: int | None = column(pa.int64())
    txn_index_entries: int | None = column(pa.int64())
    magic: int | None = column(pa.int32())
    codecs: str | None = column(pa.string())
    status: str | None = column(pa.string())
    reason: str | None = column(pa.string())
    run_id: str | None = column(pa.string())
    scanned_at: datetime | None = column(TS)


SEGMENTS_SCHEMA = arrow_schema(SegmentRow)
SEGMENT_KEYS = ("log_dir", "topic", "partition", "future", "base_offset")


@dataclass
class PartitionRow:
    """A row of ``partitions``: a partition directory, its checkpoints, its worst segment's status, and (verify
    only) what the broker's next start would do with it."""

    log_dir: str = column(pa.string(), nullable=False)
    topic: str = column(pa.string(), nullable=False)
    partition: int = column(pa.int32(), nullable=False)
    future: bool | None = column(pa.bool_())
    log_start_offset: int | None = column(pa.int64())
    recovery_point: int | None = column(pa.int64())
    high_watermark: int | None = column(pa.int64())
    log_end_offset: int | None = column(pa.int64())
    segment_count: int | None = column(pa.int64())
    size_bytes: int | None = column(pa.int64())
    max_timestamp: int | None = column(pa.int64())
    status: str | None = column(pa.string())
    reason: str | None = column(pa.string())
    run_id: str | None = column(pa.string())
    scanned_at: datetime | None = column(TS)
    startup_action: str | None = column(pa.string())  # none | recover | truncate | fail
    startup_recovered_segments: int | None = column(pa.int64())  # segments its load re-reads
    startup_log_end_offset: int | None = column(pa.int64())
    startup_deleted_segments: int | None = column(pa.int64())
    startup_lost_bytes: int | None = column(pa.int64())  # .log bytes cut or deleted
    startup_note: str | None = column(pa.string())  # a load that fails, a marker in front of a corrupt log
    # verify, compacted topics: the log cleaner's view (LogCleanerManager) at the scan's clock
    cleaner_checkpoint: int | None = column(pa.int64())  # the cleaner-offset-checkpoint entry, None: none
    cleaner_first_dirty_offset: int | None = column(pa.int64())  # where Kafka's next cleaning starts
    cleaner_first_uncleanable_offset: int | None = column(pa.int64())  # and ends (a segment's base offset)
    cleaner_dirty_ratio: float | None = column(pa.float64())  # cleanable bytes / all bytes up to that end
    cleaner_would_clean: bool | None = column(pa.bool_())  # past min.cleanable.dirty.ratio or max.compaction.lag
    cleaner_oldest_dirty_age_ms: int | None = column(pa.int64())  # now - the oldest dirty segment's first batch


PARTITIONS_SCHEMA = arrow_schema(PartitionRow)
PARTITION_KEYS = ("log_dir", "topic", "partition", "future")

STATUSES = tuple(str(s) for s in SEGMENT_STATUSES)  # runs.count_<status>, best first

# A row of ``runs``: one command run. The count_<status> columns follow the status vocabulary, so the class is
# made from it; files_failed was added after the first release and stays last.
RunRow = make_dataclass("RunRow", [
    ("run_id", str, column(pa.string(), nullable=False)),
    ("command", str, column(pa.string())),
    ("arguments", str, column(pa.string())),
    ("log_dirs", str, column(pa.string())),
    ("started_at", datetime, column(TS)),
    ("ended_at", datetime, column(TS)),
    ("partitions", int, column(pa.int64())),
    ("segments", int, column(pa.int64())),
    ("bytes", int, column(pa.int64())),
    *[(f"count_{s}", int, column(pa.int64())) for s in STATUSES],
    ("files_written", int, column(pa.int64())),
    ("skipped", int, column(pa.int64())),
    ("exit_status", int, column(pa.int32())),
    ("files_failed", int, column(pa.int64())),
])
RunRow.__module__ = __name__  # pickled by reference, as a class written out would be
RunRow.__doc__ = "A row of ``runs``: one command run, its counts by status and its exit status."
RUNS_SCHEMA = arrow_schema(RunRow)
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


@dataclass
class TopicConfigRow:
    """A row of ``topic_configs``: one topic's effective value of one config, and where it came from."""

    topic: str = column(pa.string(), nullable=False)
    config: str = column(pa.string(), nullable=False)  # Kafka's topic config name (index.interval.bytes, ...)
    value: str | None = column(pa.string())
    # where the value came from: --topic-config, internal topic, --config, --topic-configs (SOURCE),
    # server.properties (log.*), or "Kafka default" (assumed: nobody gave it)
    source: str | None = column(pa.string())
    run_id: str | None = column(pa.string())
    recorded_at: datetime | None = column(TS)


TOPIC_CONFIGS_SCHEMA = arrow_schema(TopicConfigRow)
TOPIC_CONFIG_KEYS = ("topic", "config")
TOPIC_CONFIGS_TABLE = TableSpec(TOPIC_CONFIGS, TOPIC_CONFIGS_SCHEMA, TOPIC_CONFIG_KEYS, ("value", "source"))

TOPICS = "topics"


@dataclass
class TopicRow:
    """A row of ``topics``: one partition of a topic as the metadata log's image holds it (``TopicImage``,
    ``PartitionRegistration``): which brokers hold it, which leads it, on which log dirs."""

    cluster_id: str = column(pa.string(), nullable=False)  # meta.properties of the log dir read ("" unknown)
    topic: str = column(pa.string(), nullable=False)
    partition: int = column(pa.int32(), nullable=False)
    topic_id: str | None = column(pa.string())  # Uuid.toString, as partition.metadata holds it
    partitions: int | None = column(pa.int32())  # the topic's partition count
    replicas: list[int] | None = column(pa.list_(pa.int32()))  # broker ids
    isr: list[int] | None = column(pa.list_(pa.int32()))
    leader: int | None = column(pa.int32())  # -1: none
    leader_epoch: int | None = column(pa.int32())
    partition_epoch: int | None = column(pa.int32())
    directories: list[str] | None = column(pa.list_(pa.string()))  # log dir ids, by replica
    metadata_log: str | None = column(pa.string())  # the __cluster_metadata-0 read
    metadata_offset: int | None = column(pa.int64())  # the last offset of it applied
    run_id: str | None = column(pa.string())
    recorded_at: datetime | None = column(TS)


TOPICS_SCHEMA = arrow_schema(TopicRow)
TOPICS_TABLE = TableSpec(TOPICS, TOPICS_SCHEMA, ("cluster_id", "topic", "partition"))

BROKERS = "brokers"


@dataclass
class BrokerRow:
    """A row of ``brokers``: a broker registered in the metadata log's image (``BrokerRegistration``)."""

    cluster_id: str = column(pa.string(), nullable=False)
    broker_id: int = column(pa.int32(), nullable=False)
    host: str | None = column(pa.string())  # its first listener's
    port: int | None = column(pa.int32())
    endpoints: list[str] | None = column(pa.list_(pa.string()))  # LISTENER://host:port
    rack: str | None = column(pa.string())
    fenced: bool | None = column(pa.bool_())
    in_controlled_shutdown: bool | None = column(pa.bool_())
    log_dir_ids: list[str] | None = column(pa.list_(pa.string()))
    incarnation_id: str | None = column(pa.string())
    broker_epoch: int | None = column(pa.int64())
    metadata_log: str | None = column(pa.string())
    metadata_offset: int | None = column(pa.int64())
    run_id: str | None = column(pa.string())
    recorded_at: datetime | None = column(TS)


BROKERS_SCHEMA = arrow_schema(BrokerRow)
BROKERS_TABLE = TableSpec(BROKERS, BROKERS_SCHEMA, ("cluster_id", "broker_id"))

RETENTION_ACTIONS = "retention_actions"


@dataclass
class RetentionActionRow:
    """A row of ``retention_actions``: a segment retention deletes or is blocked from deleting, or a partition it
    skips (``base_offset`` -1), planned, applied, failed, or a what-if from the metadata alone."""

    run_id: str = column(pa.string(), nullable=False)
    log_dir: str = column(pa.string(), nullable=False)
    topic: str = column(pa.string(), nullable=False)
    partition: int = column(pa.int32(), nullable=False)
    base_offset: int = column(pa.int64(), nullable=False)  # -1 on a partition-level (skipped) row
    action: str = column(pa.string(), nullable=False)  # delete | blocked | skipped
    segment: str | None = column(pa.string())
    rule: str | None = column(pa.string())
    bytes: int | None = column(pa.int64())
    upper_bound_offset: int | None = column(pa.int64())
    largest_timestamp: int | None = column(pa.int64())
    reason: str | None = column(pa.string())
    status: str | None = column(pa.string())  # planned | applied | failed | what_if
    source: str | None = column(pa.string())  # disk | metadata
    now_ms: int | None = column(pa.int64())
    log_start_offset_after: int | None = column(pa.int64())
    run_at: datetime | None = column(TS)


RETENTION_ACTIONS_SCHEMA = arrow_schema(RetentionActionRow)
RETENTION_ACTION_KEYS = ("run_id", "log_dir", "topic", "partition", "base_offset", "action")
RETENTION_ACTIONS_TABLE = TableSpec(RETENTION_ACTIONS, RETENTION_ACTIONS_SCHEMA, RETENTION_ACTION_KEYS)


CLEANING = "cleaning"


@dataclass
class CleaningRow:
    """A row of ``cleaning``: one partition of a compacted topic in one ``segdex clean`` run: whether Kafka's
    cleaner would take it at the run's clock and why, its cleanable range, and what one round would leave."""

    run_id: str = column(pa.string(), nullable=False)
    log_dir: str = column(pa.string(), nullable=False)
    topic: str = column(pa.string(), nullable=False)
    partition: int = column(pa.int32(), nullable=False)
    status: str = column(pa.string(), nullable=False)  # planned | not_due | applied | error
    would_clean: bool | None = column(pa.bool_())
    why: str | None = column(pa.string())
    checkpoint: int | None = column(pa.int64())  # the cleaner-offset-checkpoint entry before
    first_dirty_offset: int | None = column(pa.int64())
    first_uncleanable_offset: int | None = column(pa.int64())
    dirty_ratio: float | None = column(pa.float64())
    end_offset: int | None = column(pa.int64())  # the checkpoint after one round
    map_full: bool | None = column(pa.bool_())  # more rounds needed
    segments_before: int | None = column(pa.int64())
    segments_after: int | None = column(pa.int64())
    bytes_before: int | None = column(pa.int64())
    bytes_after: int | None = column(pa.int64())
    records_before: int | None = column(pa.int64())
    records_after: int | None = column(pa.int64())
    tombstones_kept: int | None = column(pa.int64())
    tombstones_removed: int | None = column(pa.int64())
    aborted_removed: int | None = column(pa.int64())  # records of aborted transactions removed
    keys: int | None = column(pa.int64())
    error: str | None = column(pa.string())
    applied: bool | None = column(pa.bool_())
    quarantine: str | None = column(pa.string())  # where the replaced files are kept
    finished: str | None = column(pa.string())  # an interrupted run's leftovers, finished as Kafka's load would
    rounds: int | None = column(pa.int32())  # rounds applied (or planned, with --until-clean)
    bytes_freed: int | None = column(pa.int64())  # by the rounds applied
    swapped_groups: int | None = column(pa.int32())  # a round that failed part way: groups swapped in before it
    now_ms: int | None = column(pa.int64())
    run_at: datetime | None = column(TS)


CLEANING_TABLE = TableSpec(CLEANING, arrow_schema(CleaningRow), ("run_id", "log_dir", "topic", "partition"))


def default_metadata_path() -> str:
    """``$SEGDEX_METADATA``, else ``./segdex-metadata``."""
    return os.environ.get(METADATA_ENV) or DEFAULT_METADATA_PATH

GROUP_OFFSETS, GROUPS, TRANSACTIONS, OPEN_TRANSACTIONS = "group_offsets", "groups", "transactions", "open_transactions"


@dataclass
class GroupOffsetRow:
    """A row of ``group_offsets``: one group's committed offset of one partition as the group coordinator's load
    leaves it, the partition's log start and end offsets (verify: after the broker's next start), and the
    restore check (``ok``, ``ahead_of_end``, ``before_start``, ``partition_not_found``)."""

    group: str = column(pa.string(), nullable=False)
    topic: str = column(pa.string(), nullable=False)
    partition: int = column(pa.int32(), nullable=False)
    log_dir: str | None = column(pa.string())  # the log dir of the __consumer_offsets replica read
    coordinator_partition: int | None = column(pa.int32())
    record_offset: int | None = column(pa.int64())  # where the commit record sits in __consumer_offsets
    committed_offset: int | None = column(pa.int64())
    leader_epoch: int | None = column(pa.int32())
    metadata: str | None = column(pa.string())
    commit_timestamp_ms: int | None = column(pa.int64())
    expire_timestamp_ms: int | None = column(pa.int64())
    consumer_id: str | None = column(pa.string())  # the member holding the partition, "-" when none
    log_start_offset: int | None = column(pa.int64())
    log_end_offset: int | None = column(pa.int64())
    lag: int | None = column(pa.int64())
    restore_status: str | None = column(pa.string())
    reread_if_earliest: int | None = column(pa.int64())  # records a consumer re-reads with auto.offset.reset=earliest
    skipped_if_latest: int | None = column(pa.int64())  # records it skips with auto.offset.reset=latest
    lost_offsets: int | None = column(pa.int64())  # offsets between the commit and the log start, gone
    run_id: str | None = column(pa.string())
    recorded_at: datetime | None = column(TS)
    # added after the first release (appended, never moved): its coordinator partition loaded only in part (a
    # damaged or cut segment), the offset that load reached, and what Kafka's coordinator loads there after the
    # broker's next start (same: these rows; differs; offline; unknown)
    partial: bool | None = column(pa.bool_())
    loaded_to_offset: int | None = column(pa.int64())
    kafka_after_start: str | None = column(pa.string())


@dataclass
class GroupRow:
    """A row of ``groups``: one group as the coordinator's load leaves it."""

    group: str = column(pa.string(), nullable=False)
    log_dir: str | None = column(pa.string())
    coordinator: int | None = column(pa.int32())  # the broker id of the log dir holding its coordinator partition
    coordinator_partition: int | None = column(pa.int32())
    type: str | None = column(pa.string())  # classic | consumer
    protocol_type: str | None = column(pa.string())  # consumer, connect, ... ("" for a simple group)
    protocol: str | None = column(pa.string())  # the assignment strategy (classic) or server assignor
    epoch: int | None = column(pa.int32())  # generation (classic) or group epoch (consumer protocol)
    state: str | None = column(pa.string())
    members: int | None = column(pa.int32())
    run_id: str | None = column(pa.string())
    recorded_at: datetime | None = column(TS)
    # added after the first release (appended, never moved): its coordinator partition loaded only in part (a
    # damaged or cut segment), the offset that load reached, and what Kafka's coordinator loads there after the
    # broker's next start (same: these rows; differs; offline; unknown)
    partial: bool | None = column(pa.bool_())
    loaded_to_offset: int | None = column(pa.int64())
    kafka_after_start: str | None = column(pa.string())


@dataclass
class TransactionRow:
    """A row of ``transactions``: one transactional id as the transaction coordinator's load leaves it."""

    transactional_id: str = column(pa.string(), nullable=False)
    log_dir: str | None = column(pa.string())
    coordinator: int | None = column(pa.int32())
    coordinator_partition: int | None = column(pa.int32())
    producer_id: int | None = column(pa.int64())
    producer_epoch: int | None = column(pa.int32())
    state: str | None = column(pa.string())
    partitions: str | None = column(pa.string())  # topic-partition,... of the ongoing transaction
    transaction_timeout_ms: int | None = column(pa.int64())
    start_timestamp_ms: int | None = column(pa.int64())
    last_update_timestamp_ms: int | None = column(pa.int64())
    run_id: str | None = column(pa.string())
    recorded_at: datetime | None = column(TS)
    # added after the first release (appended, never moved): its coordinator partition loaded only in part (a
    # damaged or cut segment), the offset that load reached, and what Kafka's coordinator loads there after the
    # broker's next start (same: these rows; differs; offline; unknown)
    partial: bool | None = column(pa.bool_())
    loaded_to_offset: int | None = column(pa.int64())
    kafka_after_start: str | None = column(pa.string())


@dataclass
class OpenTransactionRow:
    """A row of ``open_transactions``: a transaction open in a partition's replayed producer state, and whether
    it hangs by ``kafka-transactions find-hanging``'s rules at the run's time."""

    log_dir: str = column(pa.string(), nullable=False)
    topic: str = column(pa.string(), nullable=False)
    partition: int = column(pa.int32(), nullable=False)
    producer_id: int = column(pa.int64(), nullable=False)
    producer_epoch: int | None = column(pa.int32())
    coordinator_epoch: int | None = column(pa.int32())
    start_offset: int | None = column(pa.int64())
    last_timestamp: int | None = column(pa.int64())
    age_ms: int | None = column(pa.int64())
    hanging: bool | None = column(pa.bool_())
    run_id: str | None = column(pa.string())
    recorded_at: datetime | None = column(TS)


GROUP_OFFSETS_TABLE = TableSpec(GROUP_OFFSETS, arrow_schema(GroupOffsetRow), ("group", "topic", "partition"))
GROUPS_TABLE = TableSpec(GROUPS, arrow_schema(GroupRow), ("group",))
TRANSACTIONS_TABLE = TableSpec(TRANSACTIONS, arrow_schema(TransactionRow), ("transactional_id",))
OPEN_TRANSACTIONS_TABLE = TableSpec(OPEN_TRANSACTIONS, arrow_schema(OpenTransactionRow),
                                    ("log_dir", "topic", "partition", "producer_id"))
COORDINATOR_TABLES = (GROUP_OFFSETS_TABLE, GROUPS_TABLE, TRANSACTIONS_TABLE, OPEN_TRANSACTIONS_TABLE)
