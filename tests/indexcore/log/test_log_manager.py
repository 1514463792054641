"""Kafka's ``LogManager`` offline: the per-dir checkpoints and marker a clean shutdown leaves after the loads."""

from __future__ import annotations

import os
from pathlib import Path

from segdex.indexcore.log.log_manager import (
    PartitionState,
    finish_log_dir,
    log_dir_checkpoints,
    marker_path,
    read_checkpoints,
    remove_clean_shutdown_marker,
)


def test_finish_log_dir_writes_what_a_clean_stop_leaves(tmp_path: Path):
    """``LogManager``'s clean stop, after the loads: recovery points at each log end offset, a log start offset
    entry only above the first base, the ``.kafka_cleanshutdown`` marker last; a partition that is not clean
    keeps its old entries and no marker is written; partitions gone from the dir lose theirs."""
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    (log_dir / "recovery-point-offset-checkpoint").write_text("0\n3\nb 0 5\ngone 0 9\nc 0 7\n")
    (log_dir / "log-start-offset-checkpoint").write_text("0\n1\nc 0 3\n")
    states = [PartitionState("b", 0, True, 1000, 1537, 1000), PartitionState("a", 0, True, 40, 955, 0),
              PartitionState("c", 0, True, 0, 0, 0)]
    assert finish_log_dir(str(log_dir), states, read_checkpoints(log_dir), marker=True)
    assert (log_dir / "recovery-point-offset-checkpoint").read_text() == "0\n3\na 0 955\nb 0 1537\nc 0 0\n"
    assert (log_dir / "log-start-offset-checkpoint").read_text() == "0\n1\na 0 40\n"
    assert (log_dir / ".kafka_cleanshutdown").read_bytes() == b'{"version":0,"brokerEpoch":-1}'
    assert marker_path(str(log_dir)) == str(log_dir / ".kafka_cleanshutdown")
    # a second finish changes no file
    mtimes = {p.name: p.stat().st_mtime_ns for p in log_dir.iterdir()}
    os.utime(log_dir / "recovery-point-offset-checkpoint", ns=(1, 1))
    finish_log_dir(str(log_dir), states, read_checkpoints(log_dir), marker=True)
    assert (log_dir / "recovery-point-offset-checkpoint").stat().st_mtime_ns == 1
    assert (log_dir / "log-start-offset-checkpoint").stat().st_mtime_ns == mtimes["log-start-offset-checkpoint"]
    # a partition left to the broker: its entries stay, and no marker
    assert remove_clean_shutdown_marker(str(log_dir)) and not remove_clean_shutdown_marker(str(log_dir))
    (log_dir / "recovery-point-offset-checkpoint").write_text("0\n2\nb 0 5\nd 0 77\n")
    (log_dir / "log-start-offset-checkpoint").write_text("0\n1\nd 0 12\n")
    states = [PartitionState("b", 0, True, 1000, 1537, 1000), PartitionState("d", 0, False)]
    assert log_dir_checkpoints(states, read_checkpoints(log_dir)) == ({("b", 0): 1537, ("d", 0): 77}, {("d", 0): 12})
    assert not finish_log_dir(str(log_dir), states, read_checkpoints(log_dir), marker=True)
    assert not (log_dir / ".kafka_cleanshutdown").exists()
    assert (log_dir / "recovery-point-offset-checkpoint").read_text() == "0\n2\nb 0 1537\nd 0 77\n"
    assert not finish_log_dir(str(log_dir), states[:1], read_checkpoints(log_dir), marker=False)
    assert not (log_dir / ".kafka_cleanshutdown").exists()
