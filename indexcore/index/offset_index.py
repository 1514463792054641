"""Kafka's ``OffsetIndex``: sparse (relativeOffset int32, position int32) entries, 8 bytes each."""

from __future__ import annotations

import struct

from segdex.indexcore.errors import CorruptIndexException, IndexFullException, InvalidOffsetException
from segdex.indexcore.index.abstract_index import AbstractIndex, relative_offset, round_down, zero_padded_entry_count

# One entry; the file is these entries back to back, in offset order. The scan kernels write them too (the size
# reaches C through log/scan/_layout.h).
ENTRY = struct.Struct(
    ">"
    "i"  # relativeOffset: offset - baseOffset, a non-negative int32
    "i"  # position: the byte position in the .log of the batch holding that offset
)
ENTRY_SIZE = ENTRY.size  # 8


class OffsetIndex(AbstractIndex):
    """An offset index: entries (absolute offset, position), offsets strictly growing."""

    ENTRY = ENTRY

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
            raise IndexFullException(f"Attempt to append to a full index (size = {len(self)}).")
        if self.data and offset <= self.last_offset:
            raise InvalidOffsetException(
                f"Attempt to append an offset ({offset}) to position {len(self)} no larger than the "
                f"last offset appended ({self.last_offset})")
        self.data += ENTRY.pack(relative_offset(self.base_offset, offset), position)

    def entry(self, n: int) -> tuple[int, int]:
        rel, pos = ENTRY.unpack_from(self.data, n * ENTRY_SIZE)
        return self.base_offset + rel, pos

    @property
    def empty_floor(self) -> tuple[int, int]:
        """``OffsetIndex.lookup`` below every entry: (baseOffset, 0)."""
        return self.base_offset, 0


def parse_offset_index(data: bytes, base_offset: int) -> list[tuple[int, int]]:
    """Decode every whole entry of an ``.index`` file as (absolute offset, position)."""
    usable = round_down(len(data), ENTRY_SIZE)
    return [(base_offset + rel, pos) for rel, pos in ENTRY.iter_unpack(memoryview(data)[:usable])]


def trimmed_entry_count(data: bytes) -> int:
    """Entries of a possibly preallocated (zero-padded) file."""
    return zero_padded_entry_count(data, ENTRY)


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
