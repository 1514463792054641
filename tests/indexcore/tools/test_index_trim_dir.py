"""indexcore.index_compaction over a whole log dir: ``trim_log_dir`` in report and apply mode.

The partitions are copies of the ``multi_segment_partition_retention`` fixture, whose index files Apache Kafka
wrote and trimmed itself; every closed segment's ``.index``/``.timeindex`` is zero-padded here, as a broker crash
while the segment was active leaves it. Expected values: Kafka's files and sizes (trimming must give back exactly
Kafka's bytes), Kafka's rules for a log dir (the KRaft ``__cluster_metadata`` log is left alone, a broker holds the
dir's ``.lock`` while it runs, a deleted partition is renamed ``<topic>-<partition>.<uid>-delete``), and the texts
segdex documents for an operator.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from segdex.indexcore.log.log_dir import LogDirListing
from segdex.indexcore.tools import index_trim as index_compaction
from segdex.indexcore.tools.index_trim import (
    STATUS_OVERLONG,
    STATUS_TRIMMED,
    STATUS_UNREADABLE,
    IndexFileCheck,
    trim_log_dir,
)
from tests.support.fixtures import FIXTURES, load_case
from tests.support.log_dir_locks import other_holder

CASE = "multi_segment_partition_retention"
PAD = {".index": 4096, ".timeindex": 4092}  # whole entries of 8 and 12 bytes
OLD_MTIME_NS = 1_600_000_000 * 1_000_000_000
SUFFIXES = (".index", ".timeindex")


def closed_segments() -> list[dict]:
    """Kafka's segments of the case but the active one (the highest base offset)."""
    return sorted(load_case(CASE)["broker"]["segments"], key=lambda s: s["baseOffset"])[:-1]


def kafka_size(segment: dict, suffix: str) -> int:
    return segment["indexFileSize" if suffix == ".index" else "timeindexFileSize"]


def kafka_entries(segment: dict, suffix: str) -> int:
    return len(segment["indexEntries" if suffix == ".index" else "timeindexEntries"])


def index_path(part: Path, base: int, suffix: str) -> Path:
    return part / f"{base:020d}{suffix}"


def stage_partition(part: Path) -> None:
    """Kafka's partition directory with every closed segment's index zero-padded and given an old mtime."""
    part.mkdir(parents=True)
    for f in (FIXTURES / CASE / "broker").iterdir():
        if not f.name.endswith(".batches.json"):
            shutil.copyfile(f, part / f.name)
    for s in closed_segments():
        for suffix in SUFFIXES:
            p = index_path(part, s["baseOffset"], suffix)
            with open(p, "ab") as f:
                f.write(bytes(PAD[suffix] - p.stat().st_size))
            os.utime(p, ns=(OLD_MTIME_NS, OLD_MTIME_NS))


def overlong_checks(part: Path) -> list[IndexFileCheck]:
    return [IndexFileCheck(str(index_path(part, s["baseOffset"], suffix)), s["baseOffset"], suffix, PAD[suffix],
                           kafka_size(s, suffix), kafka_entries(s, suffix), STATUS_OVERLONG,
                           f"{PAD[suffix] - kafka_size(s, suffix)} bytes after its {kafka_entries(s, suffix)} "
                           f"entries are zeros")
            for s in closed_segments() for suffix in SUFFIXES]


def trimmed_checks(part: Path) -> list[IndexFileCheck]:
    return [IndexFileCheck(c.path, c.base_offset, c.suffix, c.size_bytes, c.valid_bytes, c.entries, STATUS_TRIMMED,
                           c.reason) for c in overlong_checks(part)]


def assert_padded(part: Path) -> None:
    for s in closed_segments():
        for suffix in SUFFIXES:
            assert index_path(part, s["baseOffset"], suffix).stat().st_size == PAD[suffix]


def assert_kafkas_files(part: Path) -> None:
    """Each closed segment's index is byte for byte the file Kafka trimmed, with its mtime kept."""
    for s in closed_segments():
        for suffix in SUFFIXES:
            p = index_path(part, s["baseOffset"], suffix)
            assert p.read_bytes() == index_path(FIXTURES / CASE / "broker", s["baseOffset"], suffix).read_bytes()
            assert p.stat().st_mtime_ns == OLD_MTIME_NS


def test_report_mode_is_the_default_and_writes_nothing(tmp_path):
    """Without apply, compaction only reports: every padded index of a closed segment is overlong by exactly the
    bytes past Kafka's trimmed size, and no file changes."""
    log_dir = tmp_path / "logs"
    stage_partition(log_dir / "t-0")
    outcome = trim_log_dir(str(log_dir))
    assert outcome.log_dir == str(log_dir)
    assert outcome.checks == overlong_checks(log_dir / "t-0")
    assert (outcome.applied, outcome.error, outcome.skipped, outcome.removed_temporaries) == (False, None, [], [])
    assert outcome.reclaimable_bytes == sum(PAD[c.suffix] - c.valid_bytes for c in overlong_checks(log_dir / "t-0"))
    assert_padded(log_dir / "t-0")
    assert not (log_dir / ".lock").exists()


def test_kraft_metadata_log_is_never_checked(tmp_path):
    """The KRaft ``__cluster_metadata`` log is skipped with its reason; the partitions listed after it are still
    checked."""
    log_dir = tmp_path / "logs"
    stage_partition(log_dir / "__cluster_metadata-0")
    stage_partition(log_dir / "t-0")
    outcome = trim_log_dir(str(log_dir))
    assert outcome.skipped == [(str(log_dir / "__cluster_metadata-0"), "the KRaft metadata log: never touched")]
    assert outcome.checks == overlong_checks(log_dir / "t-0")


def test_apply_trims_to_kafkas_files_and_clears_temporaries(tmp_path):
    """With apply, every overlong index becomes Kafka's trimmed file (mtime kept, as retention and operators read
    it), and segdex's leftover temporaries are removed from the log dir and every partition but the KRaft log."""
    log_dir = tmp_path / "logs"
    for name in ("__cluster_metadata-0", "t-0", "u-0"):
        stage_partition(log_dir / name)
    temps = [log_dir / ".segdex-a.tmp", log_dir / "__cluster_metadata-0" / ".segdex-b.tmp",
             log_dir / "t-0" / ".segdex-c.tmp", log_dir / "u-0" / ".segdex-d.tmp"]
    for t in temps:
        t.write_bytes(b"partial")
    outcome = trim_log_dir(str(log_dir), apply=True)
    assert (outcome.applied, outcome.error) == (True, None)
    assert outcome.removed_temporaries == [str(temps[0]), str(temps[2]), str(temps[3])]
    assert [t.exists() for t in temps] == [False, True, False, False]
    assert outcome.checks == trimmed_checks(log_dir / "t-0") + trimmed_checks(log_dir / "u-0")
    assert_kafkas_files(log_dir / "t-0")
    assert_kafkas_files(log_dir / "u-0")
    assert_padded(log_dir / "__cluster_metadata-0")


@pytest.mark.parametrize("apply", [False, True])
def test_partition_deleted_during_the_run_is_reported_unreadable(tmp_path, monkeypatch, apply):
    """A broker deleting a partition renames its directory to ``<topic>-<partition>.<uid>-delete``; when that
    happens between the listing and the check, the partition is reported unreadable with the OS's reason and the
    other partitions are still compacted."""
    log_dir = tmp_path / "logs"
    stage_partition(log_dir / "t-0")
    stage_partition(log_dir / "u-0")
    real = index_compaction.list_log_dir

    def list_then_delete(path: str) -> LogDirListing:
        listing = real(path)
        os.rename(log_dir / "t-0", log_dir / "t-0.5f2b8a1c9d3e4f60a7b8c9d0e1f2a3b4-delete")
        return listing

    monkeypatch.setattr(index_compaction, "list_log_dir", list_then_delete)
    outcome = trim_log_dir(str(log_dir), apply=apply)
    gone = str(log_dir / "t-0")
    assert outcome.checks == [
        IndexFileCheck(gone, -1, "", 0, 0, 0, STATUS_UNREADABLE, f"{gone}: No such file or directory"),
        *(trimmed_checks if apply else overlong_checks)(log_dir / "u-0"),
    ]
    assert (outcome.applied, outcome.error) == (apply, None)


def test_report_mode_warns_when_a_broker_holds_the_lock(tmp_path):
    """A report on a log dir whose ``.lock`` another process holds (a running broker) still lists the files, and
    says that apply would be refused."""
    log_dir = tmp_path / "logs"
    stage_partition(log_dir / "t-0")
    with other_holder(log_dir / ".lock"):
        outcome = trim_log_dir(str(log_dir))
    assert outcome.error == (f"{log_dir}: its .lock is held by another process (a running Kafka broker?): "
                             f"--apply would be refused")
    assert outcome.applied is False
    assert outcome.checks == overlong_checks(log_dir / "t-0")
    assert_padded(log_dir / "t-0")


@pytest.mark.parametrize("apply", [False, True])
def test_os_error_is_reported_with_the_log_dir_and_its_reason(tmp_path, apply):
    """An OS error (here a directory where the ``.lock`` file belongs) ends the run with ``<log dir>: <reason>``,
    not a traceback, and nothing is trimmed."""
    log_dir = tmp_path / "logs"
    stage_partition(log_dir / "t-0")
    (log_dir / ".lock").mkdir()
    outcome = trim_log_dir(str(log_dir), apply=apply)
    assert outcome.error == f"{log_dir}: Is a directory"
    assert outcome.applied is False
    assert_padded(log_dir / "t-0")
