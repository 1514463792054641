"""``clean_partition``: one round written into the partition as Kafka's cleaner writes it, against Kafka 4.4's own
``Cleaner.doClean`` on a copy (every live segment file equal), Kafka's load of the result, and the quarantine
holding every replaced file whole."""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
from pathlib import Path

from segdex.indexcore.config.cleaner_config import CleanerConfig
from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.log.log_cleaner import clean_partition, plan_cleaning
from segdex.indexcore.tools.segment_writer import segment_name
from tests.support.compacted_partitions import HOUR_MS, compacted_partition

T0 = 1_700_000_000_000
LIVE = (".log", ".index", ".timeindex", ".txnindex")


def _live(part: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(part.iterdir()) if p.suffix in LIVE}


def test_applied_rounds_equal_kafkas_and_kafka_loads_them(kafka44, tmp_path: Path):
    rng = random.Random(99)
    applied = 0
    for i in range(25):
        data, last_ts = compacted_partition(rng, T0)
        ours, theirs, check = (tmp_path / f"{w}{i}" / "c-0" for w in ("ours", "theirs", "check"))
        ours.mkdir(parents=True)
        for n, (base, seg) in enumerate(sorted(data.items())):
            (ours / segment_name(base)).write_bytes(seg)
            os.utime(ours / segment_name(base), ns=(T0 * 10**6, (T0 + n * HOUR_MS) * 10**6))
        shutil.copytree(ours, theirs)
        before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in ours.iterdir()}
        config = LogConfig(cleanup_policy="compact", segment_bytes=rng.choice([1 << 20, 900]))
        cleaner = CleanerConfig(dedupe_buffer_size=24 * rng.choice([5, 10_000]))
        now = last_ts + HOUR_MS
        planned = plan_cleaning(str(ours), config, cleaner, now)
        if planned.error or planned.end_offset is None:
            continue
        plan = clean_partition(str(ours), config, cleaner, now, quarantine=str(tmp_path / f"q{i}"), run_id="r",
                               force=True)
        assert plan.applied and plan.end_offset == planned.end_offset, i
        answer = kafka44.cleanable(theirs, now, 0, -1, None, cleaner.offset_map_memory, config={
            "cleanup.policy": "compact", "internal.segment.bytes": config.segment_bytes})
        assert answer["endOffset"] == plan.end_offset, i
        mine, kafkas = _live(ours), _live(theirs)
        assert {n: b for n, b in mine.items() if n.endswith(".log")} == {
            n: b for n, b in kafkas.items() if n.endswith(".log")}, i
        # the cleaned segments' indexes (Kafka's load also wrote those of the segments no round touched)
        assert mine and all(kafkas.get(n) == b for n, b in mine.items()), i
        assert not [p for p in ours.iterdir() if p.suffix in (".cleaned", ".swap", ".deleted")]
        # every replaced file is in the quarantine, whole
        manifest = json.loads((Path(plan.quarantine) / "manifest.json").read_text())
        kept = {os.path.basename(p["source"]): p["sha256"] for p in manifest["pieces"]}
        assert kept and all(before[name] == digest for name, digest in kept.items()), i
        # Kafka loads what segdex left: the same log end offset, no exception
        shutil.copytree(ours, check)
        loaded = kafka44.load(check, now)
        assert "exception" not in loaded and loaded["logEndOffset"] == answer["logEndOffset"], (i, loaded)
        applied += 1
    assert applied > 15


def test_a_partition_kafka_would_not_clean_is_left_alone(tmp_path: Path):
    data, last_ts = compacted_partition(random.Random(3), T0)
    part = tmp_path / "c-0"
    part.mkdir()
    for base, seg in data.items():
        (part / segment_name(base)).write_bytes(seg)
    before = _live(part)
    config = LogConfig(cleanup_policy="compact", min_cleanable_dirty_ratio=1.0)
    plan = clean_partition(str(part), config, CleanerConfig(), last_ts, quarantine=str(tmp_path / "q"))
    assert not plan.applied and plan.would_clean is False and _live(part) == before
    assert not (tmp_path / "q").exists()
