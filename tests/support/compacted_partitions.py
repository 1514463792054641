"""Generated partitions of a compacted topic as brokers write them: keys overwritten and deleted (tombstones),
idempotent and transactional producers (committed, aborted and still open transactions), timestamps spread over
days, offsets cut into two to six segments (the last one active).

Shared by the cleaner's tests against Kafka's own ``LogCleanerManager`` and ``Cleaner`` (``KafkaOracle
cleanable``)."""

from __future__ import annotations

import random
from pathlib import Path

from segdex.indexcore.tools.segment_writer import Record, build_batch, segment_name

HOUR_MS = 3_600_000


def compacted_partition(rng: random.Random, t0: int, codecs: tuple[int, ...] = (0,), keys_at_least: int = 0,
                        still_clock: bool = False, magic: int = 2) -> tuple[dict[int, bytes], int]:
    """(segments by base offset, the timestamp of the last batch); data batches compressed with one of ``codecs``
    each, their keys drawn from 3, 20 or 200 (or ``keys_at_least``: few overwritten, so cleaning keeps most).
    ``still_clock``: most batches at the last one's timestamp (time indexes of few entries beside their offset
    indexes). ``magic`` 0 or 1: a log of the message formats before 0.11 (no producers, zstd read as none, some
    records without a key, which a cleaner removes)."""
    keys = [f"key-{i}".encode() for i in range(max(keys_at_least, rng.choice([3, 20, 200])))]
    if magic < 2:
        keys.append(None)
        codecs = tuple(c if c < 4 else 0 for c in codecs)
    producers = {pid: {"epoch": 0, "seq": 0, "txn": False, "transactional": rng.random() < 0.5}
                 for pid in rng.sample(range(1000, 1100), rng.choice([0, 1, 4])) if magic == 2}
    batches: list[bytes] = []
    transactional: list[int] = []  # indexes of transactional data batches
    offset, ts = rng.choice([0, 0, 300]), t0
    for _ in range(rng.randint(4, 120)):
        ts += rng.choice([0, 0, 0, 0, 1] if still_clock else [1, 1000, HOUR_MS, 12 * HOUR_MS])
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
            batches.append(build_batch(offset, recs, compression=_codec(rng, codecs), magic=magic))
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


# A partition whose cleaned group outgrows its time index (``Cleaner``'s module docs): at ``index.interval.bytes``
# 1 every batch but a segment's first is indexed, so two segments of 5 batches have 4 time index entries each (48
# bytes); ``segment.index.bytes`` 96 lets the cleaner merge them, but their merged segment indexes 9 batches where
# its time index takes 7 before its last slot: Kafka's round throws.
OUTGROWN_CONFIGS = {"cleanup.policy": "compact", "index.interval.bytes": 1, "segment.index.bytes": 96}
OUTGROWN_ERROR = "java.lang.IllegalArgumentException: Attempt to append to a full time index (size = 7)."


def outgrown_partition(part: Path, t0: int) -> None:
    """Write that partition into ``part``: segments 0 and 5 of five batches of distinct keys, an active segment 10."""
    part.mkdir(parents=True)
    for base, count in ((0, 5), (5, 5), (10, 1)):
        batches = [build_batch(o, [Record(o, t0 + o, f"key-{o}".encode(), b"v" * 10)])
                   for o in range(base, base + count)]
        (part / segment_name(base)).write_bytes(b"".join(batches))


def lat_message_set(part: Path, t0: int = 1_700_000_000_000) -> tuple[Path, int]:
    """A v1 partition whose first segment holds a gzip message set with LogAppendTime (keys a and b, appended at
    ``t0 + 5000``) and a later plain message for a, and a second segment: a round rebuilds the message set without
    a. Returns the partition and the append time."""
    from segdex.indexcore.tools.segment_writer import build_legacy

    part.mkdir(parents=True)
    appended = t0 + 5_000
    (part / segment_name(0)).write_bytes(
        build_legacy(0, [(t0, b"a", b"1"), (t0 + 1, b"b", b"1")], compression=1, log_append_time=appended)
        + build_legacy(2, [(t0 + 2, b"a", b"2")]))
    (part / segment_name(3)).write_bytes(build_legacy(3, [(t0 + 3, b"c", b"1")]))
    return part, appended
