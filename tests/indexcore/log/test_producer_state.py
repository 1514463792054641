"""Producer state after runs of idempotent batches (``ProducerStateManager`` as ``LogSegment.recover`` updates it).

Both scan kernels take runs of one idempotent producer's batches in one go and fold only the run's last batch
into the producer's entry (``ProducerStateEntry.addBatch``: the newest epoch, sequence, offsets and timestamp
win). Expected entries come from the batches this test writes: for each producer, its last batch's epoch, last
sequence (baseSequence + records - 1), last offset, offset delta and max timestamp.
"""

from __future__ import annotations

import pytest

from segdex.indexcore.errors import (
    InvalidTxnStateException,
)
from segdex.indexcore.log.log_segment import recover
from segdex.indexcore.log.producer_snapshot import read_snapshot
from segdex.indexcore.log.producer_state import (
    BatchMetadata,
    ProducerStateEntry,
    ProducerStateManager,
)
from segdex.indexcore.tools.segment_writer import build_batch
from tests.support.producer_snapshot_bytes import (
    reference as _snapshot,  # ProducerSnapshot v1 from Kafka's schema
)

T0 = 1_700_000_000_000


def _workload() -> tuple[list[bytes], dict[int, tuple[int, BatchMetadata]]]:
    """Runs of two idempotent producers (7: epoch 3, then 4 in its last run; 9: epoch 1) and a plain producer's
    batch between them; returns the batches and, per producer id, (epoch, last batch) of its last batch."""
    plan = [(7, 3, 2), (7, 3, 1), (7, 3, 3), (9, 1, 2), (-1, -1, 1), (9, 1, 4), (7, 4, 2), (7, 4, 1), (9, 1, 1)]
    seq = {7: 0, 9: 0}
    out, offset, expected = [], 0, {}
    for i, (pid, epoch, count) in enumerate(plan):
        if pid in seq and epoch == 4 and plan[i - 1][1] == 3:
            seq[pid] = 0  # a new epoch starts its sequence again
        ts = [T0 + 1000 * i + 10 * j for j in range(count)][::-1]  # max timestamp is each batch's first record
        base_seq = seq.get(pid, -1)
        out.append(build_batch(offset, [(t, b"k", b"v" * (i + 1)) for t in ts], producer_id=pid,
                               producer_epoch=epoch, base_sequence=base_seq))
        if pid >= 0:
            expected[pid] = (epoch, BatchMetadata(base_seq + count - 1, offset + count - 1, count - 1, max(ts)))
            seq[pid] += count
        offset += count
    return out, expected


@pytest.mark.parametrize("native", [False, True], ids=["python", "native"])
def test_each_producer_ends_with_its_last_batch(native: bool):
    batches, expected = _workload()
    buf = b"".join(batches)
    state = ProducerStateManager()
    result = recover(buf, 0, producer_state=state, native=native)
    assert (result.valid_bytes, result.stop_reason, result.error) == (len(buf), None, None)
    got = {pid: (e.producer_epoch, e.last_batch) for pid, e in state.producers.items()}
    assert got == expected
    assert {pid: e.last_timestamp for pid, e in state.producers.items()} == \
        {pid: meta.timestamp for pid, (_, meta) in expected.items()}
    assert all(e.current_txn_first_offset is None for e in state.producers.values())
    assert not state.has_ongoing_txns


@pytest.mark.parametrize("native", [False, True], ids=["python", "native"])
def test_state_carries_into_the_next_segment(native: bool):
    """A run that goes on in the next segment (the same manager, as the loader passes it) ends as one run."""
    batches, expected = _workload()
    state = ProducerStateManager()
    first = recover(batches[0], 0, producer_state=state, native=native)
    assert first.last_offset == 1
    assert state.producers[7].last_batch == BatchMetadata(1, 1, 1, T0 + 10)
    recover(b"".join(batches[1:]), 2, producer_state=state, native=native)
    assert {pid: (e.producer_epoch, e.last_batch) for pid, e in state.producers.items()} == expected


# ------------------------------------------------------------------ from test_small_modules_units.py


TS = 1_700_000_000_000


def test_a_data_batch_is_kept_as_kafkas_batch_metadata():
    """``ProducerStateEntry.addBatch``: BatchMetadata(lastSeq, lastOffset, offsetDelta, timestamp)."""
    ps = ProducerStateManager()
    ps.append_data_batch(7, 0, 10, 100, 104, TS + 3, False)
    e = ps.producers[7]
    assert (e.producer_epoch, e.last_timestamp, e.last_batch) == (0, TS + 3, BatchMetadata(14, 104, 4, TS + 3))


def test_a_new_epoch_drops_the_batch_metadata():
    """``maybeUpdateProducerEpoch`` clears the batches kept for the old epoch."""
    e = ProducerStateEntry(7, 0, -1, TS, None, BatchMetadata(3, 10, 0, TS))
    e.maybe_update_producer_epoch(0)
    assert e.last_batch == BatchMetadata(3, 10, 0, TS)
    e.maybe_update_producer_epoch(1)
    assert e.producer_epoch == 1 and e.last_batch is None
    assert (e.last_seq, e.last_data_offset, e.last_offset_delta) == (-1, -1, 0)


def test_a_plain_write_inside_an_open_transaction_is_refused():
    ps = ProducerStateManager()
    ps.append_data_batch(7, 0, 0, 12, 13, TS, True)
    with pytest.raises(InvalidTxnStateException) as e:
        ps.append_data_batch(7, 0, 2, 14, 14, TS + 1, False)
    assert str(e.value) == "Expected transactional write from producer 7 at offset 14"
    assert (ps.ongoing_txns, ps.producers[7].last_batch) == ({12: 7}, BatchMetadata(1, 13, 1, TS))


def test_a_transaction_opened_at_offset_0_is_read_as_open():
    """``readSnapshot``: currentTxnFirstOffset >= 0 is an open transaction (offset 0 included), -1 none."""
    data = _snapshot([(3, 1, 4, 9, 2, TS, 5, 0), (4, 0, 0, 1, 0, TS + 1, -1, -1), (5, 0, 7, 12, 1, TS + 2, 2, 1)])
    got = read_snapshot(data)
    assert [(e.producer_id, e.current_txn_first_offset) for e in got] == [(3, 0), (4, None), (5, 1)]
    assert got[0] == ProducerStateEntry(3, 1, 5, TS, 0, BatchMetadata(4, 9, 2, TS))


def _committed(ps: ProducerStateManager, pid: int, first: int, marker: int) -> None:
    """Producer ``pid``'s transactional batch at ``first``, committed by a marker at ``marker``."""
    ps.append_data_batch(pid, 0, 0, first, first, TS + first, True)
    assert ps.append_end_txn_marker(pid, 0, marker, ("COMMIT", 0, TS + marker)) is None


def test_a_completed_transaction_stays_unstable_until_an_offset_passes_its_marker():
    """``ProducerStateManager.completeTxn`` moves a transaction from ``ongoingTxns`` to ``unreplicatedTxns``, and
    ``firstUnstableOffset`` is the earlier first offset of the two; ``removeUnreplicatedTransactions`` (the high
    watermark or log start offset moved) drops those whose marker lies below the offset, not at it."""
    ps = ProducerStateManager().track_completed()
    _committed(ps, 7, 12, 13)
    ps.append_data_batch(8, 0, 0, 14, 14, TS, True)
    assert (ps.ongoing_txns, ps.unreplicated_txns) == ({14: 8}, {12: 13})
    assert ps.first_unstable_offset() == 12
    assert ps.first_unstable_offset(log_start_offset=13) == 13
    ps.remove_unreplicated_transactions(13)
    assert ps.first_unstable_offset() == 12
    ps.remove_unreplicated_transactions(14)
    assert (ps.unreplicated_txns, ps.first_unstable_offset()) == ({}, 14)


def test_completed_transactions_are_kept_only_where_asked_and_never_reloaded():
    """A recovery's manager (Kafka's, made anew for each segment and dropped after it) keeps none; a copy keeps
    what its original keeps; a manager loaded from a snapshot of one starts without any (``truncateAndReload``
    clears ``unreplicatedTxns`` before ``loadFromSnapshot``)."""
    plain = ProducerStateManager()
    _committed(plain, 7, 12, 13)
    assert (plain.unreplicated_txns, plain.first_unstable_offset()) == (None, None)
    kept = ProducerStateManager().track_completed()
    _committed(kept, 7, 12, 13)
    copy = kept.copy()
    _committed(copy, 7, 14, 15)
    assert (kept.unreplicated_txns, copy.unreplicated_txns) == ({12: 13}, {12: 13, 14: 15})
    assert (plain.copy().unreplicated_txns, kept.reloaded(None).unreplicated_txns) == (None, None)
