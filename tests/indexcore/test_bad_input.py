"""Bad input on purpose: a clear message, a status and an exit code; never a traceback, never a changed .log."""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

import pytest

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.log.log_segments import recover_partition
from segdex.indexcore.tools.segment_writer import build_batch, write_partition
from tests.support import cli
from tests.support.fixtures import REPO_ROOT, broker_lock

REPO = REPO_ROOT


segdex = functools.partial(cli.segdex, no_traceback=True)


def make_partition(root: Path, batches: int = 40, value_size: int = 300) -> Path:
    recs = [[(1_700_000_000_000 + i, b"k", os.urandom(value_size))] for i in range(batches)]
    write_partition(root, "t", 0, [build_batch(i, r) for i, r in enumerate(recs)])
    return root / "t-0"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def partition(tmp_path) -> Path:
    return make_partition(tmp_path / "logdir")


def batch_starts(log: Path) -> list[int]:
    from segdex.indexcore.record.file_records import batches, open_log

    with open_log(log) as buf:
        return [b.position for b in batches(buf)]


def test_truncated_tail(partition):
    log = partition / "00000000000000000000.log"
    data = log.read_bytes()
    starts = batch_starts(log)
    log.write_bytes(data[: starts[-1] + 30])  # cut inside the last batch's header
    before = digest(log)
    proc = segdex("rebuild", "--config", "index.interval.bytes=100", str(partition))
    assert proc.returncode == 1
    assert f"partial batch at position {starts[-1]}" in proc.stderr
    assert f"{starts[-1]} valid bytes of {starts[-1] + 30}" in proc.stderr
    assert digest(log) == before
    segments, _ = recover_partition(partition, LogConfig(index_interval_bytes=100))
    assert segments[0].result.batch_count == len(starts) - 1
    assert (partition / "00000000000000000000.index").read_bytes() == segments[0].files[".index"]


def test_flipped_byte_stops_at_that_batch(partition):
    log = partition / "00000000000000000000.log"
    starts = batch_starts(log)
    data = bytearray(log.read_bytes())
    data[starts[10] + 100] ^= 0xFF
    log.write_bytes(data)
    proc = segdex("rebuild", str(partition))
    assert proc.returncode == 1
    assert f"CorruptRecordException at position {starts[10]}" in proc.stderr
    assert "stored crc" in proc.stderr
    assert log.read_bytes() == bytes(data)


def test_zero_tail_like_preallocation(partition):
    log = partition / "00000000000000000000.log"
    size = log.stat().st_size
    with open(log, "ab") as f:
        f.write(bytes(4096))
    proc = segdex("rebuild", str(partition))
    assert proc.returncode == 1
    assert "Found record size 0 smaller than minimum record overhead (14)" in proc.stderr
    assert f"{size} valid bytes of {size + 4096}" in proc.stderr


def test_empty_log_is_clean(tmp_path):
    part = tmp_path / "t-0"
    part.mkdir()
    (part / "00000000000000000042.log").write_bytes(b"")
    proc = segdex("rebuild", str(part))
    assert proc.returncode == 0, proc.stderr
    assert (part / "00000000000000000042.index").read_bytes() == b""
    assert (part / "00000000000000000042.timeindex").read_bytes() == b""
    assert not (part / "00000000000000000042.txnindex").exists()


def test_empty_partition_dir(tmp_path):
    part = tmp_path / "t-0"
    part.mkdir()
    proc = segdex("rebuild", str(part))
    assert proc.returncode == 0
    assert list(part.iterdir()) == []


def test_garbage_file(tmp_path):
    part = tmp_path / "t-0"
    part.mkdir()
    garbage = bytes(range(256)) * 64
    (part / "00000000000000000000.log").write_bytes(garbage)
    proc = segdex("rebuild", str(part))
    assert proc.returncode == 1
    assert "corrupt_log_tail" in proc.stderr and "0 valid bytes of 16384" in proc.stderr
    assert (part / "00000000000000000000.log").read_bytes() == garbage
    dump = segdex("dump", str(part / "00000000000000000000.log"))
    assert dump.returncode == 1


def test_misnamed_and_non_segment_files(partition):
    (partition / "notes.log").write_bytes(b"hello")
    (partition / "123.log").write_bytes(b"")
    proc = segdex("rebuild", str(partition))
    assert proc.returncode == 1
    assert "misnamed: " in proc.stderr and "123.log" in proc.stderr and "notes.log" in proc.stderr
    assert (partition / "00000000000000000000.index").exists()  # the real segment was still rebuilt
    other = partition / "readme.txt"
    other.write_text("x")
    proc = segdex("rebuild", str(other))
    assert proc.returncode == 1 and "not a .log segment file nor a partition directory" in proc.stderr
    proc = segdex("dump", str(other))
    assert proc.returncode == 1 and "not a Kafka segment file name" in proc.stderr


def test_unreadable_segment(tmp_path):
    part = tmp_path / "t-0"
    part.mkdir()
    if os.geteuid() == 0:
        (part / "00000000000000000000.log").mkdir()  # root reads any file: a directory cannot be read as one
    else:
        p = part / "00000000000000000000.log"
        p.write_bytes(b"x" * 100)
        p.chmod(0)
    proc = segdex("rebuild", str(part))
    assert proc.returncode == 1
    assert proc.stderr.startswith("unreadable: ") and "cannot read" in proc.stderr


def test_usage_errors_exit_2(tmp_path):
    assert segdex("rebuild", str(tmp_path / "nope")).returncode == 2
    proc = segdex("rebuild", "--config", "index.interval.bytes=abc", str(tmp_path))
    assert proc.returncode == 2 and "Not a number of type INT" in proc.stderr
    assert segdex("rebuild", "--config", "no.such.config=1", str(tmp_path)).returncode == 2
    assert segdex("rebuild").returncode == 2
    assert segdex("no-such-command").returncode == 2


def test_relative_offset_overflow(tmp_path):
    base = 1000
    batches = [build_batch(base, [(1, b"k", b"v")]), build_batch(base + 2**31, [(2, b"k", b"v")])]
    write_partition(tmp_path, "t", 0, [(b"".join(batches), base)])
    part = tmp_path / "t-0"
    before = digest(part / "00000000000000001000.log")
    proc = segdex("rebuild", str(part))
    assert proc.returncode == 1
    assert "error: " in proc.stderr and "IndexOffsetOverflowException" in proc.stderr
    assert "Kafka would split this segment" in proc.stderr
    assert not (part / "00000000000000001000.index").exists()
    assert digest(part / "00000000000000001000.log") == before


def test_locked_log_dir_is_refused(partition):
    lock = partition.parent / ".lock"
    lock.write_bytes(b"")
    with broker_lock(partition.parent):
        proc = segdex("rebuild", str(partition))
        assert proc.returncode == 1
        assert ".lock is held by another process" in proc.stderr
        assert not (partition / "00000000000000000000.index").exists()
    assert segdex("rebuild", str(partition)).returncode == 0  # released: now it works


def test_offsets_past_int64_are_an_error_row(tmp_path):
    base = 2**63 - 2
    part = tmp_path / "t-0"
    write_partition(tmp_path, "t", 0, [(build_batch(base, [(1, b"k", b"v")] * 3), base)])
    proc = segdex("rebuild", str(part))
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: ") and "beyond what a Kafka segment can hold" in proc.stderr
    assert not list(part.glob("*.index"))
