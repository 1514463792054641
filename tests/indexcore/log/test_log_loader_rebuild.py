"""``LogLoader`` (what Kafka's load and clean stop leave), ``rebuild`` (segdex rebuild) and ``PartitionRecovery``
on small partitions built here, in the test process.

Where the expected values come from:

- producer snapshots: the format (``int16 version=1``, ``uint32 CRC32C`` of the rest, ``int32 count``, 46-byte
  entries) written out with struct, and Kafka's rules: ``LogSegment.recover`` moves the map end past each v2
  batch and ``recoverSegment`` then snapshots it; ``loadFromSnapshot`` drops producers whose last timestamp lies
  ``producer.id.expiration.ms`` or more behind the broker clock; ``removeStraySnapshots`` deletes a stray snapshot
  below the highest segment base offset; an empty partition starts and ends at its checkpointed log start offset;
- ``leader-epoch-checkpoint``: ``truncateFromEnd`` and ``truncateFromStart`` flush the file whenever they remove
  an entry (``truncateFromStart`` removes, and re-adds, the entries starting at or below the log start offset);
- ``.txnindex``: ``AbortedTxn`` (``int16 version, int64 producerId, firstOffset, lastOffset, lastStableOffset``)
  with the last stable offset the marker's offset + 1 when no other transaction is open;
- segdex's own contracts its docstrings state (index files take the mode of the ``.log`` beside them, one
  directory fsync after the last write, the scan kernel asked for is the one used).

Offsets, timestamps and positions are the generator's (``build_batch``) own.
"""

from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

import crc32c
import pytest

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.fs import atomic_file
from segdex.indexcore.log import log_segment
from segdex.indexcore.log.log_loader import LoadedPartition, LogLoader
from segdex.indexcore.log.log_manager import PartitionState, finish_log_dir, read_checkpoints
from segdex.indexcore.log.log_segments import PartitionRecovery, SegmentRecovery, index_files, recover_partition
from segdex.indexcore.status import Reason, SegmentStatus
from segdex.indexcore.tools import rebuild as rebuild_module
from segdex.indexcore.tools.rebuild import RebuildOutcome, rebuild, write_index_files
from segdex.indexcore.tools.segment_writer import build_batch, segment_name
from tests.support.fixtures import FIXTURES, load_case
from tests.support.log_segments import partition
from tests.support.producer_snapshot_bytes import (
    reference as _snapshot,  # ProducerSnapshot v1 from Kafka's schema
)

T = 1_700_000_000_000
SRC = FIXTURES / "multi_segment_partition_retention"
CONFIG = LogConfig().with_overrides({k: str(v) for k, v in load_case(SRC.name)["topic_config"].items()
                                     if k in ("index.interval.bytes", "segment.index.bytes")})


EMPTY_SNAPSHOT = _snapshot([])


def _part(tmp_path: Path, segments: dict[int, bytes]) -> Path:
    part = tmp_path / "t-0"
    part.mkdir(parents=True, exist_ok=True)
    for base, data in segments.items():
        (part / segment_name(base)).write_bytes(data)
    return part


def _load(part: Path, config: LogConfig | None = None, **kwargs: int) -> LoadedPartition:
    loader = LogLoader(str(part), config, **kwargs)
    for log in sorted(part.glob("*.log")):
        loader.recover_segment(str(log), int(log.name[:20]))
    return loader.finish()


def _idempotent(offset: int, timestamp: int) -> bytes:
    return build_batch(offset, [(timestamp, b"k", b"v")], producer_id=7, producer_epoch=0, base_sequence=0)


# ------------------------------------------------------------------ LogLoader


def test_an_empty_partition_starts_and_ends_at_its_log_start_offset(tmp_path: Path):
    """No segment: Kafka's load creates one at the checkpointed log start offset; no snapshot is taken (map end =
    last snapshot offset = log start) and the leader-epoch file is created empty."""
    part = _part(tmp_path, {})
    assert _load(part, log_start_offset_checkpoint=5) == LoadedPartition(5, 5, {}, b"")


def test_an_unreadable_segment_ends_the_log_at_its_base(tmp_path: Path):
    """A ``.log`` that cannot be read (a directory) gives no result: the loader's log end is its base offset."""
    part = _part(tmp_path, {})
    (part / segment_name(30)).mkdir()
    loader = LogLoader(str(part))
    seg = loader.recover_segment(str(part / segment_name(30)), 30)
    assert seg == SegmentRecovery(str(part / segment_name(30)), 30, SegmentStatus.UNREADABLE,
                                  Reason("cannot read: a directory, not a regular file", str(part / segment_name(30))))
    assert (loader.log_end_offset, loader.bases) == (30, [30])


def test_a_segment_holding_only_offset_0_is_snapshotted_at_1(tmp_path: Path):
    """Producer 7's one batch at offset 0: the map end moves to 1 and the snapshot at 1 holds the producer (last
    sequence 0, last offset 0, offset delta 0, its timestamp, no coordinator epoch, no open transaction)."""
    part = _part(tmp_path, {0: _idempotent(0, T)})
    loaded = _load(part)
    assert (loaded.log_start_offset, loaded.log_end_offset) == (0, 1)
    assert loaded.snapshots == {1: _snapshot([(7, 0, 0, 0, 0, T, -1, -1)])}


def _expiry_partition(tmp_path: Path) -> Path:
    """Producer 7 writes offset 0 at timestamp 0; segment 1 holds a batch without producer."""
    return _part(tmp_path, {0: _idempotent(0, 0), 1: build_batch(1, [(5, b"k", b"w")])})


def test_producers_expire_at_the_broker_clock_of_the_load(tmp_path: Path):
    """``producer.id.expiration.ms`` 1 and a broker clock of 1: loading the snapshot at 1 for segment 1 drops
    producer 7 (1 - 0 >= 1), so the snapshot after segment 1 is empty."""
    config = LogConfig(producer_id_expiration_ms=1)
    loaded = _load(_expiry_partition(tmp_path), config, now_ms=1)
    producer = _snapshot([(7, 0, 0, 0, 0, 0, -1, -1)])
    assert loaded == LoadedPartition(0, 2, {1: producer, 2: EMPTY_SNAPSHOT}, b"0\n1\n0 0\n")


def test_the_loader_clock_defaults_to_0(tmp_path: Path):
    """The same load at the default clock (0): 0 - 0 is below 1 ms, producer 7 stays in both snapshots."""
    config = LogConfig(producer_id_expiration_ms=1)
    loaded = _load(_expiry_partition(tmp_path), config)
    producer = _snapshot([(7, 0, 0, 0, 0, 0, -1, -1)])
    assert loaded == LoadedPartition(0, 2, {1: producer, 2: producer}, b"0\n1\n0 0\n")


def test_a_stray_snapshot_below_the_last_base_is_removed(tmp_path: Path):
    """Segment 0 holds offsets 0-4, segment 10 is empty (an offset gap): the snapshot at 5 (segment 0's end) is a
    stray below the highest base offset and ``removeStraySnapshots`` deletes it; the one at 10 stays."""
    part = _part(tmp_path, {0: b"".join(build_batch(i, [(T + i, b"k", b"v")]) for i in range(5)), 10: b""})
    loaded = _load(part)
    assert (loaded.log_end_offset, loaded.snapshots) == (10, {10: EMPTY_SNAPSHOT})


def _epoch_batches(first: int, count: int, epoch: int) -> bytes:
    return b"".join(build_batch(first + i, [(T + i, b"k", b"v")], partition_leader_epoch=epoch) for i in range(count))


def test_leader_epochs_past_the_log_end_are_cut_and_the_file_rewritten(tmp_path: Path):
    """The checkpoint names epoch 6 from offset 1000, the log ends at 13: ``truncateFromEnd(13)`` removes it and
    the file is written again with epoch 5 only (no entry starts at or below the log start offset 0)."""
    part = _part(tmp_path, {10: _epoch_batches(10, 3, 5)})
    (part / "leader-epoch-checkpoint").write_bytes(b"0\n2\n5 10\n6 1000\n")
    loaded = _load(part)
    assert (loaded.log_end_offset, loaded.leader_epoch_checkpoint) == (13, b"0\n1\n5 10\n")


def test_an_epoch_starting_at_the_log_start_offset_rewrites_the_file(tmp_path: Path):
    """Checkpointed log start offset 10 and epoch 5 from 10: ``truncateFromStart(10)`` removes the entry (it
    starts at or below 10) and re-adds it, which flushes the file in Kafka's own format."""
    part = _part(tmp_path, {10: _epoch_batches(10, 3, 5)})
    (part / "leader-epoch-checkpoint").write_bytes(b"0\n1\n5  10\n")
    loaded = _load(part, log_start_offset_checkpoint=10)
    assert (loaded.log_start_offset, loaded.leader_epoch_checkpoint) == (10, b"0\n1\n5 10\n")


def test_the_clean_shutdown_marker_takes_the_mode_of_the_log_dirs_files(tmp_path: Path):
    """A new ``.kafka_cleanshutdown`` gets the mode of the broker's files in the log dir (``meta.properties``)."""
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    (log_dir / "meta.properties").write_text("version=1\n")
    os.chmod(log_dir / "meta.properties", 0o640)
    assert finish_log_dir(str(log_dir), [PartitionState("a", 0, True, 0, 5, 0)], read_checkpoints(log_dir), True)
    assert (log_dir / ".kafka_cleanshutdown").read_bytes() == b'{"version":0,"brokerEpoch":-1}'
    assert os.stat(log_dir / ".kafka_cleanshutdown").st_mode & 0o777 == 0o640


# ------------------------------------------------------------------ PartitionRecovery


def test_an_unreadable_control_record_at_the_end_is_a_warning(tmp_path: Path):
    """The last batch is a COMMIT marker whose key version is -1: Kafka's ``updateProducerState`` throws
    InvalidRecordException after the batch was counted, so recovery truncates nothing (validBytes is the whole
    file) and only warns. The time index ends with the marker's timestamp (the final ``maybeAppend``). The cause
    is segdex's wording of Kafka's exception."""
    data = build_batch(0, [(T, b"k", b"v")], producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True)
    marker = bytearray(build_batch(1, [], producer_id=7, producer_epoch=0, control=("COMMIT", 3),
                                   control_timestamp=T + 1))
    struct.pack_into(">h", marker, 61 + 5, -1)  # the control key's version (header 61, 5 single-byte fields)
    struct.pack_into(">I", marker, 17, crc32c.crc32c(bytes(marker[21:])))
    log = _part(tmp_path, {0: data + bytes(marker)}) / segment_name(0)
    end = len(data) + len(marker)
    seg = PartitionRecovery(LogConfig()).recover_segment(str(log), 0)
    assert (seg.log_path, seg.base_offset, seg.status) == (str(log), 0, SegmentStatus.OK)
    assert seg.reason == Reason(f"warning: InvalidRecordException at position {end}: Invalid version found for "
                                f"control record: -1", str(log), end)
    assert (seg.result.valid_bytes, seg.result.size_bytes, seg.result.last_offset) == (end, end, 1)
    assert seg.files == {".index": b"", ".timeindex": struct.pack(">qi", T + 1, 1), ".txnindex": None}


def test_the_configured_index_size_bounds_recovery(tmp_path: Path):
    """``segment.index.bytes`` 16 holds one time index entry, which Kafka keeps for the roll (``isFull``: entries
    >= maxEntries - 1): the first index entry (batch 1, interval 1) is an append to a full index and recovery
    throws."""
    log = _part(tmp_path, {0: b"".join(build_batch(i, [(T, b"k", b"v")]) for i in range(5))}) / segment_name(0)
    seg = PartitionRecovery(LogConfig(index_interval_bytes=1, segment_index_bytes=16)).recover_segment(str(log), 0)
    size = len(build_batch(0, [(T, b"k", b"v")]))
    assert (seg.status, seg.reason) == (SegmentStatus.ERROR, Reason(
        f"IndexFullException at position {size}: Attempt to append to a full time index (size = 0).", str(log)))


def test_producer_state_carries_into_the_next_segment(tmp_path: Path):
    """Producer 7 opens a transaction at 0 (segment 0) and aborts it at 1 (segment 1): segment 1's ``.txnindex``
    holds the transaction from 0 to 1, last stable offset 2."""
    txn = build_batch(0, [(T, b"k", b"v")], producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True)
    abort = build_batch(1, [], producer_id=7, producer_epoch=0, control=("ABORT", 3), control_timestamp=T + 1)
    part = _part(tmp_path, {0: txn, 1: abort})
    segments, misnamed = recover_partition(part)
    assert misnamed == []
    assert [s.files[".txnindex"] for s in segments] == [None, struct.pack(">hqqqq", 0, 7, 0, 1, 2)]


def test_an_existing_txn_index_is_emptied_not_deleted(tmp_path: Path):
    """Kafka's recovery truncates an existing ``.txnindex`` to empty; where there is none it writes none."""
    part = _part(tmp_path, {0: build_batch(0, [(T, b"k", b"v")])})
    seg = PartitionRecovery().recover_segment(str(part / segment_name(0)), 0)
    assert seg.files[".txnindex"] is None and index_files(seg.result)[".txnindex"] is None
    (part / segment_name(0, ".txnindex")).write_bytes(struct.pack(">hqqqq", 0, 7, 0, 0, 1))
    seg = PartitionRecovery().recover_segment(str(part / segment_name(0)), 0)
    assert seg.files[".txnindex"] == b""


def test_the_scan_kernel_asked_for_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """``native=False`` (the Python kernel) reaches every segment's scan: through ``recover_partition``,
    ``LogLoader``, and ``rebuild`` in place and into an out dir."""
    asked: list[object] = []
    real = log_segment.recover_file

    def spy(path: str, base: int, **kwargs: object):
        asked.append(kwargs["native"])
        return real(path, base, **kwargs)

    monkeypatch.setattr(log_segment, "recover_file", spy)
    part = _part(tmp_path / "logs", {0: build_batch(0, [(T, b"k", b"v")]), 1: build_batch(1, [(T, b"k", b"w")])})
    recover_partition(part, native=False)
    LogLoader(str(part)).recover_segment(str(part / segment_name(0)), 0, native=False)
    list(rebuild(str(part), LogConfig(), native=False))
    list(rebuild(str(part), LogConfig(), out_dir=str(tmp_path / "out"), native=False))
    assert asked == [False] * 7


# ------------------------------------------------------------------ rebuild



def _stems(part: Path) -> list[str]:
    return sorted(p.name[:-4] for p in part.glob("0*.log"))


def test_a_second_run_names_every_unchanged_file(tmp_path: Path):
    part = partition(tmp_path)
    list(rebuild(str(part), CONFIG))
    again = [r for r in rebuild(str(part), CONFIG) if isinstance(r, RebuildOutcome)]
    assert [o.unchanged for o in again] == [[str(part / (s + ".index")), str(part / (s + ".timeindex"))]
                                            for s in _stems(part)]
    assert all(o.written == [] for o in again)


def test_out_dir_again_and_the_modes_of_new_files(tmp_path: Path):
    """Into an out dir, the new index files take the source ``.log``'s mode (0640); a second run into the same
    out dir works (its partition folder exists) and changes nothing."""
    part = partition(tmp_path)
    out = tmp_path / "out"
    list(rebuild(str(part), CONFIG, out_dir=str(out)))
    files = sorted((out / "orders-0").iterdir())
    assert [p.name for p in files] == sorted(s + x for s in _stems(part) for x in (".index", ".timeindex"))
    assert {os.stat(p).st_mode & 0o777 for p in files} == {0o640}
    again = [r for r in rebuild(str(part), CONFIG, out_dir=str(out)) if isinstance(r, RebuildOutcome)]
    assert [len(o.unchanged) for o in again] == [2] * len(_stems(part)) and all(not o.written for o in again)


def test_index_files_take_the_mode_of_the_log_beside_them(tmp_path: Path):
    """An out dir that already holds a copy of the ``.log`` (mode 0600): the new index files take that mode."""
    part = partition(tmp_path)
    target = tmp_path / "out" / "orders-0"
    target.mkdir(parents=True)
    stem = _stems(part)[0]
    shutil.copy(part / (stem + ".log"), target)
    os.chmod(target / (stem + ".log"), 0o600)
    list(rebuild(str(part / (stem + ".log")), CONFIG, out_dir=str(tmp_path / "out")))
    assert {p.name: os.stat(p).st_mode & 0o777 for p in target.iterdir()} == {
        stem + ".log": 0o600, stem + ".index": 0o600, stem + ".timeindex": 0o600}


def test_a_missing_target_names_its_path(tmp_path: Path):
    missing = str(tmp_path / "nope")
    with pytest.raises(FileNotFoundError) as e:
        list(rebuild(missing, CONFIG))
    assert e.value.args == (missing,)


def test_an_unreadable_segment_is_an_outcome_without_files(tmp_path: Path):
    part = tmp_path / "logs" / "t-0"
    part.mkdir(parents=True)
    (part / segment_name(0)).mkdir()
    path = str(part / segment_name(0))
    assert list(rebuild(str(part), CONFIG)) == [RebuildOutcome(SegmentRecovery(
        path, 0, SegmentStatus.UNREADABLE, Reason("cannot read: a directory, not a regular file", path)))]


def test_one_directory_fsync_after_the_writes_and_none_without(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """``write_index_files`` writes each file without a directory fsync, then fsyncs the directory once; when
    every file is already identical nothing is written and no fsync is made."""
    synced: list[str] = []
    real_fsync_dir = atomic_file.fsync_dir

    def fsync_dir(d: str) -> None:  # records each directory fsync and makes it
        synced.append(os.fspath(d))
        real_fsync_dir(d)

    monkeypatch.setattr(atomic_file, "fsync_dir", fsync_dir)
    monkeypatch.setattr(rebuild_module, "fsync_dir", fsync_dir)
    part = _part(tmp_path, {0: build_batch(0, [(T, b"k", b"v")])})
    seg = PartitionRecovery().recover_segment(str(part / segment_name(0)), 0)
    first = write_index_files(seg, str(part))
    assert (first.written, synced) == ([str(part / segment_name(0, ".index")),
                                        str(part / segment_name(0, ".timeindex"))], [str(part)])
    synced.clear()
    second = write_index_files(seg, str(part))
    assert (second.written, len(second.unchanged), synced) == ([], 2, [])
