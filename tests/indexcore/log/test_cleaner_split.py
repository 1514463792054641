"""A round split over threads (``Cleaner(threads=N)``) against the one-thread round (itself Kafka's, the cleaner
cases say): generated compacted partitions with transactions, aborted ones among them, across segments; offset
maps that fill part way (the fill point found inside a segment's merge) or never; groups of one segment and of
many. The end offset, every cleaned file and every count equal, with and without the native kernel."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.log.cleaner import Cleaner, LogCleaningException
from segdex.indexcore.log.log_cleaner import load_for_cleaning
from segdex.indexcore.log.log_cleaner_manager import cleaning_view, last_stable_offset
from segdex.indexcore.log.skimpy_offset_map import SkimpyOffsetMap
from segdex.indexcore.tools.segment_writer import segment_name
from tests.support.compacted_partitions import HOUR_MS, compacted_partition

T0 = 1_700_000_000_000


def _round(part: Path, config: LogConfig, now: int, dedupe: int, threads: int, hw_choice: float):
    loaded = load_for_cleaning(str(part), config, now)
    segs, start, leo = loaded.segments, loaded.log_start_offset, loaded.log_end_offset
    hw = leo if len(segs) < 3 or hw_choice < 0.6 else segs[1 + int(hw_choice * 1000) % (len(segs) - 2)].base_offset
    lso = last_stable_offset(loaded.first_unstable_offset, hw)
    view = cleaning_view(loaded.facts, start, leo, lso, None, now, config)
    if not view.log.cleanable_bytes:
        return None
    try:
        r = Cleaner(SkimpyOffsetMap(dedupe), threads=threads).clean(segs, view.log, start, hw,
                                                                    loaded.active_producers(), config, now)
    except LogCleaningException as e:
        return ("threw", str(e))
    return (r.end_offset, [(c.base_offset, c.log, c.offset_index, c.time_index, c.txn_index, c.mtime_ms, c.replaces,
                            c.size) for c in r.segments], r.stats)


@pytest.mark.parametrize("native", [True, False])
def test_a_split_round_is_the_one_thread_round(tmp_path: Path, native: bool, monkeypatch):
    if not native:
        monkeypatch.setenv("SEGDEX_NO_NATIVE", "1")
    split = {"rounds": 0, "groups": 0, "txn": 0, "cut": 0}
    for seed in range(60):
        rng = random.Random(3800 + seed)
        data, last_ts = compacted_partition(rng, T0, codecs=(0, 0, 0, 1, 3))
        part = tmp_path / f"c{seed}" / "c-0"
        part.mkdir(parents=True)
        for n, (base, seg) in enumerate(sorted(data.items())):
            (part / segment_name(base)).write_bytes(seg)
            os.utime(part / segment_name(base), ns=(T0 * 10**6, (T0 + n * HOUR_MS) * 10**6))
        config = LogConfig(cleanup_policy="compact", index_interval_bytes=rng.choice([1, 100, 4096]),
                           segment_bytes=rng.choice([1 << 20, 1500, 600]),
                           delete_retention_ms=rng.choice([0, HOUR_MS]))
        now = last_ts + rng.choice([0, HOUR_MS, 48 * HOUR_MS])
        dedupe, hw_choice = 24 * rng.choice([3, 12, 30, 60, 10_000]), rng.random()
        one = _round(part, config, now, dedupe, 1, hw_choice)
        for threads in (2, 4):
            assert _round(part, config, now, dedupe, threads, hw_choice) == one, (seed, threads)
        if one is not None and one[0] != "threw":
            split["rounds"] += 1
            split["groups"] += len(one[1]) > 1
            split["txn"] += any(c[4] for c in one[1])
            split["cut"] += dedupe < 24 * 10_000
    assert split["rounds"] > 30 and split["groups"] > 5 and split["txn"] > 3 and split["cut"] > 10, split
