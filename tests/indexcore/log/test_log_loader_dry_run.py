"""``LogLoader``'s dry run (the startup preview): its single rules, each on a small partition built here, in the test
process.

``preview_start`` predicts what Kafka's ``LogLoader.load`` does to a partition at the broker's next start. The
recorded starts (tests/kafka/golden/startup_preview_kafka.json) judge it on a random workload; here each rule of Kafka's
load gets a partition of its own, so that a change to any one of them shows:

- ``AbstractIndex.largestLowerBoundSlotFor`` (``indexSlotRangeFor``: the warm section of the last 8192 bytes
  searched first, ``binarySearch`` with ``mid = (lo + hi + 1) >>> 1``) on entries as a damaged index holds them
  (out of order, repeated keys): the expected slots are traced by hand through Kafka's algorithm;
- ``LogSegment.readNextOffset``: ``read(offsetIndex.lastOffset)`` looks the last entry's offset up and reads
  batches by size from that position on; no batch at or past that offset: the base offset;
- ``LogLoader.load``: ``loadSegmentFiles``, ``recoverLog`` (first truncation deletes every later segment),
  ``deleteSegmentsIfLogStartGreaterThanLogEnd`` (strictly below), ``removeStraySnapshots`` and
  ``UnifiedLog.rebuildProducerState`` (replay from the latest snapshot at or below the offset, else the log start
  offset; a clean start without any snapshot skips the replay; ``FileLogInputStream`` throws on a size field below
  14, the v0 record overhead).

Segments are built with the generator (``build_batch``): the byte lengths and offsets it wrote give the expected
positions, sizes and offsets. Index files the broker would find are written from a recovery of the undamaged
segment (input, not an expectation)."""

from __future__ import annotations

import random
import struct
from pathlib import Path

import crc32c
import pytest

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.log.layout import index_paths
from segdex.indexcore.log.log_loader import LogLoader, StartupPreview, preview_start
from segdex.indexcore.log.log_segment import LogSegment
from segdex.indexcore.log.log_segments import PartitionRecovery
from segdex.indexcore.log.producer_snapshot import producer_snapshot_file_name, snapshot_bytes
from segdex.indexcore.log.unloadable import partition_dir_problems
from segdex.indexcore.tools.segment_writer import build_batch, segment_name
from tests.support.cleaner_cases import RecordingOracle, keep_recording, recorded
from tests.support.fixtures import GOLDEN
from tests.support.preview_cases import judge_preview, on_disk

T = 1_700_000_000_000
ZEROS = b"\0" * 20  # a zero-filled tail: a size field of 0, below the 14-byte minimum
FAILS = ("the broker's load fails: {}; the broker will not start (LogManager.loadLogs rethrows it: \"Error starting "
         "LogManager\")")
SIZE_ZERO = "Found record size 0 smaller than minimum record overhead (14)"



def _batch(offset: int) -> bytes:
    return build_batch(offset, [(T + offset, b"k", b"v")])


def _batches(first: int, count: int) -> bytes:
    return b"".join(_batch(first + i) for i in range(count))


def _index_bytes(entries: list[tuple[int, int]]) -> bytes:
    """An offset index as Kafka stores it: ``int32 relativeOffset, int32 position`` per entry."""
    return b"".join(struct.pack(">ii", rel, pos) for rel, pos in entries)


def _put(part: Path, base: int, data: bytes, index: bool = True, interval: int = 4096) -> Path:
    """A segment's ``.log``, with (``index``) the ``.index``/``.timeindex`` a recovery of these bytes writes."""
    part.mkdir(exist_ok=True)
    log = part / segment_name(base)
    log.write_bytes(data)
    if index:
        seg = PartitionRecovery(LogConfig(index_interval_bytes=interval)).recover_segment(str(log), base)
        for suffix in (".index", ".timeindex"):
            Path(index_paths(str(log))[suffix]).write_bytes(seg.files[suffix])
    return log


def _zero_size_field(log: Path, position: int) -> None:
    """The batch at ``position`` gets a size field of 0 (its later batches keep their positions)."""
    data = bytearray(log.read_bytes())
    struct.pack_into(">i", data, position + 8, 0)
    log.write_bytes(bytes(data))


def _replay_size_zero(part: Path, base: int) -> str:
    """What the load's producer-state replay throws on a size field of 0 in segment ``base`` (Kafka's
    ``FileLogInputStream``)."""
    return (f"the producer-state replay (rebuildProducerState) of {segment_name(base)}: org.apache.kafka.common.errors."
            f"CorruptRecordException: {SIZE_ZERO} in file {part / segment_name(base)}.")


def _snapshot(part: Path, offset: int) -> None:
    (part / producer_snapshot_file_name(offset)).write_bytes(snapshot_bytes([]))


def _marker_note(*names: str) -> str:
    return (f"clean-shutdown marker in front of {len(names)} segment(s) with a corrupt log ({', '.join(names)}): "
            f"the broker serves them as they are")


# ------------------------------------------------------------------ LogSegment.readNextOffset


def test_next_offset_reads_from_the_last_entrys_own_position(tmp_path: Path):
    """The last entry's offset (9) is looked up (slot 2, position of batch 9) and batches are read from there:
    a broken size field in batch 7, before that position, is never read. Reading from any earlier entry's
    position (batch 2 or 5) would meet it and throw."""
    part = tmp_path / "t-0"
    log = _put(part, 0, _batches(0, 12), index=False)
    size = len(_batch(0))
    Path(index_paths(str(log))[".index"]).write_bytes(_index_bytes([(2, 2 * size), (5, 5 * size), (9, 9 * size)]))
    _zero_size_field(log, 7 * size)
    assert LogSegment(str(log), 0).read_next_offset() == 12


def test_next_offset_from_a_single_entry_uses_its_position(tmp_path: Path):
    """One entry (slot 0) at batch 3's position: the read starts there, not at the start of the file where
    batch 1's size field is broken."""
    part = tmp_path / "t-0"
    log = _put(part, 0, _batches(0, 6), index=False)
    size = len(_batch(0))
    Path(index_paths(str(log))[".index"]).write_bytes(_index_bytes([(3, 3 * size)]))
    _zero_size_field(log, size)
    assert LogSegment(str(log), 0).read_next_offset() == 6


def test_next_offset_is_the_base_offset_when_no_batch_reaches_the_indexed_offset(tmp_path: Path):
    """A stale index whose last entry names offset 150 (relative 50) in a segment holding 100-104:
    ``translateOffset(150)`` finds no batch, ``read`` returns null and ``readNextOffset`` the base offset."""
    part = tmp_path / "t-0"
    log = _put(part, 100, _batches(100, 5), index=False)
    Path(index_paths(str(log))[".index"]).write_bytes(_index_bytes([(50, 0)]))
    assert LogSegment(str(log), 100).read_next_offset() == 100


def _aborted(version: int, pid: int, first: int, last: int, lso: int) -> bytes:
    return struct.pack(">hqqqq", version, pid, first, last, lso)  # AbortedTxn: 34 bytes


# ------------------------------------------------------------------ LogLoader.load


def test_an_empty_partition_ends_at_its_log_start_offset():
    """No segment: Kafka creates one at the checkpointed log start offset (0 without an entry); nothing is read."""
    assert preview_start([], True, None, 7) == StartupPreview("none", log_end_offset=7)
    assert preview_start([], False, 3, None) == StartupPreview("none", log_end_offset=0)


def test_recovery_at_open_replays_the_log_before_it_from_the_log_start(tmp_path: Path):
    """Segment 1 has no ``.index``: ``recoverSegment`` first rebuilds producer state from the log start offset (0,
    no checkpoint, no snapshot) to offset 1. Segment 1 is not loaded yet, so segment 0 is the floor segment of
    offset 1: the replay searches it for offset 1 (``translateOffset``, the read's end) before reading it; its
    zero-filled tail throws there and the whole load fails (the default is a topic on record version 2)."""
    part = tmp_path / "t-0"
    _put(part, 0, _batch(0) + ZEROS)
    _put(part, 1, _batch(1), index=False)
    out = preview_start(on_disk(part), True, None, None)
    assert (out.action, out.notes) == ("fail", [FAILS.format(
        f"the producer-state replay's read of the log from offset 1: org.apache.kafka.common.errors."
        f"CorruptRecordException: {SIZE_ZERO} in file {part / '00000000000000000000.log'}.")])


def test_a_legacy_topic_is_not_replayed(tmp_path: Path):
    """Record version below 2 has no producer state: the same partition only has segment 1 recovered, and the
    marker leaves segment 0's corrupt tail in place."""
    part = tmp_path / "t-0"
    _put(part, 0, _batch(0) + ZEROS)
    _put(part, 1, _batch(1), index=False)
    out = preview_start(on_disk(part), True, None, None, producer_state=False)
    assert out == StartupPreview("recover", recovered=[1], log_end_offset=2,
                                 notes=[_marker_note("00000000000000000000.log")])


def test_a_snapshot_at_the_recovered_segments_base_spares_the_log_before_it(tmp_path: Path):
    """A snapshot at offset 10 is loaded for ``rebuildProducerState(10)`` (``truncateAndReload`` keeps it:
    not above 10, not at or below the log start): map end 10, nothing to replay, segment 0 is never read."""
    part = tmp_path / "t-0"
    _put(part, 0, _batch(0) + ZEROS)
    _put(part, 10, _batch(10), index=False)
    _snapshot(part, 10)
    out = preview_start(on_disk(part), True, None, None)
    assert out == StartupPreview("recover", recovered=[10], log_end_offset=11,
                                 notes=[_marker_note("00000000000000000000.log")])


def test_replay_from_a_snapshot_skips_the_segments_ending_at_or_before_it(tmp_path: Path):
    """Segment 20 is recovered at open with a snapshot at 10: ``segments.values(10, 20)`` starts at the floor
    segment of 10 (segment 10, read whole and valid); segment 0, which ends where the snapshot lies, is not read.
    The marker note names segment 0 only: 10 is valid and 20 was recovered."""
    part = tmp_path / "t-0"
    _put(part, 0, _batch(0) + ZEROS)
    _put(part, 10, _batches(10, 2))
    _put(part, 20, _batch(20), index=False)
    _snapshot(part, 10)
    out = preview_start(on_disk(part), True, None, None)
    assert out == StartupPreview("recover", recovered=[20], log_end_offset=21,
                                 notes=[_marker_note("00000000000000000000.log")])


def test_replay_reads_the_floor_segment_of_the_snapshot(tmp_path: Path):
    """Segment 30 is recovered at open with a snapshot at 10: segment 0 is skipped, segment 10 (the floor segment
    of the snapshot) is read and its zero-filled tail fails the load, whatever segment 20 holds."""
    part = tmp_path / "t-0"
    _put(part, 0, _batches(0, 2))
    _put(part, 10, _batch(10) + ZEROS)
    _put(part, 20, _batch(20))
    _put(part, 30, _batch(30), index=False)
    _snapshot(part, 10)
    out = preview_start(on_disk(part), True, None, None)
    assert (out.action, out.notes) == ("fail", [FAILS.format(_replay_size_zero(part, 10))])


def test_a_clean_start_replays_only_with_a_snapshot(tmp_path: Path):
    """Marker and a snapshot at 0 (a segment base: ``removeStraySnapshots`` keeps it): ``rebuildProducerState``
    replays segment 0 from offset 0 and its broken size field (batch 1) fails the load, though the log end offset
    (read from the last index entry, batch 5) never met it. Without any snapshot the clean start skips the replay
    and serves the segment as it is."""
    part = tmp_path / "t-0"
    log = _put(part, 0, _batches(0, 6), interval=1)
    _zero_size_field(log, len(_batch(0)))
    _snapshot(part, 0)
    out = preview_start(on_disk(part), True, None, None)
    assert (out.action, out.notes) == ("fail", [FAILS.format(_replay_size_zero(part, 0))])
    (part / producer_snapshot_file_name(0)).unlink()
    out = preview_start(on_disk(part), True, None, None)
    assert out == StartupPreview("none", log_end_offset=6, notes=[_marker_note("00000000000000000000.log")])


def test_only_the_highest_stray_snapshot_survives(tmp_path: Path):
    """Snapshots at 15 and 1000, neither a segment base: ``removeStraySnapshots`` keeps only the latest stray
    (1000, above every base). ``truncateAndReload(0, 20)`` then drops it (above the log end), so the replay starts
    at the log start offset and reads segment 0, whose zero-filled tail fails the load."""
    part = tmp_path / "t-0"
    _put(part, 0, _batch(0) + ZEROS)
    _put(part, 10, _batches(10, 10))
    _snapshot(part, 15)
    _snapshot(part, 1000)
    out = preview_start(on_disk(part), True, None, None)
    assert (out.action, out.notes) == ("fail", [FAILS.format(_replay_size_zero(part, 0))])


def _flipped(offset: int) -> bytes:
    """A batch with a bit flipped in its last (CRC-covered) byte: its size field still chains."""
    data = bytearray(_batch(offset))
    data[-1] ^= 1
    return bytes(data)


def test_the_marker_note_names_every_corrupt_segment_served_as_is(tmp_path: Path):
    """A clean start with no snapshot reads no batch's CRC: segments 0 and 20 (a bad CRC in their last batch) are
    served as they are and named; segment 10 is valid. The log end offset is segment 20's last batch read by
    size."""
    part = tmp_path / "t-0"
    _put(part, 0, _batch(0) + _flipped(1))
    _put(part, 10, _batches(10, 2))
    _put(part, 20, _batch(20) + _flipped(21))
    out = preview_start(on_disk(part), True, None, None)
    assert out == StartupPreview("none", log_end_offset=22,
                                 notes=[_marker_note("00000000000000000000.log", "00000000000000000020.log")])


def test_a_one_byte_tail_truncates_and_deletes_the_later_segments(tmp_path: Path):
    """No marker: ``recoverLog`` from segment 0 cuts its 1 trailing byte (a partial batch), which deletes segment
    10. The start loses from offset 3 (segment 0's valid end) to 12 (segment 10's last offset)."""
    part = tmp_path / "t-0"
    _put(part, 0, _batches(0, 3) + b"\1")
    tail = _batches(10, 3)
    _put(part, 10, tail)
    out = preview_start(on_disk(part), False, None, None)
    assert out == StartupPreview("truncate", recovered=[0], deleted=[10], truncated={0: 1}, lost_bytes=1 + len(tail),
                                 log_end_offset=3, lost_offsets=(3, 12))


def test_a_deleted_segment_without_a_valid_batch_names_no_last_offset(tmp_path: Path):
    """Segment 10 holds no valid batch (30 zero bytes): deleting it loses no offset, so the loss has no known
    last offset."""
    part = tmp_path / "t-0"
    _put(part, 0, _batches(0, 3) + b"\1")
    _put(part, 10, b"\0" * 30)
    out = preview_start(on_disk(part), False, None, None)
    assert out == StartupPreview("truncate", recovered=[0], deleted=[10], truncated={0: 1}, lost_bytes=31,
                                 log_end_offset=3, lost_offsets=(3, None))


def test_log_start_equal_to_the_log_end_keeps_the_segments(tmp_path: Path):
    """``deleteSegmentsIfLogStartGreaterThanLogEnd``: only a log end strictly below the checkpointed log start
    deletes every segment (then the log end offset is the log start offset)."""
    part = tmp_path / "t-0"
    data = _batches(0, 5)
    _put(part, 0, data)
    assert preview_start(on_disk(part), True, None, 5) == StartupPreview("none", log_end_offset=5)
    assert preview_start(on_disk(part), True, None, 6) == StartupPreview(
        "truncate", deleted=[0], lost_bytes=len(data), log_end_offset=6, lost_offsets=(0, 4),
        notes=["log end offset 5 below the checkpointed log start offset 6: every segment is deleted"])


def test_an_empty_segment_without_checkpoint_ends_at_zero(tmp_path: Path):
    """An empty segment 0 and no log start offset entry (read as 0): log end 0 is not below it, nothing goes."""
    part = tmp_path / "t-0"
    _put(part, 0, b"")
    assert preview_start(on_disk(part), True, None, None) == StartupPreview("none", log_end_offset=0)


def _bad_control_type() -> tuple[bytes, str]:
    """Producer 7's transactional batch at 0, then a COMMIT marker at 1 whose control type is 100 (CRC repaired):
    Kafka's ``EndTransactionMarker`` throws IllegalArgumentException, which recovery does not catch."""
    data = build_batch(0, [(T, b"k", b"v")], producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True)
    marker = bytearray(build_batch(1, [], producer_id=7, producer_epoch=0, control=("COMMIT", 3),
                                   control_timestamp=T + 1))
    struct.pack_into(">h", marker, 61 + 5 + 2, 100)  # header 61, 5 single-byte fields, key version int16, type
    struct.pack_into(">I", marker, 17, crc32c.crc32c(bytes(marker[21:])))
    error = (f"RecoveryFailedException at position {len(data)}: Invalid control record type for end transaction "
             f"marker UNKNOWN (Kafka: IllegalArgumentException)")
    return data + bytes(marker), error


def test_an_error_in_the_recovery_pass_fails_the_load(tmp_path: Path):
    """No marker: ``recoverLog`` meets an exception other than InvalidOffsetException and the load throws."""
    part = tmp_path / "t-0"
    data, error = _bad_control_type()
    log = _put(part, 0, data, index=False)
    Path(index_paths(str(log))[".index"]).write_bytes(b"")  # an index in place: no recovery at open
    out = preview_start(on_disk(part), False, None, None)
    assert (out.action, out.notes) == ("fail", [FAILS.format(f"00000000000000000000.log: {error}")])


def test_an_error_in_a_recovery_at_open_fails_the_load(tmp_path: Path):
    """Marker, ``.index`` missing: ``loadSegmentFiles`` recovers the segment and the exception fails the load."""
    part = tmp_path / "t-0"
    data, error = _bad_control_type()
    _put(part, 0, data, index=False)
    out = preview_start(on_disk(part), True, None, None)
    assert (out.action, out.notes) == ("fail", [FAILS.format(f"00000000000000000000.log: {error}")])


def test_an_unknown_aborted_transaction_version_fails_the_load(tmp_path: Path):
    """Kafka 4.x reads each entry's version and throws on any but 0, uncaught by the load."""
    part = tmp_path / "t-0"
    _put(part, 0, _batches(0, 2))
    (part / "00000000000000000000.txnindex").write_bytes(_aborted(256, 7, 0, 1, 2))
    out = preview_start(on_disk(part), True, None, None)
    assert (out.action, out.notes) == (
        "fail", [FAILS.format("unexpected aborted transaction version 256 in 00000000000000000000.txnindex")])


def test_a_zero_filled_tail_fails_the_log_end_read(tmp_path: Path):
    """Marker, no snapshot: ``readNextOffset`` on the last segment reads batches by size to the end and its
    zero-filled tail throws."""
    part = tmp_path / "t-0"
    _put(part, 0, _batch(0) + ZEROS)
    out = preview_start(on_disk(part), True, None, None)
    assert (out.action, out.notes) == ("fail", [FAILS.format(f"00000000000000000000.log: {SIZE_ZERO}")])


# ------------------------------------------------------------------ the real run's truncation rule


@pytest.mark.parametrize("damage", ["index present", "no offset index", "txnindex below the base"])
def test_the_real_run_truncates_as_the_dry_run_predicts(damage: str, tmp_path: Path):
    """``recover --truncate`` cuts a corrupt tail by the dry run's rule (``truncates_later``): a segment
    ``loadSegmentFiles`` recovers when it opens it (its offset index missing, or its ``.txnindex`` failing
    ``sanityCheck``) is cut alone, its later segments kept; otherwise ``recoverLog``'s truncation deletes them."""
    part = tmp_path / "t-0"
    _put(part, 0, _batches(0, 5))
    log = _put(part, 5, _batches(5, 5) + ZEROS, index=damage != "no offset index")
    _put(part, 10, _batches(10, 5))
    if damage == "txnindex below the base":
        Path(index_paths(str(log))[".txnindex"]).write_bytes(_aborted(0, 7, 1, 2, 3))
    out = preview_start(on_disk(part), False, None, None)
    assert out.truncated == {5: len(ZEROS)}
    seg = PartitionRecovery(LogConfig()).recover_segment(str(log), 5)
    assert LogLoader(str(part)).truncates_later(seg) == (out.deleted == [10])
    assert out.deleted == ([10] if damage == "index present" else [])


def _big(offset: int) -> bytes:
    """A batch over 4,096 bytes: each one after the first gets an offset index entry (the default interval)."""
    return build_batch(offset, [(T + offset, b"k", b"v" * 5000)])


def test_an_invalid_offset_in_the_recovery_pass_empties_the_segment(tmp_path: Path):
    """No marker: offsets 0, 10, then 5 (backwards) in batches over the index interval; recovery's offset index
    append throws ``InvalidOffsetException`` at the third batch. ``recoverLog`` catches it and empties the segment
    to its base offset ("Found invalid offset during recovery"), which deletes segment 20: the loss starts at the
    base offset 0, not at the segment's valid end (11). With the marker the segment is served as it is."""
    part = tmp_path / "t-0"
    log = _put(part, 0, _big(0) + _big(10) + _big(5), index=False)
    Path(index_paths(str(log))[".index"]).write_bytes(b"")  # an index in place: no recovery at open
    tail = _batches(20, 3)
    _put(part, 20, tail)
    segments = on_disk(part)
    assert segments[0].result.error.startswith("InvalidOffsetException at position ")
    size = log.stat().st_size
    assert preview_start(segments, False, None, None) == StartupPreview(
        "truncate", recovered=[0], deleted=[20], truncated={0: size}, lost_bytes=size + len(tail), log_end_offset=0,
        lost_offsets=(0, 22))
    assert preview_start(segments, True, None, None) == StartupPreview(
        "none", log_end_offset=23, notes=[_marker_note("00000000000000000000.log")])


def test_the_recovery_pass_replays_the_segments_before_the_recovery_point(tmp_path: Path):
    """No marker, recovery point 10: ``recoverLog`` starts at segment 10, and its ``recoverSegment`` first replays
    producer state from the log start offset (0, no snapshot) up to offset 10, reading segment 0 by batch size: its
    zero-filled tail fails the load. Segment 10, the one being recovered, is not read that way (its corrupt tail is
    what recovery cuts): without segment 0's tail, segment 10 is cut and nothing fails."""
    part = tmp_path / "t-0"
    _put(part, 0, _batch(0) + ZEROS)
    _put(part, 10, _batch(10) + ZEROS)
    out = preview_start(on_disk(part), False, 10, None)
    assert (out.action, out.notes) == ("fail", [FAILS.format(_replay_size_zero(part, 0))])
    _put(part, 0, _batch(0))
    assert preview_start(on_disk(part), False, 10, None) == StartupPreview(
        "truncate", recovered=[10], truncated={10: len(ZEROS)}, lost_bytes=len(ZEROS), log_end_offset=11,
        lost_offsets=(11, None))


def test_no_recovery_point_entry_recovers_from_the_first_segment(tmp_path: Path):
    """No marker and no recovery point entry (read as 0): ``recoverLog`` starts at segment 0 and its one-byte
    tail deletes segment 1; a recovery point of 1 starts at segment 1 and leaves segment 0 as it is."""
    part = tmp_path / "t-0"
    _put(part, 0, _batch(0) + b"\1")
    _put(part, 1, _batch(1))
    size = len(_batch(1))
    assert preview_start(on_disk(part), False, None, None) == StartupPreview(
        "truncate", recovered=[0], deleted=[1], truncated={0: 1}, lost_bytes=1 + size, log_end_offset=1,
        lost_offsets=(1, 1))
    assert preview_start(on_disk(part), False, 1, None) == StartupPreview("recover", recovered=[1],
                                                                           log_end_offset=2)


def test_a_txnindex_the_load_throws_on_counts_as_no_recovery_at_open(tmp_path: Path):
    """``truncates_later``: a ``.txnindex`` entry of an unknown version fails the broker's load, so it is no reason
    for a recovery at open: the real run's truncation of that segment deletes its later segments."""
    part = tmp_path / "t-0"
    log = _put(part, 5, _batches(5, 5) + ZEROS)
    Path(index_paths(str(log))[".txnindex"]).write_bytes(_aborted(256, 7, 5, 6, 7))
    seg = PartitionRecovery(LogConfig()).recover_segment(str(log), 5)
    assert LogLoader(str(part)).truncates_later(seg) is True


def test_a_name_the_start_throws_on_fails_every_partition_first(tmp_path: Path):
    """``junk.log`` in the partition: the start throws on its name before any load (``fail_notes``), whatever the
    segments hold; with the marker the note says the failed start deletes it."""
    part = tmp_path / "t-0"
    _put(part, 0, _batches(0, 2))
    segments = on_disk(part)
    (part / "junk.log").write_bytes(b"")
    problems = partition_dir_problems(str(part))
    thrown = ('the broker will not start: java.lang.NumberFormatException: For input string: "junk" '
              f"({part / 'junk.log'})")
    assert preview_start(segments, True, None, None, unloadable=problems) == StartupPreview("fail", notes=[
        f"{thrown}; the failed start deletes .kafka_cleanshutdown first: the start after the fix recovers every "
        "partition"])
    assert preview_start(segments, False, None, None, unloadable=problems) == StartupPreview("fail", notes=[thrown])


def test_a_misread_log_name_is_a_note_and_may_set_the_log_end_offset(tmp_path: Path):
    """``5.log`` beside segment 0 (offsets 0-1) and segment 10 (10-11): the start opens an empty segment 5 between
    them, the log end offset stays 12; ``70.log`` becomes the last segment, the log end offset 70. A load that
    fails keeps its failure, not that log end offset."""
    part = tmp_path / "t-0"
    _put(part, 0, _batches(0, 2))
    _put(part, 10, _batches(10, 2))
    segments = on_disk(part)
    (part / "5.log").write_bytes(b"")
    [below] = partition_dir_problems(str(part))
    assert preview_start(segments, True, None, None, unloadable=[below]) == StartupPreview(
        "none", log_end_offset=12, notes=[f"{below.effect} (5.log)"])
    (part / "5.log").rename(part / "70.log")
    [last] = partition_dir_problems(str(part))
    assert preview_start(segments, True, None, None, unloadable=[last]) == StartupPreview(
        "none", log_end_offset=70, notes=[f"{last.effect} (70.log)"])
    (part / "70.log").unlink()
    _put(part, 10, _batch(10) + ZEROS)
    out = preview_start(on_disk(part), True, None, None, unloadable=[last])
    assert (out.action, out.log_end_offset) == ("fail", None)
    assert out.notes == [FAILS.format(f"00000000000000000010.log: {SIZE_ZERO}"), f"{last.effect} (70.log)"]


# ------------------------------------------------------------------ UnifiedLog.maybeIncrementFirstUnstableOffset

def _open_transaction(part: Path, committed: bool) -> int:
    """A partition whose first segment holds plain batches 0-2, then producer 7's transactional batch at 3 (its
    marker at 4 when ``committed``), and an active segment after it. Returns where batch 1 starts."""
    txn = build_batch(3, [(T + 3, b"t", b"v")], producer_id=7, producer_epoch=0, base_sequence=0,
                      is_transactional=True)
    marker = build_batch(4, [], producer_id=7, producer_epoch=0, control=("COMMIT", 0), control_timestamp=T + 4)
    _put(part, 0, _batches(0, 3) + txn + (marker if committed else b""), index=False)
    _put(part, 10, _batch(10), index=False)
    return len(_batch(0))


@pytest.mark.parametrize(("damage", "committed", "fails", "recovery_point"), [
    ({16: 0xFF, 17: 0xF5}, False, True, None),  # read as the older format: compression type 5
    ({16: 0x80, 17: 0x01}, False, True, None),  # read as a gzip wrapper of the older formats
    ({16: 0xFF, 17: 0x00}, False, False, None),  # read as an uncompressed message: its log header's offset
    ({8: 0, 9: 0, 10: 0, 11: 5}, False, True, None),  # a size field of 5
    ({16: 0xFF, 17: 0xF5}, True, False, None),  # no open transaction: nothing is read
    ({16: 0xFF, 17: 0xF5}, False, True, 10),  # no marker: the active segment recovered, the first served
])
def test_a_start_fails_where_the_first_unstable_offsets_read_meets_a_damaged_batch(kafka44, tmp_path: Path,
                                                                                    damage: dict, committed,
                                                                                    fails: bool, recovery_point):
    """Kafka 4.4's ``UnifiedLog`` constructor reads the log from the producer state's first unstable offset (an
    open transaction's first batch, from the snapshot a clean stop wrote, and the segments the start recovers):
    the read's search, from the offset index entry below it, asks each batch for its base offset. A batch damaged
    on the way, in a segment the start serves as it is (the log dir's marker, or below the recovery point), fails
    the start as it fails that read; the preview says the same, judged against Kafka's own load of the files."""
    part = tmp_path / "t-0"
    at = _open_transaction(part, committed)
    started = kafka44.load(part, T + 100)  # a start and clean stop: indexes and the snapshot at the log end
    assert started["logEndOffset"] == 11, started
    data = bytearray((part / segment_name(0)).read_bytes())
    for i, b in damage.items():
        data[at + i] = b
    (part / segment_name(0)).write_bytes(bytes(data))
    clean = recovery_point is None  # the marker, else the partition's recovery point below the log end
    preview = preview_start(on_disk(part), clean, 11 if clean else recovery_point, None)
    answer = kafka44.load(part, T + 200, recovery_point=11 if clean else recovery_point, clean=clean)
    assert ("exception" in answer) == fails, answer
    if not fails:
        assert preview.action != "fail", (preview, answer)
        return
    assert preview.action == "fail", (preview, answer)
    (note,) = preview.notes
    assert note.startswith("the broker's load fails: the read of the log from its first unstable offset 3 "
                           "(UnifiedLog's constructor): "), note
    kafkas = answer["exception"]
    assert note.split("(UnifiedLog's constructor): ", 1)[1].startswith(
        kafkas if "CorruptRecordException" in kafkas else f"{kafkas} (a damaged batch at byte {at} of "), (note, kafkas)


def test_a_failed_load_stops_the_broker_and_only_an_io_error_takes_the_dir_offline():
    """``LogManager.loadLogs`` catches only an ``IOException`` of a partition's load (the log dir goes offline);
    it rethrows every other exception and the broker exits, as for a name it cannot parse."""
    from segdex.indexcore.log.log_loader import LoadFailed

    assert LoadFailed("x").outcome() == ("the broker will not start (LogManager.loadLogs rethrows it: \"Error "
                                         "starting LogManager\")")
    assert LoadFailed("x", io_error=True).outcome() == "it takes the whole log dir offline"


def _served_damage(part: Path, snapshots: dict[int, int | None], codec_byte: int = 0xF5) -> int:
    """``_open_transaction``'s partition with its indexes, batch 1 damaged to a negative magic byte whose older
    format's attributes are ``codec_byte``, and producer snapshots at the given offsets (offset -> the open
    transaction's first offset in it, None: none open). Returns where batch 1 starts."""
    from segdex.indexcore.log.producer_state import BatchMetadata, ProducerStateEntry

    at = _open_transaction(part, committed=False)
    for log in part.glob("*.log"):
        _put(part, int(log.name[:20]), log.read_bytes())
    data = bytearray((part / segment_name(0)).read_bytes())
    data[at + 16], data[at + 17] = 0xFF, codec_byte
    (part / segment_name(0)).write_bytes(bytes(data))
    for offset, first in snapshots.items():
        entry = ProducerStateEntry(7, 0, -1, T + 3, first, BatchMetadata(0, 3, 0, T + 3))
        (part / producer_snapshot_file_name(offset)).write_bytes(snapshot_bytes([entry]))
    return at


REPLAY_FAILS = ("the broker's load fails: the producer-state replay's read of the log from offset {first}: "
                "java.lang.IllegalArgumentException: Unknown compression type id: 5 (a damaged batch at byte {at} of "
                "{path}, met by the read from offset {first}); the broker will not start (LogManager.loadLogs "
                "rethrows it: \"Error starting LogManager\")")
READ_FAILS = ("the broker's load fails: the read of the log from its first unstable offset {first} (UnifiedLog's "
              "constructor): java.lang.IllegalArgumentException: Unknown compression type id: 5 (a damaged batch at "
              "byte {at} of {path}, met by the read from offset {first}); the broker will not start "
              "(LogManager.loadLogs rethrows it: \"Error starting LogManager\")")


def test_the_first_unstable_offset_comes_from_the_snapshot_at_the_log_end(tmp_path: Path):
    """A clean start loads the snapshot at the log end: its open transaction (first offset 3) is read from the
    log and the read meets the damaged batch; a snapshot without one reads nothing; no snapshot at all skips the
    rebuild (no transaction is open)."""
    part = tmp_path / "t-0"
    at = _served_damage(part, {11: 3})
    preview = preview_start(on_disk(part), True, 11, None)
    assert (preview.action, preview.notes) == ("fail", [READ_FAILS.format(first=3, at=at,
                                                                          path=part / segment_name(0))])
    (part / producer_snapshot_file_name(11)).write_bytes(snapshot_bytes([]))
    assert preview_start(on_disk(part), True, 11, None).action == "none"
    (part / producer_snapshot_file_name(11)).unlink()
    assert preview_start(on_disk(part), True, 11, None).action == "none"


def test_the_first_unstable_offset_replayed_from_an_earlier_snapshot(tmp_path: Path):
    """Without the marker (the recovery point at 10) the recovery of segment 10 loads the latest snapshot file at
    or below it, at offset 3, before the transaction: the replay from there finds it open, and the read from 3
    meets the damaged batch first in that replay's own read (its search from the index entry below 3). A clean
    start's rebuild loads only what ``removeStraySnapshots`` leaves: a snapshot at 3 or 1, no segment's base, is
    deleted first, and without a snapshot the rebuild is skipped. Without the marker and any snapshot, the
    replay reads from the log start offset (4)."""
    part = tmp_path / "t-0"
    at = _served_damage(part, {3: None})
    assert preview_start(on_disk(part), False, 10, None).notes == [
        REPLAY_FAILS.format(first=3, at=at, path=part / segment_name(0))]
    assert preview_start(on_disk(part), True, 11, None).action == "none"
    (part / producer_snapshot_file_name(3)).unlink()
    (part / producer_snapshot_file_name(1)).write_bytes(snapshot_bytes([]))
    assert preview_start(on_disk(part), True, 11, 1).action == "none"
    assert preview_start(on_disk(part), False, 10, 4).notes == [  # no snapshot: replayed from the log start
        REPLAY_FAILS.format(first=4, at=at, path=part / segment_name(0))]


def test_the_first_unstable_offset_read_only_where_a_served_segment_is_damaged(tmp_path: Path):
    """An uncompressed older-format read of the damaged batch passes; without the marker and with the recovery
    point at 0 the start recovers (cuts) the damaged segment, so nothing damaged is served and nothing is read
    (the cut is the outcome); below a recovery point of 10 the segment is served and the read fails."""
    part = tmp_path / "t-0"
    _served_damage(part, {11: 3}, codec_byte=0x00)
    assert preview_start(on_disk(part), True, 11, None).action == "none"
    other = tmp_path / "u-0"
    at = _served_damage(other, {11: 3, 10: 3})
    assert preview_start(on_disk(other), False, 0, None).action == "truncate"
    assert preview_start(on_disk(other), False, 10, None).notes == [
        READ_FAILS.format(first=3, at=at, path=other / segment_name(0))]
    (other / producer_snapshot_file_name(10)).rename(other / producer_snapshot_file_name(5))
    assert preview_start(on_disk(other), False, 10, None).notes == [  # the replay from 5 meets it first
        REPLAY_FAILS.format(first=5, at=at, path=other / segment_name(0))]


def test_a_recovered_segments_producer_state_is_the_loads_not_the_scans(tmp_path: Path):
    """Producer 7's transaction opens at 0 and commits at 2, with a damaged batch (a CRC bit flipped) at 1 in a
    segment served as it is (below the recovery point 10). The scan stops at that batch, never sees the commit,
    and finds producer 7's plain write at 10 inside an open transaction (``InvalidTxnStateException``); the
    load recovers segment 10 from the snapshot at 10, where no transaction is open, and goes on (Kafka 4.4's
    load of these files: no failure)."""
    from segdex.indexcore.log.producer_state import BatchMetadata, ProducerStateEntry

    part = tmp_path / "t-0"
    txn = dict(producer_id=7, producer_epoch=0, is_transactional=True)
    first = build_batch(0, [(T, b"t", b"v")], base_sequence=0, **txn)
    damaged = bytearray(_batch(1))
    damaged[-1] ^= 1
    marker = build_batch(2, [], control=("COMMIT", 0), control_timestamp=T + 2, **txn)
    _put(part, 0, first + bytes(damaged) + marker)
    _put(part, 10, build_batch(10, [(T + 10, b"p", b"v")], producer_id=7, producer_epoch=0, base_sequence=1))
    (part / producer_snapshot_file_name(10)).write_bytes(
        snapshot_bytes([ProducerStateEntry(7, 0, 0, T + 2, None, BatchMetadata(0, 0, 0, T))]))
    segments = on_disk(part)
    assert segments[1].result.error.startswith("InvalidTxnStateException"), segments[1].result.error
    preview = preview_start(segments, False, 10, None)
    assert (preview.action, preview.recovered, preview.log_end_offset) == ("recover", [10], 11), preview
    assert segments[1].result.error.startswith("InvalidTxnStateException")  # the caller's segment as it was


# ------------------------------------------------------------------ the load's producer state, case by case

DIRECTED = GOLDEN / "startup_preview_directed_loads.json"  # Kafka's loads of the directed producer-state cases
MESSAGE = "fails, with Kafka's message"  # a case's Kafka start fails, and the preview's note carries its exception


def _txn7(offset: int, transactional: bool = True, sequence: int = 0) -> bytes:
    """Producer 7's one-record batch at ``offset``: a transactional write, or a plain one."""
    return build_batch(offset, [(T + offset, b"t", b"v")], producer_id=7, producer_epoch=0, base_sequence=sequence,
                       is_transactional=transactional)


def _codec_damage(part: Path, base: int, at: int) -> None:
    """The batch at byte ``at`` of segment ``base`` gets a negative magic byte and older-format attributes of
    compression type 5 (as ``_served_damage``): its size field still chains, and a search that asks it for its
    offset throws."""
    data = bytearray((part / segment_name(base)).read_bytes())
    data[at + 16], data[at + 17] = 0xFF, 0xF5
    (part / segment_name(base)).write_bytes(bytes(data))


def _snapshot7(part: Path, offset: int, txn_first: int | None, last: int) -> None:
    """A snapshot at ``offset`` holding producer 7 (its last batch at ``last``) with its open transaction's first
    offset (None: none open)."""
    from segdex.indexcore.log.producer_state import BatchMetadata, ProducerStateEntry

    entry = ProducerStateEntry(7, 0, -1, T + last, txn_first, BatchMetadata(0, last, 0, T + last))
    (part / producer_snapshot_file_name(offset)).write_bytes(snapshot_bytes([entry]))


def _snapshot_above_the_recovered_segment(part: Path) -> tuple[bool, int]:
    """Recovery point 10: the recovery of segment 10 rebuilds producer state up to 10, where
    ``truncateAndReload`` deletes the snapshot at 11 (above 10, its transaction open at 3) and loads the one at 10
    (none open); the state at the log end is that one's, replayed: no transaction open, nothing read, and the
    damaged batch 1 of segment 0, served as it is, stays unread. The start from the stale snapshot at 11 would read
    from 3 and fail."""
    _served_damage(part, {10: None, 11: 3})
    return False, 10


def _stray_snapshot_below_the_recovered_segment(part: Path) -> tuple[bool, int]:
    """Producer 7's transaction opens at 1 (then that batch is damaged) in segment 0, with an index entry at each
    batch after the first. Recovery point 10: the recovery of segment 10 loads the snapshot at 2, no segment's base
    (every file on disk counts there; ``removeStraySnapshots`` deletes it only after the recovery), and replays
    from 2 (its search starts at the index entry of batch 2, past the damage). The transaction it holds open at 1
    is the first unstable offset, and the read from 1 meets the damaged batch: the start fails. A replay from the
    log start instead would pass the damaged batch by size and find no transaction open."""
    _put(part, 0, _batch(0) + _txn7(1) + _batches(2, 2), interval=1)
    _put(part, 10, _batch(10))
    _codec_damage(part, 0, len(_batch(0)))
    _snapshot7(part, 2, 1, 1)
    _snapshot7(part, 11, 1, 1)
    return False, 10


def _replay_from_a_snapshot_inside_a_served_segment(part: Path) -> tuple[bool, int]:
    """Marker, one segment: the snapshot at 4 (a stray above every base, kept) holds no open transaction, though
    producer 7's transactional batch at 2 lies below it. The replay from 4 reads only the batches at or above 4
    (its search from the index entry at 3, past the damaged batch 1): no transaction is open and the start serves
    the segment. Replaying the batch at 2 as well would open one, and its read from 2 (no index entry below it)
    would meet the damage."""
    t2 = _txn7(2)
    _put(part, 0, _batches(0, 2) + t2 + _batches(3, 2))
    size = len(_batch(0))
    (part / segment_name(0)).with_suffix(".index").write_bytes(_index_bytes([(3, 2 * size + len(t2))]))
    _codec_damage(part, 0, size)
    _snapshot7(part, 4, None, 2)
    return True, 5


def _transaction_opened_in_a_later_segment_the_replay_reads(part: Path) -> tuple[bool, int]:
    """Marker, a snapshot at 10 without producers: the replay skips segment 0 (wholly below 10) and reads segment
    10, whose damaged batch 11 it passes by size and whose batch 12 opens producer 7's transaction. The read from
    12, from the start of segment 10 (no index entry), meets the damaged batch: the start fails."""
    _put(part, 0, _batches(0, 3))
    _put(part, 10, _batches(10, 2) + _txn7(12) + _batch(13))
    _put(part, 20, _batch(20))
    _codec_damage(part, 10, len(_batch(10)))
    (part / producer_snapshot_file_name(10)).write_bytes(snapshot_bytes([]))
    return True, 21


def _recovered_segment_whose_failure_the_loads_state_keeps(part: Path) -> tuple[bool, int]:
    """Producer 7 opens a transaction at 10 (the offset of the snapshot, without producers, the recovery of
    segment 20 loads) and writes a plain batch at 20: the scan and the load's state (the snapshot, then the replay
    of segment 10 from its first batch) both find it inside the open transaction (``InvalidTxnStateException``),
    and the start fails there."""
    _put(part, 0, _batches(0, 3))
    _put(part, 10, _txn7(10) + _batch(11))
    _put(part, 20, _txn7(20, transactional=False, sequence=1))
    (part / producer_snapshot_file_name(10)).write_bytes(snapshot_bytes([]))
    return False, 20


def _recovered_segment_judged_again_before_a_later_one(part: Path) -> tuple[bool, int]:
    """``test_a_recovered_segments_producer_state_is_the_loads_not_the_scans``'s partition with a segment 20 after
    segment 10: segment 10 takes the result of its recovery from the load's state (no failure) and the load goes
    on to segment 20, whose end is the log end offset (21)."""
    first = _txn7(0)
    damaged = bytearray(_batch(1))
    damaged[-1] ^= 1
    marker = build_batch(2, [], producer_id=7, producer_epoch=0, is_transactional=True, control=("COMMIT", 0),
                         control_timestamp=T + 2)
    _put(part, 0, first + bytes(damaged) + marker)
    _put(part, 10, _txn7(10, transactional=False, sequence=1))
    _put(part, 20, _batch(20))
    _snapshot7(part, 10, None, 0)
    return False, 10


def _plain_batch_inside_the_snapshots_open_transaction(part: Path) -> tuple[bool, int]:
    """Segment 0: batch 1 damaged (its last byte flipped), then producer 7's transactional batch at 2, which the
    scan, stopped at batch 1, never sees; segment 10: producer 7's plain batch at 10. Recovery point 10: the
    recovery of segment 10 loads the snapshot at 10, which holds producer 7's transaction open at 2
    (``LogLoader.recoverSegment``: ``rebuildProducerState``, then ``segment.recover`` into that state), and meets
    the plain batch inside it: the start fails (``InvalidTxnStateException``), though the scan's recovery of segment
    10 found nothing wrong."""
    damaged = bytearray(_batch(1))
    damaged[-1] ^= 1
    _put(part, 0, _batch(0) + bytes(damaged) + _txn7(2))
    _put(part, 10, _txn7(10, transactional=False, sequence=1))
    _snapshot7(part, 10, 2, 2)
    return False, 10


def _transaction_completed_in_the_last_replay(part: Path) -> tuple[bool, int]:
    """``_transaction_opened_in_a_later_segment_the_replay_reads`` with a COMMIT at 13: the replay from the
    snapshot at 10 opens producer 7's transaction at 12 and completes it at 13 (``loadProducersFromRecords``:
    ``completeTxn`` moves it to ``unreplicatedTxns``). No high watermark has passed its marker when ``UnifiedLog``'s
    constructor reads ``firstUnstableOffset``, so it is 12 still, and the read from 12 meets the damaged batch 11:
    the start fails."""
    marker = build_batch(13, [], producer_id=7, producer_epoch=0, is_transactional=True, control=("COMMIT", 0),
                         control_timestamp=T + 13)
    _put(part, 0, _batches(0, 3))
    _put(part, 10, _batches(10, 2) + _txn7(12) + marker + _batch(14))
    _put(part, 20, _batch(20))
    _codec_damage(part, 10, len(_batch(10)))
    (part / producer_snapshot_file_name(10)).write_bytes(snapshot_bytes([]))
    return True, 21


def _transaction_completed_before_the_last_replays_snapshot(part: Path) -> tuple[bool, int]:
    """Segment 0 (served as it is, below recovery point 10, no index entry): batch 1 damaged, producer 7's
    transaction opened at 2; segment 10 commits it at 10. The recovery of segment 10 completes it and takes a
    snapshot at 12; the log's own manager loads that one and replays nothing, so it holds no transaction, completed
    or open, and the start serves the partition. Counting the transaction completed in a replay from the log start
    would read from 2 and meet the damaged batch 1."""
    marker = build_batch(10, [], producer_id=7, producer_epoch=0, is_transactional=True, control=("COMMIT", 0),
                         control_timestamp=T + 10)
    _put(part, 0, _batches(0, 2) + _txn7(2) + _batch(3))
    _put(part, 10, marker + _batch(11))
    _codec_damage(part, 0, len(_batch(0)))
    return False, 10


def _transaction_carried_through_the_recovered_segments(part: Path) -> tuple[bool, int]:
    """Recovery point 10, a snapshot at 10 holding producer 7's transaction open at 2: segment 10 goes on with it
    (a transactional batch at 10), segment 20 commits it (20), segment 30 holds producer 7's plain batch at 30.
    Each recovery rebuilds its state from the snapshot at 10 and the segments recovered before it (the dry run
    takes its replay up where the last one stopped): the plain batch at 30 comes after the commit, and the start
    serves the partition, its log end at 31."""
    marker = build_batch(20, [], producer_id=7, producer_epoch=0, is_transactional=True, control=("COMMIT", 0),
                         control_timestamp=T + 20)
    _put(part, 0, _batches(0, 2) + _txn7(2))
    _put(part, 10, _txn7(10, sequence=1) + _batch(11))
    _put(part, 20, marker + _batch(21))
    _put(part, 30, _txn7(30, transactional=False, sequence=2))
    _snapshot7(part, 10, 2, 2)
    return False, 10


PRODUCER_STATE_CASES = {  # name -> (builder, whether Kafka's start fails)
    "snapshot above the recovered segment": (_snapshot_above_the_recovered_segment, False),
    "stray snapshot below the recovered segment": (_stray_snapshot_below_the_recovered_segment, True),
    "replay from a snapshot inside a served segment": (_replay_from_a_snapshot_inside_a_served_segment, False),
    "transaction opened in a later segment": (_transaction_opened_in_a_later_segment_the_replay_reads, True),
    "recovered segment's failure kept": (_recovered_segment_whose_failure_the_loads_state_keeps, True),
    "recovered segment judged again": (_recovered_segment_judged_again_before_a_later_one, False),
    "plain batch inside the snapshot's open transaction": (_plain_batch_inside_the_snapshots_open_transaction, True),
    "transaction completed in the last replay": (_transaction_completed_in_the_last_replay, True),
    "transaction completed before the last replay's snapshot": (
        _transaction_completed_before_the_last_replays_snapshot, False),
    "transaction carried through the recovered segments": (_transaction_carried_through_the_recovered_segments,
                                                            False),
}


def _replay_resumed_past_a_segment_that_opens_a_transaction(part: Path) -> tuple[bool, int]:
    """Recovery point 20, a snapshot at 10 holding producer 7's transaction open at 2 (segment 0, served as it is,
    its batch 1 damaged). The recovery of segment 20 replays segment 10 from the snapshot: producer 8's plain batch
    at 10, then its transaction opened at 11. The log's own manager (the snapshot at 21 the recovery took) holds
    both open: the read from 2 meets the damaged batch and the start fails. The dry run takes its last replay up
    at segment 20, where the recovery's stopped; replaying segment 10 again would find producer 8's plain batch
    inside its own open transaction."""
    _put(part, 0, _batches(0, 2) + _txn7(2))
    _put(part, 10, _txn8(10, transactional=False) + _txn8(11, sequence=1))
    _put(part, 20, _batch(20))
    _codec_damage(part, 0, len(_batch(0)))
    _snapshot7(part, 10, 2, 2)
    return False, 20


def _segment_judged_again_opens_a_transaction_a_later_one_meets(part: Path) -> tuple[bool, int]:
    """``_recovered_segment_judged_again_before_a_later_one`` with producer 8's transaction opened at 11 in
    segment 10 (after producer 7's plain batch at 10, where the scan stopped) and producer 8's plain batch at 20.
    The scan never saw producer 8's transaction; the load's recovery of segment 20 replays segment 10 (judged
    again: its result is the load's, not the scan's) from the snapshot at 10 and meets the plain batch inside it:
    the start fails (``InvalidTxnStateException``)."""
    first = _txn7(0)
    damaged = bytearray(_batch(1))
    damaged[-1] ^= 1
    marker = build_batch(2, [], producer_id=7, producer_epoch=0, is_transactional=True, control=("COMMIT", 0),
                         control_timestamp=T + 2)
    _put(part, 0, first + bytes(damaged) + marker)
    _put(part, 10, _txn7(10, transactional=False, sequence=1) + _txn8(11))
    _put(part, 20, _txn8(20, transactional=False, sequence=1))
    _snapshot7(part, 10, None, 0)
    return False, 10


def _unreadable_snapshot_at_the_recovered_segment(part: Path) -> tuple[bool, int]:
    """Recovery point 10 and a snapshot file at 10 that is not a snapshot (its CRC fails): the load deletes it
    (``loadFromSnapshot``) and replays from the log start, where producer 7's transaction opens at 2 and commits
    at 3; the start recovers segment 10 and serves the partition. The dry run cannot tell the state from the
    file, and keeps the scan's judgement of segment 10."""
    marker = build_batch(3, [], producer_id=7, producer_epoch=0, is_transactional=True, control=("COMMIT", 0),
                         control_timestamp=T + 3)
    _put(part, 0, _batches(0, 2) + _txn7(2) + marker)
    _put(part, 10, _batch(10))
    (part / producer_snapshot_file_name(10)).write_bytes(b"\0" * 30)
    return False, 10


def _transaction_opened_past_the_damage_of_a_served_segment(part: Path) -> tuple[bool, int]:
    """``_plain_batch_inside_the_snapshots_open_transaction`` without any snapshot: the recovery of segment 10
    replays segment 0 from the log start, by batch size past its damaged batch 1, finds producer 7's transaction
    opened at 2 and meets its plain batch at 10 inside it: the start fails (``InvalidTxnStateException``). The
    scan stopped at batch 1."""
    damaged = bytearray(_batch(1))
    damaged[-1] ^= 1
    _put(part, 0, _batch(0) + bytes(damaged) + _txn7(2))
    _put(part, 10, _txn7(10, transactional=False, sequence=1))
    return False, 10


def _damaged_segment_ending_at_the_snapshot(part: Path) -> tuple[bool, int]:
    """``_transaction_opened_in_a_later_segment_the_replay_reads`` with a zero-filled tail in segment 0: the
    replay from the snapshot at 10 skips segment 0 (the next segment begins at 10) and never reads its tail, so
    the start fails as before (the read from 12)."""
    _transaction_opened_in_a_later_segment_the_replay_reads(part)
    with open(part / segment_name(0), "ab") as f:
        f.write(ZEROS)
    return True, 21


def _empty_segment_recovered_after_a_snapshots_open_transaction(part: Path) -> tuple[bool, int]:
    """Recovery point 10: segment 10 is empty, and the snapshot at 10 holds producer 7's transaction open at 2
    (segment 0, served as it is, its batch 1 damaged). The recovery of segment 10 replays nothing and the log end
    offset is 10; the log's own manager holds the transaction open, and the read from 2 meets the damaged batch:
    the start fails. The dry run's last replay is the recovery's, taken up at the end of the segments."""
    _put(part, 0, _batches(0, 2) + _txn7(2))
    _put(part, 10, b"")
    _codec_damage(part, 0, len(_batch(0)))
    _snapshot7(part, 10, 2, 2)
    return False, 10


def _first_unstable_offset_read_from_the_served_segments_own_index(part: Path) -> tuple[bool, int]:
    """Marker, the snapshot at the log end (11) holding producer 7's transaction open at 2, in segment 0 past its
    damaged batch 1; segment 0's ``.index`` on disk has an entry at offset 2 (a recovery of these bytes would
    write none). ``UnifiedLog``'s constructor reads from 2 through the index on disk: the search starts at that
    entry, past the damage, and the start serves the partition."""
    _put(part, 0, _batches(0, 2) + _txn7(2) + _batch(3))
    _put(part, 10, _batch(10))
    (part / segment_name(0)).with_suffix(".index").write_bytes(_index_bytes([(2, 2 * len(_batch(0)))]))
    _codec_damage(part, 0, len(_batch(0)))
    _snapshot7(part, 11, 2, 2)
    return True, 11


def _first_unstable_offset_read_from_the_recovered_segments_index(part: Path) -> tuple[bool, int]:
    """Recovery point 10: segment 0 (its batch 1 damaged) is served as it is, segment 10 recovered, its ``.index``
    on disk wrong (offset 11 at byte 5, inside the first batch). Producer 7's transaction opens at 11: the read
    from 11 goes through the index the recovery rebuilt (no entry: from the segment's start) and the start serves
    the partition; the index on disk would start it inside a batch."""
    _put(part, 0, _batches(0, 2))
    _put(part, 10, _batch(10) + _txn7(11))
    (part / segment_name(10)).with_suffix(".index").write_bytes(_index_bytes([(1, 5)]))
    _codec_damage(part, 0, len(_batch(0)))
    return False, 10


def _txn8(offset: int, transactional: bool = True, sequence: int = 0) -> bytes:
    """Producer 8's one-record batch at ``offset``."""
    return build_batch(offset, [(T + offset, b"u", b"v")], producer_id=8, producer_epoch=0, base_sequence=sequence,
                       is_transactional=transactional)


REPLAY_CASES = {  # name -> (builder, whether Kafka's start fails): the replays the dry run resumes or skips
    "replay resumed past a segment that opens a transaction": (
        _replay_resumed_past_a_segment_that_opens_a_transaction, True),
    "segment judged again opens a transaction a later one meets": (
        _segment_judged_again_opens_a_transaction_a_later_one_meets, True),
    "unreadable snapshot at the recovered segment": (_unreadable_snapshot_at_the_recovered_segment, False),
    "transaction opened past the damage of a served segment": (
        _transaction_opened_past_the_damage_of_a_served_segment, True),
    "damaged segment ending at the snapshot": (_damaged_segment_ending_at_the_snapshot, True),
    "empty segment recovered after a snapshot's open transaction": (
        _empty_segment_recovered_after_a_snapshots_open_transaction, True),
    "first unstable offset read through the served segment's own index": (
        _first_unstable_offset_read_from_the_served_segments_own_index, False),
    "first unstable offset read through the recovered segment's index": (
        _first_unstable_offset_read_from_the_recovered_segments_index, False),
}


def _offset_damage(data: bytes, at: int, offset: int) -> bytes:
    """``data`` with the base offset of the batch at byte ``at`` (its log header's first field, which no CRC covers)
    written as ``offset``: recovery's scan finds the batch valid."""
    return data[:at] + struct.pack(">q", offset) + data[at + 8:]


def _marker8(offset: int) -> bytes:
    """Producer 8's COMMIT marker at ``offset``."""
    return build_batch(offset, [], producer_id=8, producer_epoch=0, is_transactional=True, control=("COMMIT", 0),
                       control_timestamp=T + offset)


def _marker_past_the_replay_end_in_a_segment_read_whole(part: Path) -> tuple[bool, int]:
    """Recovery point 20: producer 8's transaction opens at 10 and its COMMIT marker follows, its base offset damaged
    to 25; segment 20 holds producer 8's plain batch. The recovery of segment 20 replays segment 10 whole
    (``rebuildProducerState``: a segment below the floor segment of 20 is read from its start offset to its size),
    the marker with it, whatever its base offset: the transaction is committed and the start serves the partition."""
    _put(part, 0, _batches(0, 2))
    _put(part, 10, _offset_damage(_txn8(10) + _marker8(11), len(_txn8(10)), 25))
    _put(part, 20, _txn8(20, transactional=False, sequence=1))
    return False, 20


def _marker_past_the_replay_end_in_the_floor_segment(part: Path) -> tuple[bool, int]:
    """Marker; segment 10 has no ``.index`` and is recovered as it is opened (``loadSegmentFiles``), before it is
    among the log's segments: the replay to 10 reads segment 0, the floor segment of 10, up to the batch the search
    for 10 finds (``translateOffset(10)``, the read's end position): producer 8's COMMIT marker at 2, its base
    offset damaged to 25. The transaction opened at 1 stays open and producer 8's plain batch at 10 fails the start
    (``InvalidTxnStateException``)."""
    _put(part, 0, _offset_damage(_batch(0) + _txn8(1) + _marker8(2) + _batch(3), len(_batch(0)) + len(_txn8(1)), 25))
    _put(part, 10, _txn8(10, transactional=False, sequence=1), index=False)
    return True, 11


def _marker_below_its_segment_skipped_by_the_replays_start(part: Path) -> tuple[bool, int]:
    """Recovery point 20: producer 8's transaction opens at 2 in segment 0; segment 10 begins with its COMMIT marker,
    the base offset damaged to 3, then a plain batch at 11; segment 20 holds producer 8's plain batch. The replay
    reads segment 10 from the batch the search for 10 finds (``translateOffset``: the batch at 11, the marker's
    base offset below 10): the marker is not replayed, the transaction stays open and the plain batch at 20 fails
    the start (``InvalidTxnStateException``). Recovery's scan applied the marker."""
    _put(part, 0, _batches(0, 2) + _txn8(2))
    _put(part, 10, _offset_damage(_marker8(10) + _batch(11), 0, 3), index=False)
    (part / segment_name(10)).with_suffix(".index").write_bytes(b"")  # (a recovery would throw: offset 3 < 10)
    _put(part, 20, _txn8(20, transactional=False, sequence=1))
    return False, 20


def _snapshot_below_the_first_segment_holds_an_open_transaction(part: Path) -> tuple[bool, int]:
    """Recovery point 20, no log start checkpoint (0): the snapshot at 5, below the first segment, holds producer
    7's transaction open at 12; segment 10's batch 11 is damaged. The recovery of segment 20 loads that snapshot
    (above the checkpointed log start offset 0) and leaves the transaction in its snapshot at 21, which the log's
    own manager loads: its first unstable offset is 12, and the read from 12 meets the damaged batch 11."""
    _put(part, 10, _batches(10, 3))
    _put(part, 20, _batch(20))
    _codec_damage(part, 10, len(_batch(10)))
    _snapshot7(part, 5, 12, 4)
    return False, 20


def _snapshot_at_the_log_start_checkpoint_is_not_loaded(part: Path) -> tuple[bool, int, int]:
    """``_snapshot_below_the_first_segment_holds_an_open_transaction`` with the log start offset checkpointed at
    5: the snapshot at 5 is not above it, the recovery of segment 20 starts from an empty state and the start serves
    the partition."""
    return (*_snapshot_below_the_first_segment_holds_an_open_transaction(part), 5)


READ_CASES = {  # name -> (builder, whether Kafka's start fails): what rebuildProducerState's reads return
    "marker past the replay end in a segment read whole": (_marker_past_the_replay_end_in_a_segment_read_whole, False),
    "marker past the replay end in the floor segment": (_marker_past_the_replay_end_in_the_floor_segment, True),
    "marker below its segment skipped by the replay's start": (
        _marker_below_its_segment_skipped_by_the_replays_start, True),
    "snapshot below the first segment holds an open transaction": (
        _snapshot_below_the_first_segment_holds_an_open_transaction, True),
    "snapshot at the log start checkpoint is not loaded": (_snapshot_at_the_log_start_checkpoint_is_not_loaded, False),
}


def _producer_state_cases(oracle, tmp_path: Path, cases: dict = PRODUCER_STATE_CASES) -> None:
    """Each case of ``PRODUCER_STATE_CASES`` previewed, then loaded by Kafka (clean or not, at its recovery
    point): the preview fails where Kafka's start throws, with its exception's class (``MESSAGE``: its whole
    text), else names the segments Kafka recovered and its log end offset."""
    for name, (build, fails) in cases.items():
        part = tmp_path / name.replace(" ", "_").replace("'", "") / "t-0"
        part.parent.mkdir()
        clean, recovery_point, *log_start = build(part)  # and the checkpointed log start offset, when any
        preview = preview_start(on_disk(part), clean, recovery_point, log_start[0] if log_start else None)
        answer = oracle.load(part, T + 200, recovery_point=recovery_point, clean=clean,
                             **({"log_start_offset": log_start[0]} if log_start else {}))
        assert ("exception" in answer) == bool(fails), (name, answer)
        if fails:
            assert preview.action == "fail", (name, preview, answer)
            kafkas = answer["exception"] if fails == MESSAGE else answer["exception"].split(":", 1)[0].rsplit(".", 1)[1]
            assert kafkas in preview.notes[0], (name, preview.notes, answer)
        else:
            assert preview.action != "fail", (name, preview, answer)
            # the preview's in the load's order (a segment recovered as it is opened first), Kafka's sorted
            got = (sorted(preview.recovered), preview.log_end_offset)
            assert got == (answer["recovered"], answer["logEndOffset"]), (name, preview, answer)


PREVIEWS = GOLDEN / "startup_preview_loads.json"  # Kafka's loads of the judged preview cases


def _previews(oracle, tmp_path: Path) -> None:
    """``judge_preview`` (the cases of ``scripts/differential.py --preview``): a damaged compacted partition's
    next start, clean or unclean, as segdex's preview foretells it and as Kafka 4.4's load makes it: 30 drawn
    cases, and one whose clean start Kafka fails (seed 80207240766, a size field damaged, drawn before ``short``
    and ``inner`` were damages)."""
    kinds = set()
    rng = random.Random(4242)
    for _ in range(30):
        v = judge_preview(rng, oracle, tmp_path / "case")
        assert v.mismatch is None, (v.kind, v.mismatch)
        kinds.add(v.kind)
    assert {k.split()[1] for k in kinds if " " in k} == {"clean", "unclean"}, kinds
    assert {k.split()[0] for k in kinds} >= {"crc", "magic", "size", "cut", "codec", "short"}, kinds
    failed = judge_preview(random.Random(80207240766), oracle, tmp_path / "case",
                           damages=("crc", "magic", "size", "cut", "codec"))
    assert (failed.kind, failed.kafka_fails, failed.mismatch) == ("size clean", True, None)


def test_the_preview_of_damaged_partitions_says_what_kafkas_start_does(kafka44, tmp_path: Path):
    """``_previews`` against Kafka 4.4's own loads; its answers (and the files its first load wrote) equal the
    recorded ones (``SEGDEX_RECORD_GOLDEN=1`` records them)."""
    recording = RecordingOracle(kafka44)
    _previews(recording, tmp_path)
    keep_recording("damaged partitions", recording, PREVIEWS)


def test_the_preview_of_damaged_partitions_equals_kafkas_recorded_loads(tmp_path: Path):
    """``_previews`` against Kafka's recorded loads, in the test process (what the mutation run checks the
    preview's producer-state replay with)."""
    kafka = recorded("damaged partitions", PREVIEWS)
    _previews(kafka, tmp_path)
    assert not kafka.recorded


def test_a_last_segment_that_cannot_be_read_takes_the_log_dir_offline(tmp_path: Path):
    """A clean start reads the last segment's next offset (``readNextOffset``); where that read meets an I/O
    error (the file gone since the scan), Kafka's ``LogManager.loadLogs`` takes the log dir offline: the preview's
    failure names the file and says so, not that the broker will not start."""
    import os

    part = tmp_path / "c-0"
    part.mkdir()
    for base in (0, 2):
        (part / segment_name(base)).write_bytes(build_batch(base, [(1, b"k", b"v")])
                                                + build_batch(base + 1, [(1, b"k", b"v")]))
        (part / (segment_name(base)[:-4] + ".index")).write_bytes(b"")
    segments = on_disk(part)
    os.unlink(part / segment_name(2))
    preview = preview_start(segments, True, 4, None)
    assert (preview.action, preview.log_end_offset) == ("fail", None)
    assert preview.notes == [f"the broker's load fails: {segment_name(2)}: [Errno 2] No such file or directory: "
                             f"'{part / segment_name(2)}'; it takes the whole log dir offline"]


@pytest.mark.parametrize("flawed", [True, False])
def test_the_replays_search_opens_a_v1_wrapper_no_recovery_opens(tmp_path: Path, flawed: bool):
    """A v1 log, neither segment with its ``.index``: each is recovered when opened. Recovering segment 6 first
    rebuilds producer state to offset 6 from the log start (segment 0's recovery left no snapshot at its end: v1
    messages do not move the producer state's map end). Segment 0 is then the floor segment of offset 6, so the
    replay searches it for offset 6 (``translateOffset``), asking each batch for its base offset: a compressed
    wrapper is opened there, and one whose value is null throws (Kafka 4.4's load fails so, tests/indexcore/log/
    test_cleaner.py ``WRAPPER_CASES``); a sound one passes."""
    from segdex.indexcore.tools.segment_writer import build_legacy
    from tests.support.malformed_records import legacy_wrapper_cases

    part = tmp_path / "t-0"
    wrapper = legacy_wrapper_cases()["m1_null_value"] if flawed else build_legacy(
        3, [(T + 3, b"c", b"3"), (T + 4, b"d", b"4"), (T + 5, b"e", b"5")], compression=1)
    _put(part, 0, build_legacy(0, [(T, b"a", b"1"), (T + 1, b"b", b"2")], compression=1) + wrapper, index=False)
    _put(part, 6, build_legacy(6, [(T + 6, b"f", b"6")]), index=False)
    out = preview_start(on_disk(part), True, None, None)
    if not flawed:
        assert (out.action, out.recovered, out.log_end_offset) == ("recover", [0, 6], 7)
        return
    assert (out.action, out.notes) == ("fail", [FAILS.format(
        f"the producer-state replay's read of the log from offset 6: org.apache.kafka.common.InvalidRecordException: "
        f"Found invalid compressed record set with null value (magic = 1) (a damaged batch at byte 111 of "
        f"{part / '00000000000000000000.log'}, met by the read from offset 6)")])


def _batch_spanning_the_opened_segments_base(part: Path) -> tuple[bool, int]:
    """Marker; segment 0's last batch holds offsets 3 to 12, past the base of segment 10, which has no ``.index``
    and is recovered as it is opened (``loadSegmentFiles``). The snapshot at 5 holds producer 7's transaction open
    at 3. The replay to 10 reads segment 0 from the batch the search for 5 finds to the one the search for 10 finds:
    the same batch, so nothing (``LogSegment.read`` with a size of 0). The state is the snapshot's, and producer
    7's plain batch at 10 fails the start (``InvalidTxnStateException``); the scan, from the log start, found no
    transaction open."""
    _put(part, 0, _batches(0, 3) + build_batch(3, [(T + o, b"k", b"v") for o in range(3, 13)]))
    _put(part, 10, _txn7(10, transactional=False, sequence=1), index=False)
    _snapshot7(part, 5, 3, 4)
    return True, 11


def _floor_segment_after_another_cut_at_the_opened_segments_base(part: Path) -> tuple[bool, int]:
    """``_marker_past_the_replay_end_in_the_floor_segment`` with segment 0 split: segment 0 holds plain batches,
    segment 5 producer 8's transaction opened at 5, then its COMMIT marker (base offset damaged to 25), then a plain
    batch at 7 (the segment's last offset: 7, below 10). The replay to 10 for segment 10 (opened, no ``.index``)
    starts from the snapshot at 5 (no producers) and reads segment 5, the floor segment of 10 and the second
    segment the load keeps, up to the batch the search for 10 finds: the marker. The transaction stays open and
    producer 8's plain batch at 10 fails the start (``InvalidTxnStateException``); the scan applied the marker."""
    _put(part, 0, _batches(0, 3))
    _put(part, 5, _offset_damage(_txn8(5) + _marker8(6) + _batch(7), len(_txn8(5)), 25))
    _put(part, 10, _txn8(10, transactional=False, sequence=1), index=False)
    _snapshot(part, 5)
    return True, 11


def _stray_snapshot_of_a_clean_start_is_not_loaded(part: Path) -> tuple[bool, int]:
    """``_stray_snapshot_below_the_recovered_segment``'s segment 0 alone, with the marker: the snapshot at 2 (its
    transaction open at 1) is a stray and ``removeStraySnapshots`` deletes it, the one at 9 (the highest) stays
    but lies above the log end (4). The log's own manager starts empty at the log start and replays segment 0,
    passing its damaged batch 1 by size: no transaction is open and the start serves the partition. Loading the
    deleted snapshot at 2 would hold the transaction open at 1, whose read meets the damage."""
    _put(part, 0, _batch(0) + _txn7(1) + _batches(2, 2), interval=1)
    _codec_damage(part, 0, len(_batch(0)))
    _snapshot7(part, 2, 1, 1)
    _snapshot7(part, 9, None, 1)
    return True, 4


def _marker_past_the_replay_end_in_a_first_segment_read_whole(part: Path) -> tuple[bool, int]:
    """Recovery point 10, three segments: segment 0 holds producer 8's transaction opened at 1 and its COMMIT marker,
    the base offset damaged to 25; segment 10 producer 8's plain batch. The snapshot at 1 holds producer 7's
    transaction open at 0, so the recovery of segment 10 replays from it: segment 0 lies below the floor segment of
    10 and is read whole (``rebuildProducerState``), the marker with it: producer 8's transaction is committed and
    the start serves the partition. A read of segment 0 only up to the search for 10 would stop at the marker."""
    _put(part, 0, _offset_damage(_batch(0) + _txn8(1) + _marker8(2) + _batch(3), len(_batch(0)) + len(_txn8(1)), 25))
    _put(part, 10, _txn8(10, transactional=False, sequence=1))
    _put(part, 20, _batch(20))
    _snapshot7(part, 1, 0, 0)
    return False, 10


def _transaction_committed_two_segments_before_the_last(part: Path) -> tuple[bool, int]:
    """``_transaction_carried_through_the_recovered_segments`` with one more segment: recovery point 10, the
    snapshot at 10 holds producer 7's transaction open at 2, segment 10 goes on with it, segment 20 commits it,
    segment 30 holds a plain batch of no producer and segment 40 producer 7's plain batch. The recovery of segment
    40 replays segments 10, 20 and 30 from the snapshot (the dry run takes up the replay the recovery of segment 30
    left after segment 20): the commit comes first and the start serves the partition, its log end at 41."""
    marker = build_batch(20, [], producer_id=7, producer_epoch=0, is_transactional=True, control=("COMMIT", 0),
                         control_timestamp=T + 20)
    _put(part, 0, _batches(0, 2) + _txn7(2))
    _put(part, 10, _txn7(10, sequence=1) + _batch(11))
    _put(part, 20, marker + _batch(21))
    _put(part, 30, _batch(30))
    _put(part, 40, _txn7(40, transactional=False, sequence=2))
    _snapshot7(part, 10, 2, 2)
    return False, 10


def _empty_last_segment_at_the_log_end(part: Path) -> tuple[bool, int]:
    """Recovery point 10: segment 0 (served as it is) has its batch 1 damaged and producer 8's transaction opened
    at 2; segment 10, recovered, is empty, so the log end offset is its base, 10. The log's state at the log end
    comes from a read of segment 0 to its size (the floor segment of 10 is segment 10): the transaction is open,
    and the read from 2 (no index entry) meets the damaged batch 1: the start fails. Segment 0 read only up to the
    search for 10 would meet that batch first."""
    _put(part, 0, _batches(0, 2) + _txn8(2) + _batch(3))
    _codec_damage(part, 0, len(_batch(0)))
    _put(part, 10, b"")
    return False, 10


SEARCH_CASES = {  # name -> (builder, whether Kafka's start fails): where rebuildProducerState's searches meet
    "batch spanning the opened segment's base": (_batch_spanning_the_opened_segments_base, True),
    "floor segment after another, cut at the opened segment's base": (
        _floor_segment_after_another_cut_at_the_opened_segments_base, True),
    "stray snapshot of a clean start is not loaded": (_stray_snapshot_of_a_clean_start_is_not_loaded, False),
    "marker past the replay end in a first segment read whole": (
        _marker_past_the_replay_end_in_a_first_segment_read_whole, False),
    "transaction committed two segments before the last": (_transaction_committed_two_segments_before_the_last,
                                                            False),
    "empty last segment at the log end": (_empty_last_segment_at_the_log_end, True),
}


def _replay_of_the_recovery_pass_throws(part: Path) -> tuple[bool, int]:
    """Recovery point 10, the snapshot at 5 holding producer 7's transaction open at 3: the recovery of segment 10
    rebuilds producer state from it and replays segment 0 from 5, whose producer 7's plain batch at 6 lies inside
    that transaction. ``rebuildProducerState``'s replay itself throws (``loadProducersFromRecords``:
    ``ProducerAppendInfo``, ``InvalidTxnStateException``) and the start fails, though the scan, from the log start,
    found no transaction open and every segment whole."""
    _put(part, 0, _batches(0, 6) + _txn7(6, transactional=False, sequence=1) + _batch(7))
    _put(part, 10, _batch(10))
    _snapshot7(part, 5, 3, 3)
    return False, 10


def _replay_of_the_last_rebuild_throws(part: Path) -> tuple[bool, int]:
    """``_replay_of_the_recovery_pass_throws``'s segment 0 alone, with the marker: nothing is recovered, and the log's
    own manager (the load's last ``rebuildProducerState``) loads the snapshot at 5 and replays segment 0 from there:
    producer 7's plain batch at 6 inside its open transaction throws and the start fails, though every segment the
    load serves is whole."""
    _put(part, 0, _batches(0, 6) + _txn7(6, transactional=False, sequence=1) + _batch(7))
    _snapshot7(part, 5, 3, 3)
    return True, 8


def _replay_up_to_the_plain_batch_in_the_floor_segment(part: Path) -> tuple[bool, int]:
    """``_replay_of_the_recovery_pass_throws`` with producer 7's plain batch at 10, the first of segment 10, and
    nothing after it in segment 0: the replay to 10 reads segment 0 (from 5 to its end) without a batch of producer
    7, then the recovery of segment 10 meets the plain batch inside the snapshot's open transaction
    (``LogSegment.recover``): the start fails there, not in the replay."""
    _put(part, 0, _batches(0, 8))
    _put(part, 10, _txn7(10, transactional=False, sequence=1))
    _snapshot7(part, 5, 3, 3)
    return False, 10


THROWING_REPLAY_CASES = {  # name -> (builder, whether Kafka's start fails): rebuildProducerState's replay throws
    "replay of the recovery pass throws": (_replay_of_the_recovery_pass_throws, True),
    "replay of the last rebuild throws": (_replay_of_the_last_rebuild_throws, True),
    "replay up to the plain batch in the floor segment": (_replay_up_to_the_plain_batch_in_the_floor_segment, True),
}


@pytest.mark.parametrize("case", [0, 1])
def test_a_replay_that_throws_fails_the_load_with_kafkas_exception(case: int, tmp_path: Path):
    """The note of a start whose ``rebuildProducerState`` replay throws carries Kafka's exception text as its load
    threw it (``THROWING_REPLAY_CASES``' recorded answers): ``ProducerAppendInfo`` names the batch's offset as a
    ``LogOffsetMetadata`` without a segment, and the partition."""
    name, (build, _) = list(THROWING_REPLAY_CASES.items())[case]
    part = tmp_path / "t-0"
    clean, recovery_point = build(part)
    out = preview_start(on_disk(part), clean, recovery_point, None)
    kafkas = recorded("producer state, throwing replays", DIRECTED).recorded[case]["answer"]["exception"]
    assert (out.action, out.notes) == ("fail", [FAILS.format(
        f"the producer-state replay (rebuildProducerState) of 00000000000000000000.log: {kafkas}")]), name


def _index_entry_inside_a_batch_of_a_whole_segment(part: Path) -> tuple[bool, int]:
    """Recovery point 10: segment 0 (served as it is, every batch whole) has a ``.index`` of one entry, offset 0 at
    byte 5, inside its first batch. The recovery of segment 10 replays segment 0 from the log start: the search for
    0 (``LogSegment.translateOffset``) starts at that entry and reads a size field of 2 there: the start fails
    (``CorruptRecordException``), though the segment's batches are sound."""
    _put(part, 0, _batches(0, 3))
    (part / segment_name(0)).with_suffix(".index").write_bytes(_index_bytes([(0, 5)]))
    _put(part, 10, _batch(10))
    return False, 10


def _index_entry_inside_a_batch_below_the_replay(part: Path) -> tuple[bool, int]:
    """``_index_entry_inside_a_batch_of_a_whole_segment`` with a snapshot at 10 (no producers): the replay for segment
    10 starts there and reads no part of segment 0, whose bad index entry no search meets: the start serves the
    partition."""
    _index_entry_inside_a_batch_of_a_whole_segment(part)
    _snapshot(part, 10)
    return False, 10


def _index_entry_inside_a_batch_met_by_the_last_rebuild(part: Path) -> tuple[bool, int]:
    """Marker, segment 0 alone with the bad entry of ``_index_entry_inside_a_batch_of_a_whole_segment`` and a sound
    one for 2 after it (the one ``readNextOffset`` reads from), and a snapshot at 1 (no producers, the highest
    stray: kept): nothing is recovered, and the log's own manager replays from 1, whose search starts at the entry
    for 0, inside the first batch: the start fails."""
    _put(part, 0, _batches(0, 3))
    (part / segment_name(0)).with_suffix(".index").write_bytes(_index_bytes([(0, 5), (2, 2 * len(_batch(0)))]))
    _snapshot(part, 1)
    return True, 3


BAD_INDEX_CASES = {  # name -> (builder, whether Kafka's start fails): a served segment's .index the replay searches
    "index entry inside a batch of a whole segment": (_index_entry_inside_a_batch_of_a_whole_segment, True),
    "index entry inside a batch below the replay": (_index_entry_inside_a_batch_below_the_replay, False),
    "index entry inside a batch met by the last rebuild": (_index_entry_inside_a_batch_met_by_the_last_rebuild, True),
}


def _marker7(offset: int) -> bytes:
    """Producer 7's COMMIT marker at ``offset``."""
    return build_batch(offset, [], producer_id=7, producer_epoch=0, is_transactional=True, control=("COMMIT", 0),
                       control_timestamp=T + offset)


def _stretch_that_ends_before_it_starts(part: Path) -> tuple[bool, int]:
    """Marker; segment 10 has no ``.index`` and is recovered as it is opened: its ``rebuildProducerState`` loads the
    snapshot at 4 and reads segment 0, the floor segment of 10. Segment 0's batch 2 has its base offset damaged to
    12, and its ``.index`` on disk holds (3, batch 3) then (8, batch 1), out of order: the search for 10 (the read's
    end, ``translateOffset``) starts at batch 1 and stops at batch 2; the search for 4 (its start) starts at batch 3
    and stops at batch 4. ``LogSegment.read`` slices a negative size and ``FileRecords.slice`` throws
    (IllegalArgumentException "Invalid size"): the start fails."""
    size = len(_batch(0))
    _put(part, 0, _offset_damage(_batches(0, 8), 2 * size, 12))
    (part / segment_name(0)).with_suffix(".index").write_bytes(_index_bytes([(3, 3 * size), (8, size)]))
    _put(part, 10, _batch(10), index=False)
    _snapshot(part, 4)
    return True, 11


def _marker_the_recovery_passs_replay_cannot_read(part: Path) -> tuple[bool, int]:
    """Recovery point 10: segment 0 (served as it is) ends with producer 7's COMMIT marker of control type 100
    (``_bad_control_type``). The recovery of segment 10 replays segment 0 from the log start, and
    ``loadProducersFromRecords`` reads the marker (``EndTransactionMarker``), which throws: the start fails
    (IllegalArgumentException), though nothing it recovers holds the marker."""
    data, _ = _bad_control_type()
    _put(part, 0, data, index=False)
    (part / segment_name(0)).with_suffix(".index").write_bytes(b"")  # an index in place: no recovery at open
    _put(part, 10, _batch(10))
    return False, 10


def _marker_the_last_rebuild_cannot_read(part: Path) -> tuple[bool, int]:
    """``_marker_the_recovery_passs_replay_cannot_read`` with the marker and a snapshot at 0: nothing is recovered,
    and the load's last ``rebuildProducerState`` replays segment 0 from the snapshot and throws on the marker."""
    _marker_the_recovery_passs_replay_cannot_read(part)
    _snapshot(part, 0)
    return True, 11


def _size_field_below_14_before_the_replays_start(part: Path) -> tuple[bool, int]:
    """``_replay_from_a_snapshot_inside_a_served_segment`` with batch 1's size field 0 instead: the replay from the
    snapshot at 4 searches from the index entry at 3 and reads from batch 4 to the end; ``FileLogInputStream``
    never reaches the size field of 0 and the start serves the partition (the log end read from the last index
    entry on)."""
    t2 = _txn7(2)
    _put(part, 0, _batches(0, 2) + t2 + _batches(3, 2))
    size = len(_batch(0))
    (part / segment_name(0)).with_suffix(".index").write_bytes(_index_bytes([(3, 2 * size + len(t2))]))
    _zero_size_field(part / segment_name(0), size)
    _snapshot7(part, 4, None, 2)
    return True, 5


def _zero_filled_tail_past_the_floor_segments_read(part: Path) -> tuple[bool, int]:
    """Marker; segment 10 has no ``.index`` and is recovered as it is opened. Segment 0's last batch has its base
    offset damaged to 25, and a zero-filled tail follows: the replay to 10 reads segment 0 up to the batch the
    search for 10 finds (that last batch), never the tail, and the start serves the partition (nothing else reads
    segment 0)."""
    size = len(_batch(0))
    _put(part, 0, _offset_damage(_batches(0, 3), 2 * size, 25) + ZEROS)
    _put(part, 10, _batch(10), index=False)
    return True, 11


STRETCH_CASES = {  # name -> (builder, whether Kafka's start fails): the stretch rebuildProducerState reads
    "stretch that ends before it starts": (_stretch_that_ends_before_it_starts, MESSAGE),
    "marker the recovery pass's replay cannot read": (_marker_the_recovery_passs_replay_cannot_read, True),
    "marker the last rebuild cannot read": (_marker_the_last_rebuild_cannot_read, True),
    "size field below 14 before the replay's start": (_size_field_below_14_before_the_replays_start, False),
    "zero-filled tail past the floor segment's read": (_zero_filled_tail_past_the_floor_segments_read, False),
}


def _first_unstable_offset_met_by_an_entry_inside_a_batch(part: Path) -> tuple[bool, int]:
    """Marker, a snapshot at 0 (no producers): every batch is whole, but segment 0's ``.index`` has one entry,
    offset 2 at byte 5, inside its first batch. The replay from 0 (its search for 0 starts at the segment's start)
    opens producer 7's transaction at 2; ``UnifiedLog``'s constructor then reads from 2, its search starting at
    that entry, and reads a size field of 2 there: the start fails (``CorruptRecordException``), though the replay
    read every segment as the scan did."""
    _put(part, 0, _batches(0, 2) + _txn7(2) + _batch(3))
    (part / segment_name(0)).with_suffix(".index").write_bytes(_index_bytes([(2, 5)]))
    _put(part, 10, _batch(10))
    _snapshot(part, 0)
    return True, 11


def _first_unstable_offset_past_a_recovered_segment(part: Path) -> tuple[bool, int]:
    """``_first_unstable_offset_met_by_an_entry_inside_a_batch`` without the snapshot, recovery point 10: segment
    10 is recovered, the log's own manager holds the transaction the recovery's replay opened at 2, and the read
    from 2 through segment 0's ``.index`` (segment 0 is served as it is) fails the start."""
    _put(part, 0, _batches(0, 2) + _txn7(2) + _batch(3))
    (part / segment_name(0)).with_suffix(".index").write_bytes(_index_bytes([(2, 5)]))
    _put(part, 10, _batch(10))
    return False, 10


def _marker_skipped_by_a_served_segments_index(part: Path) -> tuple[bool, int]:
    """Recovery point 20: producer 7's transaction opens at 2 in segment 0; segment 10 begins with its COMMIT marker,
    but its ``.index`` on disk holds offset 10 at batch 12. The recovery of segment 20 replays segment 10 from the
    batch the search for 10 finds from there (batch 12): the marker is skipped, the transaction stays open and
    producer 7's plain batch at 20 fails the start (``InvalidTxnStateException``). The scan applied the marker."""
    _put(part, 0, _batches(0, 2) + _txn7(2))
    ten = _marker7(10) + _batches(11, 2)
    _put(part, 10, ten)
    (part / segment_name(10)).with_suffix(".index").write_bytes(_index_bytes([(0, len(ten) - len(_batch(12)))]))
    _put(part, 20, _txn7(20, transactional=False, sequence=1))
    return False, 20


def _transaction_opened_below_its_segment(part: Path) -> tuple[bool, int]:
    """Marker, a snapshot at 10 (no producers): segment 0 (its batch 1 damaged) lies wholly below the replay, which
    reads segment 10 as the scan did. Segment 10's second batch, producer 7's transaction of ten records, has its
    base offset damaged to 5 (its last offset, 14, still in the segment): the transaction it opens starts at 5, so
    ``UnifiedLog``'s constructor reads from 5 in segment 0, the floor segment of 5, and meets the damaged batch:
    the start fails."""
    _put(part, 0, _batches(0, 3))
    _codec_damage(part, 0, len(_batch(0)))
    spanning = build_batch(11, [(T + 11 + o, b"t", b"v") for o in range(10)], producer_id=7, producer_epoch=0,
                           base_sequence=0, is_transactional=True)
    _put(part, 10, _batch(10) + _offset_damage(spanning, 0, 5))
    _snapshot(part, 10)
    return True, 15


def _snapshot_deleted_by_an_earlier_recovery(part: Path) -> tuple[bool, int]:
    """Marker; segments 0 and 20 have no ``.index`` and are recovered as they are opened. Segment 10's ``.index``
    holds offset 10 at byte 5 (inside its first batch), then offset 12 at batch 12; a snapshot lies at 13. The
    recovery of segment 0 rebuilds producer state up to 0, and its ``truncateAndReload`` deletes every snapshot
    file above 0, the one at 13 too: the recovery of segment 20 replays from the snapshot at 2 that the first
    recovery took at its end, searches segment 10 for 10 from the bad entry and fails the start
    (``CorruptRecordException``). A replay from the snapshot at 13 would search from the entry at 12 and pass."""
    _put(part, 0, _txn7(0) + _batch(1), index=False)
    ten = _marker7(10) + _batches(11, 4)
    _put(part, 10, ten)
    (part / segment_name(10)).with_suffix(".index").write_bytes(
        _index_bytes([(0, 5), (2, len(_marker7(10)) + len(_batch(11)))]))
    _snapshot7(part, 13, None, 10)
    _put(part, 20, _txn7(20, transactional=False, sequence=1), index=False)
    return True, 21


SERVED_INDEX_CASES = {  # name -> (builder, whether Kafka's start fails): the served segments the reads search
    "first unstable offset met by an entry inside a batch": (
        _first_unstable_offset_met_by_an_entry_inside_a_batch, MESSAGE),
    "first unstable offset past a recovered segment": (_first_unstable_offset_past_a_recovered_segment, MESSAGE),
    "marker skipped by a served segment's index": (_marker_skipped_by_a_served_segments_index, True),
    "transaction opened below its segment": (_transaction_opened_below_its_segment, MESSAGE),
    "snapshot deleted by an earlier recovery": (_snapshot_deleted_by_an_earlier_recovery, MESSAGE),
}


def _empty_stretch_at_the_opened_segments_base(part: Path) -> tuple[bool, int]:
    """Marker; segment 10 (no ``.index``) is recovered as it is opened, from the snapshot at 5, which holds producer
    7's transaction open at 1. Segment 0 ends with producer 7's COMMIT marker, its base offset damaged to 25: the
    searches for 5 and for 10 both find it, so the replay reads nothing (``LogSegment.read`` with a size of 0), the
    transaction stays open and producer 7's plain batch at 10 fails the start (``InvalidTxnStateException``). A
    replay of the rest of segment 0 (the load's last one, say) applies the marker."""
    head = _batch(0) + _txn7(1) + _batches(2, 3)
    _put(part, 0, _offset_damage(head + _marker7(5), len(head), 25))
    _put(part, 10, _txn7(10, transactional=False, sequence=1), index=False)
    _snapshot7(part, 5, 1, 1)
    return True, 11


def _replay_of_another_plan_not_taken_up(part: Path) -> tuple[bool, int]:
    """Recovery point 10; segment 20 (no ``.index``) is recovered as it is opened, from the snapshot at 15 (producer
    7's transaction open at 12). ``recoverLog`` then recovers segment 10 from the log start (``truncateAndReload``
    deletes every snapshot above 10), replaying segment 0 (its batch 1 damaged, read by size): no transaction is
    open and producer 7's plain batch at 10 passes; the start serves the partition. The state of the replay from
    the snapshot at 15 is not the one this replay starts from."""
    damaged = bytearray(_batch(1))
    damaged[-1] ^= 1
    _put(part, 0, _batch(0) + bytes(damaged) + _batch(2))
    _put(part, 10, _txn7(10, transactional=False, sequence=1) + _batch(11))
    _put(part, 20, _batch(20), index=False)
    _snapshot7(part, 15, 12, 12)
    return False, 10


def _segment_replayed_as_served_then_recovered(part: Path) -> tuple[bool, int]:
    """Recovery point 10, the snapshot at 10 holding producer 7's transaction open at 5. Segment 30 (no ``.index``)
    is recovered as it is opened: its replay reads segment 10 as it is, through its ``.index`` on disk (offset 10
    at batch 12), past its COMMIT marker at 10, and segment 20, whose first batch's base offset (damaged to 35)
    ends the read at once (an empty ``.index``: not recovered when opened). ``recoverLog`` then recovers segment 10
    (the marker applied) and segment 20, whose producer 7's plain batch at 21 comes after the commit: the start
    serves the partition. The state of the replay that read segment 10 as it is (the marker skipped) is not the one
    the recovery of segment 20 starts from."""
    _put(part, 0, _batches(0, 3))
    ten = _marker7(10) + _batches(11, 2)
    _put(part, 10, ten)
    (part / segment_name(10)).with_suffix(".index").write_bytes(_index_bytes([(0, len(ten) - len(_batch(12)))]))
    _put(part, 20, _offset_damage(_batch(20) + _txn7(21, transactional=False, sequence=1), 0, 35), index=False)
    (part / segment_name(20)).with_suffix(".index").write_bytes(b"")
    _put(part, 30, _batch(30), index=False)
    _snapshot7(part, 10, 5, 5)
    return False, 10


def _floor_segment_read_to_a_search_then_whole(part: Path) -> tuple[bool, int]:
    """Marker; segments 20 and 40 have no ``.index`` and are recovered as they are opened. The replay to 40 reads
    segment 30 up to the batch the search for 40 finds (its last, base offset damaged to 45): producer 8's plain
    batch at 30, then its transaction opened at 31. The load's last rebuild loads the snapshot at 41 the recovery of
    segment 40 took, the transaction open, and the read from 31 passes: the start serves the partition. The dry run
    rebuilds that state from the log start, segment 30 read whole, each batch once (taken up after the stretch of
    segment 30 the replay to 40 read, it would meet producer 8's plain batch inside its own open transaction)."""
    _put(part, 0, _batches(0, 2))
    _put(part, 10, _batches(10, 2))
    _put(part, 20, _batch(20), index=False)
    head = _txn8(30, transactional=False) + _txn8(31, sequence=1)
    _put(part, 30, _offset_damage(head + _batch(32), len(head), 45))
    _put(part, 40, _batch(40), index=False)
    return True, 41


def _floor_segment_read_whole_past_the_stretch_read(part: Path) -> tuple[bool, int]:
    """``_floor_segment_read_to_a_search_then_whole``'s segments, segment 30 holding producer 8's plain batch at 30,
    a batch whose base offset is damaged to 45, producer 8's transaction opened at 32, then a zero-filled tail;
    segment 40 producer 8's plain batch. The replay to 40 reads segment 30 up to the damaged batch (the plain
    batch), the recovery of segment 40 passes, and the load's last rebuild loads the snapshot at 41 its recovery
    took: nothing reads the transaction at 32 or the tail, and the start serves the partition. The dry run's
    replay of segment 30 whole (the log's own state, from the log start) meets the tail: it cannot tell that
    state, and the transaction it opened at 32 is not carried on to segment 40."""
    _put(part, 0, _batches(0, 2))
    _put(part, 10, _batches(10, 2))
    _put(part, 20, _batch(20), index=False)
    head = _txn8(30, transactional=False)
    _put(part, 30, _offset_damage(head + _batch(31), len(head), 45) + _txn8(32, sequence=1) + ZEROS)
    _put(part, 40, _txn8(40, transactional=False, sequence=2), index=False)
    return True, 41


def _segment_searched_from_its_base_by_the_dry_run_alone(part: Path) -> tuple[bool, int]:
    """Marker; segments 0 and 20 have no ``.index`` and are recovered as they are opened. Producer 7's transaction
    opens at 0 and segment 0's last batch has its base offset damaged to 11, so its recovery takes its snapshot at
    12, inside segment 10. Segment 10's ``.index`` holds offset 10 at byte 5 (inside its first batch), then offset
    12 at its COMMIT marker. The recovery of segment 20 replays from the snapshot at 12: segment 10 from its marker,
    searched from the entry at 12; the transaction is committed, producer 7's plain batch at 20 passes and the start
    serves the partition. The dry run's replay from the log start searches segment 10 for 10, from the bad entry,
    which throws: it cannot tell that state and keeps the scan's judgement."""
    first = _txn7(0)
    _put(part, 0, _offset_damage(first + _batch(1), len(first), 11), index=False)
    _put(part, 10, _batches(10, 2) + _marker7(12) + _batch(13))
    (part / segment_name(10)).with_suffix(".index").write_bytes(_index_bytes([(0, 5), (2, 2 * len(_batch(10)))]))
    _put(part, 20, _txn7(20, transactional=False, sequence=1), index=False)
    return True, 21


def _txn9(offset: int, transactional: bool = True, sequence: int = 0) -> bytes:
    """Producer 9's one-record batch at ``offset``."""
    return build_batch(offset, [(T + offset, b"w", b"v")], producer_id=9, producer_epoch=0, base_sequence=sequence,
                       is_transactional=transactional)


def _replay_stopped_inside_its_keys(part: Path) -> tuple[bool, int]:
    """Marker; segments 20, 40 and 60 have no ``.index`` and are recovered as they are opened. Producer 9's
    transaction opens at 0; segment 30 commits it at 30, then holds a batch whose base offset is damaged to 45 and a
    zero-filled tail. The replay to 40 reads segment 30 up to that batch (the commit); the recovery of segment 60
    loads the snapshot the recovery of segment 40 took, and producer 9's plain batch at 60 passes: the start serves
    the partition. The dry run's replays to 60 and to the log end read segment 30 whole and meet the tail: they
    cannot tell the state, and neither keeps a state taken before segment 30 as one after it (taken up by the
    other, it would miss the commit)."""
    commit = build_batch(30, [], producer_id=9, producer_epoch=0, is_transactional=True, control=("COMMIT", 0),
                         control_timestamp=T + 30)
    _put(part, 0, _txn9(0) + _batch(1))
    _put(part, 10, _batches(10, 2))
    _put(part, 20, _batch(20), index=False)
    _put(part, 30, _offset_damage(commit + _batch(31), len(commit), 45) + ZEROS)
    _put(part, 40, _batch(40), index=False)
    _put(part, 50, _batch(50))
    _put(part, 60, _txn9(60, transactional=False, sequence=1), index=False)
    return True, 61


CACHED_REPLAY_CASES = {  # name -> (builder, whether Kafka's start fails): the replays _replayed takes up or not
    "empty stretch at the opened segment's base": (_empty_stretch_at_the_opened_segments_base, True),
    "replay of another plan not taken up": (_replay_of_another_plan_not_taken_up, False),
    "segment replayed as served, then recovered": (_segment_replayed_as_served_then_recovered, False),
    "floor segment read to a search, then whole": (_floor_segment_read_to_a_search_then_whole, False),
    "floor segment read whole past the stretch read": (_floor_segment_read_whole_past_the_stretch_read, False),
    "segment searched from its base by the dry run alone": (_segment_searched_from_its_base_by_the_dry_run_alone,
                                                            False),
    "replay stopped inside its keys": (_replay_stopped_inside_its_keys, False),
}


# Kafka 4.4's loads of the directed partitions, by golden key (``DIRECTED``): each group's cases through
# ``_producer_state_cases``
DIRECTED_LOADS = {
    # the producer state each recovered segment is judged from (``_producer_state_at``,
    # ``_recovered_from_the_loads_state``)
    "producer state": PRODUCER_STATE_CASES,
    # replays taken up where an earlier one stopped (``_replayed``) or skipped as the scan's (``_replays_as_scanned``),
    # and the index the first unstable offset is read through
    "producer state, replays": REPLAY_CASES,
    # the batches ``rebuildProducerState`` reads (each segment from the search for its start offset, the floor segment
    # of the replay's end to the search for that end; every batch between, whatever its base offset) and the snapshot
    # the recoveries start from (above the checkpointed log start offset)
    "producer state, reads": READ_CASES,
    # the read between the searches for the replay's start and end offsets (``_replay_segment``)
    "producer state, searches": SEARCH_CASES,
    # a batch the replay throws on (``loadProducersFromRecords``) fails the start, in the recovery pass and in the
    # load's last rebuild alike
    "producer state, throwing replays": THROWING_REPLAY_CASES,
    # a segment served as it is searched through its ``.index`` on disk, even when every batch is whole
    # (``_search_replayed``)
    "producer state, whole segments' indexes": BAD_INDEX_CASES,
    # the stretch between the replay's searches, read as it is (``_read_window``, ``_read_as_is``): what throws
    # there fails the start, what lies outside it is never read
    "producer state, stretches": STRETCH_CASES,
    # the segments served as they are that the replay's and the first unstable offset's searches meet, through
    # their ``.index`` on disk (``_replays_as_scanned``, ``maybe_increment_first_unstable_offset``)
    "producer state, served indexes": SERVED_INDEX_CASES,
    # replays taken up from the last one kept (``_replayed``): the same plan and the same segments, read alike
    "producer state, cached replays": CACHED_REPLAY_CASES,
}


@pytest.mark.parametrize("group", DIRECTED_LOADS)
def test_the_directed_loads_say_what_kafkas_start_does(group: str, kafka44, tmp_path: Path):
    """Each group of ``DIRECTED_LOADS`` against Kafka 4.4's own loads: the dry run's answer is Kafka's, and Kafka's
    answers equal the recorded ones (``SEGDEX_RECORD_GOLDEN=1`` records them)."""
    recording = RecordingOracle(kafka44)
    _producer_state_cases(recording, tmp_path, DIRECTED_LOADS[group])
    keep_recording(group, recording, DIRECTED)


@pytest.mark.parametrize("group", DIRECTED_LOADS)
def test_the_directed_loads_equal_kafkas_recorded_loads(group: str, tmp_path: Path):
    """Each group of ``DIRECTED_LOADS`` against Kafka's recorded loads, in the test process (what the mutation run
    checks the load's producer state with); every recorded answer is asked for."""
    kafka = recorded(group, DIRECTED)
    _producer_state_cases(kafka, tmp_path, DIRECTED_LOADS[group])
    assert not kafka.recorded


# --- producer_state_after_start: the transactions the load leaves, for the cleaner's view -------------------------


@pytest.mark.parametrize(("name", "ongoing", "unreplicated"), [
    ("marker above the high watermark", {}, {1: 3}),
    ("snapshot at the log end", {}, {}),
    ("open transaction, no snapshot", {}, {}),
])
def test_the_transactions_a_start_leaves_are_its_last_replays(tmp_path: Path, name: str, ongoing: dict,
                                                               unreplicated: dict):
    """``producer_state_after_start`` over ``test_log_cleaner_recorded``'s clean starts (Kafka's files, recorded):
    the start that replays from snapshot 2 completes producer 7's transaction (1..3) there and keeps it; the one
    that finds the snapshot at the log end replays nothing; the one without any snapshot skips the rebuild (no
    transaction, though the log holds one open). Kafka's views of these starts: ``HW_CASES``."""
    from segdex.indexcore.log.log_loader import producer_state_after_start
    from tests.indexcore.log.test_log_cleaner_recorded import HW_RECORDED, _clean_start

    ours, leo, _, _, _ = _clean_start(recorded(name, HW_RECORDED), name, tmp_path)
    state = producer_state_after_start(on_disk(ours), True, leo, None)
    assert (dict(state.ongoing_txns), dict(state.unreplicated_txns or {})) == (ongoing, unreplicated)
    assert producer_state_after_start([], True, leo, None) is None


@pytest.mark.parametrize("name", ["no recovery point, a snapshot at 1 the log does not hold",
                                  "recovery point 1, a snapshot at 1 the log does not hold, offsets going back",
                                  "clean start, a snapshot's open transaction the log does not hold"])
def test_the_transactions_a_start_leaves_give_kafkas_last_stable_offset(tmp_path: Path, name: str):
    """``producer_state_after_start`` over ``test_log_cleaner_recorded``'s starts at the load's edges (Kafka's files,
    recorded): without a recovery point every segment is recovered and a stale snapshot at 1 deleted, from recovery
    point 1 that snapshot is loaded and its transaction completed by the recovered segment's marker (the topic's
    ``index.interval.bytes`` of 1 MiB: the defaults' index would refuse its offsets going back and cut the
    segment), and a clean start counts the transaction a snapshot holds open. The first unstable offset, at a high
    watermark at the log end, is Kafka's last stable offset there."""
    from segdex.indexcore.log.log_loader import producer_state_after_start
    from tests.indexcore.log.test_log_cleaner_recorded import GAP_CASES, GAPS_RECORDED, _gap_start

    ours, leo, kafka = _gap_start(recorded(name, GAPS_RECORDED), name, tmp_path)
    _, _, _, configs, start = GAP_CASES[name]
    state = producer_state_after_start(on_disk(ours), start == "clean", None if start == "clean" else start or None,
                                       None, LogConfig().with_overrides(configs)).copy()
    state.remove_unreplicated_transactions(leo)
    first = state.first_unstable_offset(0)
    assert (leo if first is None else min(first, leo)) == kafka["lastStableOffset"]


def test_the_transactions_a_one_segment_start_leaves(tmp_path: Path):
    """One segment holding producer 7's transaction, open: the start leaves it open (no snapshot, no recovery
    point: the segment is recovered and the state built from it)."""
    from segdex.indexcore.log.log_loader import producer_state_after_start

    part = tmp_path / "t-0"
    part.mkdir()
    (part / segment_name(0)).write_bytes(build_batch(0, [(T, b"k", b"v")]) + build_batch(
        1, [(T, b"k", b"w")], producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True))
    state = producer_state_after_start(on_disk(part), False, None, None)
    assert (dict(state.ongoing_txns), state.first_unstable_offset(0)) == ({1: 7}, 1)


def test_the_preview_recovers_with_the_topics_config(tmp_path: Path):
    """``preview_start`` with the topic's config, over ``test_log_cleaner_recorded``'s start from recovery point 1
    of a segment whose offsets go back (Kafka's files, recorded): under the topic's ``index.interval.bytes`` of 1 MiB
    the recovery indexes nothing and Kafka's start keeps the log to its end; the defaults' index would refuse an
    offset and cut the segment."""
    from segdex.indexcore.log.log_loader import preview_start
    from tests.indexcore.log.test_log_cleaner_recorded import GAP_CASES, GAPS_RECORDED, _gap_start

    name = "recovery point 1, a snapshot at 1 the log does not hold, offsets going back"
    ours, leo, _ = _gap_start(recorded(name, GAPS_RECORDED), name, tmp_path)
    _, _, _, configs, start = GAP_CASES[name]
    topic = preview_start(on_disk(ours), False, start, None, config=LogConfig().with_overrides(configs))
    defaults = preview_start(on_disk(ours), False, start, None)
    assert (topic.log_end_offset, defaults.log_end_offset) == (leo, 1)
