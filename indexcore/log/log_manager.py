"""Kafka's ``LogManager`` for the log dirs ``segdex recover`` finishes: the per-dir checkpoints it reads at start and
writes at a clean shutdown, each partition's state as its load left it, and the clean-shutdown marker.

``LogManager.loadLogs`` reads a log dir's ``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``
and ``replication-offset-checkpoint`` (``read_checkpoints``) and loads every partition with its entries
(``LogLoader``); a clean shutdown writes the first two again for the logs it holds
(``checkpointRecoveryOffsetsInDir``, ``checkpointLogStartOffsetsInDir``) and then ``.kafka_cleanshutdown``, so the
next start skips recovery. ``finish_log_dir`` does that offline, from each partition's ``PartitionState``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from segdex.indexcore.fs.atomic_file import fsync_dir, same_content, write_atomic
from segdex.indexcore.log.checkpoints import (
    format_offset_checkpoint,
    mode_template,
    read_offset_checkpoint,
    write_offset_checkpoint,
)
from segdex.indexcore.log.layout import (
    CLEAN_SHUTDOWN_FILE,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
)

CLEAN_SHUTDOWN_CONTENT = b'{"version":0,"brokerEpoch":-1}'


@dataclass(frozen=True)
class LogDirCheckpoints:
    """A log dir's checkpoint files, by (topic, partition)."""

    recovery_points: dict[tuple[str, int], int]
    log_start_offsets: dict[tuple[str, int], int]
    high_watermarks: dict[tuple[str, int], int]


def read_checkpoints(log_dir: str | os.PathLike) -> LogDirCheckpoints:
    """The checkpoints ``LogManager.loadLogs`` reads before it loads a log dir's partitions (an absent file: no
    entries)."""
    log_dir = os.fspath(log_dir)
    return LogDirCheckpoints(
        read_offset_checkpoint(os.path.join(log_dir, RECOVERY_POINT_CHECKPOINT)),
        read_offset_checkpoint(os.path.join(log_dir, LOG_START_OFFSET_CHECKPOINT)),
        read_offset_checkpoint(os.path.join(log_dir, REPLICATION_OFFSET_CHECKPOINT)),
    )


@dataclass(frozen=True)
class PartitionState:
    """One partition of a log dir as ``segdex recover``'s load left it: clean (recovered whole, its files written)
    or not, and the offsets its log dir's checkpoints get. A partition's task makes it; the driver writes the
    checkpoints from those of one log dir (``finish_log_dir``)."""

    topic: str
    partition: int
    clean: bool
    log_start_offset: int | None = None  # after the load: max(checkpoint, first base offset)
    log_end_offset: int | None = None
    first_base_offset: int | None = None
    snapshots: int | None = None  # producer snapshot files the load leaves


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
