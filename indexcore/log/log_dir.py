"""A broker log directory: its partition directories, checkpoint files and the broker's ``.lock``."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import socket
import struct
import threading
from dataclasses import dataclass, field

from segdex.indexcore.config.broker_config import load_properties
from segdex.indexcore.errors import InvalidLayoutException, NotTopicPartitionDirException, SegdexError
from segdex.indexcore.fs.atomic_file import FileAttributes
from segdex.indexcore.log.layout import (
    CLEANED_FILE_SUFFIX,
    DELETED_FILE_SUFFIX,
    INDEX_SUFFIXES,
    LOCK_FILE,
    LOG_FILE_SUFFIX,
    LOG_START_OFFSET_CHECKPOINT,
    META_PROPERTIES,
    RECOVERY_POINT_CHECKPOINT,
    REMOTE_LOG_INDEX_CACHE_DIR,
    REPLICATION_OFFSET_CHECKPOINT,
    SWAP_FILE_SUFFIX,
    TopicPartition,
    kafka_topic_partition,
    parse_partition_dir_name,
    parse_segment_file_name,
)
from segdex.indexcore.log.unloadable import STAGE_LOG_DIR, Unloadable, failed_start, partition_dir_problems

METADATA_LOG_DIR_PREFIX = "__cluster_metadata-"


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
    skipped: list[tuple[str, str]]  # (path, why): -delete/-stray directories, Kafka finishes or ignores them
    unloadable: list[Unloadable] = field(default_factory=list)  # what a broker's start trips on (see unloadable)

    @property
    def start_fails(self) -> bool:
        """A broker's start on this log dir as it is exits (a name its load throws on)."""
        return any(u.fails for u in self.unloadable)


# The .lock files this process holds: real path -> [descriptor, hold count, pid]. A POSIX record lock is lost
# when its process closes *any* descriptor of the file, so while one is held here no code of this process may
# open that .lock again: ``is_locked`` and ``lock_holder`` answer from this table instead. A forked child
# inherits the table but not the lock: entries of another pid are ignored.
_HELD: dict[str, list[int]] = {}
_HELD_GUARD = threading.Lock()
# struct flock on Linux (x86_64 and aarch64): short l_type, short l_whence, off_t l_start, off_t l_len,
# pid_t l_pid, padded to 32 bytes.
_FLOCK = struct.Struct("@hhqqi")
_FLOCK_SIZE = 32


def lock_path(log_dir: str | os.PathLike) -> str:
    return os.path.join(os.path.realpath(os.fspath(log_dir)), LOCK_FILE)


def _held_here(path: str) -> bool:
    held = _HELD.get(path)
    return held is not None and held[2] == os.getpid()


def _probe_fd(path: str) -> int | None:
    try:
        return os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except PermissionError:
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)


def lock_holder(log_dir: str | os.PathLike) -> int | None:
    """The pid of the process holding the log dir's ``.lock`` (this process's own pid when it holds it), or
    None when nobody does. Asks the kernel (``F_GETLK``) without taking the lock. Over a network filesystem the
    pid may belong to another host."""
    path = lock_path(log_dir)
    with _HELD_GUARD:
        if _held_here(path):
            return os.getpid()
    fd = _probe_fd(path)
    if fd is None:
        return None
    try:
        return _conflicting_pid(fd)
    finally:
        os.close(fd)


def _conflicting_pid(fd: int) -> int | None:
    """``F_GETLK`` for a write lock over the whole file: the pid of a process whose lock conflicts, else None."""
    query = _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0).ljust(_FLOCK_SIZE, b"\0")
    l_type, _, _, _, pid = _FLOCK.unpack(fcntl.fcntl(fd, fcntl.F_GETLK, query)[: _FLOCK.size])
    return None if l_type == fcntl.F_UNLCK else pid


def is_locked(log_dir: str | os.PathLike) -> bool:
    """Whether *another* process holds ``.lock`` (Kafka takes it with a POSIX lock, ``FileChannel.tryLock``)."""
    holder = lock_holder(log_dir)
    return holder is not None and holder != os.getpid()


LOCK_HELD = "its .lock is held by another process"  # in every refusal of a held log dir


def ensure_not_locked(log_dir: str | os.PathLike) -> None:
    """LogDirLockedException naming the holder's pid when another process holds the log dir's ``.lock``."""
    holder = lock_holder(log_dir)
    if holder is not None and holder != os.getpid():
        raise LogDirLockedException(locked_message(log_dir, holder))


def _process_name(pid: int) -> str:
    """``java`` for a broker: the command of ``pid`` on this host (``/proc/PID/comm``), or nothing."""
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def locked_message(log_dir: str | os.PathLike, holder: int | None = None) -> str:
    """Why a held log dir is refused: by whom (``(pid 4242) named java``, its command on this host; an
    open-file-description lock, ``F_OFD_SETLK``, has no pid to name)."""
    who = ""
    if holder:
        name = _process_name(holder) if holder > 0 else ""
        who = f" (pid {holder})" + (f" named {name}" if name else "")
    return (f"{os.fspath(log_dir)}: {LOCK_HELD}{who} (a running Kafka broker, or another "
            f"segdex run?); stop it or work on a copy of the log dir")


def _discard_created(fd: int, path: str) -> None:
    """Remove a ``.lock`` this process just created but could not give the log dir's owner: left behind, it
    would stop a broker running as that owner (``FileLock`` opens it read-write). Not when another process
    locked it meanwhile: that process's lock would go with the name."""
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return
    with contextlib.suppress(OSError):
        os.unlink(path)


class LogDirLock:
    """The log dir's ``.lock`` held by this process, as Kafka's ``FileLock`` holds it while a broker runs.

    Taken before the first write into a log dir and released after the last write is durable, so neither a
    broker nor a second segdex writer starts meanwhile. A missing ``.lock`` is created with the log dir's owner
    and group (a broker running as its own user must be able to open it read-write). Holding it twice from one
    process is counted, not re-opened (re-opening would drop the POSIX lock on close).
    """

    def __init__(self, log_dir: str | os.PathLike) -> None:
        self.log_dir = os.fspath(log_dir)
        self.path = lock_path(log_dir)

    def acquire(self) -> LogDirLock:
        with _HELD_GUARD:
            if _held_here(self.path):
                _HELD[self.path][1] += 1
                return self
            attributes = FileAttributes.for_target(self.path)
            try:  # a new .lock gets the log dir's owner and group, so that the broker can open it read-write
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
                created = True
            except FileExistsError:
                fd = os.open(self.path, os.O_RDWR | os.O_CLOEXEC)
                created = False
            try:
                if created:
                    try:
                        attributes.apply(fd, self.path)
                    except BaseException:
                        _discard_created(fd, self.path)
                        raise
                try:
                    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError as e:
                    if e.errno in (errno.EACCES, errno.EAGAIN):
                        holder = None
                        with contextlib.suppress(OSError):
                            holder = _conflicting_pid(fd)
                        raise LogDirLockedException(locked_message(self.log_dir, holder)) from None
                    raise
            except BaseException:
                os.close(fd)
                raise
            _HELD[self.path] = [fd, 1, os.getpid()]
        return self

    def release(self) -> None:
        with _HELD_GUARD:
            if not _held_here(self.path):
                return
            held = _HELD[self.path]
            held[1] -= 1
            if held[1] > 0:
                return
            del _HELD[self.path]
            with contextlib.suppress(OSError):
                fcntl.lockf(held[0], fcntl.LOCK_UN)
            os.close(held[0])

    @property
    def held(self) -> bool:
        with _HELD_GUARD:
            return _held_here(self.path)

    def __enter__(self) -> LogDirLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def hold_lock(log_dir: str | os.PathLike) -> LogDirLock:
    """``with hold_lock(log_dir): ...`` writes under the log dir's ``.lock``; LogDirLockedException if another
    process holds it."""
    return LogDirLock(log_dir)


def held_by(log_dir: str | os.PathLike, owner: tuple[str, int] | None) -> str | None:
    """Check, from an executor, that the driver ``owner`` = (host name, pid) still holds the log dir's ``.lock``;
    returns why not, or None when it does. On the driver's host the holder's pid must be the driver's; on another
    host (a shared filesystem) the pid is not comparable, so the lock must be held by some process."""
    if owner is None:
        return None
    host, pid = owner
    holder = lock_holder(log_dir)
    if holder is None:
        return (f"{log_dir}: its .lock is no longer held by the segdex driver (pid {pid} on {host}): "
                f"a broker could start on it; not written")
    if socket.gethostname() == host and holder != pid:
        return (f"{log_dir}: its .lock is now held by another process (pid {holder}), not the segdex driver "
                f"(pid {pid}): not written")
    return None


def list_log_dir(log_dir: str | os.PathLike) -> LogDirListing:
    """Partition directories of a log dir; ``-delete`` and ``-stray`` ones are reported as skipped; what a
    broker's start trips on in ``unloadable`` (``indexcore.log.unloadable``).

    Each directory's name is read as Kafka 4.4's ``LogManager.loadLogs`` reads it
    (``LocalLog.parseTopicPartitionName``; ``remote-log-index-cache`` skipped as it skips it): one it refuses
    (``lost+found``, a backup folder) makes the broker's start exit, as does a file name the load of any partition
    directory throws on (``junk.log``); both need the operator before any broker starts. A name Kafka parses but
    no topic can have (``a b-0``) is skipped: a KRaft broker's start marks it stray.
    """
    log_dir = os.fspath(log_dir)
    if not os.path.isdir(log_dir):
        raise InvalidLayoutException(f"{log_dir}: not a directory")
    listing = LogDirListing(log_dir, [], [])
    for name in sorted(os.listdir(log_dir)):
        path = os.path.join(log_dir, name)
        if os.path.isdir(path):
            _list_entry(listing, name, path)
    return listing


def _list_entry(listing: LogDirListing, name: str, path: str) -> None:
    """One directory of a log dir, sorted into the listing as Kafka's start reads it."""
    if name == REMOTE_LOG_INDEX_CACHE_DIR:
        listing.skipped.append((path, "tiered storage's remote index cache: Kafka's start skips it"))
        return
    if name == LOCK_FILE:  # a directory where the .lock belongs: the broker's FileLock fails on it first
        return
    try:
        tp = kafka_topic_partition(name, os.path.realpath(path))
    except NotTopicPartitionDirException as e:
        listing.unloadable.append(failed_start(path, e, "LogManager.loadLogs reads every directory of a log dir as "
                                                        "<topic>-<partition>; move it out of the log dir",
                                               STAGE_LOG_DIR))
        return
    listing.unloadable += partition_dir_problems(path, metadata_log=is_metadata_log_dir(name))
    try:
        tp = parse_partition_dir_name(name)
    except InvalidLayoutException:
        listing.skipped.append((path, f"Kafka reads it as partition {tp.partition} of {tp.topic!r}, a name no topic "
                                      f"can have: a KRaft broker's start marks it stray (renames it "
                                      f"<name>.<uniqueId>-stray); not scanned"))
        return
    if tp.kind in ("delete", "stray"):
        listing.skipped.append((path, f"partition directory marked -{tp.kind}: not scanned"))
        return
    listing.partitions.append(PartitionDir(listing.log_dir, path, tp))


def is_metadata_log_dir(name: str) -> bool:
    """The KRaft metadata log's directory (``__cluster_metadata-0``), which the raft layer loads, not LogManager."""
    return name.startswith(METADATA_LOG_DIR_PREFIX)


PARTITION_FILE_MARKERS = (".log", ".index", ".timeindex", ".txnindex", ".snapshot")


def describe_dir(path: str | os.PathLike) -> str:
    """``log_dir``, ``partition_dir`` or ``unknown``: what a directory given on the command line looks like.

    A partition directory holds segment files or ``leader-epoch-checkpoint``/``partition.metadata`` and is
    named ``<topic>-<partition>``; a log dir holds ``meta.properties``, checkpoint files or partition
    directories."""
    path = os.fspath(path)
    try:
        names = os.listdir(path)
    except OSError:
        return "unknown"
    if any(n in (META_PROPERTIES, RECOVERY_POINT_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT,
                 REPLICATION_OFFSET_CHECKPOINT) for n in names):
        return "log_dir"
    has_segments = any(n.endswith(PARTITION_FILE_MARKERS) for n in names) or any(
        n in ("leader-epoch-checkpoint", "partition.metadata") for n in names)
    if has_segments:
        return "partition_dir"
    for n in names:
        try:
            parse_partition_dir_name(n)
        except InvalidLayoutException:
            continue
        if os.path.isdir(os.path.join(path, n)):
            return "log_dir"
    return "unknown"


@dataclass(frozen=True, slots=True)
class PartitionFinding:
    """A file in a partition directory that Kafka's ``LogLoader`` changes when it loads the partition."""

    kind: str  # orphan_index, swap, cleaned, deleted
    path: str
    message: str
    attention: bool


def partition_findings(partition_dir: str | os.PathLike) -> list[PartitionFinding]:
    """What Kafka's ``LogLoader.load`` will do to leftover files of a partition directory
    (``removeTempFilesAndCollectSwapFiles``, the swap passes, ``loadSegmentFiles``):

    * ``*.deleted``: deleted at load (segments retention or cleaning already dropped);
    * ``*.cleaned``: deleted at load (an interrupted log-cleaner pass);
    * ``*.swap`` at or above the lowest ``.cleaned`` offset: deleted (part of an incomplete split);
    * other ``*.swap``: the interrupted swap is completed: live segment files in the swapped range are deleted
      and the ``.swap`` files renamed to their live names, so the partition's segments change (attention);
    * ``.index``/``.timeindex``/``.txnindex`` without their ``.log``: deleted as orphans ("Found an orphaned
      index file ... with no corresponding log file"): a ``.log`` that vanished is worth a look (attention).
    """
    partition_dir = os.fspath(partition_dir)
    names = os.listdir(partition_dir)
    parsed = []
    for name in names:
        try:
            parsed.append((name, parse_segment_file_name(name)))
        except InvalidLayoutException:
            continue
    live_logs = {p.base_offset for _, p in parsed if p.suffix == LOG_FILE_SUFFIX and not p.state_suffix}
    min_cleaned = min((p.base_offset for _, p in parsed if p.state_suffix == CLEANED_FILE_SUFFIX), default=None)
    found = []
    for name, p in sorted(parsed, key=lambda item: item[0]):
        path = os.path.join(partition_dir, name)
        if p.state_suffix == DELETED_FILE_SUFFIX:
            found.append(PartitionFinding("deleted", path, "Kafka deletes it when it loads the partition", False))
        elif p.state_suffix == CLEANED_FILE_SUFFIX:
            found.append(PartitionFinding("cleaned", path, "left by an interrupted log cleaning: Kafka deletes it "
                                                           "when it loads the partition", False))
        elif p.state_suffix == SWAP_FILE_SUFFIX:
            if min_cleaned is not None and p.base_offset >= min_cleaned:
                found.append(PartitionFinding("swap", path, f"part of an incomplete segment split (at or above the "
                                                            f".cleaned offset {min_cleaned}): Kafka deletes it at "
                                                            f"load", False))
            else:
                found.append(PartitionFinding("swap", path, "left by an interrupted log cleaning or split: Kafka "
                                                            "completes the swap at load (deletes the live segments "
                                                            "it replaces, renames it without .swap), so this "
                                                            "partition's segments will change", True))
        elif p.suffix in INDEX_SUFFIXES and p.base_offset not in live_logs:
            found.append(PartitionFinding("orphan_index", path, "no .log with its base offset: Kafka deletes this "
                                                                "orphaned index file when it loads the partition",
                                          True))
    return found


def log_dir_of(partition_dir: str | os.PathLike) -> str:
    return os.path.dirname(os.path.abspath(os.fspath(partition_dir)))


def read_node_id(log_dir: str | os.PathLike) -> int | None:
    """The broker's id from the log dir's ``meta.properties`` (``node.id``, or ``broker.id`` in ZooKeeper-era
    dirs); None when it has none."""
    path = os.path.join(log_dir, META_PROPERTIES)
    if not os.path.exists(path):
        return None
    try:
        props = load_properties(path, "meta.properties")
        return int(props.get("node.id", props.get("broker.id", "")))
    except (SegdexError, ValueError):
        return None
