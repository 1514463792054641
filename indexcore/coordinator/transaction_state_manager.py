"""The transactions a transaction coordinator holds after loading a ``__transaction_state`` partition, offline.

Kafka's ``TransactionStateManager.loadTransactionMetadata`` replays the partition in offset order
(``coordinator_loader``): each ``TransactionLog`` record (key type 0: the transactional id) puts the transaction's
metadata as its value says (``TransactionLog.readTxnRecordValue``), a tombstone removes the transactional id (an
expired one). What remains is what ``kafka-transactions list`` and ``describe`` answer after the coordinator loads:
the producer id and epoch, the state, the partitions of an ongoing transaction, its timeout and timestamps.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from segdex.indexcore.coordinator import coordinator_loader
from segdex.indexcore.coordinator.coordinator_loader import LoadSummary
from segdex.indexcore.coordinator.records import (
    TRANSACTION_RECORD_TYPES,
    TRANSACTION_STATES,
    read_record_key,
    read_record_value,
)
from segdex.indexcore.log.log_segments import segment_logs
from segdex.indexcore.protocol.message_format import MessageFormatException
from segdex.indexcore.record.record_batch import NO_PRODUCER_ID

TRANSACTION_LOG_TYPE = 0  # TransactionLogKey's record type
NO_PRODUCER_EPOCH = -1  # fields a version-0 value does not have take their schema defaults


@dataclass(frozen=True)
class TransactionMetadata:
    """Kafka's ``TransactionMetadata`` as ``TransactionLog.readTxnRecordValue`` builds it from one record."""

    transactional_id: str
    record_offset: int  # where the record sits in __transaction_state
    producer_id: int
    previous_producer_id: int  # -1: none (value version 0 has none)
    next_producer_id: int
    producer_epoch: int
    next_producer_epoch: int
    transaction_timeout_ms: int
    state: str  # Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort, Dead, ...
    partitions: tuple[tuple[str, int], ...]  # (topic, partition) of the transaction, in the record's order
    last_update_timestamp_ms: int
    start_timestamp_ms: int  # -1 when no transaction has started
    client_transaction_version: int


@dataclass
class TransactionsLoad(LoadSummary):
    """A ``__transaction_state`` partition replayed: the transactions by id, and how the load went
    (``LoadSummary``)."""

    transactions: dict[str, TransactionMetadata] = field(default_factory=dict)


def transaction_record(record_offset: int, record_type: int, key: bytes,
                       value: bytes | None) -> tuple[str, TransactionMetadata | None]:
    """A ``TransactionLog`` record decoded: its transactional id and metadata (None: a tombstone)."""
    _, key_schema, value_schema = TRANSACTION_RECORD_TYPES[record_type]
    transactional_id = read_record_key(key_schema, key)["transactionalId"]
    if value is None:
        return transactional_id, None
    v = read_record_value(value_schema, value)
    status = v["transactionStatus"]
    if status not in TRANSACTION_STATES:
        raise MessageFormatException(f"Unknown transaction state id {status}")
    partitions = tuple((t["topic"], p) for t in v["transactionPartitions"] or [] for p in t["partitionIds"])
    return transactional_id, TransactionMetadata(
        transactional_id, record_offset, v["producerId"], v.get("previousProducerId", NO_PRODUCER_ID),
        v.get("nextProducerId", NO_PRODUCER_ID), v["producerEpoch"], v.get("nextProducerEpoch", NO_PRODUCER_EPOCH),
        v["transactionTimeoutMs"], TRANSACTION_STATES[status], partitions, v["transactionLastUpdateTimestampMs"],
        v["transactionStartTimestampMs"], v.get("clientTransactionVersion", 0))


def transactions_replay(logs: list[tuple[int, str]],
                        log_start_offset: int | None = None) -> coordinator_loader.PartitionReplay:
    """The transaction coordinator's load of a ``__transaction_state`` partition whose segments are ``logs``, to be
    fed segment by segment (``PartitionReplay``); its ``summary`` is the ``TransactionsLoad``: the last record of a
    transactional id wins, a tombstone removes it (key types other than 0 are skipped)."""
    out = TransactionsLoad()

    def apply(_record_offset: int, _producer_id: int, record: tuple[str, TransactionMetadata | None]) -> None:
        transactional_id, metadata = record
        if metadata is None:
            out.transactions.pop(transactional_id, None)
        else:
            out.transactions[transactional_id] = metadata

    on_record = coordinator_loader.record_serde((TRANSACTION_LOG_TYPE,), transaction_record, apply, out,
                                                key_name="transaction log key")
    return coordinator_loader.PartitionReplay(logs, on_record, summary=out, log_start_offset=log_start_offset)


def load_transactions(partition_dir: str | os.PathLike, log_start_offset: int | None = None) -> TransactionsLoad:
    """Replay a ``__transaction_state`` partition directory as the transaction coordinator loads it
    (``transactions_replay``), from ``log_start_offset`` (its ``log-start-offset-checkpoint`` entry)."""
    replay = transactions_replay(segment_logs(partition_dir)[0], log_start_offset)
    replay.finish()
    return replay.summary
