"""The part of Kafka's ``ProducerStateManager`` that decides ``.txnindex`` entries.

Recovery carries it across a partition's segments in offset order, so a
transaction may start in one segment and be aborted in a later one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import InvalidTxnStateException
from .record_batch import RecordBatch
from .records import end_txn_marker
from .transaction_index import AbortedTxn


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


@dataclass
class ProducerStateManager:
    # producerId -> first offset of its open transaction
    current_txn_first_offset: dict[int, int] = field(default_factory=dict)
    # firstOffset -> producerId of every open transaction (Kafka keeps a TreeMap keyed by firstOffset)
    ongoing_txns: dict[int, int] = field(default_factory=dict)

    @property
    def has_ongoing_txns(self) -> bool:
        return bool(self.ongoing_txns)

    def update(self, buf, batch: RecordBatch) -> AbortedTxn | None:
        """Apply one magic-2 batch (``LogSegment.updateProducerState``); return the txn index entry it makes."""
        aborted = None
        if batch.has_producer_id:
            pid = batch.producer_id
            if batch.is_control:
                marker = end_txn_marker(buf, batch)
                first = self.current_txn_first_offset.pop(pid, None)
                if marker is not None and first is not None:
                    completed = CompletedTxn(pid, first, batch.base_offset, marker[0] == "ABORT")
                    lso = self.last_stable_offset(completed)
                    if completed.is_aborted:
                        aborted = AbortedTxn(pid, first, completed.last_offset, lso)
                    self.ongoing_txns.pop(first, None)
                elif marker is None and first is not None:
                    self.current_txn_first_offset[pid] = first  # an empty control batch changes nothing
            else:
                open_first = self.current_txn_first_offset.get(pid)
                if open_first is not None and not batch.is_transactional:
                    raise InvalidTxnStateException(
                        f"Expected transactional write from producer {pid} at offset {batch.base_offset}")
                if open_first is None and batch.is_transactional:
                    self.current_txn_first_offset[pid] = batch.base_offset
                    self.ongoing_txns[batch.base_offset] = pid
        return aborted

    def last_stable_offset(self, completed: CompletedTxn) -> int:
        """First offset of the earliest other open transaction, else the marker's offset + 1."""
        for first in sorted(self.ongoing_txns):
            if self.ongoing_txns[first] != completed.producer_id:
                return first
        return completed.last_offset + 1
