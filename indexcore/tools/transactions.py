"""``kafka-transactions`` offline (``TransactionsCommand``): ``list``, ``describe`` and ``find-hanging`` answered
from the log dirs of a cluster (``cluster_view``) instead of its brokers.

- ``list`` (``ListTransactionsCommand``): every transactional id the transaction coordinators hold after their
  load, but those in state ``Dead`` (being expired: ``TransactionStateManager.listTransactionStates`` leaves them
  out), with the broker id of its coordinator;
- ``describe`` (``DescribeTransactionsCommand``): one transactional id's producer id and epoch, state, timeout,
  transaction start time, duration at ``now``, and the partitions of its ongoing transaction;
- ``find-hanging`` (``FindHangingTransactionsCommand``, rules in ``find_hanging``): the open transactions of every
  partition (producer state replayed by recovery) that the coordinators will never end.

Tables print as Kafka's ``ToolsUtils.prettyPrintTable``: each column padded to its widest value, each cell
followed by a tab. A transactional id held by a ``__transaction_state`` partition loaded only in part (a damaged
or cut segment) is marked partial, with the offset the load reached and what Kafka's coordinator loads there
after the broker's next start (``coordinator_loader.after_broker_start``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from segdex.indexcore.coordinator.transaction_state_manager import TransactionMetadata
from segdex.indexcore.log.java_hash_map import copied_capacity, hash_map_order, topic_partition_hash
from segdex.indexcore.tools.cluster_view import ClusterView
from segdex.indexcore.tools.find_hanging import (
    DEAD,
    DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
    OpenTransaction,
    find_hanging,
    open_transactions,
)

LIST_HEADERS = ("TransactionalId", "Coordinator", "ProducerId", "TransactionState")
DESCRIBE_HEADERS = ("CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
                    "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs",
                    "TopicPartitions")
FIND_HANGING_HEADERS = ("Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
                        "LastTimestamp", "Duration(min)")


@dataclass(frozen=True)
class CoordinatedTransaction:
    """A transactional id's metadata and the coordinator that holds it (broker id, ``__transaction_state``
    partition)."""

    metadata: TransactionMetadata
    coordinator: int | None
    coordinator_partition: int
    partial: bool = False  # its coordinator partition loaded only in part: the state may be stale
    loaded_to_offset: int | None = None  # partial: the offset that load reached
    kafka_after_start: str | None = None  # partial: Kafka's coordinator after the broker's next start (same, ...)
    partial_reason: str | None = None

    def marks(self) -> dict[str, Any]:
        """The partial mark as the JSON fields of a row."""
        return {"partial": self.partial, "loaded_to_offset": self.loaded_to_offset,
                "kafka_after_start": self.kafka_after_start}

    def list_row(self) -> list[str]:
        m = self.metadata
        return [m.transactional_id, str(self.coordinator if self.coordinator is not None else -1),
                str(m.producer_id), m.state]

    def describe_row(self, now_ms: int) -> list[str]:
        m = self.metadata
        started = m.start_timestamp_ms if m.start_timestamp_ms >= 0 else None
        return [str(self.coordinator if self.coordinator is not None else -1), m.transactional_id,
                str(m.producer_id), str(m.producer_epoch), m.state, str(m.transaction_timeout_ms),
                str(started), str(None if started is None else now_ms - started),  # Kafka: "None" without a start
                ",".join(f"{t}-{p}" for t, p in described_partitions(m.partitions))]


def described_partitions(in_record_order: tuple[tuple[str, int], ...]) -> list[tuple[str, int]]:
    """A transaction's partitions in the order ``kafka-transactions describe`` prints them, which three
    ``HashSet<TopicPartition>`` make: ``TransactionLog.readTxnRecordValue`` adds the record's partitions to a new
    set, ``TransactionMetadata`` copies it (``new HashSet<>(set)``), ``handleDescribeTransactions`` groups that
    copy's order by topic into the response, and ``DescribeTransactionsHandler`` adds the response's partitions to
    a new set, which the tool joins in its order."""
    read = hash_map_order(in_record_order, topic_partition_hash)
    copied = hash_map_order(read, topic_partition_hash, copied_capacity(len(read)))
    by_topic: dict[str, list[tuple[str, int]]] = {}
    for tp in copied:
        by_topic.setdefault(tp[0], []).append(tp)
    return hash_map_order([tp for tps in by_topic.values() for tp in tps], topic_partition_hash)


def coordinated_transactions(view: ClusterView) -> dict[str, CoordinatedTransaction]:
    """Every transactional id the coordinators hold after their load (``Dead`` ones included), by id."""
    out = {}
    for coordinator in view.transaction_coordinators:
        load = coordinator.load
        mark = {} if not load.partial else {
            "partial": True, "loaded_to_offset": load.next_offset,
            "kafka_after_start": load.after_start.answer if load.after_start is not None else None,
            "partial_reason": load.partial_reason(f"{coordinator.topic}-{coordinator.partition}")}
        for tid, metadata in load.transactions.items():
            out[tid] = CoordinatedTransaction(metadata, coordinator.node_id, coordinator.partition, **mark)
    return out


def list_transactions(view: ClusterView, now_ms: int, duration_filter_ms: int | None = None,
                      ) -> list[CoordinatedTransaction]:
    """``listTransactionStates``: not ``Dead``, and (with a filter) running longer than ``duration_filter_ms``;
    by transactional id."""
    out = []
    for _tid, t in sorted(coordinated_transactions(view).items()):
        if t.metadata.state == DEAD:
            continue
        if duration_filter_ms is not None and duration_filter_ms >= 0 and \
                now_ms - t.metadata.start_timestamp_ms <= duration_filter_ms:
            continue
        out.append(t)
    return out


def find_hanging_transactions(view: ClusterView, now_ms: int,
                              max_transaction_timeout_ms: int = DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
                              topic: str | None = None, partition: int | None = None) -> list[OpenTransaction]:
    """``find-hanging`` over the partitions of the log dirs (or one topic, or one partition of it)."""
    candidates = []
    for t, p in view.topic_partitions():
        if (topic is not None and t != topic) or (partition is not None and p != partition):
            continue
        recovered = view.recovered(t, p)
        if recovered is not None:
            candidates.extend(open_transactions(t, p, recovered.producer_state))
    transactions = {tid: c.metadata for tid, c in coordinated_transactions(view).items()}
    return find_hanging(candidates, transactions, now_ms, max_transaction_timeout_ms)


def find_hanging_row(t: OpenTransaction, now_ms: int) -> list[str]:
    return [t.topic, str(t.partition), str(t.producer_id), str(t.producer_epoch), str(t.coordinator_epoch),
            str(t.start_offset), str(t.last_timestamp), str(t.duration_minutes(now_ms))]


def pretty_print_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """``ToolsUtils.prettyPrintTable``: each cell padded to its column's widest value, then a tab; one line per
    row after the headers."""
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    return "".join("".join(v.ljust(w) + "\t" for v, w in zip(row, widths, strict=True)) + "\n"
                   for row in [list(headers), *rows])
