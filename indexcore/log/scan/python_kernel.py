"""The reference scan kernel in Python: what ``_fastscan.c`` does natively, used when the extension is absent and
as the oracle it is tested against. Same state in, same state and index bytes out (``state.py``)."""

from __future__ import annotations

from array import array

from segdex.indexcore.index.abstract_index import INT32_MAX
from segdex.indexcore.index.offset_index import ENTRY as OFFSET_ENTRY
from segdex.indexcore.index.offset_index import ENTRY_SIZE as OFFSET_INDEX_ENTRY_SIZE
from segdex.indexcore.index.time_index import ENTRY as TIME_ENTRY
from segdex.indexcore.index.time_index import ENTRY_SIZE as TIME_INDEX_ENTRY_SIZE
from segdex.indexcore.log.scan.state import (
    S_BASE_OFFSET,
    S_BATCHES,
    S_CODECS,
    S_END,
    S_FIRST_OFFSET,
    S_INDEX_INTERVAL,
    S_LAST_INDEX_ENTRY,
    S_LAST_OFFSET,
    S_LEADER_EPOCH,
    S_MAGICS,
    S_MAX_TIMESTAMP,
    S_OFFSET_OF_MAX_TIMESTAMP,
    S_POSITION,
    S_RECORDS,
    S_RUN_BASE_OFFSET,
    S_RUN_BASE_SEQUENCE,
    S_RUN_LAST_OFFSET,
    S_RUN_MAX_TIMESTAMP,
    S_RUN_PRODUCER_EPOCH,
    S_RUN_PRODUCER_ID,
)
from segdex.indexcore.record import crc32c
from segdex.indexcore.record.batch_header import (
    ATTRIBUTES_OFFSET,
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    HEADER_SIZE_UP_TO_MAGIC,
    LOG_OVERHEAD,
    NO_TIMESTAMP,
    RECORD_BATCH_OVERHEAD,
    RECORD_BATCH_V2,
    TRANSACTIONAL_FLAG_MASK,
)

_SPECIAL = TRANSACTIONAL_FLAG_MASK | CONTROL_FLAG_MASK


def _plain_batch(state: array, buf, mv: memoryview, position: int, end: int, crc32c) -> tuple | None:
    """The header of the valid, plain magic-2 batch at ``position`` with the accepted leader epoch and an offset
    in the segment's relative range, and no producer id or the run's, as (size, base offset, last offset, max
    timestamp, records, attributes, producer id, producer epoch, base sequence); None for any other batch (the
    reference loop handles it, or a new run starts there)."""
    if position + RECORD_BATCH_OVERHEAD > end:
        return None
    (base_offset, length, leader_epoch, magic, crc, attributes, last_delta, _bts, max_ts, pid, epoch, base_seq,
     count) = RECORD_BATCH_V2.unpack_from(buf, position)
    size = length + LOG_OVERHEAD
    if (magic != 2 or size < RECORD_BATCH_OVERHEAD or position > end - size
            or leader_epoch != state[S_LEADER_EPOCH] or attributes & _SPECIAL):
        return None
    if pid > -1 and state[S_RUN_PRODUCER_ID] > -1 and pid != state[S_RUN_PRODUCER_ID]:
        return None
    last_offset = base_offset + last_delta
    if not 0 <= last_offset - state[S_BASE_OFFSET] <= INT32_MAX:
        return None
    if crc32c.crc32c(mv[position + ATTRIBUTES_OFFSET:position + size]) != crc:
        return None
    return size, base_offset, last_offset, max_ts, count, attributes, pid, epoch, base_seq


def _append_entries(state: array, position: int, last_offset: int, max_so_far: int, off_of_max: int,
                    offset_data: bytearray, offset_max: int, time_data: bytearray, time_max: int) -> bool:
    """Append the index entries due at this batch (``LogSegment.recover``'s interval rule); False, with nothing
    appended, when an append would fail (index full, offsets not increasing): the reference loop raises then."""
    base = state[S_BASE_OFFSET]
    n = len(offset_data) // OFFSET_INDEX_ENTRY_SIZE
    if n >= offset_max:
        return False
    if n and last_offset - base <= OFFSET_ENTRY.unpack_from(offset_data, len(offset_data) - OFFSET_INDEX_ENTRY_SIZE)[0]:
        return False
    t = len(time_data) // TIME_INDEX_ENTRY_SIZE
    last_ts, last_rel = (TIME_ENTRY.unpack_from(time_data, len(time_data) - TIME_INDEX_ENTRY_SIZE) if t
                         else (NO_TIMESTAMP, 0))
    # TimeIndex.maybeAppend checks fullness and offset order on every call, whether it appends or not.
    if t >= time_max - 1 or (t and off_of_max - base < last_rel):
        return False
    if max_so_far > last_ts:
        time_data += TIME_ENTRY.pack(max_so_far, off_of_max - base)
    offset_data += OFFSET_ENTRY.pack(last_offset - base, position)
    state[S_LAST_INDEX_ENTRY] = position
    return True


def scan_simple(state: array, buf, offset_data: bytearray, offset_max: int, time_data: bytearray,
                time_max: int) -> None:
    """Advance over valid, plain magic-2 batches of the accepted leader epoch and of no producer or a single one
    (the run's); stop before any other. The run's last producer batch is left in the S_RUN_* slots."""
    position, end, interval = state[S_POSITION], state[S_END], state[S_INDEX_INTERVAL]
    mv = memoryview(buf)
    while position < end - HEADER_SIZE_UP_TO_MAGIC:
        batch = _plain_batch(state, buf, mv, position, end, crc32c)
        if batch is None:
            break
        size, base_offset, last_offset, max_ts, count, attributes, pid, epoch, base_seq = batch
        max_so_far, off_of_max = state[S_MAX_TIMESTAMP], state[S_OFFSET_OF_MAX_TIMESTAMP]
        if max_ts > max_so_far:
            max_so_far, off_of_max = max_ts, last_offset
        if position - state[S_LAST_INDEX_ENTRY] > interval and not _append_entries(
                state, position, last_offset, max_so_far, off_of_max, offset_data, offset_max, time_data, time_max):
            break
        state[S_MAX_TIMESTAMP] = max_so_far
        state[S_OFFSET_OF_MAX_TIMESTAMP] = off_of_max
        if state[S_FIRST_OFFSET] < 0:
            state[S_FIRST_OFFSET] = base_offset
        state[S_LAST_OFFSET] = last_offset
        state[S_BATCHES] += 1
        state[S_RECORDS] += count
        state[S_CODECS] |= 1 << (attributes & COMPRESSION_CODEC_MASK)
        state[S_MAGICS] |= 1 << 2
        if pid > -1:  # an idempotent producer's batch: the run keeps its last one for producer state
            state[S_RUN_PRODUCER_ID] = pid
            state[S_RUN_PRODUCER_EPOCH] = epoch
            state[S_RUN_BASE_SEQUENCE] = base_seq
            state[S_RUN_BASE_OFFSET] = base_offset
            state[S_RUN_LAST_OFFSET] = last_offset
            state[S_RUN_MAX_TIMESTAMP] = max_ts
        position += size
        state[S_POSITION] = position
