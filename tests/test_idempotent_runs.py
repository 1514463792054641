"""Producer state after runs of idempotent batches (``ProducerStateManager`` as ``LogSegment.recover`` updates it).

Both scan kernels take runs of one idempotent producer's batches in one go and fold only the run's last batch
into the producer's entry (``ProducerStateEntry.addBatch``: the newest epoch, sequence, offsets and timestamp
win). Expected entries come from the batches this test writes: for each producer, its last batch's epoch, last
sequence (baseSequence + records - 1), last offset, offset delta and max timestamp.
"""

from __future__ import annotations

import pytest

from segdex.indexcore.log.log_segment import recover
from segdex.indexcore.log.producer_state import BatchMetadata, ProducerStateManager
from segdex.indexcore.tools.segment_writer import build_batch

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
