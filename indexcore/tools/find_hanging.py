"""``kafka-transactions find-hanging`` offline (``TransactionsCommand.FindHangingTransactionsCommand``).

Kafka's tool asks a live cluster three things and joins them; segdex answers each from the log dirs:

1. the open transactions of the data partitions (``DescribeProducers``: an active producer with a
   ``currentTransactionStartOffset``), here from the partition's replayed producer state (``ProducerStateManager``);
2. which of them are candidates: open for longer than ``--max-transaction-timeout`` (15 minutes by default),
   measured from the producer's last timestamp;
3. the transaction coordinator's view of their producers (``ListTransactions`` filtered by producer id, then
   ``DescribeTransactions``), here from ``__transaction_state`` replayed (``transaction_state_manager``).

A candidate hangs when no transactional id has its producer id, or when the coordinator's transaction does not
list its partition (the coordinator will never write a marker there).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from segdex.indexcore.coordinator.transaction_state_manager import TransactionMetadata
from segdex.indexcore.log.producer_state import ProducerStateManager

DEFAULT_MAX_TRANSACTION_TIMEOUT_MS = 15 * 60_000  # find-hanging's --max-transaction-timeout default (15 min)
DEAD = "Dead"  # a transactional id being removed: ListTransactions does not list it


@dataclass(frozen=True)
class OpenTransaction:
    """One open transaction of a data partition, with the columns ``find-hanging`` prints."""

    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    start_offset: int
    last_timestamp: int

    def duration_minutes(self, now_ms: int) -> int:
        """``Duration(min)``: whole minutes since the producer's last timestamp, rounded toward zero as
        ``TimeUnit.MILLISECONDS.toMinutes`` rounds (a timestamp after the tool's clock gives minus the minutes
        before it)."""
        elapsed = now_ms - self.last_timestamp
        return elapsed // 60_000 if elapsed >= 0 else -(-elapsed // 60_000)


def open_transactions(topic: str, partition: int, producers: ProducerStateManager) -> list[OpenTransaction]:
    """The partition's open transactions, by start offset (``DescribeProducers``' active producers with a
    current transaction start offset)."""
    found = [OpenTransaction(topic, partition, e.producer_id, e.producer_epoch, e.coordinator_epoch,
                             e.current_txn_first_offset, e.last_timestamp)
             for e in producers.producers.values() if e.current_txn_first_offset is not None]
    return sorted(found, key=lambda t: t.start_offset)


def find_hanging(candidates: Iterable[OpenTransaction], transactions: Mapping[str, TransactionMetadata],
                 now_ms: int, max_transaction_timeout_ms: int = DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
                 ) -> list[OpenTransaction]:
    """The hanging transactions among ``candidates`` (``FindHangingTransactionsCommand.execute``):
    ``transactions`` are the coordinator's, by transactional id, from every ``__transaction_state`` partition."""
    old = [t for t in candidates if now_ms - t.last_timestamp > max_transaction_timeout_ms]
    by_producer = {m.producer_id: m for m in transactions.values() if m.state != DEAD}
    hanging = []
    for t in old:
        metadata = by_producer.get(t.producer_id)
        if metadata is None or (t.topic, t.partition) not in metadata.partitions:
            hanging.append(t)
    return hanging
