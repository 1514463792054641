"""What a broker's next start does to one partition directory as it is: Kafka's ``LogLoader`` rules, predicted.

Kafka's load of a partition (``LogLoader.load``), in the order it runs:

1. ``loadSegmentFiles``: each segment is opened in offset order. One whose ``.index`` is missing, or whose
   ``.txnindex`` fails ``TransactionIndex.sanityCheck`` (an aborted transaction ending below the segment's base
   offset), is recovered there and then (``recoverSegment``). A truncation found there cuts that segment only; its
   later segments stay (an offset gap). An exception there (an aborted-transaction entry of an unknown version:
   any but 0 in Kafka 4.x, whose rule is followed here, a first byte above 0 in 3.x; an offset that goes
   backwards) fails the whole load. Offset and time index contents are not checked.
2. ``recoverLog``, only without ``.kafka_cleanshutdown``: every segment from the floor segment of the recovery
   point (``recovery-point-offset-checkpoint``, 0 when absent) to the last is recovered again, in order. The first
   one that truncates (or throws ``InvalidOffsetException``: emptied to its base offset) ends the pass and every
   later segment is deleted.
3. ``deleteSegmentsIfLogStartGreaterThanLogEnd``: a log end offset below the checkpointed log start offset
   deletes every segment.
4. The log end offset is the last segment's ``readNextOffset``: after recovery the next offset of its valid part;
   a segment not recovered (a clean start) is read as it is, its offset index's last entry then batch sizes
   chained to the end of the file (``FileLogInputStream``: no CRC check, a size field below 14 fails the load).
5. Producer state (``UnifiedLog.rebuildProducerState``, record version 2 only): each ``recoverSegment`` first
   replays the segments from the latest producer snapshot up to the one it recovers, and the load ends by
   replaying from the latest snapshot to the log end (skipped on a clean start without any snapshot). Those
   segments are read as they are, by batch size: one not recovered with a size field below 14 (a zero-filled
   tail) fails the load even where recovery itself never looks. Snapshots are taken at each recovered segment's
   base and end offsets.

With the marker, a corrupt log tail or a wrong offset/time index is served as it is: the preview says so.
``KafkaOracle load`` (the real ``UnifiedLog`` creation) judges these rules in the tests.

Before any of that, names (``indexcore.log.unloadable``): a directory of the log dir or a file of any partition
whose name the broker's start throws on means no partition loads at all (the broker exits), and a ``.log`` name
it misreads adds an empty segment, which can set the log end offset. A real broker's starts judge these.
"""

from __future__ import annotations

import bisect
import os
from dataclasses import dataclass, field

from segdex.indexcore.errors import CorruptRecordException
from segdex.indexcore.index.transaction_index import ABORTED_TXN, CURRENT_VERSION
from segdex.indexcore.log.layout import TXN_INDEX_FILE_SUFFIX, index_paths
from segdex.indexcore.log.log_loader import snapshot_files_in
from segdex.indexcore.log.log_segment import LogSegment, RecoveryResult
from segdex.indexcore.log.producer_snapshot import remove_stray_snapshots, snapshot_offset, snapshot_to_load
from segdex.indexcore.log.unloadable import Unloadable, fail_notes
from segdex.indexcore.record.file_records import batches, open_log

ACTION_NONE = "none"  # nothing re-read: the broker serves the files as they are
ACTION_RECOVER = "recover"  # segments re-read, nothing lost
ACTION_TRUNCATE = "truncate"  # bytes cut or segments deleted
ACTION_FAIL = "fail"  # the load throws: the broker takes the whole log dir offline
ACTIONS = (ACTION_NONE, ACTION_RECOVER, ACTION_TRUNCATE, ACTION_FAIL)

@dataclass(frozen=True)
class SegmentOnDisk:
    """One segment as the broker's start finds it: its ``.log`` recovered offline (``result``: what Kafka's
    ``LogSegment.recover`` would find) and whether its ``.index`` exists."""

    base_offset: int
    log_path: str
    result: RecoveryResult
    index_present: bool


@dataclass
class StartupPreview:
    """The outcome of the broker's next load of one partition."""

    action: str
    recovered: list[int] = field(default_factory=list)  # base offsets of the segments re-read, in order
    deleted: list[int] = field(default_factory=list)  # base offsets of the segments deleted
    truncated: dict[int, int] = field(default_factory=dict)  # base offset -> bytes cut from its .log
    lost_bytes: int = 0  # .log bytes gone: cut tails and deleted segments
    log_end_offset: int | None = None
    lost_offsets: tuple[int, int | None] | None = None  # first and last offset gone (None: not known)
    notes: list[str] = field(default_factory=list)

    @property
    def loses_data(self) -> bool:
        return self.lost_bytes > 0


def transaction_index_at_load(path: str, base_offset: int) -> tuple[str, str] | None:
    """``TransactionIndex.sanityCheck`` on a ``.txnindex`` as the load opens it: None when it passes, else
    ("corrupt", why) (the segment is recovered) or ("fail", why) (an exception the load does not catch).
    Whole 34-byte entries only, in order; a partial last entry is not read."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    whole = len(data) // ABORTED_TXN.size * ABORTED_TXN.size
    for version, _pid, _first, last, _lso in ABORTED_TXN.iter_unpack(data[:whole]):
        if version != CURRENT_VERSION:  # Kafka 4.x; 3.x reads the first byte only and fails on it above 0
            return "fail", f"unexpected aborted transaction version {version} in {os.path.basename(path)}"
        if last < base_offset:
            return "corrupt", (f"aborted transaction ending at {last} below the base offset {base_offset} in "
                               f"{os.path.basename(path)}")
    return None


def _floor_index(bases: list[int], offset: int) -> int:
    """Index of the segment ``LogSegments.values(offset, ...)`` starts at: the floor segment, else the first."""
    return max(bisect.bisect_right(bases, offset) - 1, 0)


class LoadFailed(Exception):
    """The load throws: the broker takes the log dir offline."""


class _Load:
    """One simulated ``LogLoader.load``: the phases as methods named after Kafka's."""

    def __init__(self, segments: list[SegmentOnDisk], clean_shutdown: bool, log_start_offset: int,
                 snapshots: set[int], producer_state: bool) -> None:
        self.segments = segments
        self.clean_shutdown = clean_shutdown
        self.log_start_offset = log_start_offset
        self.snapshots = set(snapshots)  # offsets of the producer snapshot files, as the load goes
        self.producer_state = producer_state  # record version 2: producer state is rebuilt from the log
        self.size = {s.base_offset: s.result.size_bytes for s in segments}
        self.out = StartupPreview(ACTION_NONE)
        self.remaining = list(segments)
        self.readable: dict[int, str | None] = {}

    def _read_as_is(self, seg: SegmentOnDisk) -> None:
        """A segment not recovered, read by batch size as the producer-state replay reads it."""
        if seg.result.error is None and seg.result.valid_bytes == seg.result.size_bytes:
            return  # every batch valid to the end: its sizes chain too (verify read it already)
        if seg.base_offset not in self.readable:
            why = None
            try:
                with open_log(seg.log_path) as buf:
                    for _ in batches(buf):
                        pass
            except CorruptRecordException as e:
                why = f"{os.path.basename(seg.log_path)} read for producer state: {e}"
            self.readable[seg.base_offset] = why
        if self.readable[seg.base_offset]:
            raise LoadFailed(self.readable[seg.base_offset])

    def rebuild_producer_state(self, upto: int, loaded: list[SegmentOnDisk]) -> None:
        """The segments ``UnifiedLog.rebuildProducerState`` re-reads up to ``upto`` over those ``loaded`` so far:
        from the snapshot it loads (``snapshot_to_load``; else the log start offset) on."""
        if not self.producer_state:
            return
        start = snapshot_to_load(self.snapshots, self.log_start_offset, upto)
        start = self.log_start_offset if start is None else start
        if upto <= start:
            return
        for i, seg in enumerate(loaded):
            end = loaded[i + 1].base_offset if i + 1 < len(loaded) else None
            if seg.base_offset >= upto:
                break
            if (end is not None and end <= start) or seg.base_offset in self.out.recovered:
                continue
            self._read_as_is(seg)

    def _snapshot_after_recovery(self, seg: SegmentOnDisk) -> None:
        if self.producer_state:
            kept = self.size[seg.base_offset]
            self.snapshots.update({seg.base_offset, seg.base_offset if kept == 0 else seg.result.next_offset})

    def _recover(self, seg: SegmentOnDisk) -> None:
        if seg.base_offset not in self.out.recovered:
            self.out.recovered.append(seg.base_offset)

    def _cut(self, seg: SegmentOnDisk, keep: int) -> bool:
        gone = self.size[seg.base_offset] - keep
        if gone <= 0:
            return False
        self.out.truncated[seg.base_offset] = self.out.truncated.get(seg.base_offset, 0) + gone
        self.size[seg.base_offset] = keep
        return True

    def load_segment_files(self) -> None:
        """A missing offset index or a failing transaction index: the segment is recovered when opened; a
        truncation there cuts that segment only."""
        for i, seg in enumerate(self.segments):
            txn = transaction_index_at_load(index_paths(seg.log_path)[TXN_INDEX_FILE_SUFFIX], seg.base_offset)
            if txn is not None and txn[0] == "fail":
                raise LoadFailed(txn[1])
            if seg.index_present and txn is None:
                continue
            self.rebuild_producer_state(seg.base_offset, self.segments[:i])
            self._recover(seg)
            if seg.result.error is not None:
                raise LoadFailed(f"{os.path.basename(seg.log_path)}: {seg.result.error}")
            self._cut(seg, seg.result.valid_bytes)
            self._snapshot_after_recovery(seg)

    def recover_log(self, recovery_point: int) -> None:
        """From the recovery point's floor segment on; the first truncation deletes every later segment."""
        start = _floor_index([s.base_offset for s in self.segments], recovery_point)
        for i in range(start, len(self.segments)):
            seg = self.segments[i]
            self.rebuild_producer_state(seg.base_offset, self.segments)
            self._recover(seg)
            if seg.result.error is not None:
                if not seg.result.error.startswith("InvalidOffsetException"):
                    raise LoadFailed(f"{os.path.basename(seg.log_path)}: {seg.result.error}")
                truncated = self._cut(seg, 0)  # "Found invalid offset during recovery": emptied
            else:
                truncated = self._cut(seg, seg.result.valid_bytes)
            self._snapshot_after_recovery(seg)
            if truncated:
                self.out.deleted = [s.base_offset for s in self.segments[i + 1:]]
                self.remaining = self.segments[:i + 1]
                return

    def read_log_end_offset(self) -> int:
        last = self.remaining[-1]
        if last.base_offset not in self.out.recovered:
            try:
                return LogSegment(last.log_path, last.base_offset).read_next_offset()
            except (CorruptRecordException, OSError) as e:
                raise LoadFailed(f"{os.path.basename(last.log_path)}: {e}") from None
        return last.base_offset if self.size[last.base_offset] == 0 else last.result.next_offset

    def delete_segments_if_log_start_greater_than_log_end(self, leo: int, log_start_offset: int) -> int:
        if leo >= log_start_offset:
            return leo
        self.out.notes.append(f"log end offset {leo} below the checkpointed log start offset {log_start_offset}: "
                              f"every segment is deleted")
        self.out.deleted = [s.base_offset for s in self.segments]
        self.out.truncated = {}
        self.remaining = []
        return log_start_offset

    def remove_stray_snapshots(self) -> None:
        self.snapshots = remove_stray_snapshots(self.snapshots, [s.base_offset for s in self.remaining])

    def outcome(self) -> StartupPreview:
        out = self.out
        deleted = set(out.deleted)
        out.lost_bytes = (sum(n for b, n in out.truncated.items() if b not in deleted)
                          + sum(s.result.size_bytes for s in self.segments if s.base_offset in deleted))
        if out.lost_bytes:
            out.action = ACTION_TRUNCATE
            out.lost_offsets = _lost_offsets(self.segments, out, deleted)
        elif out.recovered:
            out.action = ACTION_RECOVER
        if self.clean_shutdown:
            corrupt = [s for s in self.remaining if s.base_offset not in out.recovered
                       and (s.result.error is not None or s.result.valid_bytes < s.result.size_bytes)]
            if corrupt:
                out.notes.append(f"clean-shutdown marker in front of {len(corrupt)} segment(s) with a corrupt log "
                                 f"({', '.join(os.path.basename(s.log_path) for s in corrupt)}): the broker "
                                 f"serves them as they are")
        return out


def preview_start(segments: list[SegmentOnDisk], clean_shutdown: bool, recovery_point: int | None,
                  log_start_offset_checkpoint: int | None, producer_state: bool = True,
                  unloadable: tuple[Unloadable, ...] | list[Unloadable] = ()) -> StartupPreview:
    """The broker's next load of a partition whose segments are ``segments`` (offset order), mirroring
    ``LogLoader.load``: see the module doc for the rules. ``recovery_point`` and ``log_start_offset_checkpoint``
    are the partition's checkpoint entries (None: none, read as 0 as ``LogManager.loadLog`` does);
    ``producer_state`` is False for a topic on a message format before 0.11 (no producer state replay).
    ``unloadable``: what the start trips on in the partition's log dir (``indexcore.log.unloadable``): a failure
    anywhere there is this partition's outcome too (the broker exits before it serves anything); a ``.log`` name
    of this partition the start misreads is a note, and may set the log end offset."""
    failed = fail_notes(list(unloadable), clean_shutdown)
    if failed:
        return StartupPreview(ACTION_FAIL, notes=failed)
    out = _preview_segments(segments, clean_shutdown, recovery_point, log_start_offset_checkpoint, producer_state)
    for u in unloadable:
        out.notes.append(f"{u.effect} ({os.path.basename(u.path)})")
        if u.log_end_offset is not None and out.action != ACTION_FAIL:
            out.log_end_offset = u.log_end_offset
    return out


def _preview_segments(segments: list[SegmentOnDisk], clean_shutdown: bool, recovery_point: int | None,
                      log_start_offset_checkpoint: int | None, producer_state: bool) -> StartupPreview:
    """``preview_start`` of the segments alone."""
    if not segments:
        return StartupPreview(ACTION_NONE, log_end_offset=log_start_offset_checkpoint or 0)
    snapshots = {snapshot_offset(n) for n in snapshot_files_in(os.path.dirname(segments[0].log_path))}
    load = _Load(segments, clean_shutdown, log_start_offset_checkpoint or 0, snapshots, producer_state)
    try:
        load.load_segment_files()
        if not clean_shutdown:
            load.recover_log(recovery_point or 0)
        leo = load.read_log_end_offset()
        load.out.log_end_offset = load.delete_segments_if_log_start_greater_than_log_end(
            leo, log_start_offset_checkpoint or 0)
        load.remove_stray_snapshots()
        if load.remaining and not (clean_shutdown and not load.snapshots):
            load.rebuild_producer_state(leo, load.remaining)
    except LoadFailed as e:
        load.out.action = ACTION_FAIL
        load.out.notes.append(f"the broker's load fails: {e}; it takes the whole log dir offline")
        return load.out
    return load.outcome()


def _lost_offsets(segments: list[SegmentOnDisk], out: StartupPreview,
                  deleted: set[int]) -> tuple[int, int | None] | None:
    """First and last offset of what the start removes: from the first cut (its valid end) or deleted segment's
    base, to the last valid offset of the deleted segments (None when only an unreadable tail is cut)."""
    firsts = [s.base_offset if out.truncated[s.base_offset] >= s.result.size_bytes else s.result.next_offset
              for s in segments if s.base_offset in out.truncated and s.base_offset not in deleted]
    firsts += [s.base_offset for s in segments if s.base_offset in deleted]
    if not firsts:
        return None
    lasts = [s.result.next_offset - 1 for s in segments if s.base_offset in deleted and s.result.next_offset
             > s.base_offset]
    return min(firsts), (max(lasts) if lasts else None)
