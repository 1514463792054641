"""Safety: no data lost, no broker left unable to start, no success claimed for a failed write (issue 9).

Real files, real subprocesses and signals, a real local SparkSession and real Delta tables; a tmpfs for the
full-disk cases. Each test names the numbered point of the issue it covers.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import time
from pathlib import Path

import pytest

from segdex.indexcore.log.checkpoints import write_offset_checkpoint
from segdex.indexcore.log.log_dir import LogDirLock, lock_holder
from segdex.indexcore.tools.segment_writer import build_batch, write_partition
from segdex.jobs import report
from segdex.pipelines import metadata_store as ms
from segdex.pipelines import reindex
from segdex.pipelines.batch_write import PendingWrites
from segdex.pipelines.run_context import MODE_REINDEX, RunContext, RunRequest
from segdex.pipelines.sample_logdir import generate_uniform
from segdex.pipelines.scan import PartitionTask, commit_group, scan_partition
from tests.support import cli
from tests.support.cli import segdex_popen
from tests.support.fixtures import FIXTURES, REPO_ROOT, broker_lock, fixture_case_names, load_case, log_start_offset

REPO = REPO_ROOT
NOW = 1_800_000_000_000
OLD = 1_700_000_000_000
OTHER_UID = 4321
OTHER_GID = 4322


segdex = functools.partial(cli.segdex, timeout=300, no_traceback=True)


def tree(path: Path, pattern: str = "*") -> dict[str, str]:
    """sha256 of every regular file under ``path`` (relative names)."""
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(path.rglob(pattern)) if p.is_file() and p.name != ".lock"}


def temporaries(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob(".segdex-*.tmp"))


def old_partition(log_dir: Path, topic: str, segments: int = 3, per_segment: int = 20) -> Path:
    """A partition of ``segments`` rolled segments whose records are old; high watermark at its log end."""
    batches = [build_batch(i, [(OLD + i, b"k", b"v" * 200)]) for i in range(segments * per_segment)]
    write_partition(log_dir, topic, 0, batches, segment_bytes=per_segment * len(batches[0]))
    part = log_dir / f"{topic}-0"
    for log in part.glob("*.log"):
        os.utime(log, ns=(OLD * 1_000_000, OLD * 1_000_000))  # no time index: Kafka falls back to the mtime
    return part


def set_high_watermarks(log_dir: Path, topics: list[str], leo: int) -> None:
    write_offset_checkpoint(log_dir / "replication-offset-checkpoint", {(t, 0): leo for t in topics})


# ---------------------------------------------------------------------------------------------------------------
# 1. Internal topics and __cluster_metadata


INTERNAL = ["__consumer_offsets", "__transaction_state", "__share_group_state"]


def test_retention_apply_leaves_internal_topics_and_the_metadata_log(tmp_path):
    log_dir = tmp_path / "logs"
    topics = ["orders", "mixed", *INTERNAL, "__cluster_metadata"]
    for t in topics:
        old_partition(log_dir, t)
    set_high_watermarks(log_dir, topics, 60)
    untouched = {t: tree(log_dir / f"{t}-0") for t in [*INTERNAL, "__cluster_metadata"]}
    proc = segdex("retention", "--apply", "--no-record", "--now", str(NOW), "--topic-config",
                  "mixed:cleanup.policy=compact,delete", str(log_dir))
    assert proc.returncode == 0, proc.stderr
    # a plain topic and a compact,delete topic (Kafka's LogConfig.delete) lose every old segment
    for t in ("orders", "mixed"):
        deleted = sorted(p.name for p in (log_dir / f"{t}-0").glob("*.log.deleted"))
        assert deleted == [f"{b:020d}.log.deleted" for b in (0, 20, 40)], t
    # compacted internal topics and the KRaft metadata log are not touched at all
    for t, before in untouched.items():
        assert tree(log_dir / f"{t}-0") == before, t
        assert not list((log_dir / f"{t}-0").glob("*.deleted")), t
    assert ("__cluster_metadata-0: skipped: the KRaft metadata log follows metadata.* settings" in proc.stdout)
    assert ("config: __consumer_offsets: cleanup.policy=compact, segment.bytes=104857600 (Kafka's config for this "
            "internal topic)" in proc.stdout)
    assert "config: __transaction_state: cleanup.policy=compact" in proc.stdout
    # what was assumed rather than given is said: orders ran on every default, mixed on all but cleanup.policy
    assert ("config: assumed Kafka's defaults retention.ms=604800000, retention.bytes=-1, cleanup.policy=delete for 1 "
            "topics (orders)") in proc.stdout
    assert "retention.ms=604800000, retention.bytes=-1 for 1 topics (mixed)" in proc.stdout
    assert log_start_offset(log_dir, "orders") == log_start_offset(log_dir, "mixed") == 60


def test_a_default_for_every_topic_does_not_reach_internal_topics(tmp_path):
    log_dir = tmp_path / "logs"
    for t in ("orders", "__consumer_offsets"):
        old_partition(log_dir, t)
    set_high_watermarks(log_dir, ["orders", "__consumer_offsets"], 60)
    before = tree(log_dir / "__consumer_offsets-0")
    proc = segdex("retention", "--apply", "--no-record", "--now", str(NOW), "--config", "cleanup.policy=delete",
                  "--config", "retention.ms=1000", str(log_dir))
    assert proc.returncode == 0, proc.stderr
    assert tree(log_dir / "__consumer_offsets-0") == before
    assert len(list((log_dir / "orders-0").glob("*.log.deleted"))) == 3
    # only a topic override changes an internal topic's policy, as in Kafka
    proc = segdex("retention", "--no-record", "--now", str(NOW), "--topic-config",
                  "__consumer_offsets:cleanup.policy=delete", str(log_dir))
    assert "__consumer_offsets-0: delete 00000000000000000000" in proc.stdout


def test_reindex_and_compact_never_write_the_metadata_log(tmp_path, spark):
    log_dir = tmp_path / "logs"
    meta_part = old_partition(log_dir, "__cluster_metadata")
    old_partition(log_dir, "orders")
    summary = reindex.run(spark, "reindex", RunRequest([str(log_dir)], str(tmp_path / "meta"), reindex.LogConfig()),
                          progress=False)
    assert not list(meta_part.glob("*.index")) and not list(meta_part.glob("*.timeindex"))
    assert len(list((log_dir / "orders-0").glob("*.index"))) == 3
    rows = {r.topic: r for r in summary.segment_rows if r.base_offset == 0}
    assert rows["__cluster_metadata"].status == "missing"
    assert rows["orders"].status == "ok"
    # compact --apply leaves even an over-long index of the metadata log alone
    (meta_part / "00000000000000000000.index").write_bytes(bytes(1024))
    before = tree(meta_part)
    proc = segdex("compact", "--apply", str(log_dir))
    assert "__cluster_metadata-0: skipped: the KRaft metadata log: never touched" in proc.stdout
    assert tree(meta_part) == before
    proc = segdex("rebuild", str(meta_part))
    assert proc.returncode == 2 and "never rewritten in place" in proc.stderr
    assert tree(meta_part) == before


# ---------------------------------------------------------------------------------------------------------------
# 2. Owner, group and mode


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="changing a file's owner needs root (CI runs as root)")


def chown_tree(path: Path, mode: int) -> None:
    os.chown(path, OTHER_UID, OTHER_GID)
    for p in path.rglob("*"):
        os.chown(p, OTHER_UID, OTHER_GID)
        if p.is_file():
            p.chmod(mode)


def owner(path: Path) -> tuple[int, int, int]:
    st = path.stat()
    return st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)


@needs_root
def test_replaced_and_new_files_keep_the_brokers_owner_and_mode(tmp_path, spark):
    log_dir = tmp_path / "logs"
    part = old_partition(log_dir, "orders")
    segdex("rebuild", str(part))
    (part / "00000000000000000000.index").write_bytes(b"\xff" * 16)  # corrupt: replaced
    (part / "00000000000000000020.timeindex").unlink()  # missing: created
    set_high_watermarks(log_dir, ["orders"], 60)
    chown_tree(log_dir, 0o640)
    (log_dir / ".lock").unlink()  # left by the rebuild: this run creates it again
    summary = reindex.run(spark, "reindex", RunRequest([str(log_dir)], str(tmp_path / "meta"), reindex.LogConfig()),
                          progress=False)
    assert summary.run_row.files_written == 2
    assert owner(part / "00000000000000000000.index") == (OTHER_UID, OTHER_GID, 0o640)
    assert owner(part / "00000000000000000020.timeindex") == (OTHER_UID, OTHER_GID, 0o640)
    assert owner(log_dir / ".lock") == (OTHER_UID, OTHER_GID, 0o644)  # created for the run: the broker opens it

    # segdex rebuild in place, and retention --apply: checkpoints, epochs and the rolled segment
    (part / "00000000000000000040.index").unlink()
    assert segdex("rebuild", str(part)).returncode == 0
    assert owner(part / "00000000000000000040.index") == (OTHER_UID, OTHER_GID, 0o640)
    write_offset_checkpoint(log_dir / "log-start-offset-checkpoint", {("orders", 0): 0})
    os.chown(log_dir / "log-start-offset-checkpoint", OTHER_UID, OTHER_GID)
    (log_dir / "log-start-offset-checkpoint").chmod(0o600)
    (part / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
    os.chown(part / "leader-epoch-checkpoint", OTHER_UID, OTHER_GID)
    proc = segdex("retention", "--apply", "--no-record", "--now", str(NOW), str(log_dir))
    assert proc.returncode == 0, proc.stderr
    assert owner(log_dir / "log-start-offset-checkpoint") == (OTHER_UID, OTHER_GID, 0o600)
    assert owner(part / "leader-epoch-checkpoint")[:2] == (OTHER_UID, OTHER_GID)
    for suffix in (".log", ".index", ".timeindex"):  # every segment went: the empty roll segment
        assert owner(part / f"00000000000000000060{suffix}") == (OTHER_UID, OTHER_GID, 0o640), suffix
    for p in log_dir.rglob("*"):
        assert p.stat().st_uid == OTHER_UID, p


def test_non_root_cannot_take_a_file_from_its_owner(tmp_path):
    """A replacement that cannot keep the owner fails instead of leaving a file the broker may not open."""
    if os.geteuid() != 0:
        pytest.skip("needs root to create a file owned by another user")
    import tempfile

    from segdex.indexcore.fs.atomic_file import write_atomic

    shared = Path(tempfile.mkdtemp(prefix="segdex-owner-"))
    try:
        shared.chmod(0o777)
        target = shared / "x.index"
        target.write_bytes(b"old")
        os.chown(target, OTHER_UID, OTHER_GID)
        pid = os.fork()
        if pid == 0:  # a process of a third user, as segdex run by the wrong account
            code = 1
            try:
                os.setgid(OTHER_GID + 1)
                os.setuid(OTHER_UID + 1)
                write_atomic(target, b"new")
            except PermissionError as e:
                code = 7 if "cannot give x.index the owner 4321:4322" in str(e) else 8
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 7
        assert target.read_bytes() == b"old" and not temporaries(shared)
        write_atomic(target, b"new")  # root keeps the owner
        assert target.read_bytes() == b"new" and owner(target)[:2] == (OTHER_UID, OTHER_GID)
    finally:
        shutil.rmtree(shared)


# ---------------------------------------------------------------------------------------------------------------
# 3. Mutual exclusion, and 4. failed writes counted as failed


@pytest.mark.spark
def test_reindex_holds_the_lock_and_a_second_writer_is_refused(tmp_path):
    log_dir = tmp_path / "logs"
    generate_uniform(log_dir, partitions=60, segments_per_partition=2, segment_bytes=256 * 1024,
                     topics=[("t", 1, 120)])
    # on Spark: a run long enough for two other commands to be refused while it holds the lock
    child = segdex_popen("reindex", "--no-progress", "--metadata", str(tmp_path / "meta"), "--config",
                         "index.interval.bytes=0", str(log_dir), env={"SEGDEX_ENGINE": "spark"})
    try:
        deadline = time.monotonic() + 120
        while lock_holder(log_dir) != child.pid and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert lock_holder(log_dir) == child.pid, "reindex never held the log dir's .lock"
        second = segdex("retention", "--apply", "--no-record", str(log_dir))
        third = segdex("compact", "--apply", str(log_dir))
        assert lock_holder(log_dir) == child.pid  # still held: the refusals above happened during the run
    finally:
        out, err = child.communicate(timeout=300)
    assert child.returncode == 0, err
    assert second.returncode == 1 and f"its .lock is held by another process (pid {child.pid})" in second.stderr
    assert third.returncode == 1 and "refused" in third.stderr
    assert lock_holder(log_dir) is None  # released at the end
    assert not list(log_dir.rglob("*.deleted"))


def test_a_broker_holding_the_lock_refuses_reindex_and_rebuild(tmp_path, spark):
    log_dir = tmp_path / "logs"
    part = old_partition(log_dir, "orders")
    with broker_lock(log_dir):
        summary = reindex.run(spark, "reindex", RunRequest([str(log_dir)], str(tmp_path / "meta"), reindex.LogConfig()),
                              progress=False)
        proc = segdex("rebuild", str(part))
    assert summary.exit_status == 1 and summary.run_row.files_written == 0
    assert proc.returncode == 1 and "refused" in proc.stderr
    assert not list(part.glob("*.index")) and not temporaries(log_dir)


def test_writes_refused_when_the_driver_no_longer_holds_the_lock(tmp_path):
    """The executor's check before its renames: when the driver's lock is gone and another process holds the
    dir, nothing is replaced and every staged file counts as failed in its row (the bug: failures were keyed by
    temporary paths and looked up by target paths, so the rows said ok)."""
    log_dir = tmp_path / "logs"
    part = old_partition(log_dir, "orders")
    task = PartitionTask(str(log_dir), str(part), "orders", 0, False, reindex.LogConfig(), 1, 3,
                         lock_owner=(socket.gethostname(), os.getpid()))
    pending = PendingWrites()
    now = reindex.datetime.now(reindex.UTC)
    with LogDirLock(log_dir):  # this process plays the driver while the files are staged
        out = scan_partition(task, RunContext(MODE_REINDEX, "r", now), pending=pending)
    assert out.files_written == 6 and len(temporaries(log_dir)) == 6
    with broker_lock(log_dir):  # ... and a broker takes the dir before the renames
        commit_group([task], [out], pending, RunContext(MODE_REINDEX, "r", now))
    assert out.files_written == 0 and out.files_failed == 6
    assert [r.status for r in out.segments] == ["error"] * 3
    assert all("not written" in r.reason and "held by another process" in r.reason for r in out.segments)
    assert out.partition.status == "error" and out.attention
    assert not list(part.glob("*.index")) and not temporaries(log_dir)


def test_a_failed_write_is_a_failure_everywhere(tmp_path, spark, capsys):
    log_dir = tmp_path / "logs"
    part = old_partition(log_dir, "orders")
    (part / "00000000000000000020.index").mkdir()  # the target cannot be replaced: a directory is in the way
    meta = str(tmp_path / "meta")
    summary = reindex.run(spark, "reindex", RunRequest([str(log_dir)], meta, reindex.LogConfig()), progress=False)
    report.print_run(summary)
    out = capsys.readouterr()
    assert summary.exit_status == 1
    assert summary.run_row.files_failed == 1 and summary.run_row.files_written == 5
    assert "rewrote 5 index files, 1 FAILED" in out.out
    assert "00000000000000000020.index: not written" in out.err
    row = {r.base_offset: r for r in summary.segment_rows}
    assert row[20].status == "error" and "00000000000000000020.index not written" in row[20].reason
    assert row[0].status == "ok" and row[40].status == "ok"
    runs = ms.rows_of(ms.read_arrow(meta, "runs"))
    assert runs[0]["files_failed"] == 1 and runs[0]["exit_status"] == 1
    segs = {r["base_offset"]: r["status"] for r in ms.rows_of(ms.read_arrow(meta, "segments"))}
    assert segs == {0: "ok", 20: "error", 40: "ok"}
    assert not temporaries(log_dir)


# ---------------------------------------------------------------------------------------------------------------
# 5. Valid broker indexes are left alone


def assemble_broker_dir(root: Path) -> Path:
    """One partition per fixture case with the broker's own .log and index files."""
    log_dir = root / "logs"
    for case in fixture_case_names():
        part = log_dir / f"{case}-0"
        part.mkdir(parents=True)
        for f in (FIXTURES / case / "broker").iterdir():
            if f.suffix in (".log", ".index", ".timeindex", ".txnindex"):
                shutil.copyfile(f, part / f.name)
    return log_dir


def test_default_reindex_leaves_valid_broker_indexes_alone(tmp_path, spark, kafka_fixtures):
    log_dir = assemble_broker_dir(tmp_path)
    before = tree(log_dir)
    summary = reindex.run(spark, "reindex", RunRequest([str(log_dir)], str(tmp_path / "meta"), reindex.LogConfig()),
                          progress=False)  # no topic configs: index.interval.bytes 4096 assumed everywhere
    assert tree(log_dir) == before
    assert summary.run_row.files_written == 0 and summary.exit_status == 0
    statuses = {r.status for r in summary.segment_rows}
    assert statuses == {"ok", "equivalent"}
    equivalent = sum(r.status == "equivalent" for r in summary.segment_rows)
    assert equivalent >= 20  # other intervals, follower appends: valid, other bytes
    # --normalize rewrites them to what Kafka's recovery writes with the topics' own configs
    topics = {c: reindex.LogConfig().with_overrides({"index.interval.bytes": str(
        load_case(c)["topic_config"]["index.interval.bytes"])}) for c in fixture_case_names()}
    summary = reindex.run(spark, "reindex", RunRequest([str(log_dir)], str(tmp_path / "meta"), reindex.LogConfig(),
                                                       topics, normalize=True), progress=False)
    assert summary.run_row.files_written > 0
    for case in fixture_case_names():
        for f in (FIXTURES / case / "recovered").glob("*index"):
            if load_case(case).get("recovery_input_dir", "broker") == "broker":
                assert (log_dir / f"{case}-0" / f.name).read_bytes() == f.read_bytes(), (case, f.name)


# ---------------------------------------------------------------------------------------------------------------
# 6. Checks before changes


@pytest.mark.spark
def test_unusable_metadata_path_changes_nothing(tmp_path):
    log_dir = tmp_path / "logs"
    part = old_partition(log_dir, "orders")
    before = tree(log_dir)
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    proc = segdex("reindex", "--no-progress", "--metadata", str(blocker / "meta"), str(log_dir))
    assert proc.returncode == 2 and "cannot create it" in proc.stderr
    assert tree(log_dir) == before and not list(part.glob("*.index")) and not (log_dir / ".lock").exists()


def _mount_tmpfs(path: Path, size: str, *options: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join([f"size={size}", *options]), "tmpfs", str(path)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"this machine refuses to mount a tmpfs ({proc.stderr.strip()}); the full-disk test needs one")


@pytest.fixture
def tmpfs(tmp_path):
    mounted: list[Path] = []

    def mount(name: str, size: str, *options: str) -> Path:
        path = tmp_path / name
        _mount_tmpfs(path, size, *options)
        mounted.append(path)
        return path

    yield mount
    for path in reversed(mounted):
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def fill(path: Path, leave: int) -> None:
    """Fill the filesystem of ``path`` until about ``leave`` bytes are free."""
    st = os.statvfs(path)
    free = st.f_bavail * st.f_frsize
    with open(path / "filler", "wb") as f:
        f.write(b"\0" * max(0, free - leave))


@pytest.mark.spark
def test_read_only_metadata_mount_changes_nothing(tmp_path, tmpfs):
    log_dir = tmp_path / "logs"
    old_partition(log_dir, "orders")
    ro = tmpfs("ro", "1m", "ro")
    before = tree(log_dir)
    proc = segdex("reindex", "--no-progress", "--metadata", str(ro / "meta"), str(log_dir))
    assert proc.returncode == 2 and "Read-only file system" in proc.stderr
    assert tree(log_dir) == before


@pytest.mark.spark
def test_full_metadata_disk_changes_nothing(tmp_path, tmpfs):
    log_dir = tmp_path / "logs"
    part = old_partition(log_dir, "orders")
    full = tmpfs("full", "2m")
    fill(full, 64 * 1024)
    proc = segdex("reindex", "--no-progress", "--metadata", str(full / "meta"), str(log_dir))
    assert proc.returncode == 2 and "not enough room" in proc.stderr and "nothing was changed" in proc.stderr
    assert not list(part.glob("*.index"))


@pytest.mark.spark
def test_full_log_dir_disk_is_refused_before_any_write(tmp_path, tmpfs):
    disk = tmpfs("disk", "4m")
    log_dir = disk / "logs"
    part = old_partition(log_dir, "orders", segments=3, per_segment=2000)  # ~1.6 MB of .log
    fill(disk, 8 * 1024)
    proc = segdex("reindex", "--no-progress", "--config", "index.interval.bytes=0", "--metadata",
                  str(tmp_path / "meta"), str(log_dir))
    assert proc.returncode == 1 and "not enough room" in proc.stderr and "nothing was written there" in proc.stderr
    assert not list(part.glob("*.index")) and not temporaries(log_dir)
    (disk / "filler").unlink()  # room again: the same run succeeds
    proc = segdex("reindex", "--no-progress", "--config", "index.interval.bytes=0", "--metadata",
                  str(tmp_path / "meta"), str(log_dir))
    assert proc.returncode == 0, proc.stderr
    assert len(list(part.glob("*.index"))) == 3


@pytest.mark.spark
def test_a_run_that_fails_midway_says_what_it_changed(tmp_path):
    log_dir = tmp_path / "logs"
    part = old_partition(log_dir, "orders")
    meta = tmp_path / "meta"
    (meta / "runs" / "_delta_log").mkdir(parents=True)
    (meta / "runs" / "_delta_log" / "00000000000000000000.json").write_text("{ not a delta log\n")
    proc = segdex("reindex", "--no-progress", "--metadata", str(meta), str(log_dir))
    assert proc.returncode == 3
    assert "failed: cannot record the metadata" in proc.stderr
    assert "6 index files were rewritten in 1 partitions before the failure" in proc.stderr
    assert len(list(part.glob("*.index"))) == 3
    assert len([line for line in proc.stderr.splitlines() if line.startswith("segdex reindex:")]) == 1


# ---------------------------------------------------------------------------------------------------------------
# 7. Interrupted runs


def big_log_dir(root: Path) -> Path:
    log_dir = root / "logs"
    generate_uniform(log_dir, partitions=300, segments_per_partition=2, segment_bytes=192 * 1024,
                     topics=[("t", 1, 120)])
    return log_dir


REINDEX_ARGS = ["reindex", "--no-progress", "--config", "index.interval.bytes=0"]


def start_reindex(log_dir: Path, meta: Path) -> subprocess.Popen:
    return segdex_popen(*REINDEX_ARGS, "--metadata", str(meta), str(log_dir), start_new_session=True)


def wait_for_temporaries(log_dir: Path, child: subprocess.Popen) -> None:
    deadline = time.monotonic() + 180
    while child.poll() is None and time.monotonic() < deadline:
        for part in log_dir.iterdir():
            if part.is_dir() and any(n.startswith(".segdex-") for n in os.listdir(part)):
                return
        time.sleep(0.005)
    pytest.fail(f"reindex ended (status {child.poll()}) before any temporary file was seen")


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (its JVM, the Python worker daemon and its workers), from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def crash(pid: int) -> None:
    """What a power cut does to a run: every process of it stops at once (frozen first, so none reacts)."""
    frozen: set[int] = set()
    while True:
        tree = {pid, *descendants(pid)} - frozen
        if not tree:
            break
        for p in tree:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGSTOP)
        frozen |= tree
    for p in frozen:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, signal.SIGKILL)


@pytest.fixture(scope="module")
def clean_reference(tmp_path_factory) -> dict[str, str]:
    """The index files of an uninterrupted run on the same log dir."""
    root = tmp_path_factory.mktemp("clean")
    log_dir = big_log_dir(root)
    proc = segdex(*REINDEX_ARGS, "--metadata", str(root / "meta"), str(log_dir))
    assert proc.returncode == 0, proc.stderr
    return tree(log_dir, "*index")


@pytest.mark.spark
@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "SIGKILL"])
def test_interrupted_reindex_then_rerun(tmp_path, clean_reference, how):
    log_dir = big_log_dir(tmp_path)
    logs_before = tree(log_dir, "*.log")
    child = start_reindex(log_dir, tmp_path / "meta")
    wait_for_temporaries(log_dir, child)
    if how == "SIGKILL":  # a crash: the driver, its JVM and its Python workers die at once
        crash(child.pid)
    elif how == "SIGINT":  # Ctrl-C in a terminal reaches the whole foreground process group
        os.killpg(child.pid, signal.SIGINT)
    else:
        child.send_signal(signal.SIGTERM)
    out, err = child.communicate(timeout=120)
    left = temporaries(log_dir)
    if how == "SIGKILL":
        assert child.returncode == -signal.SIGKILL
        assert left, "a crash during the writes leaves temporaries behind"
    else:
        assert child.returncode == 128 + getattr(signal, how), err
        assert "Traceback" not in err and "py4j" not in err.lower()
        assert f"segdex reindex: interrupted by {how}" in err
        assert "removed" in err and "temporary files" in err
        assert not left, left  # a clean stop removes its own temporaries
        ours = [line for line in err.splitlines() if line.startswith("segdex")]
        assert len(ours) == 1, err  # one line; the rest is the JVM's start-up banner (printed before the signal)
        assert not [line for line in err.splitlines() if "ERROR" in line or "Exception" in line], err
    assert tree(log_dir, "*.log") == logs_before
    # the next run removes what a crash left, reports it, and finishes the job
    proc = segdex(*REINDEX_ARGS, "--metadata", str(tmp_path / "meta"), str(log_dir))
    assert proc.returncode == 0, proc.stderr
    for path in left:
        assert f"removed: {path}: temporary file left by an interrupted segdex run" in proc.stderr
    assert not temporaries(log_dir)
    assert tree(log_dir, "*index") == clean_reference
    assert lock_holder(log_dir) is None


# ---------------------------------------------------------------------------------------------------------------
# 8. One key per log dir and per -future copy


def test_symlinked_log_dir_and_future_copy_keep_their_rows(tmp_path, spark):
    log_dir = tmp_path / "logs"
    old_partition(log_dir, "orders")
    shutil.copytree(log_dir / "orders-0", log_dir / "orders-0.0123456789abcdef0123456789abcdef-future")
    link = tmp_path / "link"
    link.symlink_to(log_dir)
    meta = str(tmp_path / "meta")
    reindex.run(spark, "verify", RunRequest([str(link)], meta, reindex.LogConfig()), progress=False)
    reindex.run(spark, "verify", RunRequest([str(log_dir)], meta, reindex.LogConfig()), progress=False)
    rows = ms.rows_of(ms.read_arrow(meta, "segments"))
    assert {r["log_dir"] for r in rows} == {str(log_dir.resolve())}
    keys = sorted((r["future"], r["base_offset"]) for r in rows)
    assert keys == [(False, 0), (False, 20), (False, 40), (True, 0), (True, 20), (True, 40)]
    parts = ms.rows_of(ms.read_arrow(meta, "partitions"))
    assert sorted(p["future"] for p in parts) == [False, True]


# ---------------------------------------------------------------------------------------------------------------
# 9. FIFOs, orphans, the wrong kind of directory, stray directories, .swap files


def test_a_fifo_named_log_never_hangs(tmp_path, spark):
    log_dir = tmp_path / "logs"
    part = old_partition(log_dir, "orders")
    fifo = part / "00000000000000000060.log"
    os.mkfifo(fifo)
    index_fifo = part / "00000000000000000000.index"
    os.mkfifo(index_fifo)
    for args in (("dump", str(fifo)), ("dump", str(index_fifo)), ("rebuild", str(fifo)), ("rebuild", str(part))):
        proc = segdex(*args, timeout=60)
        assert proc.returncode == 1, (args, proc.stderr)
        assert "a FIFO, not a regular file" in proc.stderr, args
    assert (part / "00000000000000000000.index").is_file()  # an index that is a FIFO is corrupt: rebuilt
    summary = reindex.run(spark, "verify", RunRequest([str(log_dir)], str(tmp_path / "meta"), reindex.LogConfig()),
                          progress=False)
    row = {r.base_offset: r for r in summary.segment_rows}
    assert row[60].status == "unreadable" and "a FIFO, not a regular file" in row[60].reason
    assert summary.exit_status == 1
    assert stat.S_ISFIFO(fifo.stat().st_mode)  # left as it was


def test_leftovers_kafka_cleans_at_load_are_reported(tmp_path, spark, capsys):
    log_dir = tmp_path / "logs"
    part = old_partition(log_dir, "orders")
    segdex("rebuild", str(part))
    (part / "00000000000000000099.index").write_bytes(b"")  # orphan: no .log with that offset
    (part / "00000000000000000040.log.swap").write_bytes(b"")
    (part / "00000000000000000000.log.deleted").write_bytes(b"")
    summary = reindex.run(spark, "verify", RunRequest([str(log_dir)], str(tmp_path / "meta"), reindex.LogConfig()),
                          progress=False)
    report.print_run(summary)
    err = capsys.readouterr().err
    assert summary.exit_status == 1
    assert (f"orphan_index: {part}/00000000000000000099.index: no .log with its base offset: Kafka deletes this "
            f"orphaned index file when it loads the partition") in err
    assert f"swap: {part}/00000000000000000040.log.swap: left by an interrupted log cleaning or split" in err
    assert "Kafka completes the swap at load" in err
    assert f"deleted: {part}/00000000000000000000.log.deleted: Kafka deletes it" in err
    [row] = [o.partition for o in summary.outcomes]
    assert "orphan_index 00000000000000000099.index" in row.reason and "swap 00000000000000000040.log.swap" in \
        row.reason


def test_the_wrong_kind_of_directory_is_a_usage_error(tmp_path):
    log_dir = tmp_path / "logs"
    part = old_partition(log_dir, "orders")
    for command in ("reindex", "verify", "retention", "compact"):
        proc = segdex(command, str(part))
        assert proc.returncode == 2, command
        assert f"a partition directory, not a log dir: give its log dir ({log_dir})" in proc.stderr, command
    write_offset_checkpoint(log_dir / "recovery-point-offset-checkpoint", {("orders", 0): 0})
    proc = segdex("rebuild", str(log_dir))
    assert proc.returncode == 2 and "a log dir, not a partition directory" in proc.stderr
    assert not list(part.glob("*.index"))


def test_a_directory_kafka_cannot_load_is_reported(tmp_path, spark, capsys):
    log_dir = tmp_path / "logs"
    old_partition(log_dir, "orders")
    (log_dir / "lost+found").mkdir()
    summary = reindex.run(spark, "verify", RunRequest([str(log_dir)], str(tmp_path / "meta"), reindex.LogConfig()),
                          progress=False)
    report.print_run(summary)
    err = capsys.readouterr().err
    assert summary.exit_status == 1
    assert (f"unloadable: {log_dir}/lost+found: the broker will not start: org.apache.kafka.common.KafkaException: "
            f"Found directory {log_dir}/lost+found, 'lost+found' is not in the form of topic-partition") in err
    proc = segdex("retention", "--no-record", str(log_dir))
    assert proc.returncode == 1 and f"unloadable: {log_dir}/lost+found: the broker will not start" in proc.stderr


# ---------------------------------------------------------------------------------------------------------------
# 10. Config values Kafka rejects, and a closed pipe


@pytest.mark.parametrize("command", ["rebuild", "reindex", "retention"])
@pytest.mark.parametrize("setting, message", [
    ("index.interval.bytes=3000000000", "Invalid value 3000000000 for configuration index.interval.bytes: Not a "
                                        "number of type INT"),
    ("retention.ms=-5", "Invalid value -5 for configuration retention.ms: Value must be at least -1"),
    ("retention.bytes=99999999999999999999", "Invalid value 99999999999999999999 for configuration "
                                             "retention.bytes: Not a number of type LONG"),
    ("segment.index.bytes=3", "Value must be at least 4"),
    ("cleanup.policy=forever", "Invalid value forever for configuration cleanup.policy"),
])
def test_config_values_kafka_rejects(tmp_path, command, setting, message):
    log_dir = tmp_path / "logs"
    part = old_partition(log_dir, "orders")
    proc = segdex(command, "--config", setting, str(part if command == "rebuild" else log_dir))
    assert proc.returncode == 2 and message in proc.stderr


def test_a_closed_pipe_ends_the_output_not_the_work(tmp_path):
    log_dir = tmp_path / "logs"
    batches = [build_batch(i, [(OLD + i, b"k", b"v" * 100)]) for i in range(3000)]
    write_partition(log_dir, "orders", 0, batches, segment_bytes=2000)
    part = log_dir / "orders-0"
    logs = len(list(part.glob("*.log")))
    child = segdex_popen("rebuild", str(part), text=False)
    first = child.stdout.readline()
    child.stdout.close()  # what `| head -1` does
    err = child.stderr.read().decode()
    child.wait(timeout=120)
    assert first.startswith(str(part / "00000000000000000000.log").encode()) and b"ok written=2" in first
    assert child.returncode == 0 and err == ""
    assert len(list(part.glob("*.index"))) == logs > 200


def test_exit_statuses_are_in_help():
    from segdex.jobs.cli import COMMANDS

    for command in COMMANDS:
        proc = segdex(command, "--help")
        assert proc.returncode == 0, command
        assert "exit status: 0 clean; 1 something needs attention; 2 usage error" in " ".join(proc.stdout.split())


def test_version():
    import tomllib

    proc = segdex("--version")
    expected = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert proc.returncode == 0 and proc.stdout.strip() == f"segdex {expected}"


def test_run_table_written_by_an_older_segdex_gains_the_new_column(tmp_path, spark):
    """runs.files_failed was added: a table written before it is merged into, not broken."""
    import pyarrow as pa
    from deltalake import write_deltalake

    from segdex.pipelines import schemas

    meta = tmp_path / "meta"
    old_schema = pa.schema([f for f in schemas.RUNS_SCHEMA if f.name != "files_failed"])
    write_deltalake(str(meta / "runs"), old_schema.empty_table(), mode="append")
    log_dir = tmp_path / "logs"
    old_partition(log_dir, "orders")
    summary = reindex.run(spark, "reindex", RunRequest([str(log_dir)], str(meta), reindex.LogConfig()), progress=False)
    runs = ms.rows_of(ms.read_arrow(str(meta), "runs"))
    assert [r["files_failed"] for r in runs] == [0] and summary.exit_status == 0
    assert json.loads(runs[0]["log_dirs"]) == [str(log_dir.resolve())]


def test_topic_config_resolution_follows_kafka():
    """Precedence and internal-topic configs as Kafka 4.1.1 has them; messages as its ConfigDef words them
    (both read from the 4.1.1 jars: ShareCoordinatorService.shareGroupStateTopicConfigs, LogConfig.validate)."""
    from segdex.indexcore.config.log_config import ConfigException, TopicConfigResolver

    r = TopicConfigResolver({"retention.ms": "1000", "cleanup.policy": "delete"},
                            {"orders": {"retention.bytes": "10"}, "__transaction_state": {"retention.ms": "5"}})
    offsets = r.resolve("__consumer_offsets")
    assert offsets.config.cleanup_policy == "compact" and not offsets.config.delete
    assert offsets.config.retention_ms == 1000 and offsets.sources["retention.ms"] == "--config"
    assert offsets.sources["cleanup.policy"] == "internal topic"
    share = r.resolve("__share_group_state")
    assert share.config.delete and share.config.retention_ms == -1 and share.config.retention_bytes == -1
    assert r("__transaction_state").retention_ms == 5 and r("__transaction_state").cleanup_policy == "compact"
    orders = r.resolve("orders")
    assert (orders.config.retention_bytes, orders.config.retention_ms) == (10, 1000)
    assert orders.assumed(["retention.ms", "retention.bytes", "segment.bytes"]) == ["segment.bytes"]
    assert not TopicConfigResolver({"cleanup.policy": ""})("x").delete  # Kafka 4.x accepts an empty policy
    with pytest.raises(ConfigException, match="Invalid value 1000 for configuration segment.bytes: Value must be "
                                              "at least 1048576"):
        TopicConfigResolver({"segment.bytes": "1000"})
    with pytest.raises(ConfigException, match="String must be one of: compact, delete"):
        TopicConfigResolver({}, {"t": {"cleanup.policy": "compact,forever"}})
