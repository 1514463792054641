"""``recover --truncate``'s cut in the test process (indexcore.quarantine): the partition ends as Kafka's recovery
left the fixture (its ``recovered/`` .log), every removed byte is kept with a manifest, and the manifest's own
restore commands put the partition back byte for byte."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from segdex.indexcore.errors import (
    UsageException,
)
from segdex.indexcore.log.quarantine import (
    MANIFEST,
    check_quarantine_dir,
    partition_quarantine,
    truncate_with_quarantine,
)
from tests.support.fixtures import FIXTURES

SEG0 = "00000000000000000000"


def _partition(tmp_path: Path, case: str) -> tuple[Path, Path, list[str], dict[str, bytes]]:
    """A partition whose first segment is the fixture's corrupt input, followed by two later segments with index
    files; returns (partition, first log, later logs, every file's bytes before)."""
    part = tmp_path / "logs" / "t-0"
    part.mkdir(parents=True)
    shutil.copy(FIXTURES / case / "input" / f"{SEG0}.log", part)
    later = []
    for base in (1000, 2000):
        stem = part / f"{base:020d}"
        for suffix, data in ((".log", os.urandom(300)), (".index", os.urandom(16)), (".timeindex", os.urandom(24))):
            Path(f"{stem}{suffix}").write_bytes(data)
        later.append(f"{stem}.log")
    before = {p.name: p.read_bytes() for p in part.iterdir()}
    return part, part / f"{SEG0}.log", later, before


@pytest.mark.parametrize("case", ["corrupt_truncated_tail", "corrupt_bad_crc_middle", "corrupt_preallocated_zero_tail"])
def test_cut_as_kafka_keeps_every_byte_and_restores(case: str, tmp_path: Path):
    part, log, later, before = _partition(tmp_path, case)
    kafka_kept = (FIXTURES / case / "recovered" / f"{SEG0}.log").read_bytes()
    valid = len(kafka_kept)
    q = tmp_path / "q"
    q.mkdir()
    manifest = truncate_with_quarantine(str(part), str(log), valid, later, str(q), "run-1", "corrupt tail")
    # the partition as Kafka's recovery leaves it: the cut log, no later segment
    assert log.read_bytes() == kafka_kept
    assert sorted(p.name for p in part.iterdir()) == [f"{SEG0}.log"]
    # every removed byte kept, where partition_quarantine says, with a manifest that says the same
    where = Path(partition_quarantine(str(q), str(part)))
    tag = hashlib.sha256(str(part.parent.resolve()).encode()).hexdigest()[:8]
    assert where == q / f"logs-{tag}" / "t-0"
    on_disk = json.loads((where / MANIFEST).read_text())
    assert on_disk["partition_dir"] == str(part.resolve()) and on_disk["run_id"] == "run-1"
    assert on_disk["reason"] == "corrupt tail"
    tail, *files = manifest.pieces
    assert (tail.kind, tail.offset_in_source, tail.source) == ("tail", valid, str(log.resolve()))
    assert Path(tail.quarantined) == where / f"{SEG0}.log.tail-at-{valid}"
    assert Path(tail.quarantined).read_bytes() == before[f"{SEG0}.log"][valid:]
    assert [f.kind for f in files] == ["file"] * 6
    assert sorted(Path(f.source).name for f in files) == sorted(n for n in before if not n.startswith(SEG0))
    for piece in manifest.pieces:
        data = Path(piece.quarantined).read_bytes()
        assert (piece.size, piece.sha256) == (len(data), hashlib.sha256(data).hexdigest()), piece
        if piece.kind == "file":
            assert data == before[Path(piece.source).name]
    assert on_disk["pieces"] == [vars(p) for p in manifest.pieces]
    # the manifest's own restore commands put the partition back as it was
    for piece in manifest.pieces:
        subprocess.run(["sh", "-c", piece.restore], check=True)
    assert {p.name: p.read_bytes() for p in part.iterdir()} == before


def test_a_second_cut_keeps_the_first_runs_pieces(tmp_path: Path):
    part, log, later, before = _partition(tmp_path, "corrupt_truncated_tail")
    valid = len((FIXTURES / "corrupt_truncated_tail" / "recovered" / f"{SEG0}.log").read_bytes())
    q = tmp_path / "q"
    first = truncate_with_quarantine(str(part), str(log), valid, later, str(q), "run-1", "why")
    # the same partition cut again (restored by hand in between): nothing of the first run is overwritten
    for piece in first.pieces:
        subprocess.run(["sh", "-c", piece.restore], check=True)
    second = truncate_with_quarantine(str(part), str(log), valid, later, str(q), "run-2", "why")
    assert [Path(p.quarantined).name for p in second.pieces] == [Path(p.quarantined).name + ".run-2"
                                                                for p in first.pieces]
    for piece in (*first.pieces, *second.pieces):
        assert hashlib.sha256(Path(piece.quarantined).read_bytes()).hexdigest() == piece.sha256
    assert log.read_bytes() == before[f"{SEG0}.log"][:valid]


def test_quarantine_dir_checks(tmp_path: Path):
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    for inside in (log_dir, log_dir / "q"):
        with pytest.raises(UsageException, match=f"--quarantine {inside}: inside the log dir {log_dir}"):
            check_quarantine_dir(str(inside), [str(tmp_path / "other"), str(log_dir)])
    assert not (log_dir / "q").exists()
    # a sibling whose name only starts like the log dir is outside it
    sibling = tmp_path / "logs-quarantine"
    assert check_quarantine_dir(str(sibling), [str(log_dir)]) == str(sibling.resolve())
    assert sibling.is_dir()
    (tmp_path / "file").write_bytes(b"x")
    with pytest.raises(UsageException, match="cannot create it"):
        check_quarantine_dir(str(tmp_path / "file" / "q"), [str(log_dir)])


# ------------------------------------------------------------------ from test_small_modules_units.py


def test_an_existing_quarantine_directory_is_used(tmp_path: Path):
    q = tmp_path / "q"
    q.mkdir()
    assert check_quarantine_dir(str(q), [str(tmp_path / "logs")]) == str(q.resolve())


def test_whole_files_moved_away_are_recorded_whole(tmp_path: Path):
    """A later segment over 1 MiB: its manifest entry has its whole size and hash, from offset 0."""
    part = tmp_path / "logs" / "t-0"
    part.mkdir(parents=True)
    log = part / "00000000000000000000.log"
    log.write_bytes(b"k" * 100 + b"tail")
    later = part / "00000000000000000010.log"
    data = os.urandom((1 << 20) + 4097)
    later.write_bytes(data)
    manifest = truncate_with_quarantine(str(part), str(log), 100, [str(later)], str(tmp_path / "q"), "run", "why")
    tail, whole = manifest.pieces
    assert (tail.kind, tail.size, tail.sha256, tail.offset_in_source) == (
        "tail", 4, hashlib.sha256(b"tail").hexdigest(), 100)
    assert (whole.kind, whole.source, whole.size, whole.sha256, whole.offset_in_source) == (
        "file", str(later.resolve()), len(data), hashlib.sha256(data).hexdigest(), 0)
    (written,) = (tmp_path / "q").glob("*/t-0/*.json")
    on_disk = json.loads(written.read_text())
    assert sorted(on_disk) == ["earlier", "partition_dir", "pieces", "reason", "restore", "run_id"]
    assert on_disk["earlier"] == [] and on_disk["restore"] == []
    assert on_disk["pieces"] == [vars(tail), vars(whole)]


def test_a_quarantine_that_cannot_be_created(tmp_path: Path):
    (tmp_path / "file").write_bytes(b"")
    q = str(tmp_path / "file" / "q")
    with pytest.raises(UsageException) as e:
        check_quarantine_dir(q, [])
    assert str(e.value) == f"--quarantine {q}: cannot create it: Not a directory"


@pytest.mark.skipif(os.geteuid() != 0, reason="acting as another user needs root (CI runs as root)")
def test_a_quarantine_that_cannot_be_written():
    """A directory another user may enter but not write (root's, mode 0755) is refused for that user."""
    q = Path(tempfile.mkdtemp(prefix="segdex-q-"))  # under /tmp: the test's own tmp_path is root's, mode 0700
    try:
        q.chmod(0o755)
        os.setresuid(65534, 65534, 0)  # access(2) asks as the real user: both change, root stays the saved one
        try:
            with pytest.raises(UsageException) as e:
                check_quarantine_dir(str(q), [])
        finally:
            os.setresuid(0, 0, 0)
        assert str(e.value) == f"--quarantine {q}: not writable"
        assert check_quarantine_dir(str(q), []) == str(q.resolve())  # root may write it
    finally:
        q.rmdir()


def test_a_later_run_into_the_same_quarantine_keeps_the_earlier_manifest(tmp_path: Path):
    """Two cleaning runs (or two rounds of one) replacing segments of one partition: the second run's manifest
    keeps the first's under ``earlier``, each piece with its source, digest and restore command; the pieces
    themselves never overwrite each other. An unreadable manifest is kept aside, renamed."""
    from segdex.indexcore.log.quarantine import keep_in_quarantine

    part = tmp_path / "logs" / "t-0"
    part.mkdir(parents=True)
    seg = part / f"{SEG0}.log"
    q = tmp_path / "q"
    seg.write_bytes(b"first")
    first = keep_in_quarantine(str(part), [str(seg)], str(q), "run-1", "cleaned, round 1")
    seg.write_bytes(b"second")
    keep_in_quarantine(str(part), [str(seg)], str(q), "run-2", "cleaned, round 2")
    where = Path(partition_quarantine(str(q), str(part)))
    on_disk = json.loads((where / MANIFEST).read_text())
    assert on_disk["run_id"] == "run-2" and len(on_disk["pieces"]) == 1
    assert (on_disk["partition_dir"], on_disk["reason"]) == (os.path.realpath(part), "cleaned, round 2")
    assert (first.partition_dir, first.reason) == (os.path.realpath(part), "cleaned, round 1")
    assert [e["run_id"] for e in on_disk["earlier"]] == ["run-1"]
    (old,) = on_disk["earlier"][0]["pieces"]
    assert old["quarantined"] == first.pieces[0].quarantined and Path(old["quarantined"]).read_bytes() == b"first"
    assert old["sha256"] == hashlib.sha256(b"first").hexdigest()
    assert Path(on_disk["pieces"][0]["quarantined"]).read_bytes() == b"second"
    (where / MANIFEST).write_text("{not json")
    keep_in_quarantine(str(part), [str(seg)], str(q), "run-3", "cleaned again")
    assert (where / f"{MANIFEST}.unreadable.run-3").read_text() == "{not json"
    assert json.loads((where / MANIFEST).read_text())["earlier"] == []


def test_restore_lines_bring_back_owner_mode_and_time(tmp_path: Path):
    """The originals a session keeps carry their owner, group, mode and modification time, so the manifest's
    ``cp -p`` restore lines give the broker back files it can open, dated as they were (a segment without a time
    index is dated by its file's time). The test runs as root: a file of another user is kept as that user's."""
    from segdex.indexcore.log.quarantine import QuarantineSession

    part = tmp_path / "logs" / "t-0"
    part.mkdir(parents=True)
    log = part / "00000000000000000000.log"
    log.write_bytes(b"segment bytes")
    os.chmod(log, 0o640)
    os.utime(log, ns=(1_600_000_000_000_000_000, 1_600_000_000_123_000_000))
    if os.geteuid() == 0:
        os.chown(log, 1234, 2345)
    before = os.stat(log)
    session = QuarantineSession(str(part), str(tmp_path / "q"), "run", "why")
    session.keep([str(log)])
    log.write_bytes(b"cleaned")  # what the run put there
    session.wrote([str(log)])
    (manifest,) = (tmp_path / "q").glob("*/t-0/*.json")
    for line in json.loads(manifest.read_text())["restore"]:
        subprocess.run(line, shell=True, check=True)
    after = os.stat(log)
    assert log.read_bytes() == b"segment bytes"
    assert (after.st_uid, after.st_gid, after.st_mode, after.st_mtime_ns) == (
        before.st_uid, before.st_gid, before.st_mode, before.st_mtime_ns)


def test_restore_lines_remove_an_interrupted_replacements_files(tmp_path: Path):
    """A run killed between a group's ``.swap`` and its rename leaves ``.cleaned``/``.swap`` files that a broker's
    load would swap in over restored originals: the restore lines remove them before copying the originals back."""
    from segdex.indexcore.log.quarantine import QuarantineSession

    part = tmp_path / "logs" / "t-0"
    part.mkdir(parents=True)
    log = part / "00000000000000000000.log"
    log.write_bytes(b"original")
    session = QuarantineSession(str(part), str(tmp_path / "q"), "run", "why")
    session.keep([str(log)])
    session.wrote([str(log)])
    (part / "00000000000000000000.log.swap").write_bytes(b"cleaned")
    (part / "00000000000000000000.index.cleaned").write_bytes(b"idx")
    log.unlink()  # renamed .deleted and gone, as the replacement does
    (manifest,) = (tmp_path / "q").glob("*/t-0/*.json")
    for line in json.loads(manifest.read_text())["restore"]:
        subprocess.run(line, shell=True, check=True)
    assert sorted(p.name for p in part.iterdir()) == ["00000000000000000000.log"]
    assert log.read_bytes() == b"original"


def test_a_session_keeps_each_original_once_and_says_how_to_restore(tmp_path: Path):
    """``QuarantineSession`` (``segdex clean --apply``): the manifest names the partition, the run and why; after
    each piece its restore lines remove the run's leftovers, then copy every original back. An original kept
    already, or a file the run wrote, is not kept again; a session with nothing to keep still leaves a manifest."""
    from segdex.indexcore.log.quarantine import QuarantineSession

    part = tmp_path / "logs" / "t-0"
    part.mkdir(parents=True)
    a, b, c = (part / f"{n:020d}.log" for n in (0, 10, 20))
    for f in (a, b, c):
        f.write_bytes(f.name.encode())
    real = os.path.realpath(part)
    session = QuarantineSession(str(part), str(tmp_path / "q"), "run-7", "cleaned, round 1")
    where = Path(partition_quarantine(str(tmp_path / "q"), str(part)))
    session.keep([str(a)])
    on_disk = json.loads((where / MANIFEST).read_text())
    assert (on_disk["partition_dir"], on_disk["run_id"], on_disk["reason"]) == (real, "run-7", "cleaned, round 1")
    assert on_disk["restore"] == [f"rm -f '{real}'/*.cleaned '{real}'/*.swap",
                                  f"cp -p '{where / a.name}' '{real}/{a.name}'"]
    session.wrote([str(c)])
    assert session.to_keep([str(a), str(b), str(c)]) == [str(b)]
    session.keep([str(a), str(c)])  # nothing new: the manifest is not rewritten
    assert [p["source"] for p in json.loads((where / MANIFEST).read_text())["pieces"]] == [f"{real}/{a.name}"]
    empty = tmp_path / "logs" / "t-1"
    empty.mkdir()
    QuarantineSession(str(empty), str(tmp_path / "q"), "run-7", "nothing").keep([])
    on_disk = json.loads((Path(partition_quarantine(str(tmp_path / "q"), str(empty))) / MANIFEST).read_text())
    assert (on_disk["run_id"], on_disk["pieces"], on_disk["earlier"]) == ("run-7", [], [])


def test_every_earlier_run_stays_in_the_manifests_history(tmp_path: Path):
    """Three runs into one quarantine: the third's manifest holds the first two under ``earlier``, oldest first,
    each without a history of its own."""
    from segdex.indexcore.log.quarantine import keep_in_quarantine

    part = tmp_path / "logs" / "t-0"
    part.mkdir(parents=True)
    seg = part / f"{SEG0}.log"
    for run in ("run-1", "run-2", "run-3"):
        seg.write_bytes(run.encode())
        keep_in_quarantine(str(part), [str(seg)], str(tmp_path / "q"), run, f"cleaned in {run}")
    on_disk = json.loads((Path(partition_quarantine(str(tmp_path / "q"), str(part))) / MANIFEST).read_text())
    assert [(e["run_id"], e["reason"], "earlier" in e) for e in on_disk["earlier"]] == [
        ("run-1", "cleaned in run-1", False), ("run-2", "cleaned in run-2", False)]
