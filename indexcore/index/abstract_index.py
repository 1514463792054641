"""What OffsetIndex and TimeIndex share, as Kafka's ``AbstractIndex`` does."""

from __future__ import annotations

import struct

from segdex.indexcore.errors import IndexOffsetOverflowException

INT32_MAX = 2**31 - 1
# Kafka's default segment.index.bytes.
DEFAULT_MAX_INDEX_SIZE = 10 * 1024 * 1024
# AbstractIndex.warmEntries: lookups search the entries of the last 8 KiB first (the pages an appender's readers
# keep in memory), then the rest.
WARM_INDEX_BYTES = 8192


def relative_offset(base_offset: int, offset: int) -> int:
    """``offset - baseOffset``; it must fit a non-negative int32 (``AbstractIndex.relativeOffset``)."""
    relative = offset - base_offset
    if relative < 0 or relative > INT32_MAX:
        raise IndexOffsetOverflowException(
            f"Integer overflow for offset: {offset} (base offset {base_offset}): relative offset {relative} "
            f"does not fit in an int32")
    return relative


def round_down(number: int, factor: int) -> int:
    return factor * (number // factor)


def zero_padded_entry_count(data: bytes, entry: struct.Struct) -> int:
    """Entries of a possibly preallocated index file: those before the first all-zero slot.

    No real entry is all zeros: recovery never indexes the batch at position 0, and a time entry's
    timestamp is never 0 together with relative offset 0 in a file that has later entries.
    """
    usable = round_down(len(data), entry.size)
    zero = bytes(entry.size)
    for n, start in enumerate(range(0, usable, entry.size)):
        if data[start:start + entry.size] == zero:
            return n
    return usable // entry.size


class AbstractIndex:
    """An index held as the bytes of its file, so that the native scan can append to it in place.

    Subclasses set ``ENTRY`` (the entry layout) and define ``entry(n)`` as a tuple whose first item is the
    lookup key (offset or timestamp) and ``empty_floor`` as the answer of a lookup below every entry.
    The entry count is the byte length over the entry size, as Kafka counts a mapped index file: zero-filled
    (preallocated) slots read from disk are entries too.
    """

    ENTRY: struct.Struct

    def __init__(self, base_offset: int, max_index_size: int = DEFAULT_MAX_INDEX_SIZE) -> None:
        self.base_offset = base_offset
        self.max_index_size = max_index_size
        self.max_entries = max_index_size // self.ENTRY.size
        self.data = bytearray()

    @classmethod
    def from_bytes(cls, data: bytes, base_offset: int, max_index_size: int = DEFAULT_MAX_INDEX_SIZE):
        """The index as a broker opens its file: every whole slot is an entry, sorted or not."""
        index = cls(base_offset, max_index_size)
        index.data = bytearray(data[:round_down(len(data), cls.ENTRY.size)])
        return index

    def __len__(self) -> int:
        return len(self.data) // self.ENTRY.size

    def entry(self, n: int) -> tuple[int, int]:
        raise NotImplementedError

    @property
    def empty_floor(self) -> tuple[int, int]:
        raise NotImplementedError

    def largest_lower_bound_slot(self, target: int) -> int:
        """``AbstractIndex.largestLowerBoundSlotFor`` (a key search): the slot of the largest key <= ``target``,
        -1 below the first entry. Kafka's search, probe for probe, so that entries read from a damaged file (out of
        order, repeated) give Kafka's answer: the warm section first (``indexSlotRangeFor``), then ``binarySearch``
        with midpoint ``(lo + hi + 1) >>> 1``, ending at the first key equal to the target it probes."""
        entries = len(self)
        if entries == 0:
            return -1

        def search(lo: int, hi: int) -> int:
            while lo < hi:
                mid = (lo + hi + 1) >> 1
                found = self.entry(mid)[0]
                if found > target:
                    hi = mid - 1
                elif found < target:
                    lo = mid
                else:
                    return mid
            return lo

        first_hot = max(0, entries - 1 - WARM_INDEX_BYTES // self.ENTRY.size)
        if self.entry(first_hot)[0] < target:
            return search(first_hot, entries - 1)
        if self.entry(0)[0] > target:
            return -1
        return search(0, first_hot)

    def lookup(self, target: int) -> tuple[int, int]:
        """The floor entry of ``target`` (``OffsetIndex.lookup``, ``TimeIndex.lookup``): the entry at
        ``largest_lower_bound_slot``, or ``empty_floor`` below every entry."""
        slot = self.largest_lower_bound_slot(target)
        return self.entry(slot) if slot >= 0 else self.empty_floor

    def entries(self) -> list[tuple[int, int]]:
        return [self.entry(n) for n in range(len(self))]

    def to_bytes(self, preallocate: bool = False) -> bytes:
        """The file: trimmed to its entries, or zero-filled to the max size as for an active segment."""
        if preallocate:
            return bytes(self.data) + bytes(round_down(self.max_index_size, self.ENTRY.size) - len(self.data))
        return bytes(self.data)
