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


@pytest.mark.parametrize("aborted", [False, True])
@pytest.mark.parametrize("damage", ["magic", "size"])
def test_a_split_round_fails_on_a_damaged_batch_as_the_one_thread_round(tmp_path: Path, aborted: bool, damage: str):
    """A dirty segment served with a bad magic byte or size field in its second batch: the partial build that
    meets it is read again by the pass, which throws Kafka's exception, as the one-thread round does; with an
    aborted transaction to follow, the transaction states cannot be read ahead either (a size field below 14),
    and the pass meets it as well."""
    from segdex.indexcore.index.offset_index import OffsetIndex
    from segdex.indexcore.index.transaction_index import AbortedTxn
    from segdex.indexcore.log.cleaner import CleanerSegment
    from segdex.indexcore.log.log_cleaner_manager import LogToClean
    from segdex.indexcore.tools.segment_writer import build_batch

    segs = []
    for base, keys in ((0, [b"a", b"b"]), (2, [b"c", b"d"]), (4, [b"e", b"f"]), (6, [b"g"])):
        data = bytearray(b"".join(build_batch(base + i, [(T0, k, b"v")]) for i, k in enumerate(keys)))
        if base == 2 and damage == "magic":
            data[len(data) // 2 + 16] = 9  # the second batch's magic byte
        elif base == 2:
            data[len(data) // 2 + 8:len(data) // 2 + 12] = (5).to_bytes(4, "big")  # its size field
        path = tmp_path / segment_name(base)
        path.write_bytes(bytes(data))
        txns = [AbortedTxn(7, 0, 1, 6)] if aborted and base == 0 else []
        segs.append(CleanerSegment(str(path), base, len(data), T0, OffsetIndex.from_bytes(b"", base, 1 << 20), 0,
                                   txns, base + len(keys), as_is=base == 2))
    to_clean = LogToClean(0, 6, 0, sum(s.size for s in segs[:3]), False)
    config = LogConfig(cleanup_policy="compact")
    failures = []
    for threads in (1, 2):
        with pytest.raises(LogCleaningException) as e:
            Cleaner(SkimpyOffsetMap(24 * 100), threads=threads).clean(segs, to_clean, 0, 7, {}, config, T0)
        failures.append((str(e.value), e.value.kafka_exception, e.value.position))
    assert failures[0] == failures[1] and failures[0][1].endswith(
        "Invalid magic found in record: 9" if damage == "magic" else
        "Record size 5 is less than the minimum record overhead (14)")


@pytest.mark.parametrize("native", [True, False])
def test_a_segment_that_fills_the_map_exactly_ends_where_the_next_begins(tmp_path: Path, native: bool, monkeypatch):
    """A map of 3 keys: segment 0's two keys merge; segment 2's one new key would reach the limit, so the pass reads
    it (the map then exactly full, the segment read to its end: its last offset is the next base's, minus one);
    segment 3's key fills it. The round ends at segment 3's base, split or not."""
    from segdex.indexcore.tools.segment_writer import build_batch

    if not native:
        monkeypatch.setenv("SEGDEX_NO_NATIVE", "1")
    part = tmp_path / "c-0"
    part.mkdir()
    for base, keys in ((0, [b"a", b"b"]), (2, [b"c"]), (3, [b"d"]), (4, [b"e"])):
        (part / segment_name(base)).write_bytes(build_batch(base, [(T0 + base, k, b"v") for k in keys]))
    config = LogConfig(cleanup_policy="compact")
    one = _round(part, config, T0 + HOUR_MS, 24 * 4, 1, 0.0)
    assert one[0] == 3
    for threads in (2, 4):
        assert _round(part, config, T0 + HOUR_MS, 24 * 4, threads, 0.0) == one, threads


def test_a_split_round_carries_a_transaction_begun_before_the_dirty_offset(tmp_path: Path):
    """The first dirty offset (the checkpoint, 2) lies inside segment 0, after producer 7's aborted data at 0; the
    ABORT marker is in a later group. The map is built from offset 2 on, but the cleaning reads segment 0 whole:
    the marker's group starts with the transaction's data seen, so the marker is kept as it is (not stamped with
    a horizon as a marker whose data was never seen), split or not."""
    from segdex.indexcore.tools.segment_writer import build_batch

    part = tmp_path / "c-0"
    part.mkdir()
    txn = {"producer_id": 7, "producer_epoch": 0}
    segments = {0: [build_batch(0, [(T0, b"x", b"1")], is_transactional=True, **txn),
                    build_batch(1, [(T0, b"a", b"1")]), build_batch(2, [(T0, b"b", b"1")])],
                3: [build_batch(3, [(T0, b"c", b"1")])],
                4: [build_batch(4, [], control=("ABORT", 0), control_timestamp=T0, **txn),
                    build_batch(5, [(T0, b"d", b"1")])],
                6: [build_batch(6, [(T0, b"e", b"1")])]}
    for base, batches in segments.items():
        (part / segment_name(base)).write_bytes(b"".join(batches))
    config = LogConfig(cleanup_policy="compact", index_interval_bytes=1,
                       segment_bytes=sum(map(len, segments[0])) + 40)
    now = T0 + HOUR_MS
    loaded = load_for_cleaning(str(part), config, now)
    segs, start, leo = loaded.segments, loaded.log_start_offset, loaded.log_end_offset
    assert segs[0].offset_index.lookup(2)[1] > 0 and [len(s.aborted) for s in segs] == [0, 0, 1, 0]
    view = cleaning_view(loaded.facts, start, leo, last_stable_offset(loaded.first_unstable_offset, leo), 2, now,
                         config)
    rounds = []
    for threads in (1, 2):
        r = Cleaner(SkimpyOffsetMap(24 * 100), threads=threads).clean(segs, view.log, start, leo,
                                                                        loaded.active_producers(), config, now)
        rounds.append([(c.base_offset, c.replaces, c.log, c.offset_index, c.time_index, c.txn_index)
                       for c in r.segments])
    assert rounds[0] == rounds[1]
    marker = segments[4][0]
    assert [c[1] for c in rounds[0]] == [[0], [3, 4]] and marker in rounds[0][1][2]  # copied as it is
