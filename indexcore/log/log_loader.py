"""Kafka's ``LogLoader``: a broker's load of one partition directory, written once, run two ways.

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
   segments are read as they are, each from the batch the search for the replay's start finds (through the
   ``.index`` on disk, for one not recovered), the floor segment of the replay's end up to the batch the search
   for that end finds, by batch size: in a segment not recovered, a size field below 14 (a zero-filled tail), a
   transaction marker that does not read, or a stretch that ends before it starts (a damaged ``.index``:
   ``FileRecords.slice``) fails the load even where recovery itself never looks; bytes outside the stretch are
   never read. Snapshots are taken at each recovered segment's base and end offsets. The leader-epoch cache is
   cut at the log end offset (``truncateFromEnd``) and at the checkpointed log start offset
   (``truncateFromStart``).

Before those phases, the load's first three passes finish or roll back what an interrupted cleaning left
(``removeTempFilesAndCollectSwapFiles``, then the ``.swap`` files' covered segments deleted and the swaps renamed
in): ``complete_swaps``, which the cleaner runs before it cleans a partition.

``LogLoader`` runs these phases two ways:

- the dry run (``preview_start``): over the segments as a scan found them (``SegmentOnDisk``), the log dir's
  marker and the partition's checkpoint entries, what the broker's next start would re-read, truncate, delete or
  fail on, nothing written (the startup preview, ``StartupPreview``). With the marker, a corrupt log tail or a wrong
  offset/time index is served as it is: the preview says so.
- the real run (``recover_segment`` for each segment in offset order, then ``finish``): the load with no
  clean-shutdown marker and no recovery point, followed by a clean shutdown, done offline (``segdex recover``):
  every segment recovered in order, each with a new ``ProducerStateManager`` loaded from the latest snapshot
  (producers expired at the broker's clock dropped, ``loadFromSnapshot``), its batches replayed into it and a
  snapshot taken at its end (``takeSnapshot``: only at an offset above the last snapshot). After the last
  segment: stray snapshots (neither a segment's base offset nor the highest one above every base) are removed,
  then those at or below the log start offset or above the log end offset (``truncateAndReload``). A clean
  shutdown writes no new snapshot when the log end offset already has one. So the snapshot files: one at each
  segment base offset above the log start offset, and one at the log end offset, each filtered by expiry at every
  segment boundary. ``truncates_later`` is the truncation rule of that run (``--truncate``).

``KafkaOracle load`` (the real ``UnifiedLog`` creation) judges both in the tests, and a real broker's recorded
starts judge the dry run.

Before any of that, names (``indexcore.log.unloadable``): a directory of the log dir or a file of any partition
whose name the broker's start throws on means no partition loads at all (the broker exits), and a ``.log`` name
it misreads adds an empty segment, which can set the log end offset. A real broker's starts judge these.
"""

from __future__ import annotations

import bisect
import dataclasses
import os
from dataclasses import dataclass, field

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.errors import (
    CORRUPT_RECORD,
    BufferBoundsException,
    CorruptRecordException,
    InvalidRecordException,
    InvalidTxnStateException,
    KafkaReadException,
    OffsetReadException,
    SegdexError,
    UnknownCompressionTypeException,
)
from segdex.indexcore.fs.atomic_file import fsync_dir
from segdex.indexcore.index.offset_index import OffsetIndex
from segdex.indexcore.index.transaction_index import TransactionIndex
from segdex.indexcore.log.checkpoints import format_leader_epoch_checkpoint, read_leader_epoch_checkpoint
from segdex.indexcore.log.layout import (
    CLEANED_FILE_SUFFIX,
    DELETED_FILE_SUFFIX,
    INDEX_FILE_SUFFIX,
    LEADER_EPOCH_CHECKPOINT,
    SWAP_FILE_SUFFIX,
    TXN_INDEX_FILE_SUFFIX,
    index_paths,
    parse_segment_file_name,
)
from segdex.indexcore.log.leader_epoch_cache import truncate_epochs_from_end, truncate_epochs_from_start
from segdex.indexcore.log.local_log import convert_to_offset_metadata_or_throw
from segdex.indexcore.log.log_segment import LogSegment, RecoveryResult, last_batch
from segdex.indexcore.log.log_segments import PartitionRecovery, SegmentRecovery, SpeculativeSegment
from segdex.indexcore.log.producer_snapshot import (
    load_from_snapshot,
    manager_snapshot_bytes,
    producer_snapshot_file_name,
    remove_stray_snapshots,
    snapshot_offset,
    snapshot_to_load,
)
from segdex.indexcore.log.producer_state import ProducerStateManager
from segdex.indexcore.log.unloadable import WILL_NOT_START, Unloadable, fail_notes
from segdex.indexcore.record.file_records import batches, open_log
from segdex.indexcore.record.records import end_txn_marker

ACTION_NONE = "none"  # nothing re-read: the broker serves the files as they are
ACTION_RECOVER = "recover"  # segments re-read, nothing lost
ACTION_TRUNCATE = "truncate"  # bytes cut or segments deleted
ACTION_FAIL = "fail"  # the load throws: the broker does not start (an IOException: the log dir goes offline)
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
    """The outcome of the broker's next load of one partition (the dry run)."""

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


@dataclass
class LoadedPartition:
    """What the real run's load and clean stop leave, besides the index files: the producer snapshots (offset ->
    bytes), the leader-epoch-checkpoint bytes (None: Kafka keeps no such file), the offsets the checkpoints get."""

    log_start_offset: int
    log_end_offset: int
    snapshots: dict[int, bytes] = field(default_factory=dict)
    leader_epoch_checkpoint: bytes | None = None

    def snapshot_files(self) -> dict[str, bytes]:
        return {producer_snapshot_file_name(o): data for o, data in sorted(self.snapshots.items())}


class LoadFailed(Exception):
    """The load throws. ``LogManager.loadLogs`` takes a log dir offline only for an ``IOException`` (``io_error``);
    any other exception it rethrows, and the broker exits ("Error starting LogManager"), as it does for a file
    name it cannot parse (``unloadable``)."""

    def __init__(self, message: str, io_error: bool = False) -> None:
        super().__init__(message)
        self.io_error = io_error

    def outcome(self) -> str:
        """What the broker does when its load throws this."""
        return ("it takes the whole log dir offline" if self.io_error else
                f"{WILL_NOT_START} (LogManager.loadLogs rethrows it: \"Error starting LogManager\")")


def snapshot_files_in(partition_dir: str) -> list[str]:
    """Names of the producer snapshot files in a partition directory."""
    return sorted(n for n in os.listdir(partition_dir) if snapshot_offset(n) is not None)


def _floor_index(bases: list[int], offset: int) -> int:
    """Index of the segment ``LogSegments.values(offset, ...)`` starts at: the floor segment, else the first."""
    return max(bisect.bisect_right(bases, offset) - 1, 0)


class LogLoader:
    """``LogLoader.load`` of one partition, phase by phase as Kafka's (see the module doc): the real run recovers
    the segments the caller hands it in offset order (``recover_segment``, then ``finish``); the dry run
    (``dry_run=True``, then ``load``) predicts the broker's next start from the segments as found.

    ``now_ms`` is the broker clock of the load (producer expiry); ``log_start_offset_checkpoint`` the partition's
    entry in ``log-start-offset-checkpoint`` (0 when none); ``precomputed`` segments recovered on their own in
    parallel (``PartitionRecovery``). The dry run also takes the log dir's marker (``clean_shutdown``), the
    partition's ``recovery_point`` and whether its record version keeps producer state (``producer_state``: False
    before message format 0.11); it reads the partition's snapshot files' names, nothing else.
    """

    def __init__(self, partition_dir: str, config: LogConfig | None = None, now_ms: int = 0,
                 log_start_offset_checkpoint: int = 0,
                 precomputed: dict[int, SpeculativeSegment] | None = None, *, dry_run: bool = False,
                 clean_shutdown: bool = False, recovery_point: int = 0, producer_state: bool = True) -> None:
        self.partition_dir = partition_dir
        self.config = config or LogConfig()
        self.now_ms = now_ms
        self.checkpoint_lso = log_start_offset_checkpoint
        self.dry_run = dry_run
        self.clean_shutdown = clean_shutdown
        self.recovery_point = recovery_point
        self.producer_state = producer_state
        # the producer snapshots as the load goes: offset -> bytes (real run), offset -> None (dry run: names only)
        self.snapshots: dict[int, bytes | None] = {}
        self.bases: list[int] = []  # base offsets of the segments loaded, in order
        self.log_end_offset: int | None = None
        if dry_run:
            self.snapshots = dict.fromkeys(snapshot_offset(n) for n in snapshot_files_in(partition_dir))
            self.readable: dict[tuple[int, int, int], str | None] = {}  # (base, stretch) -> why not
            self.out = StartupPreview(ACTION_NONE)
            self.rejudged: set[int] = set()  # segments whose recovery from the load's state differs from the scan's
            # the last replay _replayed can take up: (its plan, the segments it read whole, in order, each
            # as (segment, bytes held, recovered), the state after them)
            self.replayed: tuple[tuple[int | None, int], list[tuple[SegmentOnDisk, int, bool]],
                                 ProducerStateManager] | None = None
            self.disk_index: dict[int, OffsetIndex] = {}  # base offset -> the .index a segment served is read with
            self.snapshot_states: dict[int, ProducerStateManager | None] = {}  # offset -> its file as loaded
            return
        self.recovery = PartitionRecovery(self.config, precomputed)
        path = os.path.join(partition_dir, LEADER_EPOCH_CHECKPOINT)
        self.initial_epochs = read_leader_epoch_checkpoint(path)
        self.recovery.leader_epochs.extend(self.initial_epochs)
        self.epoch_file_existed = os.path.exists(path)
        self.last_snap_offset = log_start_offset_checkpoint
        self.map_end_offset = log_start_offset_checkpoint

    # ------------------------------------------------------------------ the phases of the load

    @staticmethod
    def recovered_when_opened(log_path: str, base_offset: int, index_present: bool) -> str | None:
        """Why ``loadSegmentFiles`` recovers the segment as it opens it (its ``.index`` missing, its ``.txnindex``
        failing ``sanityCheck``), else None; ``LoadFailed`` for a ``.txnindex`` the load throws on. A truncation
        found there cuts that segment only; one found by ``recoverLog`` deletes every later segment.
        ``LogSegment.sanityCheck`` reads the ``.txnindex`` only when the ``.index`` is there: without it the segment
        is recovered (its transaction index reset, never read), whatever that file holds."""
        if not index_present:
            return "no offset index"
        txn = TransactionIndex.sanity_check(index_paths(log_path)[TXN_INDEX_FILE_SUFFIX], base_offset)
        if txn is not None and txn[0] == "fail":
            raise LoadFailed(txn[1])
        return txn[1] if txn is not None else None

    def truncates_later(self, seg: SegmentRecovery) -> bool:
        """The real run's truncation rule: whether cutting ``seg``'s corrupt tail deletes every later segment, as
        ``recoverLog`` does, or cuts that segment alone, as a recovery when it is opened does
        (``recovered_when_opened``; the pass that follows finds it whole). A ``.txnindex`` the load throws on
        counts as no reason to recover it when opened."""
        present = os.path.exists(index_paths(seg.log_path)[INDEX_FILE_SUFFIX])
        try:
            return self.recovered_when_opened(seg.log_path, seg.base_offset, present) is None
        except LoadFailed:
            return True

    def load_segment_files(self) -> None:
        """``loadSegmentFiles`` (dry run): a segment ``recovered_when_opened`` is recovered there; a truncation
        there cuts that segment only."""
        for i, seg in enumerate(self.segments):
            if self.recovered_when_opened(seg.log_path, seg.base_offset, seg.index_present) is None:
                continue
            self._rebuild_for_recovery(seg.base_offset, self.segments[:i])
            self._recovered(seg)
            seg = self._recovered_from_the_loads_state(i, opened=True)
            if seg.result.error is not None:
                raise LoadFailed(f"{os.path.basename(seg.log_path)}: {seg.result.error}")
            self._cut(seg, seg.result.valid_bytes)
            self._snapshot_after_recovery(seg)

    def recover_log(self) -> None:
        """``recoverLog`` (dry run, without the marker): from the recovery point's floor segment on; the first
        truncation deletes every later segment."""
        start = _floor_index([s.base_offset for s in self.segments], self.recovery_point)
        for i in range(start, len(self.segments)):
            seg = self.segments[i]
            self._rebuild_for_recovery(seg.base_offset, self.segments)
            self._recovered(seg)
            seg = self._recovered_from_the_loads_state(i)
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

    def _rebuild_for_recovery(self, upto: int, loaded: list[SegmentOnDisk]) -> None:
        """``LogLoader.recoverSegment``'s ``rebuildProducerState`` up to ``upto`` (dry run), with the checkpointed
        log start offset, then what its ``truncateAndReload`` deleted: the snapshot files above ``upto`` and those
        at or below the log start offset, gone for the load's later rebuilds (the snapshots its recovery takes are
        ``_snapshot_after_recovery``'s)."""
        self.rebuild_producer_state(upto, self.checkpoint_lso, loaded)
        if self.producer_state:
            self.snapshots = {o: None for o in self.snapshots if self.checkpoint_lso < o <= upto}

    def _recovered_from_the_loads_state(self, i: int, opened: bool = False) -> SegmentOnDisk:
        """Segment ``i`` as the load's recovery finds it. The scan recovered it with the producer state of every
        batch before it, read from the log start; the load recovers it from the state it rebuilds
        (``LogLoader.recoverSegment``: ``rebuildProducerState``, then ``segment.recover`` into that state: the
        snapshot it loads, then the replay, ``_replayed``). The two differ where the snapshot does not
        hold what the scan's replay found (a transaction the scan never saw open: its batch beyond damage the scan
        stopped at) or where an earlier segment the load serves as it is holds damage the scan stopped at. The
        segment then takes the new result in the load's lists (the caller's ``SegmentOnDisk`` is left as it is).

        The state bears on the recovery only through ``InvalidTxnStateException`` (a plain batch of a producer
        whose transaction is open), so the segment is recovered again only where the scan failed so, or where the
        load's state holds a transaction open that the scan's may not have: the load's state at the segment has
        one, and its replay is not the scan's (``_replays_as_scanned``). ``opened``: the segment is recovered as
        ``loadSegmentFiles`` opens it, before it is among the log's segments (the replay's end then falls in the
        segment before it)."""
        seg = self.segments[i]
        if not self.producer_state:
            return seg
        failed = (seg.result.error or "").startswith("InvalidTxnStateException")
        plan = self._replay_plan(seg.base_offset, self.checkpoint_lso)
        if plan is None or (not failed and self._replays_as_scanned(seg.base_offset, plan, opened)):
            return seg
        state = self._replayed(plan, seg.base_offset, opened)
        if state is None or (not failed and not state.has_ongoing_txns):
            return seg
        recovery = PartitionRecovery(self.config)
        recovery.producer_state = state
        again = recovery.recover_segment(seg.log_path, seg.base_offset).result
        if again is None or again.error == seg.result.error:
            return seg
        seg = dataclasses.replace(seg, result=again)
        self.segments[i] = seg
        self.remaining = [seg if s.base_offset == seg.base_offset else s for s in self.remaining]
        self.rejudged.add(seg.base_offset)
        return seg

    def _replays_as_scanned(self, upto: int, plan: tuple[int | None, int], opened: bool) -> bool:
        """Whether the load's state at ``upto`` (a segment it recovers) holds no transaction open that the scan's
        state there did not: the replay starts from no open transaction (an empty state, or a snapshot without
        one), and every segment it reads below ``upto`` is read as the scan read it (no failure, its valid part
        only: whole, or cut there by the load; not judged again; no batch at or past ``upto``; its read starting
        at its first batch, whose base offset is not below the segment's; not the floor segment of ``upto`` a
        segment ``opened`` reads up to a search; one served as it is searched through the ``.index`` its recovery
        rebuilds, as the scan's reads were: another, an entry inside a batch or past the batch its offset starts
        in, makes the replay's search throw or skip batches). Each transaction the replay opens, the scan then
        opened too, or found open already, and each it closes, the scan closed (the replay may skip a first stretch
        of the first segment it reads: what it skips, it opens nowhere)."""
        start, replay_from = plan
        if start is not None:
            initial = self._snapshot_state(start)
            if initial is None or initial.has_ongoing_txns:
                return False
        for i, s in enumerate(self.remaining):
            if s.base_offset >= upto:
                break
            if self._below_the_replay(i, replay_from):
                continue
            r = s.result
            if (r.error is not None or self.size[s.base_offset] != r.valid_bytes or s.base_offset in self.rejudged
                    or r.last_offset >= upto or 0 <= r.first_offset < s.base_offset):
                return False
            last = i + 1 == len(self.remaining) or self.remaining[i + 1].base_offset >= upto
            if opened and last and s.base_offset not in self.out.recovered:
                return False
            if s.base_offset not in self.out.recovered and self._disk_index(s).data != r.offset_index.data:
                return False
        return True

    def _below_the_replay(self, i: int, replay_from: int) -> bool:
        """Whether the replay from ``replay_from`` skips segment ``i`` of those the load keeps: below the floor
        segment of ``replay_from`` (``LogSegments.values``)."""
        return i + 1 < len(self.remaining) and self.remaining[i + 1].base_offset <= replay_from

    def recover_segment(self, log_path: str, base_offset: int, native: bool | None = None) -> SegmentRecovery:
        """``recoverSegment`` (real run): producer state rebuilt up to the segment with the checkpointed log start
        offset, the segment recovered into it, then a snapshot at its end."""
        self.rebuild_producer_state(base_offset, self.checkpoint_lso)
        seg = self.recovery.recover_segment(log_path, base_offset, native)
        self.bases.append(base_offset)
        r = seg.result
        # LogSegment.recover feeds producer state (and moves the map end) with magic-2 batches only
        if r is not None and r.last_offset >= 0 and 2 in r.magics:
            self.map_end_offset = max(self.map_end_offset, r.last_offset + 1)
            self._take_snapshot()
        self.log_end_offset = r.next_offset if r is not None else base_offset
        return seg

    def rebuild_producer_state(self, upto: int, log_start_offset: int,
                               loaded: list[SegmentOnDisk] | None = None) -> None:
        """``UnifiedLog.rebuildProducerState`` up to ``upto``: the snapshot ``truncateAndReload`` loads is the
        latest one above the log start offset and at or below ``upto`` (``snapshot_to_load``; none: an empty state
        at the log start offset), the segments from there to ``upto`` are replayed, and a snapshot is taken at
        ``upto`` when it lies past the one loaded.

        Real run: the segments were replayed in order already, so this state is the replay's; snapshots at or
        below the log start offset are deleted, the latest other one is loaded (expired producers dropped), the
        map end moves to ``upto`` and the snapshot is taken. Dry run (record version 2 only): the segments of
        ``loaded`` the replay reads are searched, and the stretch read of each not recovered is read as it is
        (``_read_replayed``: ``LoadFailed`` where Kafka's replay throws)."""
        if self.dry_run:
            if self.producer_state:
                start = snapshot_to_load(self.snapshots, log_start_offset, upto)
                self._read_replayed(upto, log_start_offset if start is None else start, loaded or [])
            return
        self.snapshots = {o: d for o, d in self.snapshots.items() if o > log_start_offset}
        latest = snapshot_to_load(self.snapshots, log_start_offset, upto)
        if latest is None:  # nothing to load: an empty manager starting at the log start offset
            self.recovery.producer_state = ProducerStateManager()
            self.last_snap_offset = log_start_offset
            self.map_end_offset = log_start_offset
        else:
            self.recovery.producer_state = self.recovery.producer_state.reloaded(
                self.now_ms, self.config.producer_id_expiration_ms)
            self.last_snap_offset = self.map_end_offset = latest
        if upto > self.map_end_offset:  # updateMapEndOffset(upto) then takeSnapshot
            self.map_end_offset = upto
            self._take_snapshot()

    def read_log_end_offset(self) -> int:
        """The log end offset (dry run): the last segment's ``LogSegment.readNextOffset``, a segment not recovered
        read as it is."""
        last = self.remaining[-1]
        if last.base_offset not in self.out.recovered:
            try:
                return LogSegment(last.log_path, last.base_offset).read_next_offset()
            except (CorruptRecordException, InvalidRecordException, KafkaReadException,
                    UnknownCompressionTypeException, BufferBoundsException) as e:
                raise LoadFailed(f"{os.path.basename(last.log_path)}: {e}") from None
            except OSError as e:
                raise LoadFailed(f"{os.path.basename(last.log_path)}: {e}", io_error=True) from None
        return last.base_offset if self.size[last.base_offset] == 0 else last.result.next_offset

    def delete_segments_if_log_start_greater_than_log_end(self, leo: int) -> int:
        """``deleteSegmentsIfLogStartGreaterThanLogEnd`` (dry run): the log end offset the load goes on with."""
        if leo >= self.checkpoint_lso:
            return leo
        self.out.notes.append(f"log end offset {leo} below the checkpointed log start offset {self.checkpoint_lso}: "
                              f"every segment is deleted")
        self.out.deleted = [s.base_offset for s in self.segments]
        self.out.truncated = {}
        self.remaining = []
        return self.checkpoint_lso

    def remove_stray_snapshots(self, bases: list[int]) -> None:
        """The snapshots ``ProducerStateManager.removeStraySnapshots`` leaves over the segments left (``bases``)."""
        staying = remove_stray_snapshots(self.snapshots, bases)
        self.snapshots = {o: d for o, d in self.snapshots.items() if o in staying}

    # ------------------------------------------------------------------ the dry run: the startup preview

    def load(self, segments: list[SegmentOnDisk]) -> StartupPreview:
        """The dry run over ``segments`` (offset order, at least one): the broker's next start predicted."""
        self.segments: list[SegmentOnDisk] = list(segments)
        self.remaining: list[SegmentOnDisk] = list(segments)
        self.size: dict[int, int] = {s.base_offset: s.result.size_bytes for s in segments}
        try:
            self.load_segment_files()
            if not self.clean_shutdown:
                self.recover_log()
            leo = self.read_log_end_offset()
            self.out.log_end_offset = self.delete_segments_if_log_start_greater_than_log_end(leo)
            self.remove_stray_snapshots([s.base_offset for s in self.remaining])
            if self.remaining and not (self.clean_shutdown and not self.snapshots):
                self.rebuild_producer_state(leo, self.checkpoint_lso, self.remaining)
            if self.remaining and self.producer_state:
                self.maybe_increment_first_unstable_offset(self.out.log_end_offset)
        except LoadFailed as e:
            self.out.action = ACTION_FAIL
            self.out.notes.append(f"the broker's load fails: {e}; {e.outcome()}")
            return self.out
        return self._outcome()

    def maybe_increment_first_unstable_offset(self, leo: int) -> None:
        """``UnifiedLog.maybeIncrementFirstUnstableOffset`` as the log's constructor calls it after the load (dry
        run): the producer state's first unstable offset (``firstUnstableOffset``: open transactions and those the
        load's last replay completed) read from the log as the load leaves it
        (``convert_to_offset_metadata_or_throw``); ``LoadFailed`` where that read throws. Only a segment served as
        it is with a damaged batch can make it throw (even one the replay skips: a batch whose base offset is
        damaged can open a transaction below its segment), or one searched through an ``.index`` its recovery would
        not write, so the producer state is rebuilt (``_replayed``) only then, or where the replay that builds it
        may throw itself (``LoadFailed``): where it is not the scan's (``_replays_as_scanned``: its snapshot holds a
        transaction open, or such an index, say)."""
        served = [s for s in self.remaining if s.base_offset not in self.out.recovered]
        log_start = max(self.checkpoint_lso, self.remaining[0].base_offset)
        plan = self._replay_plan(leo, log_start)
        if plan is None or (all(s.result.intact for s in served)
                            and self._replays_as_scanned(leo, plan, opened=False)):
            return
        state = self._state_at_end(plan, leo, log_start)
        if state is None:
            return
        first = state.first_unstable_offset(log_start)
        if first is None:
            return
        recovered = set(self.out.recovered)
        segments = [(s.base_offset, s.log_path, s.result.offset_index if s.base_offset in recovered
                     else self._disk_index(s), self.size[s.base_offset]) for s in self.remaining]
        try:
            convert_to_offset_metadata_or_throw(segments, first, leo)
        except OffsetReadException as e:
            raise LoadFailed(f"the read of the log from its first unstable offset {first} (UnifiedLog's "
                             f"constructor): {e}") from None

    def _state_at_end(self, plan: tuple[int | None, int], leo: int, log_start: int) -> ProducerStateManager | None:
        """The producer state of the log's own manager after the load (``_replayed`` at ``leo``). That manager
        loads the latest snapshot left (one a recovery took, at the end of the last segment it recovered, among
        them) and replays from there: the transactions it completes there stay in its ``unreplicatedTxns``, as no
        high watermark passed them yet (``UnifiedLog``'s constructor starts it at the log start offset and does not
        move it), and count; those completed before that snapshot, in a replay from an earlier one here, are not
        its. None where it cannot be told."""
        state = self._replayed(plan, leo, opened=False)
        final = snapshot_to_load(self.snapshots, log_start, leo)
        if state is not None and final is not None:
            state.remove_unreplicated_transactions(final)
        return state

    def producer_state_at_end(self) -> ProducerStateManager | None:
        """The dry run's prediction (after ``load``) of the producer state the load leaves for the log
        (``UnifiedLog``'s ``producerStateManager``): its open transactions and those its last replay completed
        (``_state_at_end``); an empty state where the load skips the rebuild (a clean start without a snapshot) or
        deletes every segment.
        None where the dry run cannot tell, or the load fails. Producers are not expired here (the dry run has no
        clock): read its transactions, not its producers."""
        if self.out.action == ACTION_FAIL:
            return None
        if not self.remaining:  # deleteSegmentsIfLogStartGreaterThanLogEnd: truncateFullyAndStartAt empties the
            return ProducerStateManager()  # state and deletes every snapshot; the log starts again, empty
        leo = self.out.log_end_offset
        log_start = max(self.checkpoint_lso, self.remaining[0].base_offset)
        plan = self._replay_plan(leo, log_start)
        if plan is None:
            return ProducerStateManager()
        try:
            return self._state_at_end(plan, leo, log_start)
        except LoadFailed:
            return None

    def _replay_plan(self, leo: int, log_start: int) -> tuple[int | None, int] | None:
        """Where the load's state at ``leo`` starts (``_replayed``): the snapshot file it loads (None: an
        empty state) and the offset its replay reads from; None where there is no state (a clean start without a
        snapshot skips the rebuild: no open transaction). Where the load recovers a segment, its state is the one
        the first recovery built (``LogLoader.recoverSegment``: ``rebuildProducerState`` with the checkpointed log
        start offset, not ``log_start``), carried on through the snapshots each recovery takes at its end."""
        recovered = [b for b in self.out.recovered if any(s.base_offset == b for s in self.remaining)]
        on_disk = {snapshot_offset(n) for n in snapshot_files_in(self.partition_dir)}
        # a segment's recovery loads from every snapshot file; the last rebuild only from those left after
        # removeStraySnapshots (all on disk when nothing was recovered)
        loadable = on_disk if recovered else {o for o in self.snapshots if o in on_disk}
        if self.clean_shutdown and not recovered and not loadable:
            return None
        if recovered:
            log_start = self.checkpoint_lso
        start = snapshot_to_load(loadable, log_start, min(recovered) if recovered else leo)
        return start, (log_start if start is None else start)

    def _replayed(self, plan: tuple[int | None, int], leo: int, opened: bool) -> ProducerStateManager | None:
        """The producer state the load has at offset ``leo`` (the log end offset, or a segment it recovers,
        ``opened``: as ``loadSegmentFiles`` opens it), from ``plan`` (``_replay_plan``): the state of its snapshot
        file (an empty one: None) with the batches ``rebuildProducerState`` reads from its replay offset to ``leo``
        applied, the transactions completed kept (``track_completed``). None where it cannot be told (an
        unreadable snapshot, a read of the dry run's own that cannot be read: ``_replay_segment``); ``LoadFailed``
        where the replay itself throws (``loadProducersFromRecords``: a plain batch of a producer whose
        transaction is open, ``InvalidTxnStateException``). It reads the segments the load keeps
        from the floor segment of the replay offset, those below ``leo`` (``LogSegments.values``), each from its
        start offset (its base, the replay offset in the first) to its size, the floor segment of ``leo`` (the
        segment before it when ``opened``: that one is not among the log's segments yet) to the batch the search
        for ``leo`` finds (``translateOffset``: the read's ``maxPosition``); it reads from the batch the search for
        the start offset finds (none: nothing) and applies every batch with a producer id on the way
        (``loadProducersFromRecords``), whatever its base offset. A segment the load recovered is applied whole,
        its valid part (``LogSegment.recover`` feeds the state each batch, and the next recovery loads the
        snapshot it takes at its end).

        The load asks for it at each segment it recovers, in offset order: the state after the segments a replay
        read whole is kept (``replayed``), and a replay from the same plan that reads those same segments whole
        first takes it up after them."""
        start, replay_from = plan
        reads = [i for i, s in enumerate(self.remaining)
                 if s.base_offset < leo and not self._below_the_replay(i, replay_from)]
        floor = None  # the segment read up to the search for leo
        if reads:
            last = self.remaining[reads[-1]]
            if (last.base_offset not in self.out.recovered and (opened or reads[-1] + 1 == len(self.remaining)
                                                                 or self.remaining[reads[-1] + 1].base_offset > leo)):
                floor = reads[-1]
        keys = [(self.remaining[i], self.size[self.remaining[i].base_offset],
                 self.remaining[i].base_offset in self.out.recovered) for i in reads if i != floor]
        state, done = None, 0
        cached = self.replayed
        if (cached is not None and cached[0] == plan and len(cached[1]) <= len(keys)
                and all(a[0] is b[0] and a[1:] == b[1:] for a, b in zip(cached[1], keys[:len(cached[1])],
                                                                        strict=True))):
            state, done = cached[2].copy(), len(cached[1])
        if state is None:
            initial = ProducerStateManager() if start is None else self._snapshot_state(start)
            if initial is None:
                return None
            state = initial.copy().track_completed()
        for n, i in enumerate(reads[done:], done):
            if i == floor:
                self.replayed = (plan, keys, state.copy())
            if not self._replay_segment(state, self.remaining[i], max(self.remaining[i].base_offset, replay_from),
                                        leo if i == floor else None):
                return None
            if n + 1 == len(keys):
                self.replayed = (plan, keys, state.copy())
        return state

    def _snapshot_state(self, offset: int) -> ProducerStateManager | None:
        """The snapshot file at ``offset`` as ``loadFromSnapshot`` reads it (None: it does not read), read once a
        load (a replay starts from a copy). No producer expires: the dry run has no clock."""
        if offset not in self.snapshot_states:
            self.snapshot_states[offset] = load_from_snapshot(self.partition_dir, offset, None,
                                                              self.config.producer_id_expiration_ms)
        return self.snapshot_states[offset]

    def _replay_segment(self, state: ProducerStateManager, seg: SegmentOnDisk, offset: int,
                        upto: int | None) -> bool:
        """``state`` with the batches of ``seg`` the replay reads applied (``_replayed``): from the batch the search
        for ``offset`` finds to the one the search for ``upto`` finds (``_read_window``; None: to its end; a segment
        the load recovered, all of it). ``LoadFailed`` where ``ProducerAppendInfo`` throws on a batch
        (``InvalidTxnStateException``), as Kafka's replay does. Each search and stretch the load's replays make was
        read first by ``_read_replayed``, which fails the load where Kafka's does; one of the dry run's own (a
        segment read whole that a replay read up to a search, the one before a segment opened; a segment read from
        its base that a replay read from a snapshot inside it) can throw: False, the state cannot be told."""
        size = self.size[seg.base_offset]
        begin, end = 0, size
        if seg.base_offset not in self.out.recovered:
            try:
                window = self._read_window(seg, offset, upto)
            except (LoadFailed, OSError):
                return False
            if window is None:
                return True  # LogSegment.read: no batch reaches the offset, nothing read
            begin, end = window
        with open_log(seg.log_path) as buf:
            all_bytes = memoryview(buf)
            held = all_bytes[:size]
            try:
                for batch in batches(held, begin, end):
                    if batch.magic >= 2:
                        try:
                            state.update(held, batch)
                        except InvalidTxnStateException:
                            raise LoadFailed(
                                f"the producer-state replay (rebuildProducerState) of {os.path.basename(seg.log_path)}"
                                f": org.apache.kafka.common.errors.InvalidTxnStateException: Expected transactional "
                                f"write from producer {batch.producer_id} at offset (offset={batch.base_offset}, "
                                f"segment=[-1:-1]) in partition {os.path.basename(self.partition_dir)}") from None
            except SegdexError:
                return False
            finally:
                held.release()
                all_bytes.release()
        return True

    def _read_replayed(self, upto: int, start: int, loaded: list[SegmentOnDisk]) -> None:
        """The segments of ``loaded`` the replay from ``start`` to ``upto`` reads (``LogSegments.values``), each as
        ``rebuildProducerState`` reads it: searched (``_search_replayed``), then, one not recovered, its stretch
        between the searches read as it is (``_read_as_is``)."""
        if upto <= start:
            return
        for i, seg in enumerate(loaded):
            end = loaded[i + 1].base_offset if i + 1 < len(loaded) else None
            if seg.base_offset >= upto:
                break
            if end is not None and end <= start:
                continue
            recovered = seg.base_offset in self.out.recovered
            # the floor segment of upto among those loaded, when the replay reads it (its base below upto)
            floor = end is None or end > upto
            window = self._search_replayed(seg, max(start, seg.base_offset), upto if floor else None, recovered)
            if window is not None and not recovered:
                self._read_as_is(seg, *window)

    def _search_replayed(self, seg: SegmentOnDisk, offset: int, upto: int | None,
                         recovered: bool) -> tuple[int, int] | None:
        """``rebuildProducerState``'s searches of a segment it reads (``_read_window``): its stretch, None where no
        batch reaches ``offset`` (nothing read) or where a recovered segment needs no search. A batch of the
        formats before 0.11 opens a compressed wrapper there (``records.legacy_records``), which a recovery never
        does, so a segment holding one is searched even when recovered (through the index its recovery rebuilt);
        another recovered segment passes. A segment served as it is is searched through the ``.index`` on disk,
        even whole: an entry of that file that points inside a batch makes the search read a size field there."""
        if recovered and not seg.result.legacy:
            return None
        return self._read_window(seg, offset, upto, seg.result.offset_index if recovered else None)

    def _read_window(self, seg: SegmentOnDisk, offset: int, upto: int | None,
                     index: OffsetIndex | None = None) -> tuple[int, int] | None:
        """The stretch of ``seg`` (its first and end positions) ``rebuildProducerState`` reads from ``offset``:
        the search for ``upto`` when the segment is the floor segment of the replay's end (``translateOffset``: the
        read's ``maxPosition``; None, or no batch found: the segment's size), then ``LogSegment.read`` from the
        batch the search for ``offset`` finds (None: none does, nothing read), to that end. Each search starts at
        the offset index entry at or below its offset (``index``; None: the ``.index`` on disk, as for a segment
        served as it is) and asks each batch it passes for its base offset. ``LoadFailed`` where a search throws,
        or where the stretch ends before it starts (a damaged index: ``FileRecords.slice``'s "Invalid size")."""
        size = self.size[seg.base_offset]
        log_segment = LogSegment(seg.log_path, seg.base_offset)
        index = self._disk_index(seg) if index is None else index
        try:
            until = None if upto is None else log_segment.translate_offset(upto, index, size)
            found = log_segment.translate_offset(offset, index, size)
        except OffsetReadException as e:
            raise LoadFailed(f"the producer-state replay's read of the log from offset {e.offset}: {e}") from None
        if found is None:
            return None
        end = size if until is None else until.position
        if end < found.position:
            raise LoadFailed(
                f"the producer-state replay's read of the log from offset {offset}: java.lang.IllegalArgumentException"
                f": Invalid size: {end - found.position} in read from FileRecords(size={size}, file="
                f"{os.path.abspath(seg.log_path)}, start=0, end=2147483647)")
        return found.position, end

    def _disk_index(self, seg: SegmentOnDisk) -> OffsetIndex:
        """The ``.index`` on disk of a segment served as it is, which Kafka's reads of it search through."""
        index = self.disk_index.get(seg.base_offset)
        if index is None:
            index = self.disk_index[seg.base_offset] = LogSegment(seg.log_path, seg.base_offset).offset_index()
        return index

    def _read_as_is(self, seg: SegmentOnDisk, begin: int, end: int) -> None:
        """The stretch from ``begin`` to ``end`` of a segment not recovered, read as the producer-state replay reads
        it (``loadProducersFromRecords`` over ``FileLogInputStream``): by batch size, each control batch's marker
        read (``EndTransactionMarker``); ``LoadFailed`` where that throws (a size field below 14, a marker Kafka
        cannot read). The bytes outside the stretch are not read."""
        if seg.result.intact:
            return  # every batch valid to the end: its sizes chain and its markers read (verify read it already)
        key = (seg.base_offset, begin, end)
        if key not in self.readable:
            why = None
            try:
                with open_log(seg.log_path) as buf:
                    for batch in batches(buf, begin, end):
                        if batch.magic >= 2 and batch.has_producer_id and batch.is_control:
                            end_txn_marker(buf, batch)
            except CorruptRecordException as e:
                why = f"{CORRUPT_RECORD}: {e} in file {os.path.abspath(seg.log_path)}."
            except SegdexError as e:
                why = f"{e.kafka_class}: {e}" if e.kafka_class else str(e)
            self.readable[key] = why and (f"the producer-state replay (rebuildProducerState) of "
                                          f"{os.path.basename(seg.log_path)}: {why}")
        if self.readable[key]:
            raise LoadFailed(self.readable[key])

    def _snapshot_after_recovery(self, seg: SegmentOnDisk) -> None:
        """The snapshots the recovery of ``seg`` leaves: at its base (the rebuild before it), and at the map end
        after it, which only its v2 batches move (``LogSegment.recover`` feeds them alone to the producer state)."""
        if self.producer_state:
            moved = self.size[seg.base_offset] > 0 and 2 in seg.result.magics
            after = seg.result.next_offset if moved else seg.base_offset
            self.snapshots.update(dict.fromkeys({seg.base_offset, after}))

    def _recovered(self, seg: SegmentOnDisk) -> None:
        if seg.base_offset not in self.out.recovered:
            self.out.recovered.append(seg.base_offset)

    def _cut(self, seg: SegmentOnDisk, keep: int) -> bool:
        gone = self.size[seg.base_offset] - keep
        if gone <= 0:
            return False
        self.out.truncated[seg.base_offset] = self.out.truncated.get(seg.base_offset, 0) + gone
        self.size[seg.base_offset] = keep
        return True

    def _outcome(self) -> StartupPreview:
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
                       and not s.result.intact]
            if corrupt:
                out.notes.append(f"clean-shutdown marker in front of {len(corrupt)} segment(s) with a corrupt log "
                                 f"({', '.join(os.path.basename(s.log_path) for s in corrupt)}): the broker "
                                 f"serves them as they are")
        return out

    # ------------------------------------------------------------------ the real run: recovery, then a clean stop

    def _take_snapshot(self) -> None:
        """``ProducerStateManager.takeSnapshot``: only at an offset above the last snapshot."""
        if self.map_end_offset > self.last_snap_offset:
            self.snapshots[self.map_end_offset] = manager_snapshot_bytes(self.recovery.producer_state)
            self.last_snap_offset = self.map_end_offset

    def finish(self) -> LoadedPartition:
        """The files after the last segment (call only when every segment was recovered clean)."""
        lso = max(self.checkpoint_lso, self.bases[0]) if self.bases else self.checkpoint_lso
        leo = self.log_end_offset if self.log_end_offset is not None else lso
        self.remove_stray_snapshots(self.bases)
        self.snapshots = {o: d for o, d in self.snapshots.items() if o <= leo}
        self.rebuild_producer_state(leo, lso)  # the log's own manager: the load's last rebuildProducerState
        kept = dict(self.snapshots)
        # the load cuts the cache at the checkpointed log start offset, not at the first base offset
        assigned = self.recovery.leader_epochs
        cut_end = truncate_epochs_from_end(assigned, leo)
        epochs = truncate_epochs_from_start(cut_end, self.checkpoint_lso)
        # The cache writes its file only when it changes (an assign, or a truncation that removed an entry);
        # LeaderEpochCheckpointFile creates it empty when missing.
        written = (len(assigned) > len(self.initial_epochs) or len(cut_end) < len(assigned)
                   or any(o <= self.checkpoint_lso for _, o in cut_end))
        lec: bytes | None
        if self.config.legacy_record_version:
            lec = None
        elif written:
            lec = format_leader_epoch_checkpoint(epochs)
        elif self.epoch_file_existed:
            with open(os.path.join(self.partition_dir, LEADER_EPOCH_CHECKPOINT), "rb") as f:
                lec = f.read()
        else:
            lec = b""
        return LoadedPartition(lso, leo, kept, lec)  # type: ignore[arg-type]


def preview_start(segments: list[SegmentOnDisk], clean_shutdown: bool, recovery_point: int | None,
                  log_start_offset_checkpoint: int | None, producer_state: bool = True,
                  unloadable: tuple[Unloadable, ...] | list[Unloadable] = (),
                  config: LogConfig | None = None) -> StartupPreview:
    """The broker's next load of a partition whose segments are ``segments`` (offset order): ``LogLoader``'s dry
    run. ``recovery_point`` and ``log_start_offset_checkpoint`` are the partition's checkpoint entries (None: none,
    read as 0 as ``LogManager.loadLog`` does); ``producer_state`` is False for a topic on a message format before
    0.11 (no producer state replay). ``unloadable``: what the start trips on in the partition's log dir
    (``indexcore.log.unloadable``): a failure anywhere there is this partition's outcome too (the broker exits
    before it serves anything); a ``.log`` name of this partition the start misreads is a note, and may set the
    log end offset. ``config``: the topic's (its ``index.interval.bytes`` and index sizes decide what a recovery's
    index appends meet); None: the defaults."""
    failed = fail_notes(list(unloadable), clean_shutdown)
    if failed:
        return StartupPreview(ACTION_FAIL, notes=failed)
    if not segments:
        out = StartupPreview(ACTION_NONE, log_end_offset=log_start_offset_checkpoint or 0)
    else:
        out = start_dry_run(segments, clean_shutdown, recovery_point, log_start_offset_checkpoint, config,
                            producer_state).out
    for u in unloadable:
        out.notes.append(f"{u.effect} ({os.path.basename(u.path)})")
        if u.log_end_offset is not None and out.action != ACTION_FAIL:
            out.log_end_offset = u.log_end_offset
    return out


def producer_state_after_start(segments: list[SegmentOnDisk], clean_shutdown: bool, recovery_point: int | None,
                               log_start_offset_checkpoint: int | None,
                               config: LogConfig | None = None) -> ProducerStateManager | None:
    """The transactions of the producer state the broker's next load leaves for the log, as ``preview_start``'s
    dry run predicts them (``LogLoader.producer_state_at_end``: open ones, and those its last replay completed,
    which count until a high watermark passes their markers); None where it cannot tell or the load fails."""
    if not segments:
        return None
    return start_dry_run(segments, clean_shutdown, recovery_point, log_start_offset_checkpoint,
                         config).producer_state_at_end()


def start_dry_run(segments: list[SegmentOnDisk], clean_shutdown: bool, recovery_point: int | None,
                  log_start_offset_checkpoint: int | None, config: LogConfig | None = None,
                  producer_state: bool = True) -> LogLoader:
    """``LogLoader``'s dry run over ``segments`` (offset order, at least one) in their partition directory, loaded:
    its ``out`` is the start predicted (``preview_start``), its ``producer_state_at_end`` the state the start
    leaves. The checkpoint entries as ``preview_start`` takes them (None: 0); the dry run reads no clock."""
    loader = LogLoader(os.path.dirname(segments[0].log_path), config, log_start_offset_checkpoint=
                       log_start_offset_checkpoint or 0, dry_run=True, clean_shutdown=clean_shutdown,
                       recovery_point=recovery_point or 0, producer_state=producer_state)
    loader.load(segments)
    return loader


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


# -- the load's first passes: what an interrupted cleaning (``LocalLog.replaceSegments``) left ---------------------

KRAFT_SNAPSHOT_DELETED_SUFFIX = ".checkpoint.deleted"  # LogLoader leaves these to KafkaMetadataLog


def complete_swaps(partition_dir: str) -> list[str]:
    """What Kafka's ``LogLoader.load`` does with an interrupted cleaning's files before it loads a partition
    (``removeTempFilesAndCollectSwapFiles``, then its second and third passes), so that a later run starts where a
    broker's start would: ``.deleted`` files removed (a KRaft snapshot's aside); ``.swap`` files at or above the
    lowest ``.cleaned`` base offset removed (their operation never finished), then the ``.cleaned`` files; every
    file of a live segment in the offsets the ``.log.swap`` segments cover (from the lowest base to the highest
    next offset) removed; then every ``.swap`` file renamed in, an index's too when its ``.log`` was already
    swapped. Returns what it did, a line each (empty: nothing was left over). Files a replacement removes were kept
    in the quarantine before the first ``.cleaned`` file was written."""
    done: list[str] = []
    swaps = remove_temp_files_and_collect_swap_files(partition_dir, done)
    covered = []  # (base, next offset) of each .log.swap segment
    for name in [n for n in swaps if n.endswith(".log" + SWAP_FILE_SUFFIX)]:
        base = parse_segment_file_name(name[: -len(SWAP_FILE_SUFFIX)]).base_offset
        with open_log(os.path.join(partition_dir, name)) as buf:
            last = last_batch(buf, 0, quiet=False)  # LogSegment.readNextOffset of the swapped segment
        covered.append((base, last.next_offset if last is not None else base))
    if covered:
        low, high = min(b for b, _ in covered), max(n for _, n in covered)
        for name in sorted(os.listdir(partition_dir)):
            offset = _offset_from_file(name)
            if not name.endswith(SWAP_FILE_SUFFIX) and offset is not None and low <= offset < high:
                os.unlink(os.path.join(partition_dir, name))
                done.append(f"removed {name} (replaced by the swap)")
    for name in swaps:
        os.rename(os.path.join(partition_dir, name), os.path.join(partition_dir, name[: -len(SWAP_FILE_SUFFIX)]))
        done.append(f"renamed {name} in")
    if done:
        fsync_dir(partition_dir)
    return done


def remove_temp_files_and_collect_swap_files(partition_dir: str, done: list[str]) -> list[str]:
    """``LogLoader.removeTempFilesAndCollectSwapFiles``, the load's first pass: the ``.deleted`` files removed,
    the ``.swap`` files at or above the lowest ``.cleaned`` base offset removed, then the ``.cleaned`` files; the
    ``.swap`` files left (the second and third passes are ``complete_swaps``'). Each removal is a line of
    ``done``."""
    cleaned: list[str] = []
    swaps: list[str] = []
    for name in sorted(os.listdir(partition_dir)):
        if name.endswith(DELETED_FILE_SUFFIX) and not name.endswith(KRAFT_SNAPSHOT_DELETED_SUFFIX):
            os.unlink(os.path.join(partition_dir, name))
            done.append(f"removed {name}")
        elif name.endswith(CLEANED_FILE_SUFFIX):
            cleaned.append(name)
        elif name.endswith(SWAP_FILE_SUFFIX):
            swaps.append(name)
    min_cleaned = min((_offset_from_file(n) for n in cleaned), default=None)
    for name in [n for n in swaps if min_cleaned is not None and _offset_from_file(n) >= min_cleaned]:
        os.unlink(os.path.join(partition_dir, name))
        done.append(f"removed {name} (its cleaning never finished)")
        swaps.remove(name)
    for name in cleaned:
        os.unlink(os.path.join(partition_dir, name))
        done.append(f"removed {name}")
    return swaps


def _offset_from_file(name: str) -> int | None:
    """``LogFileUtils.offsetFromFile``: the number before the name's first dot; None when there is none."""
    try:
        return int(name[: name.index(".")])
    except ValueError:
        return None
