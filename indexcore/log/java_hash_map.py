"""The iteration order of a ``java.util.HashMap<Long, V>``, which fixes the entry order of Kafka files written
by iterating one (``ProducerStateManager.writeSnapshot`` iterates its ``producers`` map)."""

from __future__ import annotations

from collections.abc import Iterable

_DEFAULT_INITIAL_CAPACITY = 16
_LOAD_FACTOR = 0.75
_TREEIFY_THRESHOLD = 8
_MIN_TREEIFY_CAPACITY = 64


def java_long_hash(value: int) -> int:
    """``HashMap.hash(Long.valueOf(value))``: ``Long.hashCode`` (high word xor low word), then spread
    (``h ^ (h >>> 16)``), as an unsigned 32-bit number."""
    v = value & 0xFFFF_FFFF_FFFF_FFFF
    h = (v ^ (v >> 32)) & 0xFFFF_FFFF
    return h ^ (h >> 16)


def hash_map_order(keys_in_put_order: Iterable[int]) -> list[int]:
    """The order a ``java.util.HashMap<Long, V>`` that received these keys (first puts only, no removals, as
    in a ``ProducerStateManager`` between loads) iterates them: by bucket ``hash & (capacity - 1)``, and within
    a bucket by put order. The capacity starts at 16 and doubles when the size passes 0.75 of it, or when a
    bucket gets its 9th key while the capacity is below 64 (``treeifyBin``). Resizes keep the relative order of
    a bucket's keys, so put order decides within a bucket at any capacity. A bucket of more than 8 keys at
    capacity 64 or more becomes a red-black tree whose iteration order is not modelled (put order is kept):
    it needs that many producer ids hashing alike in one partition.
    """
    keys = list(keys_in_put_order)
    capacity = _DEFAULT_INITIAL_CAPACITY
    hashes = [java_long_hash(k) for k in keys]
    buckets: dict[int, int] = {}
    for size, h in enumerate(hashes, start=1):
        b = h & (capacity - 1)
        n = buckets.get(b, 0)
        if n >= _TREEIFY_THRESHOLD and capacity < _MIN_TREEIFY_CAPACITY:
            capacity *= 2  # treeifyBin resizes a small table instead of making a tree
            buckets = _count(hashes[: size - 1], capacity)
            b = h & (capacity - 1)
        buckets[b] = buckets.get(b, 0) + 1
        if size > capacity * _LOAD_FACTOR:
            capacity *= 2
            buckets = _count(hashes[:size], capacity)
    order = sorted(range(len(keys)), key=lambda i: (hashes[i] & (capacity - 1), i))
    return [keys[i] for i in order]


def _count(hashes: list[int], capacity: int) -> dict[int, int]:
    out: dict[int, int] = {}
    for h in hashes:
        b = h & (capacity - 1)
        out[b] = out.get(b, 0) + 1
    return out
