"""The iteration order of a ``java.util.HashMap`` (or ``HashSet``), which fixes the order of what Kafka writes or
prints by iterating one: the entries of a producer snapshot (``ProducerStateManager.writeSnapshot`` iterates its
``HashMap<Long, ...>``), a transaction's partitions as ``kafka-transactions describe`` prints them
(``HashSet<TopicPartition>``). Java 17's ``HashMap``, the JVM Kafka runs on here. And the order of Kafka's own
``TimelineHashMap`` (``timeline_hash_order``): the members of a consumer-protocol group as ``ConsumerGroupDescribe``
lists them."""

from __future__ import annotations

import struct
from collections.abc import Callable, Hashable, Iterable
from typing import TypeVar

K = TypeVar("K", bound=Hashable)

_DEFAULT_INITIAL_CAPACITY = 16
_LOAD_FACTOR = 0.75
_TREEIFY_THRESHOLD = 8
_MIN_TREEIFY_CAPACITY = 64


def _spread(h: int) -> int:
    """``HashMap.hash``: a 32-bit ``hashCode`` (unsigned) spread as ``h ^ (h >>> 16)``."""
    h &= 0xFFFF_FFFF
    return h ^ (h >> 16)


def java_long_hash(value: int) -> int:
    """``HashMap.hash(Long.valueOf(value))``: ``Long.hashCode`` (high word xor low word), spread, as an unsigned
    32-bit number."""
    v = value & 0xFFFF_FFFF_FFFF_FFFF
    return _spread(v ^ (v >> 32))


def java_string_hash(text: str) -> int:
    """``String.hashCode``: ``s[0]*31^(n-1) + ... + s[n-1]`` over its UTF-16 code units, as an unsigned 32-bit
    number."""
    data = text.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFF_FFFF
    return h


def topic_partition_hash(topic_partition: tuple[str, int]) -> int:
    """``HashMap.hash(new TopicPartition(topic, partition))``: ``TopicPartition.hashCode`` is
    ``31 * (31 + partition) + topic.hashCode()``, spread."""
    topic, partition = topic_partition
    return _spread(31 * (31 + partition) + java_string_hash(topic))


def copied_capacity(size: int) -> int:
    """The table size of ``new HashSet<>(collection)`` of ``size`` elements: ``new HashMap<>(Math.max((int)
    (size / .75f) + 1, 16))``, its capacity the next power of two (``tableSizeFor``)."""
    wanted = max(int(struct.unpack("f", struct.pack("f", size / 0.75))[0]) + 1, _DEFAULT_INITIAL_CAPACITY)
    return 1 << (wanted - 1).bit_length()


def hash_map_order(keys_in_put_order: Iterable[K], hasher: Callable[[K], int] = java_long_hash,
                   capacity: int = _DEFAULT_INITIAL_CAPACITY) -> list[K]:
    """The order a ``java.util.HashMap`` (``HashSet``) that received these keys (first puts only, no removals,
    as in a ``ProducerStateManager`` between loads) iterates them, ``hasher`` giving ``HashMap.hash`` of a key
    (default: a ``Long``'s): by bucket ``hash & (capacity - 1)``, and within a bucket by put order. The capacity
    starts at ``capacity`` (16; a copy's: ``copied_capacity``) and doubles when the size passes 0.75 of it, or when a
    bucket gets its 9th key while the capacity is below 64 (``treeifyBin``). Resizes keep the relative order of
    a bucket's keys, so put order decides within a bucket at any capacity. A bucket of more than 8 keys at
    capacity 64 or more becomes a red-black tree whose iteration order is not modelled (put order is kept):
    it needs that many producer ids hashing alike in one partition.
    """
    keys = list(keys_in_put_order)
    hashes = [hasher(k) for k in keys]
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


# ``org.apache.kafka.timeline.BaseHashTable`` (under ``TimelineHashMap``, the group coordinator's maps of a
# consumer-protocol group's members): open slots, a slot holding its keys in put order, Fibonacci hashing
_TIMELINE_MIN_CAPACITY = 2
_FIBONACCI = -7046029254386353131


def timeline_capacity(size: int, initial: int = _TIMELINE_MIN_CAPACITY) -> int:
    """The slot count of a ``BaseHashTable`` of ``initial`` slots (new: ``new TimelineHashMap<>(registry, 0)``'s 2)
    after a put made while it held ``size`` keys: ``baseAddOrReplace`` doubles it before any put, a replacing one
    too, while ``(size + 1) * 0.75 > slots``; a removal never shrinks it. So a table's slots are those of the put
    made while it held the most keys, whatever it holds now; a history of puts and removals is followed put by put
    (``slots = timeline_capacity(len(keys), slots)`` before each)."""
    capacity = initial
    while (size + 1) * _LOAD_FACTOR > capacity:
        capacity *= 2
    return capacity


def timeline_slot(hash_code: int, capacity: int) -> int:
    """``BaseHashTable.findSlot``: the 32-bit ``hashCode`` (taken as a signed int) times the 64-bit Fibonacci
    constant, its top ``log2(capacity)`` bits (``>>> (65 - (32 - numberOfLeadingZeros(capacity)))``)."""
    h = hash_code & 0xFFFF_FFFF
    signed = h - (1 << 32) if h & 0x8000_0000 else h
    shift = 65 - capacity.bit_length()
    return ((signed * _FIBONACCI) & 0xFFFF_FFFF_FFFF_FFFF) >> shift


def timeline_hash_order(keys_in_put_order: Iterable[K], hasher: Callable[[K], int], capacity: int) -> list[K]:
    """The order a ``TimelineHashMap`` of ``capacity`` slots (``timeline_capacity`` over its whole history) iterates
    the keys it holds, given in the order of the puts that added them: a key's first put, or its first since its
    last removal (a Python ``dict`` that took the same puts and removals keeps them so). ``hasher`` gives a key's
    ``hashCode`` (not spread). By slot, within a slot the last added first: a slot appends a new key, a removal
    and a rehash keep the others' order, a replacing put keeps the key's place (a key removed and put again
    goes to its slot's end); the iterators, ``CurrentIterator`` and ``HistoricalIterator``, unpack a slot and
    take from its end. Read at the latest epoch, or at a snapshot with nothing put or removed since."""
    keys = list(keys_in_put_order)
    order = sorted(range(len(keys)), key=lambda i: (timeline_slot(hasher(keys[i]), capacity), -i))
    return [keys[i] for i in order]
