"""Generated partitions as brokers write them: seeded segments of idempotent and transactional producers.

Shared because two Kafka-in-the-loop suites feed the same generator to Kafka's own load: tests/jobs/test_recover.py
(``segdex recover`` against ``KafkaOracle load``) and the startup-preview workload of
tests/support/startup_workload.py (``segdex verify``'s preview against Kafka's start)."""

from __future__ import annotations

import random

from segdex.indexcore.tools.segment_writer import Record, build_batch


def _pid(rng: random.Random) -> int:
    return rng.choice([rng.randrange(0, 2**16) * 16,  # same low bits: one HashMap bucket
                       rng.randrange(0, 2**31), rng.randrange(0, 2**48), 1000 + rng.randrange(0, 64)])


def generated_partition(rng: random.Random, t0: int) -> dict[int, bytes]:
    """Segments of one partition as brokers write them: many idempotent and transactional producers (epochs
    bumped, transactions committed, aborted and left open), leader epochs going up, some producers idle for
    days, offsets split into one to four segments."""
    producers = {}
    for _ in range(rng.choice([0, 1, 3, 12, 30])):
        producers[_pid(rng)] = {"epoch": rng.randint(0, 3), "seq": rng.randint(0, 100), "txn": False,
                                "transactional": rng.random() < 0.5}
    batches: list[bytes] = []
    offset, ts, leader = rng.choice([0, 0, 500]), t0, rng.choice([0, 2])
    for _ in range(rng.randint(1, 80)):
        ts += rng.choice([1, 50, 1000, 3_600_000, 30 * 3_600_000])
        if rng.random() < 0.05:
            leader += 1
        pids = sorted(producers)
        if pids and rng.random() < 0.8:
            pid = rng.choice(pids)
            p = producers[pid]
            if p["txn"] and rng.random() < 0.3:
                kind = "ABORT" if rng.random() < 0.5 else "COMMIT"
                batches.append(build_batch(offset, [], producer_id=pid, producer_epoch=p["epoch"],
                                           partition_leader_epoch=leader, control=(kind, rng.randint(0, 4)),
                                           control_timestamp=ts))
                p["txn"] = False
                offset += 1
                continue
            if not p["txn"] and rng.random() < 0.05:
                p["epoch"] += 1
                p["seq"] = 0
            p["txn"] = p["txn"] or (p["transactional"] and rng.random() < 0.6)
            n = rng.randint(1, 4)
            recs = [Record(offset + i, ts, None, rng.randbytes(rng.randint(0, 60))) for i in range(n)]
            batches.append(build_batch(offset, recs, compression=rng.choice([0, 0, 1, 4]), producer_id=pid,
                                       producer_epoch=p["epoch"], base_sequence=p["seq"],
                                       partition_leader_epoch=leader, is_transactional=p["txn"]))
            p["seq"] = (p["seq"] + n) % 2**31
            offset += n
            continue
        n = rng.randint(1, 3)
        recs = [Record(offset + i, ts, None, rng.randbytes(rng.randint(0, 60))) for i in range(n)]
        batches.append(build_batch(offset, recs, partition_leader_epoch=leader))
        offset += n
    cuts = sorted(rng.sample(range(1, len(batches)), min(len(batches) - 1, rng.randint(0, 3))))
    segments: dict[int, bytes] = {}
    for lo, hi in zip([0, *cuts], [*cuts, len(batches)], strict=True):
        chunk = batches[lo:hi]
        base = int.from_bytes(chunk[0][:8], "big")
        segments[base] = b"".join(chunk)
    return segments
