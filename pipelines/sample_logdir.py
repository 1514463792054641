"""Generated Kafka log dirs for the demo, tests and benchmarks (``.log`` files via indexcore.segment_writer).

Only ``.log`` files and the log dir's checkpoint files are written, as after a copy that lost the indexes.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

from segdex.indexcore.log.checkpoints import write_offset_checkpoint
from segdex.indexcore.log.layout import (
    LOG_START_OFFSET_CHECKPOINT,
    META_PROPERTIES,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
)
from segdex.indexcore.tools.segment_writer import SegmentWriter, build_batch, segment_name, uniform_segment

GZIP, SNAPPY, LZ4, ZSTD = 1, 2, 3, 4
START_MS = 1_700_000_000_000

# topic -> (partitions, kind, codec)
DEMO_TOPICS: dict[str, tuple[int, str, int]] = {
    "orders": (3, "plain", 0),
    "clicks": (2, "plain", ZSTD),
    "payments": (1, "txn", 0),
    "audit-legacy": (1, "legacy", GZIP),
}


def _checkpoints(log_dir: Path, leo: dict[tuple[str, int], int]) -> None:
    write_offset_checkpoint(log_dir / RECOVERY_POINT_CHECKPOINT, {k: 0 for k in leo})
    write_offset_checkpoint(log_dir / LOG_START_OFFSET_CHECKPOINT, {k: 0 for k in leo})
    write_offset_checkpoint(log_dir / REPLICATION_OFFSET_CHECKPOINT, leo)
    (log_dir / META_PROPERTIES).write_text("version=1\nnode.id=1\ncluster.id=segdex-sample\n")


def _partition(w: SegmentWriter, partition: int, kind: str, codec: int, batches: int, rng: random.Random) -> int:
    """Write one partition's segments through its writer ``w``; return its log end offset."""
    offset, ts = 0, START_MS + partition * 7
    open_txn: dict[int, int] = {}
    for i in range(batches):
        ts += rng.randint(1, 40)
        n = rng.randint(1, 5)
        recs = [(ts + rng.randint(-20, 20) if kind == "plain" else ts, f"k{offset + j}".encode(),
                 rng.randbytes(rng.randint(40, 600))) for j in range(n)]
        if kind == "legacy":
            data = build_batch(offset, recs, magic=1, compression=codec)
        elif kind == "txn":
            pid = 1000 + i % 3
            if pid in open_txn and rng.random() < 0.3:  # end that producer's transaction
                ctrl = "ABORT" if rng.random() < 0.5 else "COMMIT"
                data = build_batch(offset, [], control=(ctrl, 0), control_timestamp=ts, producer_id=pid,
                                   producer_epoch=0)
                del open_txn[pid]
                n = 1
            else:
                open_txn.setdefault(pid, offset)
                data = build_batch(offset, recs, producer_id=pid, producer_epoch=0, base_sequence=i,
                                   is_transactional=True, compression=codec)
        else:
            data = build_batch(offset, recs, compression=codec, partition_leader_epoch=i * 3 // batches)
        w.append(data, offset)
        offset += n
    return offset


def generate_sample(log_dir: str | os.PathLike, batches_per_partition: int = 600, segment_bytes: int = 96 * 1024,
                    seed: int = 42, topics: dict[str, tuple[int, str, int]] | None = None) -> dict[str, int]:
    """A small log dir with several topics, partitions and segments (v2 plain/compressed/transactional, v1 gzip).

    Returns counts: partitions, segments, bytes.
    """
    log_dir = Path(log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    leo = {}
    for topic, (partitions, kind, codec) in (topics or DEMO_TOPICS).items():
        for p in range(partitions):
            with SegmentWriter(log_dir, topic, p, segment_bytes) as w:
                leo[(topic, p)] = _partition(w, p, kind, codec, batches_per_partition, rng)
    _checkpoints(log_dir, leo)
    return _count(log_dir)


def generate_uniform(log_dir: str | os.PathLike, partitions: int, segments_per_partition: int, segment_bytes: int,
                     topics: list[tuple[str, int, int]] | None = None) -> dict[str, int]:
    """Big uniform segments for benchmarks: ``topics`` = [(name, records_per_batch, value_size)], partitions split
    evenly among them (default: half 1 x 120 B records per batch, half 16 x 1000 B)."""
    log_dir = Path(log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    topics = topics or [("small", 1, 120), ("large", 16, 1000)]
    leo = {}
    for i in range(partitions):
        name, per_batch, value_size = topics[i % len(topics)]
        p = i // len(topics)
        part = log_dir / f"{name}-{p}"
        part.mkdir(exist_ok=True)
        base = 0
        for s in range(segments_per_partition):
            path = part / segment_name(base)
            kwargs = dict(base_offset=base, records_per_batch=per_batch, value_size=value_size, seed=i,
                          start_timestamp=START_MS + s * 10_000_000)
            size = uniform_segment(path, segment_bytes, **kwargs)
            base += _records_in(path, size, per_batch)
        leo[(name, p)] = base
    _checkpoints(log_dir, leo)
    return _count(log_dir)


def _records_in(path: Path, size: int, per_batch: int) -> int:
    """Records in a uniform segment: its batches all have one size, read from the first batch's length field."""
    with open(path, "rb") as f:
        head = f.read(12)
    batch_size = int.from_bytes(head[8:12], "big") + 12
    return size // batch_size * per_batch


def _count(log_dir: Path) -> dict[str, int]:
    logs = list(log_dir.glob("*/*.log"))
    return {"partitions": len({p.parent for p in logs}), "segments": len(logs),
            "bytes": sum(p.stat().st_size for p in logs)}
