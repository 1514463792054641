"""Kafka's ``Cleaner``: one cleaning round of a compacted partition, in memory (``clean`` returns the files; nothing
here writes a log dir).

A round (``Cleaner.doClean``), for a ``LogToClean`` at the clock ``now``:

1. ``build_offset_map``: from the first dirty offset to the (segment-aligned) first uncleanable offset, the latest
   offset of each key, skipping aborted transactions' data, until the map holds ``int(slots * load factor)`` keys;
   the round ends after the last offset the map covers (``end_offset``), which the ``cleaner-offset-checkpoint``
   then holds.
2. ``group_segments_by_size``: every segment below ``end_offset``, from the log's first, in groups of at most
   ``segment.bytes`` (index sizes within ``segment.index.bytes``, offsets within an int32 of the group's base).
   The index check adds up the sources' index sizes as loaded (entries x 8, entries x 12), but the merged segment
   can need more entries than their sum: its entries are appended as ``LogSegment.append`` appends them, with the
   bytes since the last entry carried across each source's boundary (so the first batch of every source after
   the first may be indexed, where each source had started a fresh count), and ``TimeIndex.isFull`` keeps the
   last of its ``segment.index.bytes / 12`` slots for the final entry ``onBecomeInactiveSegment`` appends. A
   group whose sources' indexes nearly fill ``segment.index.bytes`` can therefore overflow: Kafka's
   ``OffsetIndex.append`` or ``TimeIndex.maybeAppend`` throws ``IllegalArgumentException: Attempt to append to a
   full (time) index (size = N).``, the round fails (the groups before it already swapped in), and a broker's
   cleaner thread marks the partition uncleanable. ``clean`` raises ``LogCleaningException`` with that text.
3. ``clean_segments``: each group becomes one segment named by its first base offset. Per batch
   (``cleanInto``/``MemoryRecords.filterTo``): a record stays when its key's latest offset is its own (or beyond
   the map), a tombstone only until its batch's delete horizon, keyless records go; aborted data goes; a marker
   goes once its transaction's data is gone and its horizon passed; the last batch of an active producer and the
   batch ending at the high watermark stay, empty when all their records go. A batch that keeps every record
   and needs no new horizon is copied as it is; one that loses records, or keeps a tombstone or a discardable
   marker without a horizon, is rebuilt (the horizon ``now + delete.retention.ms`` stamped). The offset and time
   indexes are built batch by batch as ``LogSegment.append`` builds them, the ``.txnindex`` from the ABORT
   markers kept; the files take the group's last segment's modification time.

Rebuilding a compressed batch needs the codec's exact output: gzip (``java.util.zip`` over the same libz), snappy
(snappy-java's 32 KiB blocks of Google snappy 1.1.10, the ``_snappy`` kernel), lz4 (Kafka's frame, lz4's fast
compressor) and zstd (zstd-jni's stream, the same zstd) give Kafka's bytes; snappy raises
``UnsupportedCompressionException`` where its kernel is not built. Compressed batches copied whole are fine.

Plain batches (uncompressed, no producer, neither transactional nor control) go through the ``_cleaner`` kernel
where it is built (``SkimpyOffsetMap.native``): the offset map's loop and ``cleanInto``'s dropped, whole-kept and
rebuilt plain batches in C, every other batch here, one at a time, in the same order.
"""

from __future__ import annotations

import bisect
import contextlib
import copy
import functools
import os
import struct
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from segdex.indexcore.errors import (
    CORRUPT_RECORD,
    ILLEGAL_ARGUMENT,
    INDEX_OUT_OF_BOUNDS,
    BufferBoundsException,
    CorruptRecordException,
    IndexFullException,
    IndexOffsetOverflowException,
    InvalidOffsetException,
    InvalidRecordException,
    JavaException,
    KafkaReadException,
    OffsetMapFullException,
    SegdexError,
    UnknownCompressionTypeException,
)
from segdex.indexcore.index.offset_index import OffsetIndex
from segdex.indexcore.index.time_index import ENTRY_SIZE as TIME_INDEX_ENTRY_SIZE
from segdex.indexcore.index.time_index import TimeIndex
from segdex.indexcore.index.transaction_index import AbortedTxn, TransactionIndex, parse_transaction_index
from segdex.indexcore.log.cleaned_transaction_metadata import CleanedTransactionMetadata
from segdex.indexcore.log.layout import segment_file_name
from segdex.indexcore.log.log_cleaner_manager import LONG_MAX, LogToClean, SegmentFacts, segments
from segdex.indexcore.log.log_segment import last_batch
from segdex.indexcore.log.skimpy_offset_map import SkimpyOffsetMap, native_next_txn
from segdex.indexcore.record.batch_header import (
    BASE_TIMESTAMP_OFFSET,
    DELETE_HORIZON_FLAG_MASK,
    HEADER_SIZE_UP_TO_MAGIC,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    TIMESTAMP_TYPE_MASK,
)
from segdex.indexcore.record.compression import KNOWN_CODECS, for_id
from segdex.indexcore.record.file_records import batches, open_log
from segdex.indexcore.record.memory_records_builder import empty_header, rebuild_batch
from segdex.indexcore.record.record_batch import (
    RECORD_BATCH_OVERHEAD,
    RECORD_OVERHEAD_V0,
    RecordBatch,
    read_batch_header,
)
from segdex.indexcore.record.records import FILTER, KEYS, control_record, count_or_null, records, streaming_iterator

INT32_MAX = 2**31 - 1
# a batch's header fields read in place (at ``batch_header``'s offsets from its position): the size (int32 at
# LENGTH_OFFSET), the magic byte (int8 at MAGIC_OFFSET), a v2 batch's base timestamp (int64 at BASE_TIMESTAMP_OFFSET)
SIZE_FIELD = struct.Struct(">i")
MAGIC_FIELD = struct.Struct(">b")
TIMESTAMP_FIELD = struct.Struct(">q")
THREADS_ENV = "SEGDEX_CLEAN_THREADS"  # a round's threads where the caller names none (1: the one-thread round)
# a split round's groups cleaned ahead of the one being written hold their .log bytes in memory, at most this many
# bytes of them by their sources' sizes (a group larger than this is cleaned in its turn alone): one group of
# 100 MiB segments ahead, so that with the offset map at its 5 M-key limit (about 300 MiB beside the 128 MiB
# buffer) the round stays under the map plus 512 MiB
HELD_BYTES = 128 << 20
MAX_MESSAGE_BYTES = 1_048_588  # max.message.bytes and message.max.bytes by default: how far the read buffer grows
NO_TIMESTAMP = -1
# BatchRetention
DELETE, DELETE_EMPTY, RETAIN_EMPTY = "DELETE", "DELETE_EMPTY", "RETAIN_EMPTY"
# what the cleaner kernel's loops (``_cleaner.c``) stop at: no batch left, the offset map full, a batch to copy, one
# rebuilt
_END, _FULL, _COPY, _REBUILT = 0, 1, 3, 4


class LogSegmentOffsetOverflowException(SegdexError):
    """``LogSegment.append`` of a batch whose last offset is no int32 above the segment's base offset."""

    def __init__(self, offset: int) -> None:
        super().__init__(f"offset {offset} does not fit the segment")
        self.offset = offset


class LogCleaningException(SegdexError):
    """A round Kafka's cleaner would abort (a broker's cleaner thread then marks the partition uncleanable and
    leaves it dirty). ``kafka_exception``: what Kafka's ``Cleaner`` throws there (its class and message), where
    segdex knows it."""

    def __init__(self, message: str, kafka_exception: str | None = None, path: str | None = None,
                 position: int | None = None) -> None:
        super().__init__(message)
        self.kafka_exception = kafka_exception
        self.path = path  # a damaged batch's segment file, and its byte position there (``read_batch``)
        self.position = position


@dataclass
class CleanerSegment:
    """A segment as the cleaner reads it: its ``.log``, its indexes as the broker has them loaded (the offset
    index for ``lookup``, entry counts for grouping) and its ``.txnindex`` entries."""

    log_path: str
    base_offset: int
    size: int
    mtime_ms: int  # File.lastModified of the .log
    offset_index: OffsetIndex
    time_index_entries: int
    aborted: list[AbortedTxn]
    next_offset: int  # LogSegment.readNextOffset: after its last batch, its base offset when it has none
    data: bytes | None = None  # a segment a planned round left, in memory (no file): its .log bytes
    # served as it is: a damaged segment a clean start does not re-read (``log_cleaner.load_for_cleaning``), its
    # indexes as on disk; ``next_offset_error``: what its ``readNextOffset`` throws (Kafka's class and message)
    as_is: bool = False
    next_offset_error: str | None = None
    # it holds messages of the formats before 0.11: a load never opens their compressed wrappers, a round does
    legacy: bool = False


@dataclass(frozen=True)
class LastRecord:
    """``LastRecord``: an active producer's last data offset (None: none kept) and epoch."""

    last_data_offset: int | None
    producer_epoch: int


@dataclass
class CleanedSegment:
    """One group's cleaned segment: the files Kafka's cleaner leaves, and the segments it replaces."""

    base_offset: int
    log: bytes  # empty when the Cleaner keeps no files (a plan's round)
    offset_index: bytes
    time_index: bytes
    txn_index: bytes | None  # None: no .txnindex file
    mtime_ms: int
    replaces: list[int]  # base offsets of the segments it replaces (its own first)
    size: int = 0  # its .log's bytes (``log`` holds them only when the Cleaner keeps its files in memory)

    def _bytes(self, path: str | None):
        return contextlib.nullcontext(self.log) if path is None else open_log(path)

    def as_segment(self, max_index_size: int, path: str | None = None) -> CleanerSegment:
        """The segment as the log holds it after the swap: what a planned next round reads (its ``.log`` in
        ``log``, or written at ``path``)."""
        with self._bytes(path) as buf:
            last = last_batch(buf, 0, quiet=False)  # LogSegment.readNextOffset
        return CleanerSegment(path or f"(planned round's segment {self.base_offset})", self.base_offset, self.size,
                              self.mtime_ms, OffsetIndex.from_bytes(self.offset_index, self.base_offset,
                                                                    max_index_size),
                              len(self.time_index) // TIME_INDEX_ENTRY_SIZE,
                              parse_transaction_index(self.txn_index) if self.txn_index else [],
                              last.last_offset + 1 if last is not None else self.base_offset,
                              data=self.log if path is None else None)

    def facts(self, path: str | None = None) -> SegmentFacts:
        """``LogCleanerManager``'s facts of it: its size, its largest timestamp (the time index's last entry,
        else the modification time the swap gave it) and its first batch's max timestamp (its ``.log`` in
        ``log``, or written at ``path``)."""
        largest = TimeIndex.from_bytes(self.time_index, self.base_offset).last_entry()[0]
        with self._bytes(path) as buf:
            first = next(batches(buf, 0), None)
        return SegmentFacts(self.base_offset, self.size, largest if largest >= 0 else self.mtime_ms,
                            first.max_timestamp if first is not None and first.max_timestamp >= 0 else LONG_MAX)


@dataclass
class CleanerStats:
    """What a round read and kept (``CleanerStats``, with records and bytes removed by kind)."""

    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_kept: int = 0
    batches_rebuilt: int = 0
    compressed_rebuilt: dict[int, int] = field(default_factory=dict)  # of which recompressed, by codec
    tombstones_kept: int = 0
    tombstones_removed: int = 0
    empty_batches: int = 0  # batches kept with no record (an active producer's last, the round's last)
    aborted_removed: int = 0  # records of aborted transactions removed (their tombstones too)
    map_keys: int = 0

    def add(self, other: CleanerStats) -> None:
        """Another part's counts (a group cleaned apart), added."""
        for name in ("bytes_read", "bytes_written", "records_read", "records_kept", "batches_rebuilt",
                     "tombstones_kept", "tombstones_removed", "empty_batches", "aborted_removed"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for codec, n in other.compressed_rebuilt.items():
            self.compressed_rebuilt[codec] = self.compressed_rebuilt.get(codec, 0) + n

    def add_counts(self, records_read: int, records_kept: int, tombstones_removed: int, tombstones_kept: int,
                   bytes_read: int) -> None:
        """What the kernel's ``filter`` counted of the plain batches it dropped, or handed back whole or rebuilt."""
        self.records_read += records_read
        self.records_kept += records_kept
        self.tombstones_removed += tombstones_removed
        self.tombstones_kept += tombstones_kept
        self.bytes_read += bytes_read


@dataclass
class CleaningRound:
    """A round's result, as ``Cleaner.doClean`` returns it: the end offset (for ``cleaner-offset-checkpoint``), the
    cleaned segments."""

    end_offset: int
    segments: list[CleanedSegment] = field(default_factory=list)
    stats: CleanerStats = field(default_factory=CleanerStats)

    def swapped(self, segs: list[CleanerSegment], facts: list[SegmentFacts],
                new: list[tuple[CleanerSegment, SegmentFacts]]) -> tuple[list[CleanerSegment], list[SegmentFacts]]:
        """The log's segments (and their facts) after this round's ``LocalLog.replaceSegments``: each cleaned
        segment (``new``, as ``CleanedSegment.as_segment`` and ``facts`` give it) in place of those it replaces,
        as a broker's cleaner holds the log for its next pass."""
        gone = {base for c in self.segments for base in c.replaces}
        kept = [(s, f) for s, f in zip(segs, facts, strict=True) if s.base_offset not in gone]
        both = sorted(kept + new, key=lambda sf: sf[0].base_offset)
        return [s for s, _ in both], [f for _, f in both]


class GroupWriter:
    """Where an applied (or spilled) round's groups go while it reads (``Cleaner.clean(writer=...)``), one group
    at a time as Kafka's ``cleanSegments`` writes them: ``begin`` once the groups are known (before any write:
    it may refuse the round), ``open`` at a group's start (the file its ``.log`` bytes stream into), ``commit``
    once the group is clean (its indexes written, the swap done; returns what the round keeps of it, without its
    bytes), ``abort`` when the group's cleaning threw (its partial files removed)."""

    def begin(self, groups: list[list[CleanerSegment]], end_offset: int) -> None:
        pass

    def open(self, group: list[CleanerSegment]):
        raise NotImplementedError

    def commit(self, cleaned: CleanedSegment, group: list[CleanerSegment]) -> CleanedSegment:
        raise NotImplementedError

    def abort(self) -> None:
        pass

    # an applied round's writer: the damage a round would meet is looked for before its first write
    # (``meet_damage``), where Kafka's round swaps in the groups before it and then throws
    writes_partition = False

    def streams(self) -> bool:
        """Whether ``open`` gives files the groups' bytes stream into (a split round holds the groups it cleans
        ahead of their turn in memory only then)."""
        return True


class _Discarding(GroupWriter):
    """Groups cleaned into nothing (``sink``: ``os.devnull``): only what their cleaning throws counts."""

    def __init__(self, sink) -> None:
        self.sink = sink

    def open(self, group: list[CleanerSegment]):
        return self.sink

    def commit(self, cleaned: CleanedSegment, group: list[CleanerSegment]) -> CleanedSegment:
        return without_bytes(cleaned)


class _HeldSink:
    """A group's ``.log`` bytes as a split round cleans it: held in memory until the writer opens the group's file
    in its turn (``attach``), then written there, and streamed there from then on."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held = bytearray()
        self._file = None
        self.attached = False

    def write(self, data) -> None:
        with self._lock:
            if not self.attached:
                self._held += data
                return
        if self._file is not None:
            self._file.write(data)

    def attach(self, file) -> None:
        """The group's file (None: its bytes dropped, as the writer keeps none)."""
        with self._lock:
            if file is not None:
                file.write(self._held)
            self._held = bytearray()
            self._file, self.attached = file, True


def _source_bytes(group: list[CleanerSegment]) -> int:
    """What a group's cleaned ``.log`` may take at most, about: its sources' bytes."""
    return sum(seg.size for seg in group)


def usable_cores(cpu_max: str = "/sys/fs/cgroup/cpu.max") -> int:
    """The cores this process may run on: its affinity (the machine's where the platform has none), no more than
    its cgroup's CPU quota (``cpu_max``, cgroup v2's ``cpu.max``: a container limited to 2 CPUs on a 64-core host
    gets 2)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    try:
        with open(cpu_max) as f:
            quota, period = f.read().split()[:2]
        if quota != "max":
            cores = min(cores, max(1, int(quota) // int(period)))
    except (OSError, ValueError):
        pass
    return cores


def default_threads() -> int:
    """A round's threads where the caller names none: ``SEGDEX_CLEAN_THREADS``, else the cores this process may
    run on."""
    named = os.environ.get(THREADS_ENV)
    return int(named) if named else usable_cores()


def without_bytes(cleaned: CleanedSegment) -> CleanedSegment:
    """What a round keeps of a group written out: its names, sizes and time, not its bytes."""
    return CleanedSegment(cleaned.base_offset, b"", b"", b"", None, cleaned.mtime_ms, cleaned.replaces,
                          cleaned.size)


def _segment_range(segs: list[CleanerSegment], start: int, end: int) -> list[CleanerSegment]:
    """``LogSegments.values(from, to)`` (``log_cleaner_manager.segments``); a range Kafka refuses aborts the
    round with its ``IllegalArgumentException``, which names the partition (its directory's name)."""
    try:
        return segments(segs, start, end)
    except ValueError as e:
        partition = os.path.basename(os.path.dirname(os.path.abspath(segs[0].log_path)))
        kafka = f"{ILLEGAL_ARGUMENT}: Invalid log segment range: requested segments in {partition} {e}"
        raise LogCleaningException(f"Kafka's cleaner fails this round ({kafka})", kafka_exception=kafka) from None


def _open_segment(seg: CleanerSegment):
    """The segment's ``.log`` mapped, or its bytes when a planned round left it in memory."""
    return contextlib.nullcontext(seg.data) if seg.data is not None else open_log(seg.log_path)


def collect_aborted_transactions(segs: list[CleanerSegment], log_start_offset: int, base_offset: int,
                                 upper_bound_offset: int) -> list[AbortedTxn]:
    """``LocalLog.collectAbortedTransactions(logStartOffset, baseOffset, upperBoundOffset)``: from the segment
    holding ``base_offset`` on, each ``.txnindex`` entry ending at or after the log start offset (not the base
    offset: Kafka's own comparison) and starting below the bound, until one whose last stable offset reaches the
    bound."""
    i = bisect.bisect_right(segs, base_offset, key=lambda s: s.base_offset) - 1  # LogSegments.floorSegment
    if i < 0:
        return []
    out = []
    for seg in segs[i:]:
        for txn in seg.aborted:
            if txn.last_offset >= log_start_offset and txn.first_offset < upper_bound_offset:
                out.append(txn)
            if txn.last_stable_offset >= upper_bound_offset:
                return out
    return out


@dataclass(frozen=True)
class _TxnEvent:
    """A transactional or control batch as ``CleanedTransactionMetadata`` reads it."""

    last_offset: int
    producer_id: int
    is_transactional: bool
    is_control: bool
    control_type: str | None


def _txn_events(seg: CleanerSegment, position: int = 0) -> list[_TxnEvent]:
    """The segment's transactional and control batches from ``position`` on, in order: all that moves a pass's
    transaction state but the aborted transactions it is given (``_replay``)."""
    next_txn = native_next_txn()
    out = []
    with _open_segment(seg) as buf:
        while True:
            if next_txn is not None:
                position = next_txn(buf, position)
            batch = next(batches(buf, position), None)
            if batch is None:
                break
            _note(out, buf, batch)
            position = batch.position + batch.size_in_bytes
    return out


def _note(events: list[_TxnEvent] | None, buf, batch: RecordBatch) -> None:
    """``batch`` appended to ``events`` (when given) when transactional or control."""
    if events is not None and (batch.is_control or batch.is_transactional):
        events.append(_TxnEvent(batch.last_offset, batch.producer_id, batch.is_transactional, batch.is_control,
                                _control_type(buf, batch) if batch.is_control else None))


def _replay(tm: CleanedTransactionMetadata, events: list[_TxnEvent]) -> None:
    """``tm`` moved past a segment's batches as a pass reads them. Only these batches change what it answers: a
    plain batch's read only takes in the aborted transactions begun by its last offset, which the next of these
    (or the next segment's first) takes in too, in the same order (two of one producer cannot both be begun and
    unread across one: the first's ABORT marker, read in between, lies before the second's first offset)."""
    for e in events:
        if e.is_control:
            tm.on_control_batch_read(e, e.control_type)
        else:
            tm.on_batch_read(e)


def _drain(futures) -> None:
    """The pool's work not taken: cancelled where not begun, else waited for (its outcome dropped)."""
    for f in futures:
        f.cancel()
    for f in futures:
        with contextlib.suppress(BaseException):
            f.result()


def _index_full(e: IndexFullException, group: list[CleanerSegment], max_index_size: int) -> LogCleaningException:
    """Kafka's failure where a group's cleaned segment outgrows its index (see the module's docs): the round throws
    and a broker marks the partition uncleanable."""
    bases = ", ".join(str(s.base_offset) for s in group)
    return LogCleaningException(
        f"Kafka's cleaner fails this round ({e.kafka_class}: {e}): segments {bases} merged into one outgrow its "
        f"index of segment.index.bytes={max_index_size}; a broker marks the partition uncleanable and leaves it "
        f"dirty", kafka_exception=f"{e.kafka_class}: {e}")


def _offset_overflow(e: LogSegmentOffsetOverflowException, seg: CleanerSegment,
                     cleaned_base: int) -> LogCleaningException:
    """What ``cleanSegments`` does on a kept batch that does not fit the cleaned segment: Kafka splits the source
    segment it came from (``splitOverflowedSegment``) and aborts the round, which it retries. Its split requires
    the source to overflow its own base (``LogSegment.hasOverflow``); where it does not (a v0/v1 log whose segments
    older brokers named by a compressed wrapper's last offset, its first records below the base), the requirement
    throws and a broker marks the partition uncleanable."""
    if seg.next_offset > seg.base_offset and not 0 <= seg.next_offset - 1 - seg.base_offset <= INT32_MAX:
        return LogCleaningException(f"Kafka's cleaner would split segment {seg.base_offset} (its offsets overflow "
                                    f"it) and clean it in a later round; segdex does not split segments")
    kafka = (f"{ILLEGAL_ARGUMENT}: Split operation is only permitted for segments with overflow, and "
             f"the problem path is {os.path.abspath(seg.log_path)}")
    return LogCleaningException(
        f"Kafka's cleaner fails this round ({kafka}): offset {e.offset}, the last kept of a message set of segment "
        f"{seg.base_offset}, lies below the cleaned segment's base offset {cleaned_base}; a broker marks the "
        f"partition uncleanable and leaves it dirty", kafka_exception=kafka)


@dataclass(frozen=True)
class IoBuffers:
    """A cleaner thread's read buffer as ``Cleaner`` sizes it. Each segment's read starts at ``ioBufferSize``
    (``restoreBuffers`` after each); a read that holds no whole batch grows it (``growBuffersOrFail``, then
    ``growBuffers``): doubled, up to the larger of the topic's ``max.message.bytes`` (``maxLogMessageSize``) and
    the broker's ``message.max.bytes`` (``maxIoBufferSize``); once at the topic's limit, up to the next batch's
    own size, after checks on it that throw where the batch cannot be whole (``read_batch``)."""

    io_buffer_size: int = 262_144  # CleanerConfig's share for one thread's read buffer
    max_io_buffer_size: int = MAX_MESSAGE_BYTES  # the broker's message.max.bytes
    max_log_message_size: int = MAX_MESSAGE_BYTES  # the topic's max.message.bytes

    def grown(self, capacity: int, next_batch_size: int) -> int:
        """The capacity after one read at ``capacity`` held no whole batch (``growBuffersOrFail``'s ``maxSize``,
        then ``growBuffers``' doubling). ``next_batch_size``: the next batch's size, whole in the segment (Kafka's
        checks passed). Kafka's "message larger than maximum allowable size" cannot be reached from here: the
        limit is always above ``capacity``."""
        limit = next_batch_size if capacity >= self.max_log_message_size else self.max_log_message_size
        return min(capacity * 2, max(limit, self.max_io_buffer_size))


class SegmentReads:
    """Where Kafka's reads of one segment begin: at byte ``start`` (``buildOffsetMapForSegment`` starts at the
    offset index's entry for the first dirty offset, ``cleanInto`` at 0), with the read buffer at ``capacity``.
    That is ``ioBufferSize`` but for the round's first ``cleanInto`` when the offset map's build filled the map:
    ``buildOffsetMapForSegment`` returns there without ``restoreBuffers``, so the buffer stays as that segment's
    reads grew it, up to the batch the map filled at (``fill``: that segment, where its reads began, that batch's
    position). Worked out only when asked (a damaged batch, an offset that overflows)."""

    def __init__(self, buffers: IoBuffers, start: int = 0,
                 fill: tuple[CleanerSegment, int, int] | None = None) -> None:
        self.buffers = buffers
        self.start = start
        self.fill = fill

    @functools.cached_property
    def capacity(self) -> int:
        if self.fill is None:
            return self.buffers.io_buffer_size
        seg, start, position = self.fill
        with _open_segment(seg) as buf:
            return SegmentReads(self.buffers, start).capacity_at(buf, position + 1)

    def capacity_at(self, buf, end: int) -> int:
        """The buffer's capacity once the reads from ``start`` have taken every batch that begins before ``end``:
        grown for each batch that did not fit it (such a batch begins a read that holds no whole batch:
        ``growBuffersOrFail``)."""
        cap = self.capacity
        for batch in _batches_before(buf, end, self.start):
            while batch.size_in_bytes > cap:
                cap = self.buffers.grown(cap, batch.size_in_bytes)
        return cap


def _batches_before(buf, end: int, start: int = 0):
    """The whole batches from ``start`` that begin before ``end`` (a damaged batch there)."""
    it = batches(buf, start)
    while True:
        try:
            batch = next(it)
        except (StopIteration, CorruptRecordException, ValueError):
            return
        if batch.position >= end:
            return
        yield batch


def _chunk_starts(buffers: IoBuffers, capacity: int | None, walked,
                  written: list[tuple[int, int]] | None = None, until: int | None = None) -> tuple[list[int], int]:
    """Where each of ``cleanInto``'s reads of a source segment starts, over the batches ``walked`` (in order from
    the segment's start), and the buffer's capacity after them: a read holds the whole batches within the buffer,
    which grows while one batch does not fit (``IoBuffers``), and ends early after a batch whose rewritten bytes
    outgrow the write buffer (of the read buffer's capacity): ``MemoryRecords.filterTo`` returns there, the output
    buffer grown (``ByteBufferOutputStream``), so that a read of v0/v1 messages rebuilt as larger v2 batches ends
    before its input does. ``written``: the bytes each kept batch was written as, by its source position (a batch
    not in it wrote none). ``until``: a batch after the walked ones (a damaged one), which begins a read of its own
    where the last read ended early. ``capacity``: the buffer's at the segment's first read (``SegmentReads``)."""
    sizes = dict(written or ())
    chunks, start, cap, out = [], 0, capacity or buffers.io_buffer_size, 0
    for batch in walked:
        size = batch.size_in_bytes
        if batch.position > start and (batch.position + size - start > cap or out > cap):  # the next read
            chunks.append(start)
            start, out = batch.position, 0
        while size > cap:  # growBuffersOrFail: a read that holds no whole batch (the buffer stays grown)
            cap = buffers.grown(cap, size)
        out += sizes.get(batch.position, 0)
    if until is not None and until > start and out > cap:
        chunks.append(start)
        start = until
    chunks.append(start)
    return chunks, cap


@dataclass
class _FullRead:
    """The read holding the batch whose index append threw (``_full_read_done``): where it starts, the buffers'
    capacity, where its bytes end (None: at a damaged batch whose header it holds), and the bytes its kept batches
    were written as so far (``seen``: of ``_CleanedLog.written``'s entries, those counted)."""

    start: int
    capacity: int
    end: int | None
    out: int = 0
    seen: int = 0


def _overflow_first(buf, out: _CleanedLog, buffers: IoBuffers, capacity: int | None, **where) -> None:
    """``_chunk_overflow`` of what ``out`` kept of this segment, where some kept offset does not fit it: the
    overflow Kafka's appends throw before the segment's end, or before a failure met at ``where``."""
    if out.overflows():
        _chunk_overflow(buf, out.kept, out.base_offset, buffers, capacity, written=out.written, **where)


def _full_read_done(out: _CleanedLog, buf, buffers: IoBuffers, capacity: int | None, position: int) -> bool:
    """Whether the cleaning of this segment stops at ``position`` because an index append threw
    (``_CleanedLog.index_error``): Kafka filters the whole read holding that batch and checks its offsets before
    its append meets the failure, and reads nothing after it. That read (``_chunk_starts``) ends where its bytes
    hold no further whole batch (``_read_end``), or after the batch whose rewritten bytes outgrow the write buffer
    (``filterTo`` returns there); where its bytes end at a damaged header they hold, the cleaning goes on to it and
    throws there (``read_batch``), as Kafka's read throws while it is filtered."""
    if out.index_error is None:
        return False
    read = out.full_read
    if read is None:
        at = out.index_error[1]
        chunks, cap = _chunk_starts(buffers, capacity, _batches_before(buf, at + 1), out.written)
        read = out.full_read = _FullRead(chunks[-1], cap, _read_end(buf, chunks[-1], cap, at))
    for source_position, size in out.written[read.seen:]:
        if source_position >= read.start:
            read.out += size
    read.seen = len(out.written)
    return read.out > read.capacity or (read.end is not None and position >= read.end)


def _read_end(buf, start: int, capacity: int, at: int) -> int | None:
    """Where the read from ``start`` (``capacity`` bytes, fewer at the segment's end) that holds the whole batch at
    ``at`` ends by its bytes: at the first batch after it not whole in them (the segment's end), as
    ``ByteBufferLogInputStream.nextBatch`` finds it. None where that batch's header in reach is damaged (its size
    field below 14, or its magic byte outside 0..2): the read throws there (``read_batch``)."""
    limit = start + min(capacity, len(buf) - start)
    position = at + LOG_OVERHEAD + SIZE_FIELD.unpack_from(buf, at + LENGTH_OFFSET)[0]
    while True:
        left = limit - position
        if left < LOG_OVERHEAD:
            return position
        size = SIZE_FIELD.unpack_from(buf, position + LENGTH_OFFSET)[0]
        if size < RECORD_OVERHEAD_V0:
            return None
        if left < HEADER_SIZE_UP_TO_MAGIC:
            return position
        if not 0 <= MAGIC_FIELD.unpack_from(buf, position + MAGIC_OFFSET)[0] <= 2:
            return None
        if size + LOG_OVERHEAD > left:
            return position
        position += size + LOG_OVERHEAD


def _chunk_overflow(buf, kept: list[tuple[int, int]], cleaned_base: int, buffers: IoBuffers,
                    capacity: int | None = None, damaged_at: int | None = None,
                    filtered_at: int | None = None, written: list[tuple[int, int]] | None = None) -> None:
    """``cleanInto`` reads a source segment a buffer at a time (``_chunk_starts``) and appends each buffer's kept
    batches at once, ``LogSegment.ensureOffsetInRange`` checking only their largest offset:
    ``LogSegmentOffsetOverflowException`` for the first buffer whose largest kept offset does not fit the cleaned
    segment (a batch below its base passes where a later one in its buffer fits). Called only when some kept
    offset does not fit. ``damaged_at``: the read stops at a damaged batch there; the buffer that holds its header
    throws while it is filtered (its size field below 14, or its magic byte, in reach: ``ByteBufferLogInputStream``),
    so its kept batches are never appended, where a buffer that ends before it (the batch incomplete in it, or the
    buffer's filtering returned early) is. ``filtered_at``: the buffer holding the whole batch there throws while it
    is filtered (``filterTo``), so only the buffers before it are appended. ``written``: the bytes each kept batch
    was written as (``_chunk_starts``)."""
    if damaged_at is not None:
        chunks, cap = _chunk_starts(buffers, capacity, _batches_before(buf, damaged_at), written, damaged_at)
    else:
        chunks, cap = _chunk_starts(buffers, capacity, _batches_before(buf, len(buf)) if filtered_at is None
                                    else _batches_before(buf, filtered_at + 1), written)
    start = chunks[-1]
    if filtered_at is not None:
        kept = [(position, offset) for position, offset in kept if position < start]  # that buffer throws
    if damaged_at is not None and damaged_at > start:
        left = min(cap, len(buf) - start) - (damaged_at - start)
        size = SIZE_FIELD.unpack_from(buf, damaged_at + LENGTH_OFFSET)[0] \
            if left >= LOG_OVERHEAD else None
        magic = buf[damaged_at + MAGIC_OFFSET] if left >= HEADER_SIZE_UP_TO_MAGIC else 0
        if (size is not None and size < RECORD_OVERHEAD_V0) or magic > 2:
            kept = [(position, offset) for position, offset in kept if position < start]  # that buffer throws
    largest: dict[int, int] = {}
    for position, offset in kept:
        chunk = chunks[bisect.bisect_right(chunks, position) - 1]
        largest[chunk] = max(largest.get(chunk, offset), offset)
    for chunk in sorted(largest):
        if not 0 <= largest[chunk] - cleaned_base <= INT32_MAX:
            raise LogSegmentOffsetOverflowException(largest[chunk])


# what a record read throws where Kafka's reader refuses a batch's records (``_refused_records``)
REFUSED_RECORDS = (InvalidRecordException, CorruptRecordException, BufferBoundsException, KafkaReadException,
                   JavaException)
# where fields of a v2 batch's header end (RECORD_BATCH_V2): lastOffsetDelta (offset 23, 4 bytes), producerId (43, 8)
LAST_OFFSET_END = 27
PRODUCER_ID_END = 51
ILLEGAL_STATE = "java.lang.IllegalStateException"
INVALID_OFFSET = "org.apache.kafka.common.errors.InvalidOffsetException"
INDEX_OFFSET_OVERFLOW = "org.apache.kafka.storage.internals.log.IndexOffsetOverflowException"


def read_batch(buf, position: int, seg: CleanerSegment, buffers: IoBuffers,
               reads: SegmentReads | None = None) -> RecordBatch | None:
    """The batch at ``position`` of ``seg`` as ``buildOffsetMapForSegment`` and ``cleanInto`` read it (None: the
    segment's end). Kafka reads a buffer at a time (``MemoryRecords.readableRecords``, whose batches are
    ``ByteBufferLogInputStream``'s): a size field below 14 or a magic byte outside 0..2 throws
    ``CorruptRecordException``; a batch that runs past the segment's end (cut short, or a size field too large)
    never completes, so ``growBuffersOrFail`` grows the buffer to the topic's ``max.message.bytes`` (at least;
    ``IoBuffers``) and throws
    ``IllegalStateException`` (its size fits the buffer, or its header up to the magic byte is not all there) or
    ``CorruptRecordException`` (it is larger than the buffer and than the bytes left). No CRC is checked: a batch
    whose CRC is wrong is read, and kept or rebuilt, as any other. Kafka's exception is raised as
    ``LogCleaningException`` (the round fails; a broker marks the partition uncleanable). ``reads``: where the
    segment's reads began and the buffer then (``SegmentReads``; default: at 0, at ``ioBufferSize``), for the
    buffer as it stands when the reads reach the batch."""
    left = len(buf) - position
    if left <= 0:
        return None
    size = SIZE_FIELD.unpack_from(buf, position + LENGTH_OFFSET)[0] \
        if left >= LOG_OVERHEAD else None
    if size is not None and size < RECORD_OVERHEAD_V0:
        _damaged(seg, position, f"{CORRUPT_RECORD}: Record size {size} is less than the minimum record overhead "
                                f"({RECORD_OVERHEAD_V0})")
    if left >= HEADER_SIZE_UP_TO_MAGIC:
        magic = MAGIC_FIELD.unpack_from(buf, position + MAGIC_OFFSET)[0]
        if not 0 <= magic <= 2:
            _damaged(seg, position, f"{CORRUPT_RECORD}: Invalid magic found in record: {magic}")
        if size + LOG_OVERHEAD <= left:
            return read_batch_header(buf, position)
    # growBuffersOrFail until the buffer holds the topic's max.message.bytes (never a whole batch here), then
    # its checks on the next batch's size
    cap = (reads or SegmentReads(buffers)).capacity_at(buf, position)
    while cap < buffers.max_log_message_size:
        cap = buffers.grown(cap, buffers.max_log_message_size)
    where = f"log segment {os.path.abspath(seg.log_path)} at position {position}"
    if left < HEADER_SIZE_UP_TO_MAGIC:
        _damaged(seg, position, f"{ILLEGAL_STATE}: Could not determine next batch size for {where}")
    if size + LOG_OVERHEAD <= cap:
        _damaged(seg, position, f"{ILLEGAL_STATE}: Batch size {size + LOG_OVERHEAD} < buffer size {cap}, but not "
                                f"processed for {where}")
    _damaged(seg, position, f"{CORRUPT_RECORD}: Log segment may be corrupt, batch size {size + LOG_OVERHEAD} > "
                            f"{left} bytes left in segment for {where}")
    return None  # unreachable


def _map_batch(m: SkimpyOffsetMap, buf, batch: RecordBatch, seg: CleanerSegment, start: int, max_desired: int,
               tm: CleanedTransactionMetadata, events: list[_TxnEvent] | None) -> bool:
    """One batch of ``buildOffsetMapForSegment``: a control batch moves the transaction state, an aborted
    transaction's batch is passed over, any other's keys go into ``m`` (False: the map was full first, at a key
    from ``start`` on)."""
    try:
        _short_header(batch)
        _note(events, buf, batch)
        if batch.is_control:
            tm.on_control_batch_read(batch, _control_type(buf, batch))
        elif tm.on_batch_read(batch):  # aborted: its records are counted, not read
            count_or_null(batch)
        else:
            for record in streaming_iterator(buf, batch, KEYS):  # the map asks for keys only
                if record.key is not None and record.offset >= start:
                    if m.size >= max_desired:
                        return False
                    if record.key_error is not None:  # asked for now, as the map takes it
                        raise record.key_error
                    m.put(record.key, record.offset)
    except UnknownCompressionTypeException as e:
        _unknown_compression(seg, batch, e)
    except REFUSED_RECORDS as e:
        _refused_records(seg, batch, e)
    return True


def _unknown_compression(seg: CleanerSegment, batch: RecordBatch, e: UnknownCompressionTypeException) -> None:
    """A batch whose codec id Kafka does not know, met where Kafka's round reads its records: the round throws
    ``CompressionType.forId``'s ``IllegalArgumentException`` there. A batch the round never reads the records of
    (an aborted transaction's, while the offset map is built; one ``cleanInto`` deletes whole) is not met."""
    _damaged(seg, batch.position, f"{ILLEGAL_ARGUMENT}: {e}")


def _has_value(record) -> bool:
    """``Record.hasValue``: a v0/v1 message read by ``records.FILTER`` is asked for its value's length here."""
    if record.value_size_error is not None:
        raise record.value_size_error
    return record.value is not None


def _ask_values(kept: list) -> None:
    """A rebuild asks each kept record for its value: a v0/v1 message's value past its end throws there
    (``Record.value_error``, read by ``records.FILTER``)."""
    for r in kept:
        if r.value_error is not None:
            raise r.value_error


def _short_header(batch: RecordBatch) -> None:
    """A v2 batch shorter than its 61-byte header, met by ``buildOffsetMapForSegment``: the first field it asks for
    past the batch's end throws ``IndexOutOfBoundsException``: the last offset (``CleanedTransactionMetadata``'s
    first question), a control or transactional batch's producer id, a control batch's record count. Otherwise its
    records are opened (``streaming_iterator``: ``IllegalArgumentException``), or, aborted, counted
    (``records.count_or_null``)."""
    if batch.magic < 2 or batch.size_in_bytes >= RECORD_BATCH_OVERHEAD:
        return
    if batch.size_in_bytes < LAST_OFFSET_END or batch.is_control or (
            batch.is_transactional and batch.size_in_bytes < PRODUCER_ID_END):
        raise BufferBoundsException(INDEX_OUT_OF_BOUNDS)


def _refused_records(seg: CleanerSegment, batch: RecordBatch, e: SegdexError) -> None:
    """A batch whose records Kafka's reader refuses, met where the round reads them: a message set of the formats
    before 0.11 (``records.legacy_records``: its inner messages, a key or value past its end), a v2 batch shorter
    than its header or whose records do not fit it (``default_record``). Kafka's round throws there."""
    kafka = f"{e.kafka_class or CORRUPT_RECORD}: {e}"
    path = os.path.abspath(seg.log_path)
    raise LogCleaningException(
        f"Kafka's cleaner fails this round ({kafka}): the batch at byte {batch.position} of {path}, whose records "
        f"Kafka's reader refuses; a broker marks the partition uncleanable and leaves it dirty",
        kafka_exception=kafka, path=path, position=batch.position)


def _damaged(seg: CleanerSegment, position: int, kafka: str) -> None:
    """A damaged batch the round meets: Kafka's round throws ``kafka`` there."""
    path = os.path.abspath(seg.log_path)
    raise LogCleaningException(
        f"Kafka's cleaner fails this round ({kafka}): a damaged batch at byte {position} of {path}, served as it is "
        f"(a clean start does not re-read it); a broker marks the partition uncleanable and leaves it dirty",
        kafka_exception=kafka, path=path, position=position)


def group_next_offset(seg: CleanerSegment) -> int:
    """A group's last segment's next offset where ``cleanSegments`` asks for it: the value the load read
    (``log_segment.LogSegment.read_next_offset``), or, on a segment served as it is, what that read threw
    (``CleanerSegment.next_offset_error``), which fails the round."""
    if seg.next_offset_error is not None:
        path = os.path.abspath(seg.log_path)
        raise LogCleaningException(
            f"Kafka's cleaner fails this round ({seg.next_offset_error}): reading to the end of {path}, served as "
            f"it is (a clean start does not re-read it); a broker marks the partition uncleanable and leaves it dirty",
            kafka_exception=seg.next_offset_error, path=path)
    return seg.next_offset


def meet_damage(groups: list[list[CleanerSegment]], buffers: IoBuffers, first: SegmentReads | None = None) -> bool:
    """What ``cleanSegments`` would meet, group after group, in the segments served as they are (the only ones
    the load did not read whole): ``LogCleaningException`` where Kafka's round throws, before any group is
    written. Every other segment was read whole at the load. ``first``: how the round's first segment is read
    (``Cleaner.clean``). True where a segment holds a batch whose records throw when read: a codec id Kafka does
    not know (in a segment served as it is), or a compressed message set of the formats before 0.11 whose inner
    messages Kafka's reader refuses (which a load never opens). Whether the round reads that batch's records, and
    so throws there, is known only by cleaning up to it."""
    unreadable = False
    for group in groups:
        for i, seg in enumerate(group):
            if seg.as_is and i + 1 == len(group):
                group_next_offset(seg)
            if seg.as_is or seg.legacy:
                unreadable = _read_whole(seg, buffers, first if seg is groups[0][0] else None) or unreadable
    return unreadable


def _read_whole(seg: CleanerSegment, buffers: IoBuffers, reads: SegmentReads | None) -> bool:
    """``meet_damage``'s read of one segment: its damage raised; whether a batch's records throw when read."""
    unreadable = False
    with _open_segment(seg) as buf:
        position = 0
        while (batch := read_batch(buf, position, seg, buffers, reads)) is not None:
            position = batch.position + batch.size_in_bytes
            unreadable = unreadable or batch.compression_type not in KNOWN_CODECS
            if batch.magic < 2 and batch.compression_type and not unreadable:
                try:
                    for _ in records(buf, batch):
                        pass
                except REFUSED_RECORDS:
                    unreadable = True
    return unreadable


def _delete_horizon(buf, batch: RecordBatch) -> int | None:
    """``RecordBatch.deleteHorizonMs``: the base timestamp when attribute bit 6 is set."""
    if batch.magic < 2 or not batch.attributes & DELETE_HORIZON_FLAG_MASK:
        return None
    return TIMESTAMP_FIELD.unpack_from(buf, batch.position + BASE_TIMESTAMP_OFFSET)[0]


def _control_type(buf, batch: RecordBatch) -> str | None:
    """The control type ``CleanedTransactionMetadata.onControlBatchRead`` reads from a control batch's first
    record (None: the batch holds none). Its ``RecordBatch.iterator`` of a batch declaring no record is empty
    without a look at the compression type; any other asks ``CompressionType.forId`` first
    (``UnknownCompressionTypeException`` for a damaged codec id)."""
    if not batch.records_count:
        return None
    for_id(batch.compression_type)
    found = control_record(buf, batch)
    return found[0] if found is not None else None


def _check_batch_retention(buf, batch: RecordBatch, horizon: int | None, tm: CleanedTransactionMetadata,
                           active_producers: dict[int, LastRecord], high_watermark: int,
                           now_ms: int) -> tuple[str, bool, bool]:
    """``cleanInto``'s ``checkBatchRetention``: (BatchRetention, whether every record goes, whether it is a marker
    whose transaction's data is gone). The last batch of an active producer, and the batch ending at the high
    watermark (Kafka 4.4; 3.9 has neither that nor 4.0's batch ending the round), stay even when emptied. Its
    first question is the producer id, past the end of a v2 batch shorter than its header."""
    if batch.magic >= 2 and batch.size_in_bytes < PRODUCER_ID_END:
        raise BufferBoundsException(INDEX_OUT_OF_BOUNDS)
    if batch.is_control:
        can_discard = tm.on_control_batch_read(batch, _control_type(buf, batch))
        discard_records = can_discard and horizon is not None and horizon <= now_ms
    else:
        can_discard = tm.on_batch_read(batch)
        discard_records = can_discard
    last = active_producers.get(batch.producer_id)
    is_last_of_producer = last is not None and (
        (last.last_data_offset is not None and batch.last_offset == last.last_data_offset)
        or (last.last_data_offset is None and batch.is_control and batch.producer_epoch == last.producer_epoch))
    if (batch.has_producer_id and is_last_of_producer) or batch.next_offset == high_watermark:
        retention = RETAIN_EMPTY
    elif discard_records:
        retention = DELETE
    else:
        retention = DELETE_EMPTY
    return retention, discard_records, can_discard and batch.is_control


class Cleaner:
    """``Cleaner`` for one partition's segments (in offset order, the last one active)."""

    def __init__(self, offset_map: SkimpyOffsetMap, load_factor: float = 0.9, keep_files: bool = True,
                 io_buffer_size: int = 262_144, threads: int | None = None,
                 max_io_buffer_size: int = MAX_MESSAGE_BYTES) -> None:
        """``keep_files`` False: a plan's round, which keeps the cleaned segments' sizes, indexes and counts but
        not their ``.log`` bytes (``CleanedSegment.log`` empty), so that its memory is the indexes', not the log's.
        ``io_buffer_size``: the thread's read buffer (``CleanerConfig.thread_io_buffer_size``), and
        ``max_io_buffer_size`` the broker's ``message.max.bytes``: with the topic's ``max.message.bytes`` they
        decide how the buffer grows (``IoBuffers``), hence the chunks ``cleanInto`` appends at once
        (``_chunk_overflow``) and what a damaged batch throws (``read_batch``)."""
        self.offset_map = offset_map
        self.load_factor = load_factor
        self.keep_files = keep_files
        self.io_buffer_size = io_buffer_size
        self.max_io_buffer_size = max_io_buffer_size
        self.buffers = IoBuffers(io_buffer_size, max_io_buffer_size)  # with the round's topic limit in clean()
        self._fill: tuple[CleanerSegment, int, int] | None = None  # where the round's offset map filled
        self._first: tuple[CleanerSegment, SegmentReads] | None = None  # the round's first segment, its reads
        # threads > 1: the round split over segments and groups (``_split``), its output the one-thread round's
        self.threads = max(1, threads if threads is not None else default_threads())
        self._pool: ThreadPoolExecutor | None = None  # while a split round runs
        self._events: dict[int, list[_TxnEvent]] = {}
        # of the last round's dirty segments, those whose keys a split build read ahead in the pool and merged
        # (the rest the one-thread pass read in its turn): what the split build saved, for tests and benchmarks
        self.merged_ahead = 0

    # -- the offset map --------------------------------------------------------------------------------------

    def build_offset_map(self, segs: list[CleanerSegment], log_start_offset: int, start: int, end: int,
                         stats: CleanerStats) -> None:
        """``Cleaner.buildOffsetMap``."""
        m = self.offset_map
        m.clear()
        self._fill = None
        self.merged_ahead = 0
        dirty = _segment_range(segs, start, end)
        tm = CleanedTransactionMetadata()
        tm.add_aborted_transactions(collect_aborted_transactions(segs, log_start_offset, start, end))
        max_desired = int(m.slots * self.load_factor)
        try:
            if not (self._pool is not None and len(dirty) > 1
                    and self._split_build(dirty, start, end, max_desired, tm)):
                for i, seg in enumerate(dirty):
                    next_start = dirty[i + 1].base_offset if i + 1 < len(dirty) else end
                    if fill := self._build_for_segment(m, seg, start, next_start, max_desired, tm):
                        self._fill = fill
                        break
        except OffsetMapFullException as e:
            kafka = f"{e.kafka_class}: {e}"
            raise LogCleaningException(
                f"Kafka's cleaner fails this round ({kafka}): its offset map of {m.slots} slots filled before "
                f"log.cleaner.io.buffer.load.factor={self.load_factor} of them were taken; a broker marks the "
                f"partition uncleanable and leaves it dirty", kafka_exception=kafka) from None
        stats.map_keys = m.size

    def _split_build(self, dirty: list[CleanerSegment], start: int, end: int, max_desired: int,
                     tm: CleanedTransactionMetadata) -> bool:
        """The offset map built segment by segment in the pool, each into a partial map of its own from the
        transaction state the one-thread pass has at its start (``_txn_states``), then merged in offset order (a
        later offset wins) while the map stays below ``max_desired`` keys. A segment whose merge would reach it
        (or whose partial map filled) is read again into the map itself, as the one-thread pass reads it: the
        round ends exactly where that pass's ends; one whose partial build threw too (the pass throws there if it
        gets there). False, nothing built, where a batch could not be read for the states (the one-thread pass
        meets it in its turn)."""
        m = self.offset_map
        positions = [seg.offset_index.lookup(start)[1] for seg in dirty]
        states = self._build_states(dirty, positions, tm)
        if states is None:
            return False
        found: dict[int, list[_TxnEvent]] = {}  # the batches each partial build read (the cleaning's states need)

        # the partial maps in flight hold at most max_desired keys together (the map's own size again, whatever
        # the threads); a segment with more keys than its share is read again into the map itself
        budget = max(1, max_desired // (self.threads + 1))

        def partial(i: int) -> tuple[SkimpyOffsetMap, bool]:
            part, events = m.fresh(), []
            next_start = dirty[i + 1].base_offset if i + 1 < len(dirty) else end
            full = self._build_for_segment(part, dirty[i], start, next_start, budget, copy.deepcopy(states[i]),
                                           events)
            if not full and positions[i] == 0:
                found[i] = events
            return part, full

        futures = deque(self._pool.submit(partial, i) for i in range(min(len(dirty), self.threads + 1)))
        submitted = len(futures)
        try:
            for i, seg in enumerate(dirty):
                try:
                    part, full = futures.popleft().result()
                except Exception:  # noqa: BLE001 - read again below, in the pass's turn
                    part, full = None, True
                if submitted < len(dirty):
                    futures.append(self._pool.submit(partial, submitted))
                    submitted += 1
                if not full and m.merge(part, min(max_desired, m.slots)):
                    if i in found:
                        self._events[id(seg)] = found[i]
                    self.merged_ahead += 1
                    continue
                next_start = dirty[i + 1].base_offset if i + 1 < len(dirty) else end
                if fill := self._build_for_segment(m, seg, start, next_start, max_desired, copy.deepcopy(states[i])):
                    self._fill = fill
                    break
        finally:
            _drain(futures)
        return True

    def _build_states(self, dirty: list[CleanerSegment], positions: list[int],
                      tm: CleanedTransactionMetadata) -> list[CleanedTransactionMetadata] | None:
        """The transaction state the one-thread pass has at each dirty segment's start (None: a batch could not be
        read)."""
        if not tm.pending():  # no aborted transaction in the range: no batch is aborted data, whatever the state
            return [tm] * len(dirty)
        try:
            events = list(self._pool.map(_txn_events, dirty, positions))
        except (SegdexError, ValueError, OSError):
            return None
        states = []
        for seg, position, seg_events in zip(dirty, positions, events, strict=True):
            states.append(copy.deepcopy(tm))
            _replay(tm, seg_events)
            if position == 0:
                self._events[id(seg)] = seg_events
        return states

    def _build_for_segment(self, m: SkimpyOffsetMap, seg: CleanerSegment, start: int, next_start: int,
                           max_desired: int, tm: CleanedTransactionMetadata,
                           events: list[_TxnEvent] | None = None) -> tuple[CleanerSegment, int, int] | None:
        """``Cleaner.buildOffsetMapForSegment`` into ``m``. When the map is full: (the segment, where its reads
        began, the batch it filled at: ``SegmentReads.fill``), else None. ``events``: the transactional and
        control batches read, appended."""
        position = seg.offset_index.lookup(start)[1]
        reads = SegmentReads(self.buffers, position)
        with _open_segment(seg) as buf:
            while True:
                if m.native is not None:  # plain batches in the kernel, up to the next one for Python
                    # at most ``slots`` keys: a load factor above 1 leaves the put that meets a full map to Python's
                    # path, which throws Kafka's exception (``SkimpyOffsetMap.put``)
                    status, position = m.native.build(buf, position, start, min(max_desired, m.slots))
                    if status == _FULL and m.size >= max_desired:
                        return seg, reads.start, position
                    if status == _END and position >= len(buf):
                        break
                batch = read_batch(buf, position, seg, self.buffers, reads)
                if batch is None:
                    break
                if not _map_batch(m, buf, batch, seg, start, max_desired, tm, events):
                    return seg, reads.start, batch.position
                if batch.last_offset >= start:
                    m.update_latest_offset(batch.last_offset)
                position = batch.position + batch.size_in_bytes
        m.update_latest_offset(next_start - 1)
        return None

    # -- grouping ----------------------------------------------------------------------------------------------

    @staticmethod
    def group_segments_by_size(segs: list[CleanerSegment], max_size: int, max_index_size: int,
                               first_uncleanable_offset: int) -> list[list[CleanerSegment]]:
        """``Cleaner.groupSegmentsBySize``."""
        groups = []
        i = 0
        while i < len(segs):
            group = [segs[i]]
            log_size = group[0].size
            index_size = len(group[0].offset_index) * 8
            time_size = group[0].time_index_entries * 12
            i += 1
            while i < len(segs):
                nxt = segs[i]
                last_estimate = segs[i + 1].base_offset - 1 if i + 1 < len(segs) else first_uncleanable_offset - 1
                if not (log_size + nxt.size <= max_size
                        and index_size + len(nxt.offset_index) * 8 <= max_index_size
                        and time_size + nxt.time_index_entries * 12 <= max_index_size
                        and (nxt.size == 0 or last_estimate - group[0].base_offset <= INT32_MAX)):
                    break
                group.append(nxt)
                log_size += nxt.size
                index_size += len(nxt.offset_index) * 8
                time_size += nxt.time_index_entries * 12
                i += 1
            groups.append(group)
        return groups

    # -- a round -----------------------------------------------------------------------------------------------

    def clean(self, segs: list[CleanerSegment], to_clean: LogToClean, log_start_offset: int, high_watermark: int,
              active_producers: dict[int, LastRecord], config, now_ms: int,
              writer: GroupWriter | None = None) -> CleaningRound:
        """``Cleaner.doClean``: one round at the clock ``now_ms`` (``config``: the topic's ``LogConfig``). With a
        ``writer``, each group is written (and swapped in) as it is cleaned, as Kafka's round does, and the round
        keeps no group's bytes: its memory is the offset map's, the I/O buffers' and one group's indexes."""
        if self.threads > 1 and self._pool is None:
            with ThreadPoolExecutor(self.threads, thread_name_prefix="segdex-clean") as pool:
                self._pool = pool
                self._events = {}  # id(segment): its transactional and control batches, where known
                try:
                    return self.clean(segs, to_clean, log_start_offset, high_watermark, active_producers, config,
                                      now_ms, writer)
                finally:
                    self._pool, self._events = None, {}
        stats = CleanerStats()
        self.buffers = IoBuffers(self.io_buffer_size, self.max_io_buffer_size, config.max_message_bytes)
        before_dirty = _segment_range(segs, 0, to_clean.first_dirty_offset)
        legacy_horizon = before_dirty[-1].mtime_ms - config.delete_retention_ms if before_dirty else 0
        upper = to_clean.first_uncleanable_offset
        self.build_offset_map(segs, log_start_offset, to_clean.first_dirty_offset, upper, stats)
        end_offset = self.offset_map.latest_offset + 1
        groups = self.group_segments_by_size(_segment_range(segs, 0, end_offset), config.segment_bytes,
                                             config.segment_index_bytes, upper)
        # the round's first cleanInto reads with the buffer as a build that filled the map left it
        self._first = (groups[0][0], SegmentReads(self.buffers, 0, self._fill)) if self._fill and groups else None
        if writer is not None:
            if writer.writes_partition:  # where Kafka's round throws on a damaged batch, nothing is written
                self._meet_damage_in_turn(segs, groups, log_start_offset, active_producers, config, now_ms,
                                          legacy_horizon, high_watermark)
            writer.begin(groups, end_offset)
        states = self._group_states(segs, groups, log_start_offset) if self._pool is not None else None
        if states is not None:
            cleaned = self._split_clean(segs, groups, states, log_start_offset, active_producers, config, now_ms,
                                        legacy_horizon, high_watermark, stats, writer)
            return CleaningRound(end_offset, cleaned, stats)
        return CleaningRound(end_offset, self._clean_in_turn(segs, groups, log_start_offset, active_producers, config,
                                                             now_ms, legacy_horizon, high_watermark, stats, writer),
                             stats)

    def _clean_in_turn(self, segs: list[CleanerSegment], groups: list[list[CleanerSegment]], log_start_offset: int,
                       active_producers: dict[int, LastRecord], config, now_ms: int, legacy_horizon: int,
                       high_watermark: int, stats: CleanerStats, writer: GroupWriter | None) -> list[CleanedSegment]:
        """The round's groups cleaned one after the other on this thread (``doClean``'s loop over
        ``cleanSegments``), each given to ``writer`` as it is clean."""
        tm = CleanedTransactionMetadata()
        cleaned = []
        for group in groups:
            sink = writer.open(group) if writer is not None else None
            try:
                done = self._clean_segments(segs, group, log_start_offset, active_producers, config, now_ms, tm,
                                            legacy_horizon, high_watermark, stats, sink)
            except IndexFullException as e:
                if writer is not None:
                    writer.abort()
                raise _index_full(e, group, config.segment_index_bytes) from None
            except BaseException:
                if writer is not None:
                    writer.abort()
                raise
            cleaned.append(writer.commit(done, group) if writer is not None else done if self.keep_files
                           else without_bytes(done))
        return cleaned

    def _meet_damage_in_turn(self, segs: list[CleanerSegment], groups: list[list[CleanerSegment]],
                             log_start_offset: int, active_producers: dict[int, LastRecord], config, now_ms: int,
                             legacy_horizon: int, high_watermark: int) -> None:
        """``meet_damage`` before an applied round's first write; where it finds a damaged batch, the groups are
        cleaned in turn into nothing (``os.devnull``) up to it, so that what is raised is what Kafka's round throws
        first: an earlier group's failure (its index outgrown, an offset that overflows it) before the damage.
        Where it finds a batch whose records throw when read (a codec id Kafka does not know, a refused message set
        of the formats before 0.11), the whole round is cleaned into nothing first: it raises where Kafka's round
        reads that batch's records."""
        try:
            unreadable = meet_damage(groups, self.buffers, self._first[1] if self._first is not None else None)
        except LogCleaningException as damage:
            self._clean_into_nothing(segs, groups, log_start_offset, active_producers, config, now_ms,
                                     legacy_horizon, high_watermark)
            raise damage from None
        if unreadable:
            self._clean_into_nothing(segs, groups, log_start_offset, active_producers, config, now_ms,
                                     legacy_horizon, high_watermark)

    def _clean_into_nothing(self, segs: list[CleanerSegment], groups: list[list[CleanerSegment]],
                            log_start_offset: int, active_producers: dict[int, LastRecord], config, now_ms: int,
                            legacy_horizon: int, high_watermark: int) -> None:
        """The round's groups cleaned in turn into ``os.devnull``: what it raises, nothing written."""
        with open(os.devnull, "wb") as sink:
            self._clean_in_turn(segs, groups, log_start_offset, active_producers, config, now_ms, legacy_horizon,
                                high_watermark, CleanerStats(), _Discarding(sink))

    def _group_states(self, segs: list[CleanerSegment], groups: list[list[CleanerSegment]],
                      log_start_offset: int) -> list[CleanedTransactionMetadata] | None:
        """The transaction state the one-thread pass has at each group's start (the aborted transactions it was
        given for the segments before, then their transactional and control batches), their batches found in the
        pool; None where a batch could not be read (the one-thread pass meets it in its turn)."""
        events = self._events
        todo = [seg for group in groups for seg in group if id(seg) not in events]
        try:
            events.update(zip((id(seg) for seg in todo), self._pool.map(_txn_events, todo), strict=True))
        except (SegdexError, ValueError, OSError):
            return None
        tm = CleanedTransactionMetadata()
        states = []
        for group in groups:
            states.append(copy.deepcopy(tm))
            for i, seg in enumerate(group):
                seg_upper = group[i + 1].base_offset if i + 1 < len(group) else seg.next_offset
                tm.add_aborted_transactions(collect_aborted_transactions(segs, log_start_offset, seg.base_offset,
                                                                         seg_upper))
                _replay(tm, events[id(seg)])
        return states

    def _split_clean(self, segs: list[CleanerSegment], groups: list[list[CleanerSegment]],
                     states: list[CleanedTransactionMetadata], log_start_offset: int,
                     active_producers: dict[int, LastRecord], config, now_ms: int, legacy_horizon: int,
                     high_watermark: int, stats: CleanerStats, writer: GroupWriter | None) -> list[CleanedSegment]:
        """The groups cleaned in the pool, each from its transaction state (``_group_states``) with the one
        (read-only) offset map, at most ``threads`` at a time; each opened, taken and committed to ``writer``
        strictly in group order, as the one-thread round does it: a group's ``open`` (its originals kept, its
        temporary created) comes in its turn, after the group before it is committed (swapped in). A group cleaned
        ahead of its turn streams into memory (``_HeldSink``) until then, at most ``HELD_BYTES`` of them (by their
        sources' sizes), beside the one being written. A group that throws is raised in its turn, after the
        groups before it are committed; the groups after it are dropped, never opened."""
        streams = writer is not None and writer.streams()
        pending: deque = deque()  # (group, future, its stats, its sink), in group order
        cleaned: list[CleanedSegment] = []
        nxt = 0

        def submit(sink: _HeldSink | None) -> None:
            nonlocal nxt
            group, part = groups[nxt], CleanerStats()
            pending.append((group, self._pool.submit(self._clean_segments, segs, group, log_start_offset,
                                                     active_producers, config, now_ms, states[nxt], legacy_horizon,
                                                     high_watermark, part, sink), part, sink))
            nxt += 1

        def fill() -> None:  # the groups after the one being written, cleaned ahead while they fit
            while nxt < len(groups) and len(pending) < self.threads:
                held = sum(_source_bytes(g) for g, _, _, sink in pending if not sink.attached) if streams else 0
                if streams and held + _source_bytes(groups[nxt]) > HELD_BYTES:
                    return
                submit(_HeldSink() if streams else None)

        try:
            while pending or nxt < len(groups):
                if pending:  # cleaned ahead: its file opened in its turn, what it holds written there
                    group, future, part, sink = pending[0]
                    file = writer.open(group) if writer is not None else None
                    if sink is not None:
                        sink.attach(file)
                else:  # opened in its turn, then cleaned straight into its file
                    file = writer.open(groups[nxt]) if writer is not None else None
                    sink = _HeldSink() if streams else None
                    if sink is not None:
                        sink.attach(file)
                    submit(sink)
                    group, future, part, sink = pending[0]
                fill()
                try:
                    done = future.result()
                except IndexFullException as e:
                    raise _index_full(e, group, config.segment_index_bytes) from None
                pending.popleft()
                fill()  # the pool kept busy while this group is committed
                stats.add(part)
                cleaned.append(writer.commit(done, group) if writer is not None else done if self.keep_files
                               else without_bytes(done))
        except BaseException:
            _drain([future for _, future, _, _ in pending])
            if writer is not None:
                writer.abort()
            raise
        return cleaned

    def _clean_segments(self, segs: list[CleanerSegment], group: list[CleanerSegment], log_start_offset: int,
                        active_producers: dict[int, LastRecord], config, now_ms: int,
                        tm: CleanedTransactionMetadata, legacy_horizon: int, high_watermark: int,
                        stats: CleanerStats, sink=None) -> CleanedSegment:
        """``Cleaner.cleanSegments``: one group into one segment (its ``.log`` bytes into ``sink`` when given)."""
        base = group[0].base_offset
        out = _CleanedLog(base, config.index_interval_bytes, config.segment_index_bytes,
                          self.keep_files and sink is None, sink, os.path.dirname(os.path.abspath(group[0].log_path)))
        tm.cleaned_index = out.txn_index
        for i, seg in enumerate(group):
            seg_upper = group[i + 1].base_offset if i + 1 < len(group) else group_next_offset(seg)
            tm.add_aborted_transactions(collect_aborted_transactions(segs, log_start_offset, seg.base_offset,
                                                                     seg_upper))
            retain_legacy_deletes = seg.mtime_ms > legacy_horizon
            try:
                self._clean_into(seg, out, retain_legacy_deletes, config.delete_retention_ms, tm, active_producers,
                                 high_watermark, now_ms, stats)
            except LogSegmentOffsetOverflowException as e:
                raise _offset_overflow(e, seg, base) from None
        out.become_inactive()
        stats.bytes_written += out.size
        txn = out.txn_index.to_bytes() if len(out.txn_index) else None
        return CleanedSegment(base, bytes(out.log) if out.log is not None else b"", out.offset_index.to_bytes(),
                              out.time_index.to_bytes(), txn, group[-1].mtime_ms, [s.base_offset for s in group],
                              out.size)

    def _clean_into(self, seg: CleanerSegment, out: _CleanedLog, retain_legacy_deletes: bool,
                    delete_retention_ms: int, tm: CleanedTransactionMetadata,
                    active_producers: dict[int, LastRecord], high_watermark: int, now_ms: int,
                    stats: CleanerStats) -> None:
        """``Cleaner.cleanInto`` with ``MemoryRecords.filterTo`` (Kafka 4.x)."""
        m = self.offset_map
        out.kept.clear()
        out.written.clear()
        first = self._first[1] if self._first is not None and seg is self._first[0] else None
        capacity = first and first.capacity
        with _open_segment(seg) as buf:
            position = 0
            while not _full_read_done(out, buf, self.buffers, capacity, position):
                if m.native is not None:  # plain batches in the kernel: dropped there, or one to copy or for Python
                    status, position, size, *counts, rebuilt, max_offset = m.native.filter(
                        buf, position, now_ms, high_watermark, delete_retention_ms)
                    stats.add_counts(*counts)
                    if status == _END and position >= len(buf) or _full_read_done(out, buf, self.buffers, capacity,
                                                                                  position):
                        break
                    if status in (_COPY, _REBUILT):
                        out.append(rebuilt if status == _REBUILT else bytes(buf[position:position + size]), position,
                                   max_offset)
                        stats.batches_rebuilt += status == _REBUILT
                        position += size
                        continue
                try:
                    batch = read_batch(buf, position, seg, self.buffers, first)
                except LogCleaningException:  # the buffers appended before it check their offsets first
                    _overflow_first(buf, out, self.buffers, capacity, damaged_at=position)
                    raise
                if batch is None:
                    break
                position = batch.position + batch.size_in_bytes
                try:
                    self._clean_batch(buf, batch, out, retain_legacy_deletes, delete_retention_ms, tm,
                                      active_producers, high_watermark, now_ms, stats)
                except (LogCleaningException, UnknownCompressionTypeException, *REFUSED_RECORDS) as e:
                    # thrown while its read is filtered: the reads before are appended
                    _overflow_first(buf, out, self.buffers, capacity, filtered_at=batch.position)
                    if isinstance(e, UnknownCompressionTypeException):
                        _unknown_compression(seg, batch, e)
                    if not isinstance(e, LogCleaningException):
                        _refused_records(seg, batch, e)
                    raise
            _overflow_first(buf, out, self.buffers, capacity)
            if out.index_error is not None:
                raise out.index_error[0]

    def _clean_batch(self, buf, batch: RecordBatch, out: _CleanedLog, retain_legacy_deletes: bool,
                     delete_retention_ms: int, tm: CleanedTransactionMetadata,
                     active_producers: dict[int, LastRecord], high_watermark: int, now_ms: int,
                     stats: CleanerStats) -> None:
        """One batch of ``cleanInto``: dropped, copied, rebuilt or left empty."""
        m = self.offset_map
        stats.bytes_read += batch.size_in_bytes
        horizon_now = _delete_horizon(buf, batch)
        retention, discard_records, contains_marker_for_empty_txn = _check_batch_retention(
            buf, batch, horizon_now, tm, active_producers, high_watermark, now_ms)
        try:
            recs = list(streaming_iterator(buf, batch, FILTER))
        except (UnknownCompressionTypeException, *REFUSED_RECORDS):
            if retention != DELETE:  # filterTo's filterBatch reads the records of every batch it does not delete
                raise
            recs = []  # a deleted batch's records are never read
        stats.records_read += len(recs)
        if discard_records and not batch.is_control:
            stats.aborted_removed += len(recs)
        if retention == DELETE:
            stats.tombstones_removed += sum(1 for r in recs if r.value is None and not batch.is_control)
            return
        write_original = batch.magic >= 2
        kept = []
        has_tombstone = False
        for r in recs:
            if self._should_retain(batch, r, discard_records, horizon_now, retain_legacy_deletes, now_ms,
                                   m):
                kept.append(r)
                has_tombstone = has_tombstone or not _has_value(r)
            else:
                write_original = False
                stats.tombstones_removed += r.value is None and not batch.is_control
        stats.records_kept += len(kept)
        if kept:
            need_horizon = (has_tombstone or contains_marker_for_empty_txn) and horizon_now is None
            if write_original and not need_horizon:
                out.append(bytes(buf[batch.position:batch.position + batch.size_in_bytes]), batch.position)
            else:
                horizon = now_ms + delete_retention_ms if need_horizon else (
                    horizon_now if horizon_now is not None else NO_TIMESTAMP)
                log_append = batch.max_timestamp if batch.attributes & TIMESTAMP_TYPE_MASK else NO_TIMESTAMP
                # a v2 batch keeps its offsets (its producer's last sequence); a v0/v1 message set becomes a v2
                # batch of its kept records' offsets (buildRetainedRecordsInto)
                first, last = ((batch.base_offset, batch.last_offset) if batch.magic >= 2
                               else (kept[0].offset, max(r.offset for r in kept)))
                _ask_values(kept)
                out.append(rebuild_batch(first, last, batch.attributes,
                                         batch.partition_leader_epoch, batch.producer_id,
                                         batch.producer_epoch, batch.base_sequence, kept, log_append,
                                         horizon), batch.position, max(r.offset for r in kept))
                stats.batches_rebuilt += 1
                if batch.compression_type:
                    codec = batch.compression_type
                    stats.compressed_rebuilt[codec] = stats.compressed_rebuilt.get(codec, 0) + 1
            stats.tombstones_kept += sum(1 for r in kept if r.value is None)
        elif retention == RETAIN_EMPTY:
            if batch.magic < 2:  # MemoryRecords.filterTo: a v0/v1 message set of no record kept, ending the range
                raise LogCleaningException(
                    f"Kafka's cleaner fails this round (java.lang.IllegalStateException: Empty batches are only "
                    f"supported for magic v2 and above): the v{batch.magic} message set at offset {batch.last_offset} "
                    f"ends at the high watermark and keeps no record; a broker marks the partition uncleanable and "
                    f"leaves it dirty", kafka_exception="java.lang.IllegalStateException: Empty batches are only "
                    "supported for magic v2 and above")
            stats.empty_batches += 1
            out.append(empty_header(batch.base_offset, batch.last_offset, batch.attributes,
                                    batch.partition_leader_epoch, batch.max_timestamp, batch.producer_id,
                                    batch.producer_epoch, batch.base_sequence), batch.position)

    @staticmethod
    def _should_retain(batch: RecordBatch, record, discard_records: bool, horizon: int | None,
                       retain_legacy_deletes: bool, now_ms: int, m: SkimpyOffsetMap) -> bool:
        """``LogCleaner``'s ``RecordFilter.shouldRetainRecord`` and ``Cleaner.shouldRetainRecord``."""
        if discard_records:
            return False
        if batch.is_control:
            return True
        if record.offset > m.latest_offset:
            return True
        if record.key_error is not None:  # hasKey, key: asked for here
            raise record.key_error
        if record.key is None:
            return False
        latest = record.offset >= m.get(record.key)
        if batch.magic >= 2:
            retain_deletes = horizon is None or now_ms < horizon
        else:
            retain_deletes = retain_legacy_deletes
        has_value = _has_value(record)  # asked whether the key is the latest or not
        return latest and (has_value or retain_deletes)


class _CleanedLog:
    """The ``.cleaned`` segment being written: its bytes and indexes as ``LogSegment.append`` builds them, batch
    by batch (an offset entry, keyed by the batch's last offset at its start, once more than
    ``index.interval.bytes`` were written since the last). ``directory``: where its files are (the paths in
    Kafka's index messages)."""

    def __init__(self, base_offset: int, index_interval_bytes: int, max_index_size: int, keep: bool, sink,
                 directory: str) -> None:
        self.base_offset = base_offset
        self.interval = index_interval_bytes
        self.log: bytearray | None = bytearray() if keep else None  # None: streamed to ``sink``, or only counted
        self.sink = sink  # a binary file the bytes are written to as they are appended
        self.directory = directory
        self.size = 0
        self.offset_index = OffsetIndex(base_offset, max_index_size)
        self.time_index = TimeIndex(base_offset, max_index_size)
        self.txn_index = TransactionIndex(base_offset)
        self.max_timestamp = NO_TIMESTAMP
        self.offset_of_max_timestamp = -1
        self.bytes_since_last_index_entry = 0
        self.kept: list[tuple[int, int]] = []  # of the source segment: each kept batch's position there, max offset
        self.written: list[tuple[int, int]] = []  # and the bytes it was written as (``_chunk_starts``)
        # an index append that threw (the index full: ``IndexFullException``; an offset not above the last entry's
        # or below the base: Kafka's exception as ``LogCleaningException``), and the source position of its batch:
        # raised by cleanInto once that batch's read is filtered and its offsets checked, as Kafka's
        # LogSegment.append meets it after ``filterTo`` (no index entry is appended after it)
        self.index_error: tuple[IndexFullException | LogCleaningException, int] | None = None
        self.full_read: _FullRead | None = None  # the source segment's read holding that batch

    def append(self, batch_bytes: bytes, source_position: int, max_offset: int | None = None) -> None:
        """One kept batch (read from ``source_position`` of the source segment; ``max_offset``: its largest kept
        record's offset, ``filterTo``'s ``maxOffset``, when not its last offset)."""
        batch = read_batch_header(batch_bytes, 0)
        self.kept.append((source_position, batch.last_offset if max_offset is None else max_offset))
        self.written.append((source_position, len(batch_bytes)))
        position = self.size
        if self.log is not None:
            self.log += batch_bytes
        if self.sink is not None:
            self.sink.write(batch_bytes)
        self.size += len(batch_bytes)
        if batch.max_timestamp > self.max_timestamp:
            self.max_timestamp, self.offset_of_max_timestamp = batch.max_timestamp, batch.last_offset
        if self.bytes_since_last_index_entry > self.interval and self.index_error is None:
            try:
                self._index_entry(batch.last_offset, position)
            except (IndexFullException, LogCleaningException) as e:
                self.index_error = (e, source_position)
            self.bytes_since_last_index_entry = 0
        self.bytes_since_last_index_entry += len(batch_bytes)

    def _index_entry(self, offset: int, position: int) -> None:
        """The index entries of one batch, as ``LogSegment.append`` makes them: ``OffsetIndex.append``, then
        ``TimeIndex.maybeAppend``.
        A full index raises ``IndexFullException``; an offset Kafka's index refuses (not above its last entry's:
        ``InvalidOffsetException``; below the base offset: ``IndexOffsetOverflowException``) raises
        ``LogCleaningException`` with Kafka's exception, as Kafka's message gives it."""
        index, path = self.offset_index, self._path(".index")
        try:
            index.append(offset, position)
        except InvalidOffsetException:
            raise self._failed(f"{INVALID_OFFSET}: Attempt to append an offset {offset} to position {len(index)} no "
                               f"larger than the last offset appended ({index.last_offset}) to {path}") from None
        except IndexOffsetOverflowException:
            raise self._failed(f"{INDEX_OFFSET_OVERFLOW}: Integer overflow for offset: {offset} ({path})") from None
        self._time_entry()

    def _time_entry(self, skip_full_check: bool = False) -> None:
        """The time index's entry of the largest timestamp so far and its batch's last offset
        (``time_index.maybe_append``, Kafka's ``TimeIndex.maybeAppend``; see ``_index_entry``)."""
        index, path = self.time_index, self._path(".timeindex")
        timestamp, offset = self.max_timestamp, self.offset_of_max_timestamp
        try:
            index.maybe_append(timestamp, offset, skip_full_check=skip_full_check)
        except InvalidOffsetException:
            last_timestamp, last_offset = index.last_entry()
            raise self._failed(
                f"{INVALID_OFFSET}: Attempt to append an offset ({offset}) to slot {len(index)} no larger than the "
                f"last offset appended ({last_offset}) to {path}" if offset < last_offset else
                f"{ILLEGAL_STATE}: Attempt to append a timestamp ({timestamp}) to slot {len(index)} no larger than "
                f"the last timestamp appended ({last_timestamp}) to {path}") from None
        except IndexOffsetOverflowException:
            raise self._failed(f"{INDEX_OFFSET_OVERFLOW}: Integer overflow for offset: {offset} ({path})") from None

    def _path(self, suffix: str) -> str:
        """The cleaned segment's index file as Kafka names it (``LogSegment.open`` with the ``.cleaned`` suffix)."""
        return os.path.join(self.directory, segment_file_name(self.base_offset, suffix + ".cleaned"))

    def _failed(self, kafka: str) -> LogCleaningException:
        return LogCleaningException(
            f"Kafka's cleaner fails this round ({kafka}): an offset its cleaned segment {self.base_offset}'s index "
            f"refuses (a batch's offset rewritten below the one before it); a broker marks the partition uncleanable "
            f"and leaves it dirty", kafka_exception=kafka)

    def overflows(self) -> bool:
        """Whether some kept batch's offset does not fit this segment (``_chunk_overflow`` then says which
        buffer Kafka's append checks it in)."""
        return any(not 0 <= offset - self.base_offset <= INT32_MAX for _, offset in self.kept)

    def become_inactive(self) -> None:
        """``LogSegment.onBecomeInactiveSegment``: the time index's last entry."""
        if self.offset_of_max_timestamp >= 0:
            self._time_entry(skip_full_check=True)
