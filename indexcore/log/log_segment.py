"""Kafka's ``LogSegment``: one segment on disk, ``<base offset>.log`` with its ``.index``, ``.timeindex`` and
``.txnindex`` beside it (named by ``layout``), read-only.

``LogSegment`` owns what Kafka's class owns and segdex needs: ``recover`` (rebuild the indexes from the ``.log``
bytes), ``read_next_offset`` and ``largest_timestamp`` (what a broker reads of a segment it does not recover).

``recover``'s loop keeps its state in the scan package's flat int64 array (``indexcore.scan.state``) so that a scan
kernel (``indexcore.scan``: native when built, else its Python twin) can run the common case: a run of valid,
non-transactional magic-2 batches of one leader epoch. Every other batch (legacy formats, transactions,
control batches, a new leader epoch, anything that fails a check) goes through ``_recover_batch``, the
reference logic, one batch at a time.
"""

from __future__ import annotations

import os
import struct
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from segdex.indexcore.errors import (
    BufferBoundsException,
    CorruptRecordException,
    IndexOffsetOverflowException,
    InvalidRecordException,
    OffsetReadException,
    SegdexError,
    UnknownCompressionTypeException,
)
from segdex.indexcore.fs.file_access import open_regular
from segdex.indexcore.index import offset_index, time_index
from segdex.indexcore.index.abstract_index import DEFAULT_MAX_INDEX_SIZE, INT32_MAX
from segdex.indexcore.index.offset_index import OffsetIndex
from segdex.indexcore.index.time_index import TimeIndex
from segdex.indexcore.index.transaction_index import TransactionIndex
from segdex.indexcore.log import scan
from segdex.indexcore.log.layout import INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX, index_paths
from segdex.indexcore.log.producer_state import ProducerStateManager
from segdex.indexcore.log.scan.state import (
    N_SLOTS,
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
from segdex.indexcore.record.compression import for_id
from segdex.indexcore.record.file_records import batches, load_batch_header, open_log
from segdex.indexcore.record.record_batch import (
    NO_TIMESTAMP,
    CompressionType,
    RecordBatch,
    compression_name,
    ensure_valid,
)
from segdex.indexcore.record.records import legacy_records, records

DEFAULT_INDEX_INTERVAL_BYTES = 4096
LONG_MAX = 2**63 - 1
# A magic byte above 2 (a bit flip: the v2 CRC does not cover it) is read as a v2 batch by Kafka
# (FileLogInputStream.nextBatch: anything not below MAGIC_VALUE_V2); ``magics`` reports such batches as 3.
MAGIC_ABOVE_V2 = 3
# Where LogSegment.largestTimestamp's answer came from: the time index's last entry, or the .log's mtime.
TIMESTAMP_FROM_TIME_INDEX = "time_index"
TIMESTAMP_FROM_MTIME = "mtime"

@dataclass
class RecoveryResult:
    """What recovery of one segment found and built."""

    base_offset: int
    size_bytes: int
    valid_bytes: int
    offset_index: OffsetIndex
    time_index: TimeIndex
    txn_index: TransactionIndex
    batch_count: int = 0
    record_count: int = 0
    first_offset: int = -1
    last_offset: int = -1
    max_timestamp: int = NO_TIMESTAMP
    offset_of_max_timestamp: int = -1
    magics: list[int] = field(default_factory=list)
    codecs: list[str] = field(default_factory=list)
    leader_epochs: list[tuple[int, int]] = field(default_factory=list)
    stop_reason: str | None = None  # why iteration stopped before the end of the file (corrupt tail)
    error: str | None = None  # a failure Kafka would not recover from by truncation

    @property
    def truncated_bytes(self) -> int:
        """What ``LogSegment.recover`` returns: bytes past the last valid batch."""
        return self.size_bytes - self.valid_bytes

    @property
    def next_offset(self) -> int:
        """The segment's log end offset: last valid offset + 1, or the base offset when empty."""
        return self.last_offset + 1 if self.last_offset >= 0 else self.base_offset

    @property
    def legacy(self) -> bool:
        """It holds messages of the formats before 0.11, whose compressed wrappers a recovery never opens."""
        return any(m < 2 for m in self.magics)

    @property
    def intact(self) -> bool:
        """Every batch of the segment valid to its end: nothing to cut, no failure."""
        return self.error is None and self.valid_bytes == self.size_bytes


def _bit_list(mask: int) -> list[int]:
    return [i for i in range(mask.bit_length()) if mask >> i & 1]


def _recover_batch(state: array, buf, batch: RecordBatch, offset_index: OffsetIndex, time_index: TimeIndex,
                   txn_index: TransactionIndex, producer_state: ProducerStateManager,
                   leader_epochs: list[tuple[int, int]]) -> None:
    """One iteration of ``LogSegment.recover``'s loop body, for any batch."""
    ensure_valid(buf, batch)
    base = state[S_BASE_OFFSET]
    if not 0 <= batch.last_offset - base <= INT32_MAX:
        raise IndexOffsetOverflowException(
            f"offset {batch.last_offset} at position {batch.position} does not fit the segment's relative offset "
            f"range (base offset {base}); Kafka would split this segment on load")
    if batch.max_timestamp > state[S_MAX_TIMESTAMP]:
        state[S_MAX_TIMESTAMP] = batch.max_timestamp
        state[S_OFFSET_OF_MAX_TIMESTAMP] = batch.last_offset
    valid_bytes = state[S_POSITION]
    if valid_bytes - state[S_LAST_INDEX_ENTRY] > state[S_INDEX_INTERVAL]:
        offset_index.append(batch.last_offset, valid_bytes)
        time_index.maybe_append(state[S_MAX_TIMESTAMP], state[S_OFFSET_OF_MAX_TIMESTAMP])
        state[S_LAST_INDEX_ENTRY] = valid_bytes
    if batch.magic >= 2:
        count = batch.records_count
        epoch = batch.partition_leader_epoch
        if epoch >= 0 and (not leader_epochs or epoch > leader_epochs[-1][0]):
            leader_epochs.append((epoch, batch.base_offset))
        try:
            aborted = producer_state.update(buf, batch)
        except (CorruptRecordException, InvalidRecordException):
            # Kafka has already counted this batch (validBytes, index entries, leader epoch) when
            # updateProducerState throws: recovery truncates after it, not before.
            _account(state, batch, batch.base_offset, count, valid_bytes)
            raise
        if aborted is not None:
            txn_index.append(aborted)
    elif batch.compression_type == 0:
        count = 1
    else:
        # Kafka's recovery never opens a legacy wrapper (ensureValid checks the outer CRC only): inner messages
        # are read for the record count and first offset, and a wrapper that cannot be read is still kept.
        try:
            inner = list(records(buf, batch))
        except SegdexError:
            inner = []
        count = len(inner)
    first = batch.base_offset if batch.magic >= 2 or batch.compression_type == 0 else (
        inner[0].offset if count else batch.last_offset)
    _account(state, batch, first, count, valid_bytes)


def _account(state: array, batch: RecordBatch, first: int, count: int, valid_bytes: int) -> None:
    """Count a batch recovery keeps: offsets, totals, and the position after it (Kafka's validBytes)."""
    if state[S_FIRST_OFFSET] < 0:
        state[S_FIRST_OFFSET] = first
    state[S_LAST_OFFSET] = batch.last_offset
    state[S_BATCHES] += 1
    state[S_RECORDS] += count
    state[S_CODECS] |= 1 << batch.compression_type
    state[S_MAGICS] |= 1 << min(batch.magic, MAGIC_ABOVE_V2)
    state[S_POSITION] = valid_bytes + batch.size_in_bytes


def _fold_run(state: array, producer_state: ProducerStateManager) -> None:
    """Apply the last batch of a kernel run of one idempotent producer to producer state. Within a run only the
    last batch shows in the entry (``ProducerStateEntry.addBatch``: epoch, last batch and timestamp are the
    latest batch's; no transaction can be open, as the kernel runs only when none is)."""
    producer_state.append_data_batch(state[S_RUN_PRODUCER_ID], state[S_RUN_PRODUCER_EPOCH],
                                     state[S_RUN_BASE_SEQUENCE], state[S_RUN_BASE_OFFSET], state[S_RUN_LAST_OFFSET],
                                     state[S_RUN_MAX_TIMESTAMP], False)
    state[S_RUN_PRODUCER_ID] = -1


def recover(buf, base_offset: int, index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
            producer_state: ProducerStateManager | None = None, max_index_size: int = DEFAULT_MAX_INDEX_SIZE,
            leader_epochs: list[tuple[int, int]] | None = None, native: bool | None = None) -> RecoveryResult:
    """Rebuild the indexes of one segment whose ``.log`` bytes are ``buf`` (never modified).

    ``producer_state`` and ``leader_epochs`` carry over from the partition's earlier segments.
    ``native`` forces (True) or forbids (False) the extension; None uses it when available.
    """
    producer_state = producer_state if producer_state is not None else ProducerStateManager()
    leader_epochs = leader_epochs if leader_epochs is not None else []
    offset_index = OffsetIndex(base_offset, max_index_size)
    time_index = TimeIndex(base_offset, max_index_size)
    txn_index = TransactionIndex(base_offset)
    size = len(buf)
    state = array("q", [0] * N_SLOTS)
    state[S_END] = size
    state[S_BASE_OFFSET] = base_offset
    state[S_INDEX_INTERVAL] = index_interval_bytes
    state[S_MAX_TIMESTAMP] = NO_TIMESTAMP
    state[S_OFFSET_OF_MAX_TIMESTAMP] = base_offset
    state[S_LAST_OFFSET] = -1
    state[S_FIRST_OFFSET] = -1
    state[S_RUN_PRODUCER_ID] = -1
    kernel = scan.kernel(native)
    result = RecoveryResult(base_offset, size, 0, offset_index, time_index, txn_index, leader_epochs=leader_epochs)
    try:
        while True:
            if not producer_state.has_ongoing_txns:
                state[S_LEADER_EPOCH] = leader_epochs[-1][0] if leader_epochs else -1
                start = state[S_POSITION]
                kernel(state, buf, offset_index.data, offset_index.max_entries, time_index.data,
                       time_index.max_entries)
                if state[S_RUN_PRODUCER_ID] > -1:
                    _fold_run(state, producer_state)
                    if state[S_POSITION] > start:
                        continue  # stopped at another producer's batch: a new run starts there
            batch = next(batches(buf, state[S_POSITION], size), None)
            if batch is None:
                break
            _recover_batch(state, buf, batch, offset_index, time_index, txn_index, producer_state, leader_epochs)
    except (CorruptRecordException, InvalidRecordException) as e:
        result.stop_reason = f"{type(e).__name__} at position {state[S_POSITION]}: {e}"
    except SegdexError as e:
        result.error = f"{type(e).__name__} at position {state[S_POSITION]}: {e}"
    except (OverflowError, struct.error) as e:
        # Offsets past int64 or positions past 2 GiB: beyond what a Kafka segment can hold.
        result.error = (f"{type(e).__name__} at position {state[S_POSITION]}: {e} "
                        f"(offsets or file positions beyond what a Kafka segment can hold)")
    if result.stop_reason is None and result.error is None and state[S_POSITION] < size:
        result.stop_reason = (f"partial batch at position {state[S_POSITION]}: "
                              f"{size - state[S_POSITION]} trailing bytes do not hold a whole batch")
    # A normally closed segment always ends its time index with the largest timestamp seen.
    if result.error is None:
        try:
            time_index.maybe_append(state[S_MAX_TIMESTAMP], state[S_OFFSET_OF_MAX_TIMESTAMP],
                                    skip_full_check=True)
        except SegdexError as e:
            # Kafka's final maybeAppend throws too (offsets that went backwards): recovery fails, no truncation.
            result.error = f"{type(e).__name__} at the end of the segment: {e}"
    result.valid_bytes = state[S_POSITION]
    result.batch_count = state[S_BATCHES]
    result.record_count = state[S_RECORDS]
    result.first_offset = state[S_FIRST_OFFSET]
    result.last_offset = state[S_LAST_OFFSET]
    result.max_timestamp = state[S_MAX_TIMESTAMP]
    result.offset_of_max_timestamp = state[S_OFFSET_OF_MAX_TIMESTAMP] if state[S_BATCHES] else -1
    result.magics = _bit_list(state[S_MAGICS])
    result.codecs = [compression_name(c) for c in _bit_list(state[S_CODECS])]
    return result


def recover_file(path: str | os.PathLike, base_offset: int, also: Callable[[Any], None] | None = None,
                 **kwargs) -> RecoveryResult:
    """``recover`` over a ``.log`` file mapped read-only; ``also``, when given, is then handed the same mapping
    (another reader of the segment's bytes, a coordinator's load: the file is read once for both)."""
    with open_log(path) as buf:
        result = recover(buf, base_offset, **kwargs)
        if also is not None:
            also(buf)
        return result


def _index_bytes(path: str) -> bytes:
    """An index file's bytes, empty when there is none (a regular file only: ``open_regular``)."""
    try:
        with open_regular(path) as f:
            return f.read()
    except FileNotFoundError:
        return b""


def search_for_offset_from_position(buf, target: int, start: int) -> RecordBatch | None:
    """``FileRecords.searchForOffsetFromPosition`` (Kafka 4.4): from ``start``, the batch whose base offset is
    ``target``, else the last one before the first batch whose base offset is past it where that one's last offset
    reaches it, else that first batch; at the end, the last batch where its last offset reaches ``target``
    (None: none does). A v2 batch's base offset is its log header's, so the batch found may be one whose header
    was never read whole."""
    prev = None
    for batch in batches(buf, start):
        base = _base_offset(buf, batch)
        if base == target:
            return batch
        if base > target:
            return prev if prev is not None and prev.last_offset >= target else batch
        prev = batch
    return prev if prev is not None and prev.last_offset >= target else None


def _base_offset(buf, batch: RecordBatch) -> int:
    """``FileChannelRecordBatch.baseOffset``: a v2 batch's log header's. A batch whose magic byte is below 2 (as a
    signed byte: a damaged v2 batch's 0x80-0xFF too) is loaded whole and read as a message of the older formats
    (``AbstractLegacyRecordBatch.baseOffset``: its first record's offset). Its attributes (a v2 batch's CRC's first
    byte) must name a compression type, ids 0-4 (``CompressionType.forId``); uncompressed, the message is its own
    record; compressed, ``DeepRecordsIterator`` opens it as a wrapper (``records.legacy_records``: it throws on a
    magic byte other than 0 or 1, on zstd, on a null value or no inner message), and the first inner message's
    offset is the answer."""
    if batch.magic >= 2:
        return batch.base_offset
    try:
        codec = for_id(batch.compression_type)
    except UnknownCompressionTypeException as e:
        e.position = batch.position
        raise
    if codec == CompressionType.NONE:
        return batch.base_offset
    try:
        return next(legacy_records(buf, batch)).offset
    except InvalidRecordException as e:
        e.position = batch.position
        raise


def last_batch(buf, start: int, quiet: bool) -> RecordBatch | None:
    """The last whole batch from ``start`` to the end (``FileRecords.batches``' last); ``quiet``: a corrupt tail
    ends the read at the batch before it instead of raising."""
    last = None
    try:
        for batch in batches(buf, start):
            last = batch
    except (CorruptRecordException, ValueError, IndexError):
        if not quiet:
            raise
    return last


@dataclass(frozen=True)
class LogSegment:
    """A segment on disk (Kafka's ``LogSegment``), never written here.

    ``log_path`` is ``<base offset as 20 digits>.log``; its index files sit beside it with the same stem. A closed
    segment's index files hold exactly their entries; the active segment's may be preallocated with zero-filled
    slots, which Kafka counts as entries (``AbstractIndex``: entries = file length / entry size).
    """

    log_path: str
    base_offset: int

    def index_path(self, suffix: str) -> str:
        return index_paths(self.log_path)[suffix]

    def recover(self, **kwargs) -> RecoveryResult:
        """``LogSegment.recover``: ``recover`` over the ``.log`` mapped read-only (keywords as ``recover_file``'s)."""
        return recover_file(self.log_path, self.base_offset, **kwargs)

    def offset_index(self) -> OffsetIndex:
        """``LogSegment.offsetIndex``: the ``.index`` as a broker opens it, every whole slot an entry (zero-filled
        ones too); empty when there is no file."""
        return OffsetIndex.from_bytes(_index_bytes(self.index_path(INDEX_FILE_SUFFIX)), self.base_offset)

    def translate_offset(self, offset: int, index: OffsetIndex | None = None,
                         size: int | None = None) -> RecordBatch | None:
        """``LogSegment.translateOffset``: the batch a read from ``offset`` starts at, searched from the offset
        index entry at or below it (``FileRecords.searchForOffsetFromPosition``); None when no batch of the
        segment reaches it. ``index``: the segment's offset index (default: its file, as a broker opens it);
        ``size``: the bytes the segment holds (default: its whole file). Raises ``OffsetReadException`` with what
        the search throws: a size field below 14, a batch whose magic byte reads below 2 that does not load as the
        older format (``_base_offset``)."""
        index = self.offset_index() if index is None else index
        with open_log(self.log_path) as buf:
            whole = memoryview(buf)
            held = whole if size is None else whole[:size]
            try:
                return search_for_offset_from_position(held, offset, index.lookup(offset)[1])
            except (CorruptRecordException, InvalidRecordException, UnknownCompressionTypeException,
                    BufferBoundsException) as e:
                raise OffsetReadException(e, offset, self.log_path) from None
            finally:
                held.release()
                whole.release()

    def read_next_offset(self, tolerate_damage: bool = False) -> int:
        """``LogSegment.readNextOffset``: the offset after the segment's last batch, the base offset when it has
        none. Kafka looks the offset index's last entry up (``OffsetIndex.lookup``), finds the batch holding that
        offset from the position found (``FileRecords.searchForOffsetFromPosition``) and reads on to the last
        batch.

        As a broker reads it (``tolerate_damage=False``: the startup preview): every slot of the index file is an
        entry, zero-filled ones too; a size field below the smallest batch raises ``CorruptRecordException`` as
        Kafka's read throws. ``tolerate_damage=True`` (retention's facts, read from dirs that may be damaged): the
        index's zero-filled slots are not entries, the read starts at the last entry's position, a corrupt or
        partial tail ends it quietly at the last whole batch, and an index pointing past every batch falls back
        to a read from the start."""
        index = self.offset_index()
        if tolerate_damage:
            index = OffsetIndex.from_bytes(index.data[:offset_index.trimmed_entry_count(index.data)
                                                      * offset_index.ENTRY_SIZE], self.base_offset)
        with open_log(self.log_path) as buf:
            if tolerate_damage:
                position = index.entry(len(index) - 1)[1] if len(index) else 0
                for start in ((position, 0) if position else (0,)):
                    last = last_batch(buf, start, quiet=True)
                    if last is not None:
                        return last.next_offset
                return self.base_offset
            target = index.last_offset
            _, position = index.lookup(target)
            found = search_for_offset_from_position(buf, target, max(position, 0))
            last = last_batch(buf, found.position, quiet=False) if found is not None else None
            if last is None:
                return self.base_offset
            # nextOffset: a v2 batch's last offset is in its header, loaded from the read's slice
            load_batch_header(buf, last, os.path.abspath(self.log_path), found.position)
            return last.next_offset

    def first_batch_timestamp(self) -> int:
        """``LogSegment.getFirstBatchTimestamp`` of a segment loaded from disk (``loadFirstBatchTimestamp``): the
        first batch's max timestamp; Long.MAX_VALUE when the segment has no batch or that timestamp is negative.
        The cleaner's ``max.compaction.lag.ms`` and retention's roll by time read it."""
        with open_log(self.log_path) as buf:
            first = next(batches(buf, 0), None)
        if first is None or first.max_timestamp < 0:
            return LONG_MAX
        return first.max_timestamp

    def largest_timestamp(self, index: TimeIndex | None = None) -> tuple[int, str]:
        """``LogSegment.largestTimestamp``: the time index's last timestamp when it is >= 0, else the ``.log``'s
        modification time in ms (``File.lastModified``); with where the answer came from
        (``TIMESTAMP_FROM_TIME_INDEX`` or ``TIMESTAMP_FROM_MTIME``).

        ``index``: the time index as recovery rebuilt it; None reads the ``.timeindex`` on disk, whose zero-filled
        (preallocated) slots are not entries."""
        if index is None:
            data = _index_bytes(self.index_path(TIME_INDEX_FILE_SUFFIX))
            index = TimeIndex.from_bytes(data[:time_index.trimmed_entry_count(data) * time_index.ENTRY_SIZE],
                                         self.base_offset)
        timestamp, _ = index.last_entry()
        if timestamp >= 0:
            return timestamp, TIMESTAMP_FROM_TIME_INDEX
        return os.stat(self.log_path).st_mtime_ns // 1_000_000, TIMESTAMP_FROM_MTIME
