"""``retention``'s readers and log-dir runs, in the test process: ``LogSegment.readNextOffset`` and
``largestTimestamp`` on hand-built segments, a partition's plan when its files cannot be read, which directories a
log-dir run covers, and the clock it plans with.

Expected values come from the generator's own record of what it wrote (the batches' offsets, the index entries
packed here with ``struct`` by their format: offset index ``>ii`` relativeOffset/position, time index ``>qi``
timestamp/relativeOffset) and from Kafka's rules: ``readNextOffset`` is the last batch's lastOffset + 1 read from
the offset index's last entry on (the base offset for an empty segment); ``largestTimestamp`` is the time index's
last timestamp when it is >= 0; an empty log ends at offset 0; the time rule deletes a segment whose largest
timestamp is more than retention.ms older than now.
"""

from __future__ import annotations

import errno
import os
import struct
from pathlib import Path
from types import SimpleNamespace

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.log.log_segment import TIMESTAMP_FROM_TIME_INDEX, LogSegment
from segdex.indexcore.retention import log_dirs as ret
from segdex.indexcore.tools.segment_writer import build_batch, write_partition
from segdex.indexcore.tools.segment_writer import segment_name as name  # <base as 20 digits><suffix>

OFFSET_ENTRY = struct.Struct(">ii")
TIME_ENTRY = struct.Struct(">qi")


def one_record_batches(count: int, base: int = 0) -> list[bytes]:
    return [build_batch(base + i, [(1_700_000_000_000 + i, b"k", b"v")]) for i in range(count)]


def positions(batches: list[bytes]) -> list[int]:
    out, pos = [], 0
    for b in batches:
        out.append(pos)
        pos += len(b)
    return out


# ---------------------------------------------------------------------------------------------------------------
# readNextOffset


def test_next_offset_of_a_single_batch_at_offset_zero(tmp_path: Path):
    """One record at offset 0: the next offset is 1, not the base offset."""
    log = tmp_path / name(0, ".log")
    log.write_bytes(build_batch(0, [(1_700_000_000_000, b"k", b"v")]))
    assert LogSegment(str(log), 0).read_next_offset(tolerate_damage=True) == 1


def test_next_offset_reads_from_the_offset_index_last_entry(tmp_path: Path):
    """A corrupt batch (size field 0) before the index's last entry: Kafka reads from that entry on, so the
    batches after it still count; neither the first entry nor the start of the file is where the read begins."""
    batches = one_record_batches(6, base=100)
    pos = positions(batches)
    data = bytearray(b"".join(batches))
    struct.pack_into(">i", data, pos[2] + 8, 0)  # batch 102's size field: smaller than any record
    log = tmp_path / name(100, ".log")
    log.write_bytes(bytes(data))
    (tmp_path / name(100, ".index")).write_bytes(OFFSET_ENTRY.pack(1, pos[1]) + OFFSET_ENTRY.pack(4, pos[4]))
    assert LogSegment(str(log), 100).read_next_offset(tolerate_damage=True) == 106


def test_next_offset_with_a_stale_index_entry_past_the_end(tmp_path: Path):
    """The index's last entry points past the end of a shorter .log: the whole file is scanned from its start,
    and the next offset is still the last batch's lastOffset + 1."""
    batches = one_record_batches(4)
    log = tmp_path / name(0, ".log")
    log.write_bytes(b"".join(batches))
    (tmp_path / name(0, ".index")).write_bytes(OFFSET_ENTRY.pack(3, sum(map(len, batches)) + 100))
    assert LogSegment(str(log), 0).read_next_offset(tolerate_damage=True) == 4


def test_next_offset_without_an_index_scans_from_byte_zero(tmp_path: Path):
    """No .index (Kafka's empty index: read from position 0), a .log long enough that a read from any other
    byte could parse a bogus batch: the last of the 400 batches ends it."""
    log = tmp_path / name(0, ".log")
    log.write_bytes(b"".join(one_record_batches(400)))
    assert LogSegment(str(log), 0).read_next_offset(tolerate_damage=True) == 400


def test_an_empty_partition_has_no_segments_and_ends_at_zero(tmp_path: Path):
    assert ret.read_segment_facts(str(tmp_path)) == ([], 0)


# ---------------------------------------------------------------------------------------------------------------
# largestTimestamp


def test_a_zero_timestamp_in_the_time_index_is_a_timestamp(tmp_path: Path):
    """``largestTimestamp``: the time index's last timestamp when it is >= 0; 0 (the epoch) counts, so the .log's
    mtime is not used."""
    log = tmp_path / name(50, ".log")
    log.write_bytes(b"")
    os.utime(log, ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))
    (tmp_path / name(50, ".timeindex")).write_bytes(TIME_ENTRY.pack(0, 5))
    assert LogSegment(str(log), 50).largest_timestamp() == (0, TIMESTAMP_FROM_TIME_INDEX)


# ---------------------------------------------------------------------------------------------------------------
# A partition's plan from its files


def stage_partition(root: Path) -> tuple[Path, Path]:
    """``t-0``: segments [0, 10) and [10, 20) of one-record batches, every timestamp old."""
    log_dir = root / "logs"
    write_partition(log_dir, "t", 0, one_record_batches(20), segment_bytes=10 * len(one_record_batches(1)[0]))
    return log_dir, log_dir / "t-0"


def test_no_leader_epoch_checkpoint_means_no_leader_epochs(tmp_path: Path):
    """Without a leader-epoch-checkpoint the plan has no epochs to truncate (None, not an empty list), and an
    apply writes none."""
    log_dir, part = stage_partition(tmp_path)
    assert sorted(os.listdir(part)) == [name(0, ".log"), name(10, ".log")]
    p = ret.plan_partition(str(log_dir), str(part), "t", 0, LogConfig(retention_ms=1000), 1_800_000_000_000,
                           {}, {("t", 0): 10})
    assert [d.base_offset for d in p.plan.deletions] == [0]
    assert (p.plan.leader_epochs_before, p.plan.leader_epochs_after) == (None, None)
    (log_dir / "replication-offset-checkpoint").write_text("0\n1\nt 0 10\n")
    outcome = ret.run_log_dir(str(log_dir), LogConfig(retention_ms=1000), 1_800_000_000_000, apply=True)
    assert [(q.applied, q.error) for q in outcome.partitions] == [(True, None)]
    assert "leader-epoch-checkpoint" not in os.listdir(part)


def test_an_unreadable_segment_is_an_os_error_message(tmp_path: Path):
    """A .log that cannot be stat'ed (a dangling link): the partition's error and skip reason name the directory
    and the OS's text."""
    log_dir, part = stage_partition(tmp_path)
    os.symlink(tmp_path / "gone", part / name(20, ".log"))
    p = ret.plan_partition(str(log_dir), str(part), "t", 0, LogConfig(), 0, {}, {})
    want = f"cannot read: {part}: {os.strerror(errno.ENOENT)}"
    assert (p.log_dir, p.partition_dir, p.error, p.plan.skipped) == (str(log_dir), str(part), want, want)
    assert (p.plan.topic, p.plan.partition, p.plan.deletions, p.applied) == ("t", 0, [], False)


def test_a_corrupt_leader_epoch_checkpoint_is_its_own_message(tmp_path: Path):
    """Four entries announced, the second line malformed: the checkpoint reader's message, as it is (Kafka's reader
    throws at the malformed line, before it counts the entries)."""
    log_dir, part = stage_partition(tmp_path)
    (part / "leader-epoch-checkpoint").write_text("0\n4\n0 0\nzz\n")
    p = ret.plan_partition(str(log_dir), str(part), "t", 0, LogConfig(), 0, {}, {})
    want = f"cannot read: {part / 'leader-epoch-checkpoint'}: malformed line 'zz'"
    assert (p.partition_dir, p.error, p.plan.skipped) == (str(part), want, want)


# ---------------------------------------------------------------------------------------------------------------
# Log dirs


def test_future_and_metadata_dirs_before_a_partition_do_not_end_the_run(tmp_path: Path):
    """A -future directory and the KRaft metadata log sorting before a topic's partition are skipped, and the
    partition after them is still planned."""
    log_dir, part = stage_partition(tmp_path)
    (log_dir / "__cluster_metadata-0").mkdir()
    (log_dir / "a-0.0123abcd-future").mkdir()
    outcome = ret.run_log_dir(str(log_dir), LogConfig(), 1_800_000_000_000)
    assert [p.partition_dir for p in outcome.partitions] == [str(part)]
    assert outcome.skipped == [
        (str(log_dir / "__cluster_metadata-0"), "the KRaft metadata log follows metadata.* settings and its own "
                                                "snapshots, never topic retention: not touched"),
        (str(log_dir / "a-0.0123abcd-future"),
         "-future directory (a replica being moved): retention does not run on it")]
    assert list(outcome.configs) == ["t"]


def test_without_now_the_clock_in_milliseconds_is_used(tmp_path: Path, monkeypatch):
    """No ``now_ms``: the wall clock in ms. Segment 0 (mtime 5 s ago) is older than retention.ms=1000, segment 10
    (mtime exactly 1 s ago) is not: the time rule is strict."""
    now = 1_750_000_000_000
    log_dir, part = stage_partition(tmp_path)
    for base, age in ((0, 5000), (10, 1000)):
        ns = (now - age) * 1_000_000
        os.utime(part / name(base, ".log"), ns=(ns, ns))
    (log_dir / "replication-offset-checkpoint").write_text("0\n1\nt 0 20\n")
    monkeypatch.setattr(ret, "time", SimpleNamespace(time=lambda: now / 1000))
    [p] = ret.run_log_dir(str(log_dir), LogConfig(retention_ms=1000)).partitions
    assert [(d.base_offset, d.reason) for d in p.plan.deletions] == [
        (0, f"largest timestamp {now - 5000} (mtime) is 5000 ms old > retention.ms=1000")]
    assert p.plan.blocked == [] and p.plan.roll_offset is None
    assert p.plan.notes == ["log_start_offset: kept segment 0: it holds the log start offset 0",
                            f"retention.ms: kept segment 10: largest timestamp {now - 1000} is 1000 ms old "
                            f"<= retention.ms=1000"]


def test_an_os_error_on_the_log_dir_is_the_dir_and_the_os_text(tmp_path: Path):
    """A .lock that cannot be opened read-write (a directory): the whole log dir is refused with its path and
    the OS's text."""
    log_dir, _ = stage_partition(tmp_path)
    (log_dir / ".lock").mkdir()
    outcome = ret.run_log_dir(str(log_dir), LogConfig(), 1_800_000_000_000, apply=True)
    assert (outcome.log_dir, outcome.error, outcome.partitions) == (
        str(log_dir), f"{log_dir}: {os.strerror(errno.EISDIR)}", [])
