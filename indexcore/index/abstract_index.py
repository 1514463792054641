"""What OffsetIndex and TimeIndex share, as Kafka's ``AbstractIndex`` does."""

from __future__ import annotations

import struct

from segdex.indexcore.errors import IndexOffsetOverflowException

INT32_MAX = 2**31 - 1
# Kafka's default segment.index.bytes.
DEFAULT_MAX_INDEX_SIZE = 10 * 1024 * 1024


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
    """

    ENTRY: struct.Struct

    def __init__(self, base_offset: int, max_index_size: int = DEFAULT_MAX_INDEX_SIZE) -> None:
        self.base_offset = base_offset
        self.max_index_size = max_index_size
        self.max_entries = max_index_size // self.ENTRY.size
        self.data = bytearray()

    def __len__(self) -> int:
        return len(self.data) // self.ENTRY.size

    def entry(self, n: int) -> tuple[int, int]:
        raise NotImplementedError

    @property
    def empty_floor(self) -> tuple[int, int]:
        raise NotImplementedError

    def lookup(self, target: int) -> tuple[int, int]:
        """The floor entry: the last one whose key is <= target (``AbstractIndex.largestLowerBoundSlotFor``)."""
        lo, hi = 0, len(self)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.entry(mid)[0] <= target:
                lo = mid + 1
            else:
                hi = mid
        return self.entry(lo - 1) if lo else self.empty_floor

    def entries(self) -> list[tuple[int, int]]:
        return [self.entry(n) for n in range(len(self))]

    def to_bytes(self, preallocate: bool = False) -> bytes:
        """The file: trimmed to its entries, or zero-filled to the max size as for an active segment."""
        if preallocate:
            return bytes(self.data) + bytes(round_down(self.max_index_size, self.ENTRY.size) - len(self.data))
        return bytes(self.data)
