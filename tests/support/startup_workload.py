"""The startup-preview workload: two seeded log dirs of generated partitions (one with ``.kafka_cleanshutdown``, one
without) in every state a broker meets at start, and the check that a preview row names Kafka's outcome.

Shared because two tests judge ``segdex verify``'s startup preview on the same bytes:
tests/kafka/test_startup_preview.py against Kafka's own start (its answers recorded in ``STARTUP_PREVIEW_GOLDEN``),
and tests/pipelines/test_scan_startup_preview.py against that recording in the test process, without Spark or
Kafka. Both build the workload with ``make_workload`` and judge each preview row with ``assert_preview_is``."""

from __future__ import annotations

import random
import struct
from pathlib import Path

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.log.checkpoints import format_offset_checkpoint
from segdex.indexcore.log.producer_snapshot import producer_snapshot_file_name, snapshot_bytes
from segdex.indexcore.record.file_records import batches
from segdex.indexcore.tools.rebuild import rebuild
from segdex.indexcore.tools.segment_writer import segment_name
from tests.support.fixtures import GOLDEN
from tests.support.generated_partitions import generated_partition

T0 = 1_700_000_000_000
MARKER = b'{"version":0,"brokerEpoch":-1}'
PER_DIR = 36
STARTUP_PREVIEW_GOLDEN = GOLDEN / "startup_preview_kafka.json"  # Kafka's start of each partition, recorded


def config(interval: int) -> LogConfig:
    return LogConfig().with_overrides({"index.interval.bytes": str(interval)})


def _flip(data: bytearray, rng: random.Random, at_least: int) -> None:
    """A bit flipped in a batch's CRC-covered bytes, at or after byte ``at_least``."""
    pos = rng.randrange(max(at_least, 21), len(data)) if len(data) > max(at_least, 21) else len(data) - 1
    data[pos] ^= 1 << rng.randrange(8)


KINDS = ["none", "none", "no-index", "some-index", "flip", "partial", "zeros", "txn-corrupt", "txn-version",
         "flip-no-index", "offset-back", "txn-version-no-index"]


def _damage(part: Path, bases: list[int], rng: random.Random, kind: str) -> str:
    """One kind of damage (or none) to a partition whose index files are in place; returns what was done."""
    pick = rng.choice(bases)
    log = part / segment_name(pick)
    if kind in ("no-index", "flip-no-index"):
        for p in part.glob("*.index"):
            p.unlink()
    if kind == "some-index":
        (part / segment_name(pick, ".index")).unlink()
    if kind in ("flip", "flip-no-index"):
        data = bytearray(log.read_bytes())
        if len(data) < 30:
            return "none"
        _flip(data, rng, rng.randrange(len(data) // 2))
        log.write_bytes(bytes(data))
    if kind == "partial":
        log = part / segment_name(bases[-1])
        data = log.read_bytes()
        log.write_bytes(data + data[:rng.randint(1, 40)] if data else b"\0" * 5)
    if kind == "zeros":
        with open(log, "ab") as f:
            f.write(b"\0" * rng.choice([20, 4096]))
    if kind == "offset-back":  # a batch whose offsets go back: Kafka's index append throws InvalidOffsetException
        data = bytearray(log.read_bytes())
        starts = [b.position for b in batches(bytes(data))]
        if len(starts) < 2:
            return "none"
        k = rng.randrange(1, len(starts))
        data[starts[k]:starts[k] + 8] = data[starts[k - 1]:starts[k - 1] + 8]
        log.write_bytes(bytes(data))
    if kind in ("txn-corrupt", "txn-version", "txn-version-no-index"):
        return _damage_txn(part, pick, kind)
    return kind


def _damage_txn(part: Path, pick: int, kind: str) -> str:
    """A ``.txnindex`` the load's sanity check finds corrupt (an entry ending below the base) or of an unknown
    version; ``txn-version-no-index``: that segment's ``.index`` gone too, so the load recovers it unread."""
    if pick == 0:
        return "none"
    if kind == "txn-version-no-index":
        (part / segment_name(pick, ".index")).unlink()
    # version 256: unknown to Kafka 4.x (an int16) and 3.x (which reads its first byte) alike
    version, last = (0, pick - 1) if kind == "txn-corrupt" else (256, pick + 1)
    (part / segment_name(pick, ".txnindex")).write_bytes(struct.pack(">hqqqq", version, 7, 0, last, 0))
    return kind


def _snapshots(part: Path, bases: list[int], rng: random.Random) -> list[int]:
    """Producer snapshot files (empty producer tables) for half the partitions: at segment bases, just past them,
    inside or past the log; which of them a start keeps, deletes or loads decides what it reads again."""
    if rng.random() < 0.5:
        return []
    offsets = sorted({rng.choice([rng.choice(bases), rng.choice(bases) + rng.choice([1, 7]), bases[-1] + 10**6])
                      for _ in range(rng.randint(1, 3))})
    for offset in offsets:
        (part / producer_snapshot_file_name(offset)).write_bytes(snapshot_bytes([]))
    return offsets


def _make_log_dir(root: Path, rng: random.Random, clean: bool, prefix: str) -> dict[str, dict]:
    root.mkdir(parents=True)
    parts: dict[str, dict] = {}
    rps, lsos = {}, {}
    for i in range(PER_DIR):
        topic = f"{prefix}{i}"
        part = root / f"{topic}-0"
        part.mkdir()
        segments = generated_partition(rng, T0)
        while len(segments) < 2 and rng.random() < 0.8:
            segments = generated_partition(rng, T0)
        for base, data in segments.items():
            (part / segment_name(base)).write_bytes(data)
        kind = rng.choice(KINDS)
        # 1: every batch indexed, so that offsets going back meet an index append
        interval = 1 if kind == "offset-back" else rng.choice([4096, 4096, 1])
        list(rebuild(str(part), config(interval)))
        bases = sorted(segments)
        kind = _damage(part, bases, rng, kind)
        snapshots = _snapshots(part, bases, random.Random(topic))  # its own generator: the rest stays as it was
        rp = rng.choice([None, 0, rng.choice(bases), rng.choice(bases) + 1, bases[-1] + 10**6])
        if rp is not None:
            rps[(topic, 0)] = rp
        lso = None
        if rng.random() < 0.12:
            lso = rng.choice([bases[0] + 1, 10**9])  # inside the log, or beyond its end
            lsos[(topic, 0)] = lso
        parts[part.name] = {"kind": kind, "rp": rp, "lso": lso, "bases": bases, "interval": interval,
                            "snapshots": snapshots}
    (root / "recovery-point-offset-checkpoint").write_bytes(format_offset_checkpoint(rps))
    (root / "log-start-offset-checkpoint").write_bytes(format_offset_checkpoint(lsos))
    if clean:
        (root / ".kafka_cleanshutdown").write_bytes(MARKER)
    return parts


def make_workload(root: Path) -> tuple[dict[tuple[str, str], dict], dict[str, LogConfig]]:
    """The two generated log dirs (marker and none) under ``root``, the same bytes on every run (seeded); returns
    each partition's facts by (log dir, partition dir) and the topics' configs."""
    rng = random.Random(20261124)
    parts = {}
    for clean, name in ((True, "clean"), (False, "unclean")):
        made = _make_log_dir(root / name, rng, clean, name[0])
        parts.update({(name, k): v for k, v in made.items()})
    topics = {name[:-2]: config(v["interval"]) for (_d, name), v in parts.items()}
    return parts, topics


def assert_preview_is(row: dict, kafka: dict, what: object) -> None:
    if kafka["fails"]:
        assert row.startup_action == "fail", what
        assert "the broker's load fails" in row.startup_note, what
        return
    assert row.startup_log_end_offset == kafka["log_end_offset"], what
    assert row.startup_recovered_segments == kafka["recovered"], what
    assert row.startup_deleted_segments == kafka["deleted"], what
    assert row.startup_lost_bytes == kafka["lost_bytes"], what
    assert row.startup_action == kafka["action"], what
