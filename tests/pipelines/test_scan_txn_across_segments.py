"""Transactions that span segments, and a stale ``.txnindex`` Kafka's recovery empties (issue 15, point 2).

The expected aborted transactions come from what the test writes, with Kafka's rule for the last stable offset
(``ProducerStateManager.lastStableOffset``: the first offset of the earliest transaction still open, else the
marker's offset + 1), not from segdex: a recovery that forgot producer state at a segment boundary would start
producer 7's aborted transaction at offset 4 instead of 0.
"""

from __future__ import annotations

from pathlib import Path

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.index.transaction_index import AbortedTxn, parse_transaction_index
from segdex.indexcore.tools.segment_writer import SegmentWriter, build_batch
from segdex.pipelines import reindex
from segdex.pipelines.run_context import RunRequest

T0 = 1_700_000_000_000


def data(offset: int, pid: int, seq: int) -> bytes:
    return build_batch(offset, [(T0 + offset, b"k", b"v" * 40)], producer_id=pid, producer_epoch=0,
                       base_sequence=seq, is_transactional=True)


def marker(offset: int, pid: int, kind: str) -> bytes:
    return build_batch(offset, [], producer_id=pid, producer_epoch=0, is_transactional=True, control=(kind, 5),
                       control_timestamp=T0 + offset)


def write(log_dir: Path) -> Path:
    """Segment 0: producer 7 opens a transaction (offsets 0-2), producer 8 opens one (3).
    Segment 4: producer 7 writes on (4) and aborts (5), producer 8 commits (6).
    Segment 7: producer 9 writes (7) and aborts (8)."""
    with SegmentWriter(log_dir, "payments", 0) as w:
        for b in (data(0, 7, 0), data(1, 7, 1), data(2, 7, 2), data(3, 8, 0)):
            w.append(b)
        w.roll(4)
        for b in (data(4, 7, 3), marker(5, 7, "ABORT"), marker(6, 8, "COMMIT")):
            w.append(b)
        w.roll(7)
        for b in (data(7, 9, 0), marker(8, 9, "ABORT")):
            w.append(b)
    return log_dir / "payments-0"


EXPECTED = {
    "00000000000000000004.txnindex": [AbortedTxn(7, 0, 5, 3)],  # producer 8's transaction (from 3) still open
    "00000000000000000007.txnindex": [AbortedTxn(9, 7, 8, 9)],  # nothing else open: marker + 1
}


def test_aborted_transaction_spanning_segments_and_a_stale_txnindex(tmp_path, spark):
    log_dir = tmp_path / "logs"
    part = write(log_dir)
    stale = part / "00000000000000000000.txnindex"
    stale.write_bytes(AbortedTxn(42, 0, 1, 2).to_bytes())  # segment 0 holds no abort marker: Kafka empties it
    summary = reindex.run(spark, "reindex", RunRequest([str(log_dir)], str(tmp_path / "meta"), LogConfig()),
                          progress=False)
    status = {r.base_offset: r.status for r in summary.segment_rows}
    assert status == {0: "ok", 4: "ok", 7: "ok"}
    assert summary.run_row.count_missing == 3  # as found: no .index or .timeindex yet
    for name, txns in EXPECTED.items():
        assert parse_transaction_index((part / name).read_bytes()) == txns, name
    assert stale.exists() and stale.read_bytes() == b""  # truncated, not deleted (TransactionIndex.reset)
    assert sorted(p.name for p in part.glob("*.txnindex")) == ["00000000000000000000.txnindex", *sorted(EXPECTED)]


def test_an_empty_control_batch_leaves_the_transaction_open():
    """A control batch with no records (a cleaned-away marker) completes nothing (ProducerAppendInfo.append
    returns empty): the transaction begun at offset 0 stays open until the real ABORT at offset 4, whose
    .txnindex entry therefore starts at 0. Expected values are the offsets this test writes."""
    import struct

    import crc32c

    from segdex.indexcore.log.log_segment import recover

    empty = bytearray(build_batch(3, [], producer_id=7, producer_epoch=0, control=("COMMIT", 0),
                                  control_timestamp=1_700_000_000_003))
    struct.pack_into(">i", empty, 57, 0)  # recordsCount = 0
    struct.pack_into(">I", empty, 17, crc32c.crc32c(bytes(empty[21:])))
    log = (build_batch(0, [(1_700_000_000_000 + i, b"k", b"v") for i in range(3)], producer_id=7, producer_epoch=0,
                       base_sequence=0, is_transactional=True)
           + bytes(empty)
           + build_batch(4, [], producer_id=7, producer_epoch=0, control=("ABORT", 0),
                         control_timestamp=1_700_000_000_004))
    result = recover(log, 0)
    assert result.stop_reason is None and result.error is None
    entries = parse_transaction_index(result.txn_index.to_bytes())
    assert [(e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset) for e in entries] == [(7, 0, 4, 5)]
