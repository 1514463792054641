"""Kafka's ``LogLoader`` for one partition with no clean-shutdown marker and no recovery point, done offline: what
its startup recovery followed by a clean shutdown leaves in the partition directory, besides the index files.

Kafka recovers every segment in offset order (``LogLoader.recoverSegment``), each with a new
``ProducerStateManager`` loaded from the latest snapshot (producers expired at the broker's clock dropped,
``loadFromSnapshot``), replays the segment's batches into it and snapshots it at the segment's end
(``takeSnapshot``: only at an offset above the last snapshot). After the last segment: stray snapshots (neither a
segment's base offset nor the highest one above every base) are removed, then those at or below the log start
offset or above the log end offset (``truncateAndReload``). A clean shutdown writes no new snapshot when the log
end offset already has one. The leader-epoch cache keeps what ``leader-epoch-checkpoint`` held, takes each batch
epoch above its latest (``LogSegment.recover``), is cut at the log end offset (``truncateFromEnd``) and at the log
start offset (``truncateFromStart``).

So the snapshot files: one at each segment base offset above the log start offset (the state before that
segment), and one at the log end offset (the state after the last segment), each filtered by expiry at every
segment boundary, exactly as the Kafka load that ``KafkaOracle load`` runs in the tests.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.fs.atomic_file import fsync_dir, same_content, write_atomic
from segdex.indexcore.log.checkpoints import (
    format_leader_epoch_checkpoint,
    format_offset_checkpoint,
    mode_template,
    read_leader_epoch_checkpoint,
    write_offset_checkpoint,
)
from segdex.indexcore.log.layout import (
    CLEAN_SHUTDOWN_FILE,
    LEADER_EPOCH_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
)
from segdex.indexcore.log.leader_epoch_cache import truncate_epochs_from_end, truncate_epochs_from_start
from segdex.indexcore.log.log_dir import LogDirCheckpoints
from segdex.indexcore.log.log_segments import PartitionRecovery, SegmentRecovery, SpeculativeSegment
from segdex.indexcore.log.producer_snapshot import (
    manager_snapshot_bytes,
    producer_snapshot_file_name,
    remove_stray_snapshots,
    snapshot_offset,
    snapshot_to_load,
)
from segdex.indexcore.log.producer_state import ProducerStateManager

CLEAN_SHUTDOWN_CONTENT = b'{"version":0,"brokerEpoch":-1}'


@dataclass
class LoadedPartition:
    """What Kafka's load and clean stop leave, besides the index files: the producer snapshots (offset -> bytes),
    the leader-epoch-checkpoint bytes (None: Kafka keeps no such file), the offsets the checkpoints get."""

    log_start_offset: int
    log_end_offset: int
    snapshots: dict[int, bytes] = field(default_factory=dict)
    leader_epoch_checkpoint: bytes | None = None

    def snapshot_files(self) -> dict[str, bytes]:
        return {producer_snapshot_file_name(o): data for o, data in sorted(self.snapshots.items())}


class LogLoader:
    """Recovers a partition's segments in order (``recover_segment``) and tracks the snapshots Kafka's load takes;
    ``finish`` gives the partition's ``LoadedPartition``.

    ``now_ms`` is the broker clock of the load (producer expiry); ``log_start_offset_checkpoint`` the partition's
    entry in ``log-start-offset-checkpoint`` (0 when none); ``precomputed`` segments recovered on their own in
    parallel (``PartitionRecovery``).
    """

    def __init__(self, partition_dir: str, config: LogConfig | None = None, now_ms: int = 0,
                 log_start_offset_checkpoint: int = 0,
                 precomputed: dict[int, SpeculativeSegment] | None = None) -> None:
        self.partition_dir = partition_dir
        self.config = config or LogConfig()
        self.now_ms = now_ms
        self.checkpoint_lso = log_start_offset_checkpoint
        self.recovery = PartitionRecovery(self.config, precomputed)
        path = os.path.join(partition_dir, LEADER_EPOCH_CHECKPOINT)
        self.initial_epochs = read_leader_epoch_checkpoint(path)
        self.recovery.leader_epochs.extend(self.initial_epochs)
        self.epoch_file_existed = os.path.exists(path)
        self.snapshots: dict[int, bytes] = {}
        self.last_snap_offset = log_start_offset_checkpoint
        self.map_end_offset = log_start_offset_checkpoint
        self.bases: list[int] = []
        self.log_end_offset: int | None = None

    def _reload(self, offset: int, log_start_offset: int) -> None:
        """``UnifiedLog.rebuildProducerState`` up to ``offset`` in a new manager: snapshots at or below the log
        start offset are deleted (``truncateAndReload``), the latest other one is loaded (expired producers
        dropped), and when it lies below ``offset`` the map end moves there and a snapshot is taken (the batches
        in between were replayed into this state already)."""
        self.snapshots = {o: d for o, d in self.snapshots.items() if o > log_start_offset}
        latest = snapshot_to_load(self.snapshots, log_start_offset, offset)
        if latest is None:  # nothing to load: an empty manager starting at the log start offset
            self.recovery.producer_state = ProducerStateManager()
            self.last_snap_offset = log_start_offset
            self.map_end_offset = log_start_offset
        else:
            self.recovery.producer_state = self.recovery.producer_state.reloaded(
                self.now_ms, self.config.producer_id_expiration_ms)
            self.last_snap_offset = self.map_end_offset = latest
        if offset > self.map_end_offset:  # updateMapEndOffset(offset) then takeSnapshot
            self.map_end_offset = offset
            self._take_snapshot()

    def _take_snapshot(self) -> None:
        """``ProducerStateManager.takeSnapshot``: only at an offset above the last snapshot."""
        if self.map_end_offset > self.last_snap_offset:
            self.snapshots[self.map_end_offset] = manager_snapshot_bytes(self.recovery.producer_state)
            self.last_snap_offset = self.map_end_offset

    def recover_segment(self, log_path: str, base_offset: int, native: bool | None = None) -> SegmentRecovery:
        self._reload(base_offset, self.checkpoint_lso)  # LogLoader.recoverSegment passes the checkpointed one
        seg = self.recovery.recover_segment(log_path, base_offset, native)
        self.bases.append(base_offset)
        r = seg.result
        # LogSegment.recover feeds producer state (and moves the map end) with magic-2 batches only
        if r is not None and r.last_offset >= 0 and 2 in r.magics:
            self.map_end_offset = max(self.map_end_offset, r.last_offset + 1)
            self._take_snapshot()
        self.log_end_offset = r.next_offset if r is not None else base_offset
        return seg

    def finish(self) -> LoadedPartition:
        """The files after the last segment (call only when every segment was recovered clean)."""
        lso = max(self.checkpoint_lso, self.bases[0]) if self.bases else self.checkpoint_lso
        leo = self.log_end_offset if self.log_end_offset is not None else lso
        staying = remove_stray_snapshots(self.snapshots, self.bases)
        self.snapshots = {o: d for o, d in self.snapshots.items() if o in staying and o <= leo}
        self._reload(leo, lso)  # the log's own manager: LogLoader.load's last rebuildProducerState
        kept = dict(self.snapshots)
        # LogLoader.load cuts the cache at the checkpointed log start offset, not at the first base offset
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
        return LoadedPartition(lso, leo, kept, lec)


def snapshot_files_in(partition_dir: str) -> list[str]:
    """Names of the producer snapshot files in a partition directory."""
    return sorted(n for n in os.listdir(partition_dir) if snapshot_offset(n) is not None)


@dataclass(frozen=True)
class PartitionState:
    """One partition of a log dir after ``segdex recover``: clean (recovered whole, its files written) or not."""

    topic: str
    partition: int
    clean: bool
    log_start_offset: int | None = None  # after the load: max(checkpoint, first base offset)
    log_end_offset: int | None = None
    first_base_offset: int | None = None


def marker_path(log_dir: str) -> str:
    return os.path.join(log_dir, CLEAN_SHUTDOWN_FILE)


def remove_clean_shutdown_marker(log_dir: str) -> bool:
    """Delete the log dir's ``.kafka_cleanshutdown`` (durably) before anything else changes there: a broker must
    never find a marker in front of files that are being rewritten. Returns whether one was there."""
    try:
        os.unlink(marker_path(log_dir))
    except FileNotFoundError:
        return False
    fsync_dir(log_dir)
    return True


def log_dir_checkpoints(partitions: list[PartitionState], checkpoints: LogDirCheckpoints
                        ) -> tuple[dict[tuple[str, int], int], dict[tuple[str, int], int]]:
    """The recovery points and log start offsets ``LogManager`` checkpoints at a clean shutdown, for the
    partitions of one log dir (``checkpointRecoveryOffsetsInDir``, ``checkpointLogStartOffsetsInDir``).

    A clean partition's recovery point is its log end offset; its log start offset has an entry only while it
    lies above the first segment's base offset. A partition that is not clean keeps what the files said (the
    broker then recovers it itself). Entries of partitions no longer in the dir go, as Kafka writes only its logs.
    """
    recovery: dict[tuple[str, int], int] = {}
    starts: dict[tuple[str, int], int] = {}
    for p in sorted(partitions, key=lambda p: (p.topic, p.partition)):
        key = (p.topic, p.partition)
        if p.clean:
            recovery[key] = p.log_end_offset
            if p.first_base_offset is not None and p.log_start_offset > p.first_base_offset:
                starts[key] = p.log_start_offset
            continue
        if key in checkpoints.recovery_points:
            recovery[key] = checkpoints.recovery_points[key]
        if key in checkpoints.log_start_offsets:
            starts[key] = checkpoints.log_start_offsets[key]
    return recovery, starts


def finish_log_dir(log_dir: str, partitions: list[PartitionState], checkpoints: LogDirCheckpoints,
                   marker: bool) -> bool:
    """Write the log dir's checkpoints (atomically, only where they change), then, when ``marker`` and every
    partition is clean, ``.kafka_cleanshutdown`` last; returns whether the marker was written. The caller holds
    the log dir's ``.lock`` and has made every partition's files durable."""
    recovery, starts = log_dir_checkpoints(partitions, checkpoints)
    for name, offsets in ((RECOVERY_POINT_CHECKPOINT, recovery), (LOG_START_OFFSET_CHECKPOINT, starts)):
        path = os.path.join(log_dir, name)
        if not same_content(path, format_offset_checkpoint(offsets)):
            write_offset_checkpoint(path, offsets)
    if not marker or not all(p.clean for p in partitions):
        return False
    path = marker_path(log_dir)
    write_atomic(path, CLEAN_SHUTDOWN_CONTENT, template=mode_template(path))
    return True
