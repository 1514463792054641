"""ProducerSnapshot v1 file bytes written out here from Kafka's ``ProducerSnapshot`` schema, independent of
segdex's own writer (``producer_snapshot.snapshot_bytes``).

Shared because the snapshot reader and writer (tests/indexcore/log/test_producer_snapshot.py), the producer state
manager (tests/indexcore/log/test_producer_state.py) and ``LogLoader`` (tests/indexcore/log/
test_log_loader_rebuild.py) all need snapshot files whose bytes come from Kafka's layout, not from the code under
test."""

from __future__ import annotations

import crc32c


def reference(rows: list[tuple]) -> bytes:
    """ProducerSnapshot v1 written out from Kafka's schema: version int16, crc uint32 (CRC-32C of the rest),
    count int32, then per entry int64 int16 int32 int64 int32 int64 int32 int64."""
    rest = len(rows).to_bytes(4, "big", signed=True) + b"".join(
        pid.to_bytes(8, "big", signed=True) + epoch.to_bytes(2, "big", signed=True)
        + seq.to_bytes(4, "big", signed=True) + off.to_bytes(8, "big", signed=True)
        + delta.to_bytes(4, "big", signed=True) + ts.to_bytes(8, "big", signed=True)
        + coord.to_bytes(4, "big", signed=True) + txn.to_bytes(8, "big", signed=True)
        for pid, epoch, seq, off, delta, ts, coord, txn in rows)
    return (1).to_bytes(2, "big") + crc32c.crc32c(rest).to_bytes(4, "big") + rest
