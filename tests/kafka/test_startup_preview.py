"""``segdex verify``'s startup preview against Kafka's own start (``KafkaOracle load``: the real ``UnifiedLog``
creation of 4.4.0 and 3.9.2, its ``LogLoader`` lines telling which segments it recovered).

Generated partitions in two log dirs, one with ``.kafka_cleanshutdown`` and one without, in every state a broker
meets: clean, unflushed (recovery points anywhere), index files missing (all or some), a ``.txnindex`` that fails
Kafka's sanity check or that Kafka cannot read, corrupt batches, partial batches and zero-filled tails, a
checkpointed log start offset beyond the log. ``verify`` predicts each start; a copy of each partition is then
loaded by Kafka, and the preview must name its outcome: the action, the segments recovered and deleted, the log
end offset and the bytes lost.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import struct
from pathlib import Path

import crc32c
import pytest

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.errors import CorruptRecordException
from segdex.indexcore.log.checkpoints import format_offset_checkpoint
from segdex.indexcore.log.producer_snapshot import producer_snapshot_file_name, snapshot_bytes
from segdex.indexcore.record.file_records import batches
from segdex.indexcore.tools.rebuild import rebuild
from segdex.indexcore.tools.segment_writer import segment_name
from segdex.jobs.cli import main as segdex_main
from segdex.pipelines import reindex
from segdex.pipelines.scan import MODE_VERIFY
from tests.jobs.test_recover import generated_partition
from tests.support.fixtures import GOLDEN

pytestmark = pytest.mark.kafka_broker

T0 = 1_700_000_000_000
MARKER = b'{"version":0,"brokerEpoch":-1}'
PER_DIR = 36


def config(interval: int) -> LogConfig:
    return LogConfig().with_overrides({"index.interval.bytes": str(interval)})


def _flip(data: bytearray, rng: random.Random, at_least: int) -> None:
    """A bit flipped in a batch's CRC-covered bytes, at or after byte ``at_least``."""
    pos = rng.randrange(max(at_least, 21), len(data)) if len(data) > max(at_least, 21) else len(data) - 1
    data[pos] ^= 1 << rng.randrange(8)


KINDS = ["none", "none", "no-index", "some-index", "flip", "partial", "zeros", "txn-corrupt", "txn-version",
         "flip-no-index", "offset-back"]


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
    if kind in ("txn-corrupt", "txn-version"):
        if pick == 0:
            return "none"
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


GOLDEN = GOLDEN / "startup_preview_kafka.json"
RECORD_ENV = "SEGDEX_RECORD_GOLDEN"


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


def _valid_offsets(log: Path) -> list[int]:
    """The offsets of a segment's valid batches, read up to its first batch that is cut short or whose CRC-32C
    does not match (where Kafka's recovery stops)."""
    data, out = log.read_bytes(), []
    try:
        for b in batches(data):
            if b.magic >= 2 and crc32c.crc32c(data[b.position + 21:b.position + b.size_in_bytes]) != b.crc:
                break  # 21: the attributes' position in a batch, where the CRC's range starts
            out.extend(range(b.base_offset, b.last_offset + 1))
    except CorruptRecordException:
        pass
    return out


def _offsets(part: Path) -> dict[int, list[int]]:
    return {int(log.name[:20]): _valid_offsets(log) for log in part.glob("*.log")}


def kafka_outcome(answer: dict, before: dict[int, int], after: dict[int, int],
                  offsets_before: dict[int, list[int]] | None = None,
                  offsets_after: dict[int, list[int]] | None = None) -> dict:
    """What Kafka's start did to a partition, in the terms of the preview's columns; with each segment's offsets
    before and after, the first and last offset the start took away: from the first segment it deleted or the
    end of the first one it cut, to the last offset of a valid batch in a deleted segment (None when the start
    only cut segments: then everything from the first offset to the cut segment's end went)."""
    if "exception" in answer:
        return {"fails": True}
    deleted = sorted(set(before) - set(after))
    lost = sum(before.values()) - sum(v for b, v in after.items() if b in before)
    offsets_before, offsets_after = offsets_before or {}, offsets_after or {}
    cut = [b for b in before if b in after and after[b] < before[b]]
    firsts = [b for b in deleted] + [max(offsets_after[b], default=b - 1) + 1 for b in cut]
    gone = [o for b in deleted for o in offsets_before.get(b, [])]  # a cut segment's tail: "to its end"
    return {"fails": False, "log_end_offset": answer["logEndOffset"], "recovered": len(answer["recovered"]),
            "deleted": len(deleted), "lost_bytes": lost,
            "action": "truncate" if lost else ("recover" if answer["recovered"] else "none"),
            "lost_offsets": [min(firsts), max(gone) if gone else None] if lost and firsts else None}


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


@pytest.fixture(scope="module")
def previewed(tmp_path_factory, spark):
    """Two generated log dirs (marker and none), verified once; pristine copies kept for Kafka's loads."""
    root = tmp_path_factory.mktemp("preview")
    parts, topics = make_workload(root)
    pristine = root / "pristine"
    shutil.copytree(root / "clean", pristine / "clean")
    shutil.copytree(root / "unclean", pristine / "unclean")
    summary = reindex.run(spark, [str(root / "clean"), str(root / "unclean")], MODE_VERIFY, str(root / "meta"),
                          LogConfig(), topics)
    rows = {(o.partition.log_dir.rsplit("/", 1)[-1], f"{o.partition.topic}-0"): o.partition
            for o in summary.outcomes}
    return root, pristine, parts, rows, summary


def _log_sizes(part: Path) -> dict[int, int]:
    return {int(p.name[:20]): p.stat().st_size for p in part.glob("*.log")}


def test_the_workload_covers_every_startup_outcome(previewed):
    _root, _pristine, parts, rows, _summary = previewed
    kinds = {v["kind"] for v in parts.values()}
    assert {"none", "no-index", "some-index", "flip", "partial", "zeros", "txn-corrupt", "txn-version",
            "offset-back"} <= kinds
    assert any("InvalidOffsetException" in (r.reason or "") for r in previewed[4].segment_rows)
    actions = {(d, r.startup_action) for (d, _), r in rows.items()}
    for d in ("clean", "unclean"):
        for action in ("none", "recover", "truncate", "fail"):
            if (d, action) == ("unclean", "none"):
                continue  # without the marker the last segment is always re-read
            assert (d, action) in actions, (d, action, sorted(actions))


def test_preview_predicts_kafkas_own_start(previewed, oracle, tmp_path):
    """Kafka's own load of a copy of each partition, against the preview; Kafka's outcomes are also the ones
    recorded in tests/kafka/golden/startup_preview_kafka.json (which tests/pipelines/test_scan_startup_preview.py
    replays in the test process): ``SEGDEX_RECORD_GOLDEN=1`` writes that file from Kafka's answers instead."""
    _root, pristine, parts, rows, _summary = previewed
    outcomes = {}
    for (log_dir, name), facts in sorted(parts.items()):
        row = rows[(log_dir, name)]
        part = tmp_path / log_dir / name
        shutil.copytree(pristine / log_dir / name, part)
        before, offsets_before = _log_sizes(part), _offsets(part)
        answer = oracle.load(part, T0, log_start_offset=facts["lso"] or 0, recovery_point=facts["rp"] or 0,
                             clean=log_dir == "clean", config={"index.interval.bytes": facts["interval"]})
        kafka = kafka_outcome(answer, before, _log_sizes(part), offsets_before, _offsets(part))
        assert_preview_is(row, kafka, (log_dir, name, facts, row, answer))
        outcomes[f"{log_dir}/{name}"] = kafka
    assert sum(not k["fails"] for k in outcomes.values()) >= PER_DIR
    if os.environ.get(RECORD_ENV) == "1":
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(outcomes, indent=1, sort_keys=True) + "\n")
    assert json.loads(GOLDEN.read_text()) == outcomes


def test_the_summary_names_what_a_start_would_lose(previewed, tmp_path, capsys):
    """The CLI prints one line per partition that would lose data, and the marker in front of a corrupt log."""
    _root, pristine, _parts, rows, _summary = previewed
    losing = sorted(n for (d, n), r in rows.items() if d == "clean" and r.startup_action == "truncate")[:3]
    marked = sorted(n for (d, n), r in rows.items() if d == "clean" and "marker in front" in (r.startup_note or ""))
    assert losing and marked
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    for name in {*losing, marked[0]}:
        shutil.copytree(pristine / "clean" / name, log_dir / name)
    for name in ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint", ".kafka_cleanshutdown"):
        shutil.copy(pristine / "clean" / name, log_dir / name)
    code = segdex_main(["verify", "--no-progress", "--metadata", str(tmp_path / "meta"), str(log_dir)])
    err = capsys.readouterr().err
    assert code == 1
    for name in losing:
        r = rows[("clean", name)]
        [line] = [x for x in err.splitlines() if x.startswith(f"startup: {name}: starting the broker now")]
        assert f"{r.startup_lost_bytes:,} bytes" in line
        assert ("deletes" in line) == bool(r.startup_deleted_segments), line
    assert f"startup: {marked[0]}: clean-shutdown marker in front of" in err
