"""``plan_cleaning`` and ``clean_partition`` in the test process against Kafka 4.4's own cleaner, recorded.

``test_log_cleaner.py`` compares applied rounds with Kafka's ``Cleaner.doClean`` run beside them, which needs a
JVM per test module (``kafka_broker``): the mutation run (scripts/mutation.sh) cannot fork it for each mutant.
Here the same kind of partitions (``compacted_partition``, fixed seeds, every codec, a few of message format v1)
are cleaned by segdex in the test process and compared with Kafka's answers recorded in
``tests/kafka/golden/log_cleaner_rounds.json``: the choice and the range (``LogCleanerManager``), the round's end
offset, the SHA-256 of every live file after the round and the log end offset of Kafka's load of it.
``test_the_recorded_rounds_are_kafkas`` asks Kafka again whenever the ``kafka_broker`` tests run;
``SEGDEX_RECORD_GOLDEN=1`` writes the file from Kafka's answers instead."""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
from pathlib import Path

import pytest

from segdex.indexcore.config.cleaner_config import CleanerConfig
from segdex.indexcore.config.log_config import LONG_MAX, LogConfig
from segdex.indexcore.log.log_cleaner import clean_partition, plan_cleaning
from segdex.indexcore.tools.segment_writer import segment_name
from tests.support.compacted_partitions import HOUR_MS, compacted_partition
from tests.support.fixtures import GOLDEN

T0 = 1_700_000_000_000
LIVE = (".log", ".index", ".timeindex", ".txnindex")
RECORDED = GOLDEN / "log_cleaner_rounds.json"
CASES = 24


def _case(i: int, root: Path) -> tuple[Path, LogConfig, CleanerConfig, int, int | None]:
    """Case ``i``: a compacted partition in ``root/c-0`` (segment mtimes an hour apart), its configs, now, and the
    cleaner-offset-checkpoint entry (None: none; every third case checkpoints the middle segment's base)."""
    rng = random.Random(1000 + i)
    codecs = ((0,), (0, 1, 3, 4), (0, 2))[i % 3]  # none; gzip, lz4, zstd; snappy (the _snappy kernel)
    data, last_ts = compacted_partition(rng, T0, codecs=codecs, magic=1 if i % 8 == 7 else 2)
    part = root / "c-0"
    part.mkdir(parents=True)
    for n, (base, seg) in enumerate(sorted(data.items())):
        (part / segment_name(base)).write_bytes(seg)
        os.utime(part / segment_name(base), ns=(T0 * 10**6, (T0 + n * HOUR_MS) * 10**6))
    config = LogConfig(cleanup_policy="compact", segment_bytes=rng.choice([1 << 20, 900]),
                       min_cleanable_dirty_ratio=rng.choice([0.5, 0.01, 0.9]),
                       min_compaction_lag_ms=HOUR_MS if i % 5 == 4 else 0,
                       max_compaction_lag_ms=HOUR_MS if i % 4 == 1 else LONG_MAX)
    cleaner = CleanerConfig(dedupe_buffer_size=24 * rng.choice([5, 10_000]))
    bases = sorted(data)
    checkpoint = bases[len(bases) // 2] if i % 3 == 2 else None
    return part, config, cleaner, last_ts + HOUR_MS, checkpoint


def _digests(part: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(part.iterdir()) if p.suffix in LIVE}


def _kafkas(kafka44, i: int, root: Path) -> dict:
    part, config, cleaner, now, checkpoint = _case(i, root)
    kconfig = {"cleanup.policy": "compact", "internal.segment.bytes": config.segment_bytes,
               "min.cleanable.dirty.ratio": config.min_cleanable_dirty_ratio,
               "min.compaction.lag.ms": config.min_compaction_lag_ms,
               "max.compaction.lag.ms": config.max_compaction_lag_ms}
    view = kafka44.cleanable(part, now, 0, -1, checkpoint, 0, config=kconfig)  # the choice, no round
    answer = kafka44.cleanable(part, now, 0, -1, checkpoint, cleaner.offset_map_memory, config=kconfig)
    files = _digests(part)
    loaded = kafka44.load(part, now)
    return {"view": view, "end_offset": answer.get("endOffset"), "files": files,
            "log_end_offset": loaded.get("logEndOffset"), "exception": loaded.get("exception")}


def test_the_recorded_rounds_are_kafkas(kafka44, tmp_path: Path):
    answers = [_kafkas(kafka44, i, tmp_path / f"k{i}") for i in range(CASES)]
    if os.environ.get("SEGDEX_RECORD_GOLDEN") == "1":
        RECORDED.write_text(json.dumps(answers, indent=1, sort_keys=True) + "\n")
    assert json.loads(RECORDED.read_text()) == answers


def _recorded() -> list[dict]:
    return json.loads(RECORDED.read_text())


@pytest.mark.parametrize("i", range(CASES))
def test_a_plan_is_kafkas_choice_and_range(i: int, tmp_path: Path):
    kafka = _recorded()[i]
    part, config, cleaner, now, checkpoint = _case(i, tmp_path)
    plan = plan_cleaning(str(part), config, cleaner, now, checkpoint=checkpoint)
    assert plan_cleaning(str(part), config, cleaner, now, checkpoint=checkpoint, threads=2) == plan  # split
    view = kafka["view"]
    assert plan.error is None
    assert (plan.first_dirty_offset, plan.first_uncleanable_offset) == (view["firstDirtyOffset"],
                                                                        view["firstUncleanableOffset"])
    ratio, delay, least = view["cleanableRatio"], view["maxCompactionDelay"], config.min_cleanable_dirty_ratio
    assert plan.dirty_ratio == (None if view["cleanableBytes"] == 0 and view["totalBytes"] == 0 else
                                pytest.approx(ratio))
    # LogCleanerManager.grabFilthiestCompactedLog: a log past max.compaction.lag.ms, or dirtier than the minimum
    assert plan.would_clean == (delay > 0 or ratio > least)
    if view["cleanableBytes"] == 0:
        assert plan.why.startswith("nothing cleanable") and plan.end_offset is None
        return
    assert plan.why == (f"max.compaction.lag.ms passed {delay} ms ago" if delay > 0 else
                        f"dirty ratio {ratio:.3f} {'>' if ratio > least else '<='} min.cleanable.dirty.ratio {least}")
    assert plan.end_offset == kafka["end_offset"]
    assert plan.map_full == (plan.end_offset < plan.first_uncleanable_offset)


@pytest.mark.parametrize("i", range(CASES))
def test_an_applied_round_leaves_kafkas_files(i: int, tmp_path: Path):
    kafka = _recorded()[i]
    part, config, cleaner, now, checkpoint = _case(i, tmp_path)
    before = _digests(part)
    planned = plan_cleaning(str(part), config, cleaner, now, checkpoint=checkpoint)
    plan = clean_partition(str(part), config, cleaner, now, checkpoint=checkpoint, quarantine=str(tmp_path / "q"),
                           run_id="r", force=True)
    if planned.end_offset is None:  # nothing cleanable: nothing done
        assert not plan.applied and _digests(part) == before and not (tmp_path / "q").exists()
        return
    assert plan.applied and plan.end_offset == planned.end_offset == kafka["end_offset"]
    assert plan.bytes_freed == planned.bytes_before - planned.bytes_after
    mine = _digests(part)
    assert {n: d for n, d in mine.items() if n.endswith(".log")} == {
        n: d for n, d in kafka["files"].items() if n.endswith(".log")}
    assert all(kafka["files"].get(n) == d for n, d in mine.items())  # Kafka's load also wrote untouched indexes
    assert not [p for p in part.iterdir() if p.suffix in (".cleaned", ".swap", ".deleted")]
    manifest = json.loads((Path(plan.quarantine) / "manifest.json").read_text())
    kept = {os.path.basename(p["source"]): p["sha256"] for p in manifest["pieces"]}
    assert kept and all(before[name] == digest for name, digest in kept.items())
    shutil.rmtree(tmp_path / "q")


@pytest.mark.parametrize("i", [i for i in range(CASES) if i % 3 != 2])  # from the log start (no checkpoint)
def test_rounds_until_clean_in_memory_are_the_rounds_applied_one_by_one(i: int, tmp_path: Path):
    """``--until-clean`` plans every round in memory over what the last one left; applying the rounds one at a
    time (each checked against Kafka's above for the first) must end in the same place with the same figures."""
    part, config, cleaner, now, _ = _case(i, tmp_path)
    small = CleanerConfig(dedupe_buffer_size=24 * 20)  # a map of 10 keys: several rounds
    whole = plan_cleaning(str(part), config, small, now, until_clean=True)
    if whole.end_offset is None or whole.error:
        return
    checkpoint, rounds, last = None, 0, None
    while True:
        step = clean_partition(str(part), config, small, now, checkpoint=checkpoint, force=True)
        if step.end_offset is None or (checkpoint is not None and step.end_offset <= checkpoint):
            break
        rounds, last, checkpoint = rounds + 1, step, step.end_offset
        if not step.map_full:
            break
    assert (whole.rounds, whole.end_offset, whole.map_full) == (rounds, last.end_offset, last.map_full)
    assert (whole.records_after, whole.bytes_after, whole.segments_after, whole.tombstones_kept, whole.keys) == (
        last.records_after, last.bytes_after, last.segments_after, last.tombstones_kept, last.keys)
