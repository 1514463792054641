"""Kafka's ``CleanedTransactionMetadata``: which transactional batches a cleaning may drop, and which ABORT markers
go into the cleaned segment's ``.txnindex``.

It is fed the aborted transactions of the range being read (``collect_aborted_transactions``, from the
``.txnindex`` files) and then each batch in offset order:

- a data batch of a producer whose aborted transaction has started (its first offset reached) is aborted data:
  discardable; any other transactional batch marks its producer's transaction as holding committed data;
- an ABORT marker ends the producer's aborted transaction: kept (its transaction goes into the cleaned
  ``.txnindex``) while some of that transaction's data was seen in this pass, else discardable; a COMMIT marker is
  discardable when no data of its transaction was seen; a control batch of no records is discardable.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from segdex.indexcore.index.transaction_index import AbortedTxn, TransactionIndex
from segdex.indexcore.record.record_batch import RecordBatch


@dataclass
class _AbortedTransactionMetadata:
    aborted_txn: AbortedTxn
    last_observed_batch_offset: int | None = None


class CleanedTransactionMetadata:
    """One pass's transaction bookkeeping (``CleanedTransactionMetadata``); ``cleaned_index`` is the cleaned
    segment's txn index (None while the offset map is built)."""

    def __init__(self) -> None:
        self._aborted: list[tuple[int, int, AbortedTxn]] = []  # a min-heap by first offset (ties in order)
        self._seq = 0
        self.ongoing_aborted: dict[int, _AbortedTransactionMetadata] = {}
        self.ongoing_committed: set[int] = set()
        self.cleaned_index: TransactionIndex | None = None

    def add_aborted_transactions(self, txns: list[AbortedTxn]) -> None:
        for t in txns:
            heapq.heappush(self._aborted, (t.first_offset, self._seq, t))
            self._seq += 1

    def pending(self) -> bool:
        """Whether aborted transactions were given that a batch has not yet begun."""
        return bool(self._aborted)

    def _consume_up_to(self, offset: int) -> None:
        while self._aborted and self._aborted[0][0] <= offset:
            txn = heapq.heappop(self._aborted)[2]
            self.ongoing_aborted.setdefault(txn.producer_id, _AbortedTransactionMetadata(txn))

    def on_batch_read(self, batch: RecordBatch) -> bool:
        """A data batch; True when it belongs to an aborted transaction (its records go)."""
        self._consume_up_to(batch.last_offset)
        if not batch.is_transactional:
            return False
        aborted = self.ongoing_aborted.get(batch.producer_id)
        if aborted is not None:
            aborted.last_observed_batch_offset = batch.last_offset
            return True
        self.ongoing_committed.add(batch.producer_id)
        return False

    def on_control_batch_read(self, batch: RecordBatch, control_type: str | None) -> bool:
        """A control batch (``control_type``: its first record's type, None when it has no records); True when
        the marker may be discarded."""
        self._consume_up_to(batch.last_offset)
        if control_type is None:
            return True
        pid = batch.producer_id
        if control_type == "ABORT":
            aborted = self.ongoing_aborted.pop(pid, None)
            if aborted is not None and aborted.last_observed_batch_offset is not None:
                if self.cleaned_index is not None:
                    self.cleaned_index.append(aborted.aborted_txn)
                return False
            return True
        if control_type == "COMMIT":
            if pid in self.ongoing_committed:
                self.ongoing_committed.discard(pid)
                return False
            return True
        return False
