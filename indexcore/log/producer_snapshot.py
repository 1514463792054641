"""Kafka's producer-state snapshot files (``ProducerStateManager.writeSnapshot`` / ``readSnapshot``).

A snapshot ``<offset as 20 digits>.snapshot`` holds the producer table of a partition as it stood at that offset
(the log end offset of the moment it was taken), so a broker's load resumes from there instead of replaying the
log. Format, version 1 (the generated ``ProducerSnapshot`` message, not flexible, version-prefixed):

    version            int16   always 1
    crc                uint32  CRC-32C of every byte after it (the entry count and the entries)
    entries count      int32
    entries, 46 bytes each:
      producerId            int64
      epoch                 int16
      lastSequence          int32   -1 when the producer has no data batch
      lastOffset            int64   -1 likewise (then ``readSnapshot`` keeps no batch metadata)
      offsetDelta           int32   lastOffset - baseOffset of the last batch, 0 when none
      timestamp             int64   the entry's last timestamp (data batch max timestamp or marker timestamp)
      coordinatorEpoch      int32
      currentTxnFirstOffset int64   -1 when no transaction is open

Kafka writes the entries in the iteration order of its producers ``java.util.HashMap<Long, ...>``, so the bytes
depend on that order: ``java_hash_map.hash_map_order`` reproduces it from the order the producer ids were put.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable

from segdex.indexcore.errors import SegdexError
from segdex.indexcore.log.java_hash_map import hash_map_order
from segdex.indexcore.log.layout import PRODUCER_SNAPSHOT_FILE_SUFFIX, segment_file_name
from segdex.indexcore.log.producer_state import BatchMetadata, ProducerStateEntry, ProducerStateManager
from segdex.indexcore.record import crc32c

CURRENT_VERSION = 1

# Header layout (ProducerStateManager's VERSION_OFFSET, CRC_OFFSET, PRODUCER_ENTRIES_OFFSET)
VERSION_OFFSET = 0
VERSION_LENGTH = 2
CRC_OFFSET = VERSION_OFFSET + VERSION_LENGTH
CRC_LENGTH = 4
PRODUCER_ENTRIES_OFFSET = CRC_OFFSET + CRC_LENGTH  # the CRC covers from here: the count, then the entries
COUNT_LENGTH = 4
HEADER_SIZE = PRODUCER_ENTRIES_OFFSET + COUNT_LENGTH

HEADER = struct.Struct(
    ">h"  # version
    "I"  # crc (CRC-32C of bytes[PRODUCER_ENTRIES_OFFSET:])
    "i"  # number of producer entries
)
PRODUCER_ENTRY = struct.Struct(
    ">q"  # producerId
    "h"  # epoch
    "i"  # lastSequence
    "q"  # lastOffset
    "i"  # offsetDelta
    "q"  # timestamp
    "i"  # coordinatorEpoch
    "q"  # currentTxnFirstOffset (-1: none)
)
ENTRY_SIZE = PRODUCER_ENTRY.size  # 46


class CorruptSnapshotException(SegdexError):
    """A snapshot Kafka's ``readSnapshot`` refuses (its load then deletes it and falls back to an older one)."""


def producer_snapshot_file_name(offset: int) -> str:
    """``LogFileUtils.producerSnapshotFile``: the offset padded to 20 digits."""
    return segment_file_name(offset, PRODUCER_SNAPSHOT_FILE_SUFFIX)


def snapshot_offset(name: str) -> int | None:
    """The offset of a snapshot file name, or None for any other name."""
    stem = name[: -len(PRODUCER_SNAPSHOT_FILE_SUFFIX)]
    if not name.endswith(PRODUCER_SNAPSHOT_FILE_SUFFIX) or not stem.isdigit():
        return None
    return int(stem)


# ------------------------------------------------------------------ bytes


def snapshot_bytes(entries: Iterable[ProducerStateEntry]) -> bytes:
    """``writeSnapshot``: the file's bytes for these entries, in the order given."""
    body = bytearray()
    n = 0
    for e in entries:
        body += PRODUCER_ENTRY.pack(
            e.producer_id, e.producer_epoch, e.last_seq, e.last_data_offset, e.last_offset_delta, e.last_timestamp,
            e.coordinator_epoch, -1 if e.current_txn_first_offset is None else e.current_txn_first_offset)
        n += 1
    covered = struct.pack(">i", n) + bytes(body)
    return struct.pack(">hI", CURRENT_VERSION, crc32c.crc32c(covered)) + covered


def read_snapshot(data: bytes, name: str = "snapshot") -> list[ProducerStateEntry]:
    """``readSnapshot``: the entries of a snapshot file, in file order. Raises ``CorruptSnapshotException`` where
    Kafka does: an unknown version, a file that does not parse, a CRC that does not match."""
    if len(data) < HEADER_SIZE:
        raise CorruptSnapshotException(f"{name}: {len(data)} bytes, shorter than the {HEADER_SIZE}-byte header")
    version, crc, count = HEADER.unpack_from(data)
    if version != CURRENT_VERSION:
        raise CorruptSnapshotException(f"{name}: snapshot contained an unknown file version {version}")
    if count < 0 or len(data) < HEADER_SIZE + count * ENTRY_SIZE:
        raise CorruptSnapshotException(f"{name}: snapshot failed schema validation: {count} entries in "
                                       f"{len(data)} bytes")
    computed = crc32c.crc32c(memoryview(data)[PRODUCER_ENTRIES_OFFSET:])
    if computed != crc:
        raise CorruptSnapshotException(f"{name}: snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. "
                                       f"Computed crc: {computed}")
    out = []
    for i in range(count):
        pid, epoch, last_seq, last_offset, delta, ts, coord, txn_first = PRODUCER_ENTRY.unpack_from(
            data, HEADER_SIZE + i * ENTRY_SIZE)
        batch = BatchMetadata(last_seq, last_offset, delta, ts) if last_offset >= 0 else None
        out.append(ProducerStateEntry(pid, epoch, coord, ts, txn_first if txn_first >= 0 else None, batch))
    return out


def manager_snapshot_bytes(manager: ProducerStateManager) -> bytes:
    """The bytes ``ProducerStateManager.writeSnapshot`` writes for this manager's producers (in its HashMap's
    order)."""
    return snapshot_bytes(manager.producers[pid] for pid in hash_map_order(manager.producers))


def remove_stray_snapshots(snapshot_offsets: Iterable[int], segment_base_offsets: Iterable[int]) -> set[int]:
    """``ProducerStateManager.removeStraySnapshots``: the snapshot offsets that stay. Those at a segment's base
    offset stay; of the others (strays) only the latest, and only when no segment starts above it."""
    bases = set(segment_base_offsets)
    kept = {o for o in snapshot_offsets if o in bases}
    strays = sorted(o for o in snapshot_offsets if o not in bases)
    if strays and (not bases or strays[-1] >= max(bases)):
        kept.add(strays[-1])
    return kept


def snapshot_to_load(snapshot_offsets: Iterable[int], log_start_offset: int, upto: int) -> int | None:
    """The snapshot ``ProducerStateManager.truncateAndReload`` loads when the log is rebuilt up to ``upto``: the
    latest one above the log start offset (those at or below it are deleted) and at or below ``upto``; None when
    there is none and the state starts empty at the log start offset."""
    return max((o for o in snapshot_offsets if log_start_offset < o <= upto), default=None)


def load_from_snapshot(partition_dir: str, offset: int, now_ms: int | None,
                       expiration_ms: int) -> ProducerStateManager | None:
    """``ProducerStateManager.loadFromSnapshot`` of the snapshot file at ``offset``: its entries in order, the open
    transactions from their first offsets, producers expired at ``now_ms`` dropped (None: none are). None when
    there is no such snapshot or it does not read (Kafka then deletes it and starts from an earlier one)."""
    try:
        with open(os.path.join(partition_dir, producer_snapshot_file_name(offset)), "rb") as f:
            entries = read_snapshot(f.read())
    except (OSError, SegdexError):
        return None
    state = ProducerStateManager()
    for e in entries:
        state.producers[e.producer_id] = e
    return state.reloaded(now_ms, expiration_ms)  # which registers the open transactions again
