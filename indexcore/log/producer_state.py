"""Kafka's ``ProducerStateManager`` as log recovery drives it: per-producer entries, open transactions, and the
``.txnindex`` entries completed transactions make.

Recovery replays a partition's batches in offset order with ``AppendOrigin.REPLICATION`` (so no sequence or
epoch check refuses a batch: a lower epoch is only logged), carrying this state from one segment to the next, so
a transaction may start in one segment and be aborted in a later one. What a snapshot records of a producer
(``ProducerStateEntry``): its epoch, the last batch it wrote (last sequence, last offset, offset delta), the
timestamp of its last write, the coordinator epoch of its last transaction marker, and the first offset of its
open transaction. Kafka keeps up to five batches per producer for duplicate detection; a snapshot writes only
the last, so only the last is kept here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from segdex.indexcore.errors import InvalidTxnStateException
from segdex.indexcore.index.transaction_index import AbortedTxn
from segdex.indexcore.record.record_batch import NO_PRODUCER_ID, NO_SEQUENCE, NO_TIMESTAMP, RecordBatch, last_sequence
from segdex.indexcore.record.records import end_txn_marker

NO_PRODUCER_EPOCH = -1
# ProducerStateManagerConfig: producer.id.expiration.ms, a broker setting (default one day).
DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86_400_000


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    """The last batch a producer wrote (Kafka's ``BatchMetadata``)."""

    last_seq: int
    last_offset: int
    offset_delta: int  # lastOffset - baseOffset of that batch
    timestamp: int


@dataclass(slots=True)
class ProducerStateEntry:
    """One producer's state, as a snapshot stores it (``ProducerStateEntry``)."""

    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    coordinator_epoch: int = -1
    last_timestamp: int = NO_TIMESTAMP
    current_txn_first_offset: int | None = None
    last_batch: BatchMetadata | None = None

    @property
    def last_seq(self) -> int:
        return self.last_batch.last_seq if self.last_batch else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.last_batch.last_offset if self.last_batch else -1

    @property
    def last_offset_delta(self) -> int:
        return self.last_batch.offset_delta if self.last_batch else 0

    def maybe_update_producer_epoch(self, producer_epoch: int) -> None:
        """A new epoch drops the batches kept for the old one."""
        if self.producer_epoch != producer_epoch:
            self.last_batch = None
            self.producer_epoch = producer_epoch

    def add_batch(self, producer_epoch: int, last_seq: int, last_offset: int, offset_delta: int,
                  timestamp: int) -> None:
        """``ProducerStateEntry.addBatch``."""
        self.maybe_update_producer_epoch(producer_epoch)
        self.last_batch = BatchMetadata(last_seq, last_offset, offset_delta, timestamp)
        self.last_timestamp = timestamp

    def is_expired(self, now_ms: int, expiration_ms: int) -> bool:
        """``ProducerStateManager.isProducerExpired``: idle that long and no open transaction."""
        return self.current_txn_first_offset is None and now_ms - self.last_timestamp >= expiration_ms


@dataclass
class ProducerStateManager:
    """Producer entries by id, in the order they were put (which fixes a snapshot's entry order), the open
    transactions by first offset (Kafka's ``ongoingTxns``, a TreeMap) and, where kept, the completed ones
    (``unreplicatedTxns``: ``completeTxn`` moves a transaction there, and only a high watermark or log start offset
    past its marker, ``removeUnreplicatedTransactions``, or a reload drops it).

    ``unreplicated_txns`` is None where nothing reads them: a recovery's manager, which Kafka makes anew for each
    segment (``LogLoader.recoverSegment``) and discards after it, and this package's scans, which carry one manager
    through a whole partition (keeping every transaction it completed would hold them all in memory). A manager
    standing in for the log's own (the load's last ``rebuildProducerState``) keeps them: ``track_completed``."""

    producers: dict[int, ProducerStateEntry] = field(default_factory=dict)
    ongoing_txns: dict[int, int] = field(default_factory=dict)  # firstOffset -> producerId
    # firstOffset -> lastOffset (its marker's offset) of each completed transaction; None: not kept
    unreplicated_txns: dict[int, int] | None = None

    def track_completed(self) -> ProducerStateManager:
        """From now on keep the transactions completed (``unreplicatedTxns``); returns this manager."""
        if self.unreplicated_txns is None:
            self.unreplicated_txns = {}
        return self

    @property
    def has_ongoing_txns(self) -> bool:
        return bool(self.ongoing_txns)

    @property
    def current_txn_first_offset(self) -> dict[int, int]:
        """producerId -> first offset of its open transaction."""
        return {pid: e.current_txn_first_offset for pid, e in self.producers.items()
                if e.current_txn_first_offset is not None}

    def _entry(self, producer_id: int) -> ProducerStateEntry:
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = self.producers[producer_id] = ProducerStateEntry(producer_id)
        return entry

    def update(self, buf, batch: RecordBatch) -> AbortedTxn | None:
        """Apply one magic-2 batch (``LogSegment.updateProducerState``); return the txn index entry it makes.

        Raises what ``ProducerAppendInfo.append`` raises, before changing anything, as Kafka discards the append.
        """
        if not batch.has_producer_id:
            return None
        pid = batch.producer_id
        if batch.is_control:
            return self.append_end_txn_marker(pid, batch.producer_epoch, batch.base_offset,
                                              end_txn_marker(buf, batch))
        self.append_data_batch(pid, batch.producer_epoch, batch.base_sequence, batch.base_offset,
                               batch.last_offset, batch.max_timestamp, batch.is_transactional)
        return None

    def append_end_txn_marker(self, producer_id: int, producer_epoch: int, offset: int,
                              marker: tuple[str, int, int] | None) -> AbortedTxn | None:
        """``ProducerAppendInfo.appendEndTxnMarker`` then ``ProducerStateEntry.update``: a control batch at
        ``offset`` whose marker (controlType, coordinatorEpoch, timestamp) was read (None: an empty control batch,
        its transaction cleaned from the log); returns the txn index entry of an aborted transaction."""
        entry = self._entry(producer_id)
        if marker is None:
            return None
        control_type, coordinator_epoch, timestamp = marker
        first = entry.current_txn_first_offset
        entry.maybe_update_producer_epoch(producer_epoch)
        entry.coordinator_epoch = coordinator_epoch
        entry.current_txn_first_offset = None
        entry.last_timestamp = timestamp
        if first is None:
            return None
        completed = CompletedTxn(producer_id, first, offset, control_type == "ABORT")
        lso = self.last_stable_offset(completed)
        self.ongoing_txns.pop(first, None)  # completeTxn: from ongoingTxns to unreplicatedTxns
        if self.unreplicated_txns is not None:
            self.unreplicated_txns[first] = offset
        return AbortedTxn(producer_id, first, completed.last_offset, lso) if completed.is_aborted else None

    def append_data_batch(self, producer_id: int, producer_epoch: int, base_sequence: int, base_offset: int,
                          last_offset: int, max_timestamp: int, is_transactional: bool) -> None:
        """``ProducerAppendInfo.appendDataBatch`` then ``ProducerStateManager.update``."""
        entry = self.producers.get(producer_id)
        open_first = entry.current_txn_first_offset if entry is not None else None
        if open_first is not None and not is_transactional:
            raise InvalidTxnStateException(
                f"Expected transactional write from producer {producer_id} at offset {base_offset}")
        entry = entry if entry is not None else self._entry(producer_id)
        delta = last_offset - base_offset
        entry.add_batch(producer_epoch, last_sequence(base_sequence, delta), last_offset, delta, max_timestamp)
        if open_first is None and is_transactional:
            entry.current_txn_first_offset = base_offset
            self.ongoing_txns[base_offset] = producer_id

    def first_unstable_offset(self, log_start_offset: int = 0) -> int | None:
        """``ProducerStateManager.firstUnstableOffset``: the first offset of the earliest transaction open or
        completed but kept (``unreplicatedTxns``: its marker not yet below the high watermark), never below the log
        start offset (``UnifiedLog.maybeIncrementFirstUnstableOffset``); None when there is none."""
        firsts = [*self.ongoing_txns, *(self.unreplicated_txns or ())]
        if not firsts:
            return None
        return max(min(firsts), log_start_offset)

    def remove_unreplicated_transactions(self, offset: int) -> None:
        """``removeUnreplicatedTransactions``: the completed transactions whose marker lies below ``offset``
        dropped (``onHighWatermarkUpdated`` with the high watermark, ``onLogStartOffsetIncremented`` with the log
        start offset)."""
        if self.unreplicated_txns:
            self.unreplicated_txns = {f: last for f, last in self.unreplicated_txns.items() if last >= offset}

    def last_stable_offset(self, completed: CompletedTxn) -> int:
        """First offset of the earliest other open transaction, else the marker's offset + 1."""
        for first in sorted(self.ongoing_txns):
            if self.ongoing_txns[first] != completed.producer_id:
                return first
        return completed.last_offset + 1

    def copy(self) -> ProducerStateManager:
        """An exact copy: same entries in the same order, same open and completed transactions."""
        return ProducerStateManager(
            {pid: ProducerStateEntry(pid, e.producer_epoch, e.coordinator_epoch, e.last_timestamp,
                                     e.current_txn_first_offset, e.last_batch) for pid, e in self.producers.items()},
            dict(self.ongoing_txns),
            None if self.unreplicated_txns is None else dict(self.unreplicated_txns))

    def replay(self, events: list[tuple]) -> list[AbortedTxn]:
        """Apply what a ``ProducerEventLog`` recorded of a segment, in order; returns the segment's txn index
        entries. Raises ``InvalidTxnStateException`` as the batch-by-batch replay would (then this state is
        partly updated: replay a ``copy``)."""
        aborted = []
        for event in events:
            if len(event) == DATA_EVENT_FIELDS:
                self.append_data_batch(*event)
            else:
                txn = self.append_end_txn_marker(*event)
                if txn is not None:
                    aborted.append(txn)
        return aborted

    def reloaded(self, now_ms: int | None, expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS
                 ) -> ProducerStateManager:
        """The state a new manager loads from a snapshot of this one (``loadFromSnapshot``): same entry order,
        producers expired at ``now_ms`` dropped (none when ``now_ms`` is None), open transactions kept, completed
        ones not (a snapshot holds none; ``truncateAndReload`` clears ``unreplicatedTxns``)."""
        from segdex.indexcore.log.java_hash_map import hash_map_order

        fresh = ProducerStateManager()
        for pid in hash_map_order(self.producers):  # the snapshot's entry order is the load's put order
            e = self.producers[pid]
            if now_ms is not None and e.is_expired(now_ms, expiration_ms):
                continue
            fresh.producers[pid] = ProducerStateEntry(pid, e.producer_epoch, e.coordinator_epoch, e.last_timestamp,
                                                      e.current_txn_first_offset, e.last_batch)
            if e.current_txn_first_offset is not None:
                fresh.ongoing_txns[e.current_txn_first_offset] = pid
        return fresh


# A data event: append_data_batch's arguments (producerId, producerEpoch, baseSequence, baseOffset, lastOffset,
# maxTimestamp, isTransactional); a marker event: append_end_txn_marker's (producerId, producerEpoch, offset,
# marker).
DATA_EVENT_FIELDS = 7


class ProducerEventLog:
    """Stands in for a ``ProducerStateManager`` while a segment is recovered on its own, before the state its
    earlier segments leave is known (a partition's segments scanned in parallel): records, in order, what
    ``LogSegment.recover`` hands the manager, for ``ProducerStateManager.replay`` to apply later.

    Only what the bytes decide happens here (a marker that cannot be read raises as ``update`` does); what
    depends on the state (txn index entries, ``InvalidTxnStateException``) is left to the replay. With no open
    transaction known, the scan kernel folds each run of one idempotent producer into its last batch, which the
    replay applies as the batch-by-batch path would: only the last batch of a run shows in the entry.
    """

    has_ongoing_txns = False

    def __init__(self) -> None:
        self.events: list[tuple] = []

    def update(self, buf, batch: RecordBatch) -> None:
        if not batch.has_producer_id:
            return None
        if batch.is_control:
            self.events.append((batch.producer_id, batch.producer_epoch, batch.base_offset,
                                end_txn_marker(buf, batch)))
        else:
            self.events.append((batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.base_offset,
                                batch.last_offset, batch.max_timestamp, batch.is_transactional))
        return None

    def append_data_batch(self, producer_id: int, producer_epoch: int, base_sequence: int, base_offset: int,
                          last_offset: int, max_timestamp: int, is_transactional: bool) -> None:
        self.events.append((producer_id, producer_epoch, base_sequence, base_offset, last_offset, max_timestamp,
                            is_transactional))


__all__ = ["DATA_EVENT_FIELDS", "NO_PRODUCER_ID", "BatchMetadata", "CompletedTxn", "ProducerEventLog",
           "ProducerStateEntry", "ProducerStateManager"]
