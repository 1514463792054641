"""Generated partitions of a compacted topic as brokers write them: keys overwritten and deleted (tombstones),
idempotent and transactional producers (committed, aborted and still open transactions), timestamps spread over
days, offsets cut into two to six segments (the last one active).

Shared by the cleaner's tests against Kafka's own ``LogCleanerManager`` and ``Cleaner`` (``KafkaOracle
cleanable``)."""

from __future__ import annotations

import random

from segdex.indexcore.tools.segment_writer import Record, build_batch

HOUR_MS = 3_600_000


def compacted_partition(rng: random.Random, t0: int, codecs: tuple[int, ...] = (0,)) -> tuple[dict[int, bytes], int]:
    """(segments by base offset, the timestamp of the last batch); data batches compressed with one of ``codecs``
    each."""
    keys = [f"key-{i}".encode() for i in range(rng.choice([3, 20, 200]))]
    producers = {pid: {"epoch": 0, "seq": 0, "txn": False, "transactional": rng.random() < 0.5}
                 for pid in rng.sample(range(1000, 1100), rng.choice([0, 1, 4]))}
    batches: list[bytes] = []
    transactional: list[int] = []  # indexes of transactional data batches
    offset, ts = rng.choice([0, 0, 300]), t0
    for _ in range(rng.randint(4, 120)):
        ts += rng.choice([1, 1000, HOUR_MS, 12 * HOUR_MS])
        pid = rng.choice(sorted(producers)) if producers and rng.random() < 0.6 else -1
        p = producers.get(pid)
        if p and p["txn"] and rng.random() < 0.3:
            batches.append(build_batch(offset, [], producer_id=pid, producer_epoch=p["epoch"],
                                       control=("ABORT" if rng.random() < 0.4 else "COMMIT", 0),
                                       control_timestamp=ts))
            p["txn"] = False
            offset += 1
            continue
        n = rng.randint(1, 5)
        recs = [Record(offset + i, ts, rng.choice(keys),
                       None if rng.random() < 0.1 else rng.randbytes(rng.randint(1, 40))) for i in range(n)]
        if p:
            p["txn"] = p["txn"] or (p["transactional"] and rng.random() < 0.7)
            if p["txn"]:
                transactional.append(len(batches))
            batches.append(build_batch(offset, recs, producer_id=pid, producer_epoch=p["epoch"],
                                       base_sequence=p["seq"], is_transactional=p["txn"],
                                       compression=_codec(rng, codecs)))
            p["seq"] += n
        else:
            batches.append(build_batch(offset, recs, compression=_codec(rng, codecs)))
        offset += n
    cuts = set(rng.sample(range(1, len(batches)), min(len(batches) - 1, rng.randint(1, 5))))
    if transactional and rng.random() < 0.5:  # a segment ending with transactional data (aborted, maybe)
        cuts.add(rng.choice(transactional) + 1)
    cuts = sorted(c for c in cuts if c < len(batches))
    segments: dict[int, bytes] = {}
    for lo, hi in zip([0, *cuts], [*cuts, len(batches)], strict=True):
        segments[int.from_bytes(batches[lo][:8], "big")] = b"".join(batches[lo:hi])
    return segments, ts


def _codec(rng: random.Random, codecs: tuple[int, ...]) -> int:
    return rng.choice(codecs) if len(codecs) > 1 else codecs[0]  # one codec: the draws of uncompressed cases
