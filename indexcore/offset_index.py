"""Kafka's ``OffsetIndex``: sparse (relativeOffset int32, position int32) entries, 8 bytes each."""

from __future__ import annotations

import struct

from .abstract_index import DEFAULT_MAX_INDEX_SIZE, relative_offset, round_down
from .errors import CorruptIndexException, IndexFullException, InvalidOffsetException

ENTRY = struct.Struct(">ii")
ENTRY_SIZE = ENTRY.size


class OffsetIndex:
    """An offset index held as the bytes of its file (so a native scan can append to it in place)."""

    def __init__(self, base_offset: int, max_index_size: int = DEFAULT_MAX_INDEX_SIZE) -> None:
        self.base_offset = base_offset
        self.max_index_size = max_index_size
        self.max_entries = max_index_size // ENTRY_SIZE
        self.data = bytearray()

    def __len__(self) -> int:
        return len(self.data) // ENTRY_SIZE

    @property
    def is_full(self) -> bool:
        return len(self) >= self.max_entries

    @property
    def last_offset(self) -> int:
        """The last entry's offset, or the base offset when empty (``OffsetIndex.lastOffset``)."""
        if not self.data:
            return self.base_offset
        return self.base_offset + ENTRY.unpack_from(self.data, len(self.data) - ENTRY_SIZE)[0]

    def append(self, offset: int, position: int) -> None:
        """Append an entry; offsets must strictly grow (``OffsetIndex.append``)."""
        if self.is_full:
            raise IndexFullException(f"Attempt to append to a full index (size = {len(self)})")
        if self.data and offset <= self.last_offset:
            raise InvalidOffsetException(
                f"Attempt to append an offset ({offset}) to position {len(self)} no larger than the "
                f"last offset appended ({self.last_offset})")
        self.data += ENTRY.pack(relative_offset(self.base_offset, offset), position)

    def entry(self, n: int) -> tuple[int, int]:
        rel, pos = ENTRY.unpack_from(self.data, n * ENTRY_SIZE)
        return self.base_offset + rel, pos

    def lookup(self, target_offset: int) -> tuple[int, int]:
        """The floor entry (greatest offset <= target) as (offset, position), else (baseOffset, 0)."""
        lo, hi = 0, len(self)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.entry(mid)[0] <= target_offset:
                lo = mid + 1
            else:
                hi = mid
        return self.entry(lo - 1) if lo else (self.base_offset, 0)

    def entries(self) -> list[tuple[int, int]]:
        return parse_offset_index(self.data, self.base_offset)

    def to_bytes(self, preallocate: bool = False) -> bytes:
        """The file: trimmed to its entries, or zero-filled to the max size as for an active segment."""
        if preallocate:
            return bytes(self.data) + bytes(round_down(self.max_index_size, ENTRY_SIZE) - len(self.data))
        return bytes(self.data)


def parse_offset_index(data: bytes, base_offset: int) -> list[tuple[int, int]]:
    """Decode every whole entry of an ``.index`` file as (absolute offset, position)."""
    usable = round_down(len(data), ENTRY_SIZE)
    return [(base_offset + rel, pos) for rel, pos in ENTRY.iter_unpack(memoryview(data)[:usable])]


def trimmed_entry_count(data: bytes) -> int:
    """Entries of a file that may be zero-padded (preallocated): those before the first all-zero slot.

    No real entry is all zeros: recovery never indexes the batch at position 0.
    """
    usable = round_down(len(data), ENTRY_SIZE)
    count = 0
    for rel, pos in ENTRY.iter_unpack(memoryview(data)[:usable]):
        if rel == 0 and pos == 0:
            break
        count += 1
    return count


def sanity_check(data: bytes, base_offset: int) -> None:
    """Kafka's ``OffsetIndex.sanityCheck`` plus the ordering every valid index has."""
    if len(data) % ENTRY_SIZE != 0:
        raise CorruptIndexException(
            f"Index file has size {len(data)} which is not a multiple of {ENTRY_SIZE}")
    entries = parse_offset_index(data, base_offset)
    if entries and entries[-1][0] < base_offset:
        raise CorruptIndexException(
            f"Corrupt index found, index file has non-zero size but the last offset is {entries[-1][0]} "
            f"which is less than the base offset {base_offset}")
    for (o1, p1), (o2, p2) in zip(entries, entries[1:], strict=False):
        if o2 <= o1 or p2 <= p1:
            raise CorruptIndexException(f"Index entries out of order: ({o1}, {p1}) then ({o2}, {p2})")
