"""A broker log directory: its partition directories, checkpoint files and the broker's ``.lock``."""

from __future__ import annotations

import errno
import fcntl
import os
from dataclasses import dataclass

from .checkpoints import read_offset_checkpoint
from .errors import InvalidLayoutException, SegdexError
from .layout import (
    LOCK_FILE,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    TopicPartition,
    parse_partition_dir_name,
)


class LogDirLockedException(SegdexError):
    """The log dir's ``.lock`` is held by another process: a broker is running on it."""


@dataclass(frozen=True, slots=True)
class PartitionDir:
    log_dir: str
    path: str
    topic_partition: TopicPartition

    @property
    def topic(self) -> str:
        return self.topic_partition.topic

    @property
    def partition(self) -> int:
        return self.topic_partition.partition

    @property
    def kind(self) -> str:
        return self.topic_partition.kind


@dataclass
class LogDirListing:
    log_dir: str
    partitions: list[PartitionDir]  # live and -future partition directories
    skipped: list[tuple[str, str]]  # (path, why): -delete/-stray directories, stray names


def is_locked(log_dir: str | os.PathLike) -> bool:
    """Whether another process holds ``.lock`` (Kafka takes it with a POSIX lock, ``FileChannel.tryLock``)."""
    path = os.path.join(os.fspath(log_dir), LOCK_FILE)
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return False
    except PermissionError:
        fd = os.open(path, os.O_RDONLY)
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno in (errno.EACCES, errno.EAGAIN):
                return True
            if e.errno == errno.EBADF:  # read-only descriptor: probe with a shared lock instead
                try:
                    fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                except OSError as e2:
                    return e2.errno in (errno.EACCES, errno.EAGAIN)
                return False
            raise
        fcntl.lockf(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def ensure_not_locked(log_dir: str | os.PathLike) -> None:
    if is_locked(log_dir):
        raise LogDirLockedException(
            f"{log_dir}: its .lock is held by another process (a running Kafka broker?); "
            f"stop the broker or work on a copy of the log dir")


def list_log_dir(log_dir: str | os.PathLike) -> LogDirListing:
    """Partition directories of a log dir; ``-delete`` and ``-stray`` ones are reported as skipped."""
    log_dir = os.fspath(log_dir)
    if not os.path.isdir(log_dir):
        raise InvalidLayoutException(f"{log_dir}: not a directory")
    partitions, skipped = [], []
    for name in sorted(os.listdir(log_dir)):
        path = os.path.join(log_dir, name)
        if not os.path.isdir(path):
            continue
        try:
            tp = parse_partition_dir_name(name)
        except InvalidLayoutException as e:
            skipped.append((path, str(e)))
            continue
        if tp.kind in ("delete", "stray"):
            skipped.append((path, f"partition directory marked -{tp.kind}: not scanned"))
            continue
        partitions.append(PartitionDir(log_dir, path, tp))
    return LogDirListing(log_dir, partitions, skipped)


def log_dir_of(partition_dir: str | os.PathLike) -> str:
    return os.path.dirname(os.path.abspath(os.fspath(partition_dir)))


@dataclass(frozen=True)
class LogDirCheckpoints:
    recovery_points: dict[tuple[str, int], int]
    log_start_offsets: dict[tuple[str, int], int]
    high_watermarks: dict[tuple[str, int], int]


def read_checkpoints(log_dir: str | os.PathLike) -> LogDirCheckpoints:
    log_dir = os.fspath(log_dir)
    return LogDirCheckpoints(
        read_offset_checkpoint(os.path.join(log_dir, RECOVERY_POINT_CHECKPOINT)),
        read_offset_checkpoint(os.path.join(log_dir, LOG_START_OFFSET_CHECKPOINT)),
        read_offset_checkpoint(os.path.join(log_dir, REPLICATION_OFFSET_CHECKPOINT)),
    )
