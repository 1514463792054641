"""``retention_apply`` piece by piece, in the test process: which files an interrupted apply left to finish, the
renames of one segment, the roll's new empty segment, the checkpoint writes, and what a partition's outcome says.

Expected values come from Kafka's rules written out here: ``LogSegment.changeFileSuffixes`` renames ``.log``,
``.index``, ``.timeindex``, ``.txnindex`` (then ``UnifiedLog`` the producer snapshot) to ``*.deleted``;
``UnifiedLog.updateLogStartOffset`` raises the recovery point to a new log start offset, which never moves
backwards (``maybeIncrementLogStartOffset``); checkpoint files are ``0``, a count line, then ``topic partition
offset`` (leader epochs: ``epoch startOffset``) lines. New files take the owner of their directory and the mode
of a Kafka file beside them (segdex's rule for files a broker must open read-write, DESIGN.md).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from segdex.indexcore.log.log_manager import LogDirCheckpoints
from segdex.indexcore.retention import apply as ra
from segdex.indexcore.retention.log_dirs import PartitionRetention
from segdex.indexcore.retention.policy import Deletion, RetentionPlan
from segdex.indexcore.tools.segment_writer import segment_name as name  # <base as 20 digits><suffix>


def touch(directory: Path, *names: str, mode: int = 0o644) -> None:
    for n in names:
        p = directory / n
        p.write_bytes(b"x")
        os.chmod(p, mode)


def mode_of(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def read_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    """An offset checkpoint file by its format: version 0, the entry count, then ``topic partition offset``."""
    lines = path.read_text().splitlines()
    assert lines[0] == "0" and int(lines[1]) == len(lines) - 2
    out = {}
    for line in lines[2:]:
        topic, partition, offset = line.split(" ")
        out[(topic, int(partition))] = int(offset)
    return out


def write_checkpoint(path: Path, offsets: dict[tuple[str, int], int]) -> None:
    path.write_text("".join(["0\n", f"{len(offsets)}\n"] + [f"{t} {p} {o}\n" for (t, p), o in offsets.items()]))


def deletion(base: int, upper: int) -> Deletion:
    return Deletion(base, upper, 1, 0, "retention.ms", "old")


def planned(log_dir: Path, part: Path, bases: list[int], deleted: int, log_start_after: int, *,
            roll_offset: int | None = None, epochs_after: list[tuple[int, int]] | None = None,
            skipped: str | None = None, error: str | None = None) -> PartitionRetention:
    """A partition outcome whose plan deletes the first ``deleted`` of the segments ``bases``."""
    upper = [*bases[1:], roll_offset if roll_offset is not None else bases[-1] + 10]
    plan = RetentionPlan("t", 0, deletions=[deletion(b, u) for b, u in zip(bases[:deleted], upper, strict=False)],
                         log_start_offset_after=log_start_after, roll_offset=roll_offset,
                         leader_epochs_after=epochs_after, skipped=skipped, base_offsets_before=list(bases))
    return PartitionRetention(str(log_dir), str(part), plan, error=error)


def partition(root: Path, bases: list[int]) -> tuple[Path, Path]:
    """A log dir holding ``t-0`` with the .log, .index and .timeindex of each base offset."""
    log_dir = root / "logs"
    part = log_dir / "t-0"
    part.mkdir(parents=True)
    for b in bases:
        touch(part, name(b, ".log"), name(b, ".index"), name(b, ".timeindex"))
    return log_dir, part


def no_checkpoints() -> LogDirCheckpoints:
    return LogDirCheckpoints({}, {}, {})


# ---------------------------------------------------------------------------------------------------------------
# Leftovers of an interrupted apply, and one segment's renames


def test_interrupted_leftovers_are_the_live_files_of_every_half_renamed_segment(tmp_path: Path):
    """Each ``.log.deleted`` without a live ``.log`` of its base offset: its remaining files, in Kafka's rename
    order, segment by segment; a ``.log.deleted`` beside a live ``.log`` and a misnamed one are not leftovers."""
    touch(tmp_path, name(0, ".log.deleted"), name(0, ".index"), name(0, ".timeindex"), name(0, ".txnindex"),
          name(0, ".snapshot"),
          name(5, ".log.deleted"), name(5, ".log"), name(5, ".index"),  # a live segment 5: not ours
          "junk.log.deleted",
          name(10, ".log.deleted"), name(10, ".index.deleted"), name(10, ".timeindex"), name(10, ".snapshot"),
          name(20, ".log"), name(20, ".index"), "leader-epoch-checkpoint")
    want = [name(0, ".index"), name(0, ".timeindex"), name(0, ".txnindex"), name(0, ".snapshot"),
            name(10, ".timeindex"), name(10, ".snapshot")]
    assert ra.interrupted_leftovers(str(tmp_path)) == want
    assert ra.finish_interrupted(str(tmp_path)) == want
    assert sorted(os.listdir(tmp_path)) == sorted(
        [n + ".deleted" for n in want] + [name(0, ".log.deleted"), name(5, ".log.deleted"), name(5, ".log"),
                                          name(5, ".index"), "junk.log.deleted", name(10, ".log.deleted"),
                                          name(10, ".index.deleted"), name(20, ".log"), name(20, ".index"),
                                          "leader-epoch-checkpoint"])
    assert ra.interrupted_leftovers(str(tmp_path)) == []


def test_rename_segment_returns_the_names_it_renamed_in_kafkas_order(tmp_path: Path):
    """``changeFileSuffixes``: .log, .index, .timeindex, .txnindex, then the snapshot; missing ones skipped."""
    touch(tmp_path, name(100, ".snapshot"), name(100, ".timeindex"), name(100, ".index"), name(100, ".log"),
          name(200, ".log"))
    assert ra.rename_segment(str(tmp_path), 100) == [name(100, ".log"), name(100, ".index"), name(100, ".timeindex"),
                                                     name(100, ".snapshot")]
    assert sorted(os.listdir(tmp_path)) == [name(100, ".index.deleted"), name(100, ".log.deleted"),
                                            name(100, ".snapshot.deleted"), name(100, ".timeindex.deleted"),
                                            name(200, ".log")]


# ---------------------------------------------------------------------------------------------------------------
# The roll


@pytest.mark.skipif(os.geteuid() != 0, reason="giving files another owner needs root")
def test_roll_owner_is_the_partition_dirs_and_mode_the_templates(tmp_path: Path, monkeypatch):
    """The rolled segment's three empty files: owned like the partition directory, with the template .log's
    mode (not the template's owner, not the directory's mode)."""
    part = tmp_path / "t-0"
    part.mkdir()
    os.chown(part, 4321, 4322)
    os.chmod(part, 0o755)
    touch(part, name(0, ".log"), mode=0o640)
    os.chown(part / name(0, ".log"), 1234, 1235)
    monkeypatch.chdir(tmp_path)  # owned by root: a relative path would take its owner
    ra.roll(str(part), 60, str(part / name(0, ".log")))
    for suffix in (".log", ".index", ".timeindex"):
        st = os.stat(part / name(60, suffix))
        assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode), st.st_size) == (4321, 4322, 0o640, 0), suffix


def test_roll_without_template_gets_0644(tmp_path: Path):
    part = tmp_path / "t-0"
    part.mkdir()
    os.chmod(part, 0o700)
    ra.roll(str(part), 7, None)
    assert sorted(os.listdir(part)) == [name(7, ".index"), name(7, ".log"), name(7, ".timeindex")]
    assert [mode_of(part / n) for n in sorted(os.listdir(part))] == [0o644, 0o644, 0o644]


def test_apply_rolls_with_the_mode_of_the_last_segment(tmp_path: Path, monkeypatch):
    """When every segment goes, the new empty segment at the log end offset takes the mode of the newest
    segment's .log (the one Kafka's roll follows), not an older one's, the directory's or the default."""
    log_dir, part = partition(tmp_path, [0, 10, 20])
    os.chmod(part, 0o755)
    for b, mode in ((0, 0o644), (10, 0o640), (20, 0o600)):
        os.chmod(part / name(b, ".log"), mode)
    monkeypatch.chdir(tmp_path)
    p = planned(log_dir, part, [0, 10, 20], 3, 30, roll_offset=30)
    ra.apply_plans(str(log_dir), [p], no_checkpoints())
    assert [mode_of(part / name(30, s)) for s in (".log", ".index", ".timeindex")] == [0o600, 0o600, 0o600]
    assert [(part / name(30, s)).stat().st_size for s in (".log", ".index", ".timeindex")] == [0, 0, 0]
    assert p.applied is True and p.error is None
    assert p.renamed == [name(b, s) for b in (0, 10, 20) for s in (".log", ".index", ".timeindex")]
    # the log start offset 30 is the new segment's base offset: no log-start-offset-checkpoint entry
    assert not (log_dir / "log-start-offset-checkpoint").exists()


def test_a_roll_with_no_segment_known_before_takes_the_default_mode(tmp_path: Path):
    """A plan that lists no segment before (nothing to copy the mode from) still rolls, with 0644."""
    part = tmp_path / "t-0"
    part.mkdir()
    plan = RetentionPlan("t", 0, roll_offset=0, base_offsets_before=[])
    ra._roll_where_everything_goes([PartitionRetention(str(tmp_path), str(part), plan)])
    assert [mode_of(part / name(0, s)) for s in (".log", ".index", ".timeindex")] == [0o644, 0o644, 0o644]


# ---------------------------------------------------------------------------------------------------------------
# Checkpoints


def test_recovery_point_below_the_new_log_start_is_raised_to_it(tmp_path: Path, monkeypatch):
    """``updateLogStartOffset``: a recovery point below the new log start offset becomes the log start offset;
    other partitions' entries stay. The log start offset at the first remaining segment needs no entry."""
    log_dir, part = partition(tmp_path, [0, 10, 20])
    rp = {("t", 0): 5, ("u", 3): 7}
    write_checkpoint(log_dir / "recovery-point-offset-checkpoint", rp)
    monkeypatch.chdir(tmp_path)
    p = planned(log_dir, part, [0, 10, 20], 1, 10)
    ra.apply_plans(str(log_dir), [p], LogDirCheckpoints(dict(rp), {}, {}))
    assert read_checkpoint(log_dir / "recovery-point-offset-checkpoint") == {("t", 0): 10, ("u", 3): 7}
    assert not (log_dir / "log-start-offset-checkpoint").exists()
    assert sorted(os.listdir(tmp_path)) == ["logs"]  # nothing written beside the log dir
    assert p.applied is True and p.renamed == [name(0, ".log"), name(0, ".index"), name(0, ".timeindex")]


def test_recovery_point_at_or_above_the_new_log_start_is_not_rewritten(tmp_path: Path):
    log_dir, part = partition(tmp_path, [0, 10, 20])
    rp = {("t", 0): 10}
    write_checkpoint(log_dir / "recovery-point-offset-checkpoint", rp)
    before = os.stat(log_dir / "recovery-point-offset-checkpoint").st_ino
    ra.apply_plans(str(log_dir), [planned(log_dir, part, [0, 10, 20], 1, 10)], LogDirCheckpoints(dict(rp), {}, {}))
    assert os.stat(log_dir / "recovery-point-offset-checkpoint").st_ino == before
    assert read_checkpoint(log_dir / "recovery-point-offset-checkpoint") == {("t", 0): 10}


def test_log_start_offset_never_moves_backwards(tmp_path: Path):
    """A checkpointed log start offset (deleteRecords to 15, inside segment 10) above the plan's log start
    stays: ``maybeIncrementLogStartOffset`` only ever raises it; the recovery point is raised to the plan's."""
    log_dir, part = partition(tmp_path, [0, 10, 20])
    lso = {("t", 0): 15}
    rp = {("t", 0): 3}
    write_checkpoint(log_dir / "log-start-offset-checkpoint", lso)
    write_checkpoint(log_dir / "recovery-point-offset-checkpoint", rp)
    ra.apply_plans(str(log_dir), [planned(log_dir, part, [0, 10, 20], 1, 10)],
                   LogDirCheckpoints(dict(rp), dict(lso), {}))
    assert read_checkpoint(log_dir / "log-start-offset-checkpoint") == {("t", 0): 15}
    assert read_checkpoint(log_dir / "recovery-point-offset-checkpoint") == {("t", 0): 10}


# ---------------------------------------------------------------------------------------------------------------
# One partition's apply


def test_new_leader_epoch_checkpoint_takes_the_mode_of_kafkas_files_beside_it(tmp_path: Path):
    """No leader-epoch-checkpoint yet: the one written gets the mode of partition.metadata beside it."""
    log_dir, part = partition(tmp_path, [0, 10])
    touch(part, "partition.metadata", mode=0o640)
    p = planned(log_dir, part, [0, 10], 1, 10, epochs_after=[(3, 10)])
    ra.apply_plans(str(log_dir), [p], no_checkpoints())
    assert (part / "leader-epoch-checkpoint").read_bytes() == b"0\n1\n3 10\n"
    assert mode_of(part / "leader-epoch-checkpoint") == 0o640
    assert p.applied is True and p.error is None


@pytest.mark.parametrize("exc, said", [
    (OSError(errno.EIO, "Input/output error"), "Input/output error"),
    (OSError("the disk went away"), "the disk went away"),
])
def test_an_os_error_stops_the_partition_with_a_message(tmp_path: Path, monkeypatch, exc: OSError, said: str):
    """A failed rename: the partition is not applied and says why (the OS's text, else the error's own), and
    that a re-run finishes."""
    log_dir, part = partition(tmp_path, [0, 10])
    p = planned(log_dir, part, [0, 10], 1, 10)

    def fail(src: str, dst: str) -> None:
        raise exc

    monkeypatch.setattr(os, "replace", fail)
    ra.apply_plans(str(log_dir), [p], no_checkpoints())
    monkeypatch.undo()
    assert p.error == f"{part}: apply stopped: {said}; re-run to finish"
    assert p.applied is False and p.renamed == []
    assert sorted(os.listdir(part)) == [name(b, s) for b in (0, 10) for s in (".index", ".log", ".timeindex")]


# ---------------------------------------------------------------------------------------------------------------
# Which partitions act


def test_skipped_errored_and_idle_partitions_are_not_touched(tmp_path: Path):
    """Only a planned (not skipped, not errored) partition with deletions or leftovers acts: a skipped or
    errored one keeps even an interrupted apply's leftovers, and one with nothing to do is not 'applied'."""
    log_dir = tmp_path / "logs"
    outcomes = []
    for topic, skipped, error in (("skip", "no high watermark known", None),
                                  ("err", "cannot read: x", "cannot read: x"), ("idle", None, None)):
        part = log_dir / f"{topic}-0"
        part.mkdir(parents=True)
        touch(part, name(0, ".log.deleted"), name(10, ".log"), name(10, ".index"))
        if topic != "idle":
            touch(part, name(0, ".index"))
        plan = RetentionPlan(topic, 0, skipped=skipped, base_offsets_before=[10], log_start_offset_after=10)
        outcomes.append(PartitionRetention(str(log_dir), str(part), plan, error=error))
    ra.apply_plans(str(log_dir), outcomes, no_checkpoints())
    assert [(p.applied, p.renamed, p.error) for p in outcomes] == [
        (False, [], None), (False, [], "cannot read: x"), (False, [], None)]
    for p in outcomes[:2]:
        assert sorted(os.listdir(p.partition_dir)) == [name(0, ".index"), name(0, ".log.deleted"),
                                                       name(10, ".index"), name(10, ".log")]


def test_leftovers_alone_make_a_partition_act(tmp_path: Path):
    """No deletions, but an interrupted apply's leftovers: they are finished and the partition is applied."""
    log_dir, part = partition(tmp_path, [10])
    touch(part, name(0, ".log.deleted"), name(0, ".timeindex"))
    plan = RetentionPlan("t", 0, base_offsets_before=[10], log_start_offset_after=10)
    p = PartitionRetention(str(log_dir), str(part), plan)
    ra.apply_plans(str(log_dir), [p], no_checkpoints())
    assert (p.applied, p.renamed, p.error) == (True, [name(0, ".timeindex")], None)
    assert sorted(os.listdir(part)) == [name(0, ".log.deleted"), name(0, ".timeindex.deleted"),
                                        name(10, ".index"), name(10, ".log"), name(10, ".timeindex")]
