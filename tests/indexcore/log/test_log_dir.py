"""``log_dir`` in the test process: what ``describe_dir`` calls a directory, how ``list_log_dir`` sorts a log dir's
entries, and the log dir's ``.lock`` as Kafka's ``FileLock`` takes it.

Expected values come from Kafka's on-disk layout (a log dir holds ``meta.properties`` and the offset checkpoint
files, partition directories are ``<topic>-<partition>`` with ``.<uid>-delete``/``-future``/``-stray`` variants,
a partition directory holds segment files, ``leader-epoch-checkpoint`` and ``partition.metadata``), from the
segment files Kafka itself wrote (the fixtures), and from the kernel's lock semantics (fcntl(2)).

A broker holds ``.lock`` with ``FileChannel.tryLock``: a POSIX record lock (``F_SETLK``). Such locks belong to a
process, so a lock taken by the test process never conflicts with segdex running in that same process. The tests
hold the lock the way another process would with an *open file description* lock (``F_OFD_SETLK``): OFD locks
conflict with POSIX locks even within one process, and ``F_GETLK`` reports their holder's pid as -1 (fcntl(2):
"If the conflicting lock is an open file description lock, l_pid is set to -1"). Tests that act as another user
switch the effective uid of the (root) test process and back; one of them pins that a refused lock leaves behind
no ``.lock`` the broker cannot open.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from segdex.indexcore.log.layout import TopicPartition
from segdex.indexcore.log.log_dir import (
    LogDirLock,
    LogDirLockedException,
    PartitionDir,
    describe_dir,
    held_by,
    is_locked,
    list_log_dir,
    lock_holder,
    locked_message,
    partition_findings,
    read_node_id,
)
from segdex.indexcore.log.unloadable import STAGE_LOG_DIR, STAGE_METADATA_LOG, STAGE_PARTITION, first_failure
from tests.support.fixtures import FIXTURES
from tests.support.log_dir_locks import other_holder

OFD_HOLDER_PID = -1  # what F_GETLK reports for a conflicting open file description lock (fcntl(2))
NOBODY = 65534


def _free_for_others(lock_file: Path) -> bool:
    """Whether another process could take ``lock_file`` now: an OFD write lock over the whole file succeeds."""
    try:
        with other_holder(lock_file):
            return True
    except (BlockingIOError, PermissionError):
        return False


def _open_descriptors_of(path: Path) -> list[int]:
    """This process's descriptors open on ``path``."""
    fds = []
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/self/fd/{name}") == os.path.realpath(path):
                fds.append(int(name))
    return fds


@contextlib.contextmanager
def _as_user(uid: int) -> Iterator[None]:
    """Run as ``uid`` (effective uid only: root takes itself back after)."""
    os.seteuid(uid)
    try:
        yield
    finally:
        os.seteuid(0)


@contextlib.contextmanager
def _shared_dir(uid: int, gid: int) -> Iterator[Path]:
    """A directory every user can reach and write (under /tmp, not the private pytest dir), owned by uid:gid."""
    shared = Path(tempfile.mkdtemp(prefix="segdex-lock-"))
    try:
        shared.chmod(0o777)
        os.chown(shared, uid, gid)
        yield shared
    finally:
        shutil.rmtree(shared)


def _locked_text(log_dir: Path, pid: int | None) -> str:
    who = f" (pid {pid})" if pid is not None else ""
    return (f"{log_dir}: its .lock is held by another process{who} (a running Kafka broker, or another segdex run?); "
            f"stop it or work on a copy of the log dir")


# ---------------------------------------------------------------------------------------------------------------
# describe_dir


@pytest.mark.parametrize("marker", ["meta.properties", "recovery-point-offset-checkpoint",
                                    "log-start-offset-checkpoint", "replication-offset-checkpoint"])
def test_a_broker_log_dir_is_recognised_by_its_own_files(tmp_path: Path, marker: str):
    """A log dir holds meta.properties and the offset checkpoint files a broker writes at its top level."""
    (tmp_path / marker).write_text("0\n0\n")
    assert describe_dir(tmp_path) == "log_dir"


def test_a_segment_directory_written_by_kafka_is_a_partition_dir():
    """Kafka's own segment files (.log/.index/.timeindex/.snapshot) make a partition directory."""
    assert describe_dir(FIXTURES / "multi_segment_partition_retention" / "broker") == "partition_dir"


@pytest.mark.parametrize("names", [["00000000000000000000.log"], ["00000000000000000042.index"],
                                   ["00000000000000000042.txnindex"], ["00000000000000000208.snapshot"],
                                   ["leader-epoch-checkpoint"], ["partition.metadata"],
                                   ["leader-epoch-checkpoint", "partition.metadata"]])
def test_a_partition_dir_is_recognised_by_any_of_its_files(tmp_path: Path, names: list[str]):
    """A partition directory holds segment files, or only ``leader-epoch-checkpoint``/``partition.metadata``
    (a partition whose segments are all gone still has them): each alone is enough."""
    for name in names:
        (tmp_path / name).write_bytes(b"")
    assert describe_dir(tmp_path) == "partition_dir"


def test_a_log_dir_without_checkpoints_is_recognised_by_a_partition_directory(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch):
    """A fresh log dir holds only ``<topic>-<partition>`` directories: one is enough, wherever it is listed among
    entries that are not partitions (the test process runs elsewhere, so the directory is found under the path)."""
    monkeypatch.chdir(FIXTURES)
    (tmp_path / "orders-0").mkdir()
    i = 0
    while os.listdir(tmp_path)[0] == "orders-0" or i < 8:  # entries that are no partition, some listed first
        (tmp_path / f"notes{i}").write_text("x")
        i += 1
    assert describe_dir(tmp_path) == "log_dir"


def test_a_file_named_like_a_partition_is_not_a_log_dir(tmp_path: Path):
    """Only a *directory* named ``<topic>-<partition>`` is a partition of a log dir."""
    (tmp_path / "orders-0").write_text("not a directory")
    assert describe_dir(tmp_path) == "unknown"


def test_unknown_directories(tmp_path: Path):
    """Nothing Kafka writes, an empty directory, or a path that cannot be listed: unknown."""
    assert describe_dir(tmp_path) == "unknown"
    (tmp_path / "readme.txt").write_text("x")
    (tmp_path / "backup").mkdir()
    assert describe_dir(tmp_path) == "unknown"
    assert describe_dir(tmp_path / "missing") == "unknown"
    assert describe_dir(tmp_path / "readme.txt") == "unknown"


# ---------------------------------------------------------------------------------------------------------------
# list_log_dir


def test_a_log_dir_listing_in_full(tmp_path: Path):
    """Live and ``-future`` partition directories are listed; ``.<uid>-delete`` and ``.<uid>-stray`` ones are
    skipped (Kafka deletes or ignores them), as are ``remote-log-index-cache`` (Kafka's start skips it) and a name
    Kafka parses but no topic can have (its start marks it stray); a directory Kafka's ``LogManager.loadLogs``
    cannot read as ``<topic>-<partition>`` is unloadable: the broker will not start, with Kafka's exception; files
    are not entries. Sorted by name, each kind wherever it falls among the others."""
    names = ["__consumer_offsets-7", "a b-0", "backup", "lost+found", "orders-0", "orders-1.0a1b2c-delete",
             "orders-2", "orders-3.0a1b2c-stray", "orders-4", "orders-5.0a1b2c-future", "orders-6-delete",
             "remote-log-index-cache", "zz-old"]
    for name in names:
        (tmp_path / name).mkdir()
    (tmp_path / "meta.properties").write_text("version=1\n")
    (tmp_path / "recovery-point-offset-checkpoint").write_text("0\n0\n")
    log_dir = str(tmp_path)

    def p(name: str) -> str:
        return os.path.join(log_dir, name)

    def refused(name: str) -> str:
        return (f"{p(name)}: the broker will not start: org.apache.kafka.common.KafkaException: Found directory "
                f"{p(name)}, '{name}' is not in the form of topic-partition or topic-partition.uniqueId-delete (if "
                f"marked for deletion). (LogManager.loadLogs reads every directory of a log dir as "
                f"<topic>-<partition>; move it out of the log dir)")

    listing = list_log_dir(tmp_path)
    assert listing.partitions == [
        PartitionDir(log_dir, p("__consumer_offsets-7"), TopicPartition("__consumer_offsets", 7, "")),
        PartitionDir(log_dir, p("orders-0"), TopicPartition("orders", 0, "")),
        PartitionDir(log_dir, p("orders-2"), TopicPartition("orders", 2, "")),
        PartitionDir(log_dir, p("orders-4"), TopicPartition("orders", 4, "")),
        PartitionDir(log_dir, p("orders-5.0a1b2c-future"), TopicPartition("orders", 5, "future"))]
    assert listing.skipped == [
        (p("a b-0"), "Kafka reads it as partition 0 of 'a b', a name no topic can have: a KRaft broker's start "
                     "marks it stray (renames it <name>.<uniqueId>-stray); not scanned"),
        (p("orders-1.0a1b2c-delete"), "partition directory marked -delete: not scanned"),
        (p("orders-3.0a1b2c-stray"), "partition directory marked -stray: not scanned"),
        (p("remote-log-index-cache"), "tiered storage's remote index cache: Kafka's start skips it")]
    assert [str(u) for u in listing.unloadable] == [refused(n) for n in ("backup", "lost+found", "orders-6-delete",
                                                                         "zz-old")]
    assert all(u.fails and u.deletes_marker for u in listing.unloadable) and listing.start_fails


def test_listing_fields_by_name(tmp_path: Path):
    """The listing's log dir is the path given; skipped and unloadable entries each go in their own list."""
    (tmp_path / "t-0.ab-delete").mkdir()
    listing = list_log_dir(tmp_path)
    assert listing.log_dir == str(tmp_path)
    assert listing.skipped == [(str(tmp_path / "t-0.ab-delete"), "partition directory marked -delete: not scanned")]
    assert listing.unloadable == [] and listing.partitions == [] and not listing.start_fails
    (tmp_path / "t-0.ab-delete").rmdir()
    (tmp_path / "lost+found").mkdir()
    listing = list_log_dir(tmp_path)
    assert listing.skipped == [] and [u.path for u in listing.unloadable] == [str(tmp_path / "lost+found")]


def test_the_exception_names_the_canonical_path(tmp_path: Path):
    """Kafka names the directory by its canonical path (``File.getCanonicalPath``): a log dir reached through a
    symlink is named as its target."""
    real = tmp_path / "real"
    (real / "lost+found").mkdir(parents=True)
    (tmp_path / "link").symlink_to(real)
    [u] = list_log_dir(tmp_path / "link").unloadable
    assert u.path == str(tmp_path / "link" / "lost+found")
    assert f"Found directory {real / 'lost+found'}, 'lost+found'" in u.exception


# ---------------------------------------------------------------------------------------------------------------
# the .lock


def test_locked_message_names_the_holder(tmp_path: Path):
    """The refusal an operator reads names the pid holding the lock when it is known."""
    assert locked_message(tmp_path, 4242) == _locked_text(tmp_path, 4242)
    assert locked_message(tmp_path) == _locked_text(tmp_path, None)
    # a pid of this host is named by its command (pid 1: the container's or host's init)
    comm = Path("/proc/1/comm").read_text().strip()
    assert locked_message(tmp_path, 1) == _locked_text(tmp_path, 1).replace("(pid 1)", f"(pid 1) named {comm}")


def test_holding_the_lock_twice_is_counted(tmp_path: Path):
    """Taken twice by one process, ``.lock`` stays held until released twice (re-opening the file and closing it
    again would drop the POSIX lock), and is then free for a broker."""
    lock = LogDirLock(tmp_path)
    assert lock.acquire() is lock and lock.acquire() is lock
    assert lock.held and lock_holder(tmp_path) == os.getpid()
    assert len(_open_descriptors_of(tmp_path / ".lock")) == 1
    lock.release()
    assert lock.held and lock_holder(tmp_path) == os.getpid() and not is_locked(tmp_path)
    lock.release()
    assert not lock.held
    assert _open_descriptors_of(tmp_path / ".lock") == []
    assert lock_holder(tmp_path) is None and _free_for_others(tmp_path / ".lock")
    lock.release()  # released once more: nothing held, nothing happens
    assert not lock.held


def test_holding_three_times_needs_three_releases(tmp_path: Path):
    with LogDirLock(tmp_path), LogDirLock(tmp_path), LogDirLock(tmp_path) as inner:
        assert inner.held
    assert not inner.held and _free_for_others(tmp_path / ".lock")
    with LogDirLock(tmp_path) as lock:
        with LogDirLock(tmp_path):
            pass
        assert lock.held
    assert not lock.held


def test_release_frees_the_lock_for_a_broker(tmp_path: Path):
    """After the last release the descriptor is closed and another process can take ``.lock`` at once."""
    lock = LogDirLock(tmp_path).acquire()
    lock.release()
    assert _open_descriptors_of(tmp_path / ".lock") == []
    assert _free_for_others(tmp_path / ".lock")


def test_a_new_lock_file_gets_the_log_dirs_owner_and_a_brokers_mode(tmp_path: Path):
    """A ``.lock`` segdex creates belongs to the log dir's owner and group with mode 0644 (what a broker under
    umask 022 creates), so a broker running as its own user can open it read-write later; its descriptor is
    close-on-exec, so no process segdex starts inherits it."""
    if os.geteuid() != 0:
        pytest.skip("needs root to give the log dir another owner")
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    os.chown(log_dir, 4321, 4322)
    with LogDirLock(log_dir):
        st = os.stat(log_dir / ".lock")
        assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (4321, 4322, 0o644)
        [fd] = _open_descriptors_of(log_dir / ".lock")
        assert fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC


def test_an_existing_lock_file_is_left_as_the_broker_made_it(tmp_path: Path):
    """A broker's ``.lock`` is opened as it is: its owner and mode do not change."""
    lock_file = tmp_path / ".lock"
    lock_file.write_bytes(b"")
    os.chmod(lock_file, 0o640)
    with LogDirLock(tmp_path):
        assert stat.S_IMODE(os.stat(lock_file).st_mode) == 0o640
        [fd] = _open_descriptors_of(lock_file)
        assert fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC


def test_a_held_lock_refuses_the_writer_and_names_the_holder(tmp_path: Path):
    """Kafka's ``FileLock.tryLock`` fails while another process holds ``.lock``; so does segdex, with the holder's
    pid as ``F_GETLK`` reports it, and without keeping the file open or the lock counted."""
    (tmp_path / ".lock").write_bytes(b"")
    lock = LogDirLock(tmp_path)
    with other_holder(tmp_path / ".lock") as holder_fd:
        with pytest.raises(LogDirLockedException) as e:
            lock.acquire()
        assert str(e.value) == _locked_text(tmp_path, OFD_HOLDER_PID)
        assert not lock.held and _open_descriptors_of(tmp_path / ".lock") == [holder_fd]
        assert lock_holder(tmp_path) == OFD_HOLDER_PID and is_locked(tmp_path)
    with lock:  # free again
        assert lock.held


def test_a_holder_the_kernel_cannot_name_still_refuses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """When asking for the holder's pid fails, the refusal stands, without a pid."""
    import segdex.indexcore.log.log_dir as log_dir_module

    def no_answer(fd: int) -> int | None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(log_dir_module, "_conflicting_pid", no_answer)
    with other_holder(tmp_path / ".lock"), pytest.raises(LogDirLockedException) as e:
        LogDirLock(tmp_path).acquire()
    assert str(e.value) == _locked_text(tmp_path, None)


@pytest.mark.parametrize(("kind", "start", "length"), [
    (fcntl.F_RDLCK, 0, 0),  # a shared lock: Kafka's exclusive tryLock fails on it too
    (fcntl.F_WRLCK, 0, 1),  # only the first byte
    (fcntl.F_WRLCK, 1, 0),  # from the second byte to the end
    (fcntl.F_WRLCK, 7, 3),  # bytes past the end of the (empty) file
])
def test_any_lock_on_any_part_of_the_file_counts_as_held(tmp_path: Path, kind: int, start: int, length: int):
    """A broker locks the whole file; any lock another process holds on ``.lock`` makes Kafka's whole-file
    ``tryLock`` fail, so the holder query covers the whole file for a write lock."""
    (tmp_path / ".lock").write_bytes(b"")
    with other_holder(tmp_path / ".lock", kind, start, length):
        assert lock_holder(tmp_path) == OFD_HOLDER_PID
        assert is_locked(tmp_path)
        with pytest.raises(LogDirLockedException):
            LogDirLock(tmp_path).acquire()
    assert lock_holder(tmp_path) is None and not is_locked(tmp_path)


def test_no_lock_file_means_no_holder(tmp_path: Path):
    assert lock_holder(tmp_path) is None and not is_locked(tmp_path)
    assert not (tmp_path / ".lock").exists()


def test_a_lock_path_that_is_a_directory_is_not_read_as_free(tmp_path: Path):
    """Kafka opens ``.lock`` read-write (``FileChannel.open(READ, WRITE, CREATE)``) and cannot start when it is a
    directory; segdex does not report such a log dir as unlocked."""
    (tmp_path / ".lock").mkdir()
    with pytest.raises(IsADirectoryError):
        lock_holder(tmp_path)


def test_a_lock_file_this_user_may_only_read_still_names_its_holder():
    """segdex run by a user who may read but not write the broker's ``.lock`` still sees that it is held."""
    if os.geteuid() != 0:
        pytest.skip("needs root to act as another user")
    with _shared_dir(0, 0) as shared:
        (shared / ".lock").write_bytes(b"")
        os.chmod(shared / ".lock", 0o444)
        with other_holder(shared / ".lock"), _as_user(NOBODY):
            with pytest.raises(PermissionError):
                os.open(shared / ".lock", os.O_RDWR)
            held = (lock_holder(shared), is_locked(shared))
        assert held == (OFD_HOLDER_PID, True)
        with _as_user(NOBODY):
            free = lock_holder(shared)
        assert free is None


def test_a_lock_file_that_cannot_get_the_log_dirs_owner_is_refused():
    """segdex run by a user other than the log dir's owner cannot give a new ``.lock`` that owner (a broker running
    as its own user must be able to open it read-write): the lock is refused, naming the file and the owner."""
    if os.geteuid() != 0:
        pytest.skip("needs root to act as another user")
    with _shared_dir(4321, 4322) as log_dir:
        lock = LogDirLock(log_dir)
        with _as_user(NOBODY), pytest.raises(PermissionError) as e:
            lock.acquire()
        assert e.value.args == (1, "cannot give .lock the owner 4321:4322 of the file it replaces (run segdex as "
                                   "that user or as root)")
        assert e.value.filename == os.path.realpath(log_dir / ".lock")
        assert not lock.held and _open_descriptors_of(log_dir / ".lock") == []


def test_a_refused_lock_leaves_no_lock_file_the_broker_cannot_open():
    """Kafka's ``FileLock`` opens ``.lock`` read-write (``FileChannel.open(CREATE, READ, WRITE)``) and a clean broker
    shutdown deletes it (``FileLock.destroy``), so segdex often creates it. When segdex cannot give it the log
    dir's owner it refuses the lock; the file it created must not stay behind: owned by the segdex user with mode
    0600, the broker's user cannot open it and Kafka takes the log dir offline ("Disk error while locking
    directory")."""
    if os.geteuid() != 0:
        pytest.skip("needs root to act as another user")
    with _shared_dir(4321, 4322) as log_dir:
        with _as_user(NOBODY), pytest.raises(PermissionError):
            LogDirLock(log_dir).acquire()
        assert not (log_dir / ".lock").exists()


# ---------------------------------------------------------------------------------------------------------------
# meta.properties and leftover files


@pytest.mark.parametrize(("text", "node_id"), [
    ("version=1\nnode.id=3\ncluster.id=abc\n", 3),
    ("version=0\nbroker.id=7\ncluster.id=abc\n", 7),  # a ZooKeeper-era log dir
    ("version=1\ncluster.id=abc\n", None),
])
def test_the_node_id_of_meta_properties(tmp_path: Path, text: str, node_id: int | None):
    assert read_node_id(tmp_path) is None
    (tmp_path / "meta.properties").write_text(text)
    assert read_node_id(tmp_path) == node_id


def test_a_swap_without_cleaned_files_is_completed_at_load(tmp_path: Path):
    """No ``.cleaned`` file: a ``.swap`` is an interrupted replacement Kafka completes; an index without its
    ``.log`` is an orphan; the findings in name order."""
    for name in ("00000000000000000000.log", "00000000000000000000.log.swap", "00000000000000000005.index"):
        (tmp_path / name).write_bytes(b"")
    assert [(f.kind, os.path.basename(f.path), f.attention) for f in partition_findings(tmp_path)] == [
        ("swap", "00000000000000000000.log.swap", True), ("orphan_index", "00000000000000000005.index", True)]


def test_an_executor_checks_the_driver_still_holds_the_lock(tmp_path: Path):
    """``held_by``: on the driver's host the holder must be the driver's pid; on another host (a shared
    filesystem) any holder will do; no holder at all: not written."""
    import socket

    host, me = socket.gethostname(), os.getpid()
    assert held_by(tmp_path, None) is None
    assert held_by(tmp_path, (host, me)) == (f"{tmp_path}: its .lock is no longer held by the segdex driver (pid {me} "
                                             f"on {host}): a broker could start on it; not written")
    with LogDirLock(tmp_path):
        assert held_by(tmp_path, (host, me)) is None
        assert held_by(tmp_path, (host, me + 1)) == (f"{tmp_path}: its .lock is now held by another process "
                                                     f"(pid {me}), not the segdex driver (pid {me + 1}): not written")
        assert held_by(tmp_path, ("not-" + host, me + 1)) is None


def test_release_closes_the_locks_own_descriptor(tmp_path: Path):
    """The last release closes the lock's descriptor and no other: descriptor 0 (the runner's stdin, or a spare
    opened here when the runner closed it, so that the lock gets another number) stays open."""
    try:
        os.fstat(0)
        spare = None
    except OSError:
        spare = os.open(os.devnull, os.O_RDONLY)  # the lowest free number: 0
    try:
        with LogDirLock(tmp_path):
            assert _open_descriptors_of(tmp_path / ".lock") != [0]
        os.fstat(0)
        assert _open_descriptors_of(tmp_path / ".lock") == []
    finally:
        if spare is not None:
            os.close(spare)


def test_the_listing_orders_what_a_start_meets_first(tmp_path: Path):
    """The metadata log's bad name fails first (the raft layer loads it before ``LogManager``), then a directory
    name (``loadLogs`` parses them all first), then a partition's file name."""
    for part, name in (("__cluster_metadata-0", "junk.log"), ("orders-0", "abc.index")):
        (tmp_path / part).mkdir()
        (tmp_path / part / name).write_bytes(b"")
    (tmp_path / "lost+found").mkdir()
    listing = list_log_dir(tmp_path)
    assert [(os.path.relpath(u.path, tmp_path), u.stage, u.deletes_marker) for u in listing.unloadable] == [
        ("__cluster_metadata-0/junk.log", STAGE_METADATA_LOG, False), ("lost+found", STAGE_LOG_DIR, True),
        ("orders-0/abc.index", STAGE_PARTITION, True)]
    assert first_failure(listing.unloadable).path == str(tmp_path / "__cluster_metadata-0" / "junk.log")
