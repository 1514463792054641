"""A round split over threads (``Cleaner(threads=N)``) against the one-thread round (itself Kafka's, the cleaner
cases say): generated compacted partitions with transactions, aborted ones among them, across segments; offset
maps that fill part way (the fill point found inside a segment's merge) or never; groups of one segment and of
many. The end offset, every cleaned file and every count equal, with and without the native kernel."""

from __future__ import annotations

import os
import random
import threading
from pathlib import Path

import pytest

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.log import cleaner
from segdex.indexcore.log.cleaner import Cleaner, GroupWriter, LogCleaningException, without_bytes
from segdex.indexcore.log.log_cleaner import load_for_cleaning
from segdex.indexcore.log.log_cleaner_manager import cleaning_view, last_stable_offset
from segdex.indexcore.log.skimpy_offset_map import SkimpyOffsetMap
from segdex.indexcore.tools.segment_writer import build_batch, segment_name, write_partition
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



class _Counting(Cleaner):
    """The Cleaner, noting each group whose cleaning has begun (``begun``: base offsets)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.changed, self.begun = threading.Condition(), set()

    def _clean_segments(self, segs, group, *args):
        with self.changed:
            self.begun.add(group[0].base_offset)
            self.changed.notify_all()
        return super()._clean_segments(segs, group, *args)


class _Recording(GroupWriter):
    """Each group's ``.log`` streamed into a file of its own, and what the round did when: ``open`` and ``commit``
    in order, and at each ``open`` the groups whose cleaning had begun (``_Counting``), once the ``ahead`` groups
    after it have begun or half a second passed (the pool's threads get to their work, whatever the GIL's
    turns)."""

    def __init__(self, root: Path, cleaner: _Counting, ahead: int) -> None:
        self.root, self.cleaner, self.ahead = root, cleaner, ahead
        self.events: list[tuple[str, int]] = []
        self.begun_at_open: list[set[int]] = []
        self.files: dict[int, object] = {}
        self.bases: list[int] = []

    def begin(self, groups, end_offset: int) -> None:
        self.bases = [g[0].base_offset for g in groups]

    def open(self, group):
        base = group[0].base_offset
        self.events.append(("open", base))
        n = self.bases.index(base)
        with self.cleaner.changed:
            self.cleaner.changed.wait_for(lambda: self.cleaner.begun.issuperset(self.bases[n + 1:n + 1 + self.ahead]),
                                          0.5)
            self.begun_at_open.append(set(self.cleaner.begun))
        self.files[base] = open(self.root / f"{base}.log", "wb")  # noqa: SIM115 - closed in commit or abort
        return self.files[base]

    def commit(self, cleaned, group):
        self.events.append(("commit", cleaned.base_offset))
        self.files.pop(cleaned.base_offset).close()
        return without_bytes(cleaned)

    def abort(self) -> None:
        for f in self.files.values():
            f.close()


def _groups_partition(root: Path):
    """A partition of a dozen segments of about 1,900 bytes, each a group of its own: (the round of a given
    Cleaner, with an optional writer; the segments)."""
    rng = random.Random(3870)
    batches = [build_batch(10 * i, [(T0 + 10 * i + j, f"key-{rng.randrange(60)}".encode(), bytes(100))
                                    for j in range(5)]) for i in range(40)]
    part = write_partition(root, "c", 0, batches, segment_bytes=2000)[0].parent
    config = LogConfig(cleanup_policy="compact", segment_bytes=2000)
    now = T0 + 400
    loaded = load_for_cleaning(str(part), config, now)
    segs, start, leo = loaded.segments, loaded.log_start_offset, loaded.log_end_offset
    view = cleaning_view(loaded.facts, start, leo, last_stable_offset(loaded.first_unstable_offset, leo), None,
                         now, config)

    def clean(cleaning: Cleaner, writer: GroupWriter | None = None):
        return cleaning.clean(segs, view.log, start, leo, loaded.active_producers(), config, now, writer)
    return clean, segs


def test_a_split_build_merges_the_maps_it_read_ahead(tmp_path: Path):
    """The dozen-segment partition: a split build reads every dirty segment (13, the last one active) into a map of
    its own in the pool and merges it, on 2 threads or 4; with a map of 60 slots (54 keys at the load factor) the
    partial maps in flight share those 54 keys (18 each on 2 threads), and 9 merge before the map fills (the
    round's end, 291, the one-thread round's); one thread merges none. A split build that fell back to reading
    everything in its turn gives the same round, only slower: this count tells them apart."""
    clean, _ = _groups_partition(tmp_path)
    merged = {}
    for threads, slots in ((1, 10_000), (2, 10_000), (4, 10_000), (1, 60), (2, 60)):
        cleaning = Cleaner(SkimpyOffsetMap(24 * slots), threads=threads)
        merged[threads, slots] = (clean(cleaning).end_offset, cleaning.merged_ahead)
    assert merged == {(1, 10_000): (390, 0), (2, 10_000): (390, 13), (4, 10_000): (390, 13), (1, 60): (291, 0),
                      (2, 60): (291, 9)}


@pytest.mark.parametrize(("threads", "held", "ahead"), [(2, cleaner.HELD_BYTES, 1), (4, cleaner.HELD_BYTES, 3),
                                                     (4, 4000, 1), (4, 0, 0)])
def test_a_split_round_writes_group_after_group_in_order(tmp_path: Path, threads: int, held: int, ahead: int,
                                                         monkeypatch):
    """A split round writing its groups (``GroupWriter``, as ``clean --apply`` swaps them in): each group opened
    only after the group before it is committed, in Kafka's order, as the one-thread round does; at each open the
    groups cleaned ahead of their turn are the next ones, at most ``threads`` with the one opened, their sources
    within ``HELD_BYTES`` (with 4000: one group of about 1,900 bytes; with 0, none: one group at a time); the
    files are the one-thread round's bytes."""
    monkeypatch.setattr(cleaner, "HELD_BYTES", held)
    clean, segs = _groups_partition(tmp_path)
    one = clean(Cleaner(SkimpyOffsetMap(1 << 20), threads=1))
    assert len(one.segments) >= 8
    split = _Counting(SkimpyOffsetMap(1 << 20), threads=threads)
    writer = _Recording(tmp_path, split, ahead)
    got = clean(split, writer)
    bases = [c.base_offset for c in one.segments]
    assert writer.events == [(what, base) for base in bases for what in ("open", "commit")]
    assert [(c.base_offset, c.size, c.replaces) for c in got.segments] == [(c.base_offset, c.size, c.replaces)
                                                                          for c in one.segments]
    for c in one.segments:
        assert (tmp_path / f"{c.base_offset}.log").read_bytes() == c.log
    sizes = {c.base_offset: sum(s.size for s in segs if s.base_offset in c.replaces) for c in one.segments}
    most = 0
    for n, begun in enumerate(writer.begun_at_open):
        early = begun - set(bases[:n + 1])
        assert early <= set(bases[n + 1:n + threads]), (n, early)  # in order, at most threads with this one
        assert sum(sizes[b] for b in early) <= held, (n, early)
        most = max(most, len(early))
    assert most == ahead


def test_a_round_takes_every_core_unless_told(monkeypatch):
    monkeypatch.delenv("SEGDEX_CLEAN_THREADS", raising=False)
    assert Cleaner(SkimpyOffsetMap(1 << 10)).threads == len(os.sched_getaffinity(0))
    monkeypatch.setenv("SEGDEX_CLEAN_THREADS", "1")
    assert Cleaner(SkimpyOffsetMap(1 << 10)).threads == 1
    monkeypatch.setenv("SEGDEX_CLEAN_THREADS", "3")
    assert Cleaner(SkimpyOffsetMap(1 << 10)).threads == 3
    assert Cleaner(SkimpyOffsetMap(1 << 10), threads=2).threads == 2


class _Refusing(_Recording):
    """``_Recording`` whose ``open`` of the group at ``base`` refuses it, as ``SwapWriter.open`` does when the disk
    has no room for it."""

    def __init__(self, root: Path, cleaner: _Counting, base: int) -> None:
        super().__init__(root, cleaner, 0)
        self.base = base

    def open(self, group):
        if group[0].base_offset == self.base:
            self.events.append(("refused", self.base))
            raise OSError(f"no room for segment {self.base}")
        return super().open(group)


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_a_group_refused_in_its_turn_stops_the_round_there(tmp_path: Path, threads: int):
    """A group the writer refuses (its ``open`` raises) ends the round in its turn, as on one thread: the groups
    before it committed, the exception raised; no group after it opened (the split round may have cleaned some of
    them ahead, into memory)."""
    clean, _ = _groups_partition(tmp_path)
    bases = [c.base_offset for c in clean(Cleaner(SkimpyOffsetMap(1 << 20), threads=1)).segments]
    split = _Counting(SkimpyOffsetMap(1 << 20), threads=threads)
    writer = _Refusing(tmp_path, split, bases[3])
    with pytest.raises(OSError, match=f"no room for segment {bases[3]}"):
        clean(split, writer)
    assert writer.events == [(what, base) for base in bases[:3] for what in ("open", "commit")] + [
        ("refused", bases[3])]
    assert not writer.files
    assert sorted(p.name for p in tmp_path.glob("*.log")) == sorted(f"{b}.log" for b in bases[:3])

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
    rounds, merged = [], []
    for threads in (1, 2):
        cleaning = Cleaner(SkimpyOffsetMap(24 * 100), threads=threads)
        r = cleaning.clean(segs, view.log, start, leo, loaded.active_producers(), config, now)
        rounds.append([(c.base_offset, c.replaces, c.log, c.offset_index, c.time_index, c.txn_index)
                       for c in r.segments])
        merged.append(cleaning.merged_ahead)
    assert rounds[0] == rounds[1] and merged == [0, 3]  # split: the three dirty segments' maps merged, not read again
    marker = segments[4][0]
    assert [c[1] for c in rounds[0]] == [[0], [3, 4]] and marker in rounds[0][1][2]  # copied as it is
