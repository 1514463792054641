"""Kafka's ``AbstractIndex``: the floor lookup (``largestLowerBoundSlotFor``) probe for probe, on sorted indexes of
every size around the warm section's and on entries read from damaged files (out of order, repeated)."""

from __future__ import annotations

import random
import struct

import pytest

from segdex.indexcore.index.abstract_index import WARM_INDEX_BYTES
from segdex.indexcore.index.offset_index import OffsetIndex
from segdex.indexcore.index.time_index import TimeIndex

WARM_ENTRIES = WARM_INDEX_BYTES // 8  # offset index entries in the warm section


def _index_bytes(entries: list[tuple[int, int]]) -> bytes:
    return b"".join(struct.pack(">ii", rel, pos) for rel, pos in entries)


def _slot(idx: bytes, entries: int, target: int) -> int:
    """``largestLowerBoundSlotFor`` over an offset index file's bytes (base offset 0)."""
    index = OffsetIndex.from_bytes(idx, 0)
    assert len(index) == entries
    return index.largest_lower_bound_slot(target)


def _definition(keys: list[int], target: int) -> int:
    """The largest slot whose key is at most ``target``, -1 when there is none (sorted keys)."""
    below = [i for i, k in enumerate(keys) if k <= target]
    return below[-1] if below else -1


@pytest.mark.parametrize("entries", [0, 1, 2, 3, WARM_ENTRIES - 1, WARM_ENTRIES, WARM_ENTRIES + 1,
                                     WARM_ENTRIES + 2, 3 * WARM_ENTRIES + 7])
def test_lookup_is_the_largest_lower_bound(entries: int):
    rng = random.Random(entries)
    keys = sorted(rng.sample(range(1, 10 * entries + 10), entries))
    idx = b"".join(struct.pack(">ii", k, 4 * k) for k in keys)
    probes = {0, keys[0] - 1 if keys else 5, 10 * entries + 20} | set(keys) | {k + 1 for k in keys[::7]} \
        | {k - 1 for k in keys[::5]} | {rng.randrange(0, 10 * entries + 20) for _ in range(200)}
    for target in sorted(probes):
        assert _slot(idx, entries, target) == _definition(keys, target), (entries, target)


def _keys_index(keys: list[int]) -> bytes:
    return _index_bytes([(k, 0) for k in keys])


def test_lookup_on_entries_out_of_order_takes_kafkas_midpoints():
    """``binarySearch``'s midpoint is ``(lo + hi + 1) >>> 1``: over [0, 10, 5] for 7, Kafka probes slot 1 (10 > 7,
    hi = 0) and answers slot 0; a search probing slot 2 first would answer 2."""
    assert _slot(_keys_index([0, 10, 5]), 3, 7) == 0


def test_lookup_returns_the_first_equal_key_it_probes():
    """A key equal to the target ends the search at once: over [0, 5, 5, 5] for 5 Kafka probes slot 2 and returns
    it; over [5, 5, 5] the first entry is not below the target, so the search runs over slots 0..0 only."""
    assert _slot(_keys_index([0, 5, 5, 5]), 4, 5) == 2
    assert _slot(_keys_index([5, 5, 5]), 3, 5) == 0


def test_lookup_warm_section_starts_1024_entries_before_the_last():
    """``firstHotEntry = max(0, entries - 1 - 8192 / 8)``. 1,024 entries: it is slot 0, below the target, so the
    whole index is searched: keys [0, 100, 2, 3, ..., 1023] for 50 give slot 50 (probes 512, 256, 128, 64, 32, 48,
    56, 52, 50). 1,026 entries: it is slot 1; with slot 0 holding 2000 and slot 1 holding 0, the warm search over
    slots 1..1025 finds 50, where a look at slot 0 (2000 > 50) would answer -1."""
    keys = [0, 100] + list(range(2, 1024))
    assert _slot(_keys_index(keys), 1024, 50) == 50
    keys = [2000, 0] + list(range(2, 1026))
    assert _slot(_keys_index(keys), 1026, 50) == 50


def test_lookups_of_both_indexes_answer_the_floor_entry():
    """``OffsetIndex.lookup`` and ``TimeIndex.lookup`` answer the floor entry's (key, value), and their empty
    floors below the first entry: (baseOffset, 0) and (-1, baseOffset)."""
    offsets = OffsetIndex(100)
    for offset, position in [(110, 4096), (130, 8192), (170, 12288)]:
        offsets.append(offset, position)
    assert [offsets.lookup(t) for t in (99, 110, 129, 130, 1000)] == [
        (100, 0), (110, 4096), (110, 4096), (130, 8192), (170, 12288)]
    times = TimeIndex(100)
    for ts, offset in [(1_000, 105), (2_000, 120)]:
        times.maybe_append(ts, offset)
    assert [times.lookup(t) for t in (999, 1_000, 1_999, 5_000)] == [
        (-1, 100), (1_000, 105), (1_000, 105), (2_000, 120)]
