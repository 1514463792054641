"""Kafka's ``TimeIndex``: (timestamp int64, relativeOffset int32) entries, 12 bytes each."""

from __future__ import annotations

import struct

from segdex.indexcore.errors import CorruptIndexException, IndexFullException, InvalidOffsetException
from segdex.indexcore.index.abstract_index import AbstractIndex, relative_offset, round_down, zero_padded_entry_count
from segdex.indexcore.record.record_batch import NO_TIMESTAMP

# One entry; the file is these entries back to back, timestamps strictly growing. The scan kernels write them too
# (the size reaches C through log/scan/_layout.h).
ENTRY = struct.Struct(
    ">"
    "q"  # timestamp: the largest timestamp seen so far in the segment
    "i"  # relativeOffset: offset - baseOffset of the record holding that timestamp
)
ENTRY_SIZE = ENTRY.size  # 12


class TimeIndex(AbstractIndex):
    """A time index: entries (timestamp, absolute offset); timestamps strictly grow, offsets never go back."""

    ENTRY = ENTRY

    @property
    def is_full(self) -> bool:
        # TimeIndex keeps its last slot for the entry written when the segment rolls.
        return len(self) >= self.max_entries - 1

    def entry(self, n: int) -> tuple[int, int]:
        ts, rel = ENTRY.unpack_from(self.data, n * ENTRY_SIZE)
        return ts, self.base_offset + rel

    def last_entry(self) -> tuple[int, int]:
        """The last entry, or (-1, baseOffset) when empty (``TimeIndex.lastEntry``)."""
        if not self.data:
            return NO_TIMESTAMP, self.base_offset
        return self.entry(len(self) - 1)

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        """``TimeIndex.maybeAppend``: append only a strictly greater timestamp."""
        if not skip_full_check and self.is_full:
            raise IndexFullException(f"Attempt to append to a full time index (size = {len(self)}).")
        last_ts, last_offset = self.last_entry()
        if self.data and offset < last_offset:
            raise InvalidOffsetException(
                f"Attempt to append an offset ({offset}) to slot {len(self)} no larger than the last offset "
                f"appended ({last_offset})")
        if self.data and timestamp < last_ts:
            raise InvalidOffsetException(
                f"Attempt to append a timestamp ({timestamp}) to slot {len(self)} no larger than the last "
                f"timestamp appended ({last_ts})")
        if timestamp > last_ts:
            self.data += ENTRY.pack(timestamp, relative_offset(self.base_offset, offset))

    @property
    def empty_floor(self) -> tuple[int, int]:
        """``TimeIndex.lookup`` below every entry: (-1, baseOffset)."""
        return NO_TIMESTAMP, self.base_offset


def parse_time_index(data: bytes, base_offset: int) -> list[tuple[int, int]]:
    """Decode every whole entry of a ``.timeindex`` file as (timestamp, absolute offset)."""
    usable = round_down(len(data), ENTRY_SIZE)
    return [(ts, base_offset + rel) for ts, rel in ENTRY.iter_unpack(memoryview(data)[:usable])]


def trimmed_entry_count(data: bytes, first_may_be_zero: bool = False) -> int:
    """Entries of a possibly preallocated (zero-padded) file. ``first_may_be_zero``: an all-zero first slot is
    the entry (timestamp 0, relative offset 0), which Kafka writes for a segment whose first batch is one offset
    with largest timestamp 0 (``maybeAppend`` takes any timestamp above the empty index's -1)."""
    if first_may_be_zero and len(data) >= ENTRY_SIZE and not any(data[:ENTRY_SIZE]):
        return 1 + zero_padded_entry_count(data[ENTRY_SIZE:], ENTRY)
    return zero_padded_entry_count(data, ENTRY)


def sanity_check(data: bytes, base_offset: int) -> None:
    """Kafka's ``TimeIndex.sanityCheck`` plus strict growth of timestamps."""
    if len(data) % ENTRY_SIZE != 0:
        raise CorruptIndexException(
            f"Time index file has size {len(data)} which is not a multiple of {ENTRY_SIZE}")
    entries = parse_time_index(data, base_offset)
    if entries and entries[-1][1] < base_offset:
        raise CorruptIndexException(
            f"Corrupt time index found, its last offset {entries[-1][1]} is below the base offset {base_offset}")
    for (t1, o1), (t2, o2) in zip(entries, entries[1:], strict=False):
        if t2 <= t1 or o2 < o1:
            raise CorruptIndexException(f"Time index entries out of order: ({t1}, {o1}) then ({t2}, {o2})")
