"""Kafka's checkpoint files: offset checkpoints and the leader-epoch checkpoint, read, written and refused."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from segdex.indexcore.log.checkpoints import (
    CorruptCheckpointException,
    format_offset_checkpoint,
    mode_template,
    read_leader_epoch_checkpoint,
    read_offset_checkpoint,
    read_partition_metadata,
    write_leader_epoch_checkpoint,
    write_offset_checkpoint,
)


def test_checkpoints_round_trip_and_corruption(tmp_path):
    p = tmp_path / "replication-offset-checkpoint"
    write_offset_checkpoint(p, {("orders", 0): 42, ("my-topic", 12): 7})
    assert p.read_text() == "0\n2\norders 0 42\nmy-topic 12 7\n"
    assert read_offset_checkpoint(p) == {("orders", 0): 42, ("my-topic", 12): 7}
    assert read_offset_checkpoint(tmp_path / "absent") == {}
    assert format_offset_checkpoint({}) == b"0\n0\n"
    e = tmp_path / "leader-epoch-checkpoint"
    write_leader_epoch_checkpoint(e, [(0, 0), (3, 120)])
    assert e.read_text() == "0\n2\n0 0\n3 120\n"
    assert read_leader_epoch_checkpoint(e) == [(0, 0), (3, 120)]
    for bad in ("1\n0\n", "0\n2\norders 0 42\n", "0\n1\norders 0\n", "0\n1\norders x 1\n", " 0\n0\n"):
        p.write_text(bad)
        with pytest.raises(CorruptCheckpointException):
            read_offset_checkpoint(p)
    # CheckpointReadBuffer.read: an empty file (created, never written: Kafka 4.4 leaves one for a log whose
    # leader-epoch cache never changed) holds no entry
    p.write_text("")
    assert read_offset_checkpoint(p) == {}
    e.write_text("")
    assert read_leader_epoch_checkpoint(e) == []
    e.write_text("0\n")  # a version line and no count line: no entry either
    assert read_leader_epoch_checkpoint(e) == []


# ------------------------------------------------------------------ from test_files_units.py


LOG_0 = "00000000000000000000.log"


LOG_100 = "00000000000000000100.log"


def mode(path: Path | str) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_mode_template_is_the_first_log_of_the_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """With none of Kafka's checkpoint/metadata files beside it, a new file takes the mode of the directory's
    first ``.log`` (by name, i.e. lowest base offset); only ``.log`` files count."""
    d = tmp_path / "orders-0"
    d.mkdir()
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    (elsewhere / "00000000000000000999.log").write_bytes(b"")
    monkeypatch.chdir(elsewhere)  # a .log in the working directory must not be taken
    target = d / "leader-epoch-checkpoint.new"
    assert mode_template(target) is None  # empty directory
    (d / "00000000000000000000.index").write_bytes(b"")
    (d / "00000000000000000007.LOG").write_bytes(b"")
    assert mode_template(target) is None  # no .log yet
    (d / LOG_100).write_bytes(b"")
    assert mode_template(target) == str(d / LOG_100)
    (d / LOG_0).write_bytes(b"")
    assert mode_template(target) == str(d / LOG_0)
    assert mode_template(str(target)) == os.path.join(str(d), LOG_0)


def test_new_offset_checkpoint_takes_the_first_logs_mode(tmp_path: Path):
    """A checkpoint file written where none was gets the mode of the directory's first ``.log`` (not 0644), with
    Kafka's offset checkpoint text: version 0, the entry count, one ``topic partition offset`` line each."""
    (tmp_path / LOG_0).write_bytes(b"")
    os.chmod(tmp_path / LOG_0, 0o600)
    (tmp_path / LOG_100).write_bytes(b"")
    os.chmod(tmp_path / LOG_100, 0o664)
    cp = tmp_path / "recovery-point-offset-checkpoint"
    write_offset_checkpoint(cp, {("orders", 0): 100})
    assert mode(cp) == 0o600
    assert cp.read_bytes() == b"0\n1\norders 0 100\n"
    assert (os.stat(cp).st_uid, os.stat(cp).st_gid) == (os.stat(tmp_path).st_uid, os.stat(tmp_path).st_gid)
    assert sorted(os.listdir(tmp_path)) == [LOG_0, LOG_100, "recovery-point-offset-checkpoint"]


# ------------------------------------------------------------------ from test_small_modules_units.py


def test_a_checkpoint_without_a_final_newline_keeps_its_last_entry(tmp_path: Path):
    """``CheckpointReadBuffer`` reads lines with ``readLine``: the last line needs no line end."""
    lec = tmp_path / "leader-epoch-checkpoint"
    lec.write_text("0\n2\n0 0\n3 100")
    assert read_leader_epoch_checkpoint(lec) == [(0, 0), (3, 100)]
    rp = tmp_path / "recovery-point-offset-checkpoint"
    rp.write_text("0\n2\nt 0 5\nu 1 7")
    assert read_offset_checkpoint(rp) == {("t", 0): 5, ("u", 1): 7}


@pytest.mark.parametrize("text, why", [
    (" 0\n", "malformed number ' 0'"),
    ("1\n0\n", "unrecognized version '1'"),
    ("0\nx\n", "malformed number 'x'"),
    ("0\n2\n1 0\n", "expected 2 entries but found 1"),
    ("0\n1\n1 2 3\n", "malformed line '1 2 3'"),
    ("0\n1\na 0\n", "malformed number 'a'"),
])
def test_leader_epoch_checkpoints_segdex_refuses(tmp_path: Path, text: str, why: str):
    path = tmp_path / "leader-epoch-checkpoint"
    path.write_text(text)
    with pytest.raises(CorruptCheckpointException) as e:
        read_leader_epoch_checkpoint(path)
    assert str(e.value) == f"{path}: {why}"


@pytest.mark.parametrize("text, why", [
    ("0\n1\nt 0\n", "malformed line 't 0'"),
    ("0\n1\nt x 5\n", "malformed number 'x'"),
    ("0\n3\nt 0 1\n", "expected 3 entries but found 1"),
])
def test_offset_checkpoints_segdex_refuses(tmp_path: Path, text: str, why: str):
    path = tmp_path / "recovery-point-offset-checkpoint"
    path.write_text(text)
    with pytest.raises(CorruptCheckpointException) as e:
        read_offset_checkpoint(path)
    assert str(e.value) == f"{path}: {why}"


def test_partition_metadata_topic_id(tmp_path: Path):
    """``partition.metadata`` as Kafka writes it (``version: 0``, ``topic_id: <id>``): the topic id; a byte that is
    not UTF-8 elsewhere in the file does not hide it; no file or no topic id line: None."""
    assert read_partition_metadata(tmp_path) is None
    (tmp_path / "partition.metadata").write_bytes(b"version: 0\ntopic_id: BRzCeVwYTWuUnfG7Ol3dSg\n")
    assert read_partition_metadata(tmp_path) == "BRzCeVwYTWuUnfG7Ol3dSg"
    (tmp_path / "partition.metadata").write_bytes(b"version: \xff0\ntopic_id: BRzCeVwYTWuUnfG7Ol3dSg\n")
    assert read_partition_metadata(tmp_path) == "BRzCeVwYTWuUnfG7Ol3dSg"
    (tmp_path / "partition.metadata").write_bytes(b"version: 0\ntopic_id:\n")
    assert read_partition_metadata(tmp_path) is None
