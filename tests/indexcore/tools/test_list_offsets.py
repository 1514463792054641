"""``list_offset`` (``UnifiedLog.fetchOffsetByTimestamp``) on small partition dirs written here, in the test process.

Where the expected values come from: each segment is written by ``build_batch`` from (offset, timestamp, leader
epoch) triples the test states, so every answer below is read off that list with Kafka's rules
(``UnifiedLog.fetchOffsetByTimestamp``, ``LogSegment.largestTimestamp``, ``FileRecords.searchForTimestamp``):

- EARLIEST (-2): the log start offset, the larger of the checkpointed one and the first segment's base; the earliest
  leader epoch when it starts at or below it.
- LATEST (-1): the log end offset (after the last valid batch) and the latest leader epoch.
- MAX_TIMESTAMP (-3): in the first segment holding the largest timestamp, the first record carrying it; the batch's
  leader epoch when it is >= 0 (``Optional.of(epoch).filter(_ >= 0)``).
- a timestamp T: the first segment whose largest timestamp (its max timestamp, else the file's last-modified time
  in ms) reaches T; in it, the first record with timestamp >= T at or above the log start offset; Kafka does not
  look past that segment. An empty log holds one empty segment at offset 0 (``LogLoader``).
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.errors import SegdexError
from segdex.indexcore.tools.list_offsets import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    OffsetAnswer,
    list_offset,
    log_start_offsets,
)
from segdex.indexcore.tools.segment_writer import build_batch


def partition(root: Path, name: str, segments: list[list[bytes]]) -> Path:
    """A partition dir holding one .log per list of batches, each named after its first batch's base offset."""
    part = root / name
    part.mkdir()
    for batches in segments:
        (base,) = struct.unpack_from(">q", batches[0])
        (part / f"{base:020d}.log").write_bytes(b"".join(batches))
    return part


def one(offset: int, ts: int, epoch: int = 0) -> bytes:
    return build_batch(offset, [(ts, b"k", b"v" * 20)], partition_leader_epoch=epoch)


def answer(a: OffsetAnswer) -> tuple:
    return a.topic, a.partition, a.offset, a.timestamp, a.leader_epoch, a.error


@pytest.fixture
def clicks(tmp_path) -> Path:
    """clicks-7: segment 0 = offsets 0 (ts 1000) and 1..2 (ts 9000, 1500), epoch 3; segment 3 = offsets 3 (ts 2000)
    and 4..5 (ts 2500, 2600), epoch 5. The largest timestamp, 9000, is at offset 1, in the first segment."""
    seg0 = [one(0, 1000, 3), build_batch(1, [(9000, None, b"a"), (1500, None, b"b")], partition_leader_epoch=3)]
    seg3 = [one(3, 2000, 5), build_batch(4, [(2500, None, b"c"), (2600, None, b"d")], partition_leader_epoch=5)]
    return partition(tmp_path, "clicks-7", [seg0, seg3])


def test_special_targets(clicks):
    path = str(clicks) + os.sep  # a partition dir given with a trailing slash is still clicks-7
    assert answer(list_offset(path, EARLIEST_TIMESTAMP)) == ("clicks", 7, 0, -1, 3, None)
    assert answer(list_offset(path, LATEST_TIMESTAMP)) == ("clicks", 7, 6, -1, 5, None)
    assert answer(list_offset(path, MAX_TIMESTAMP)) == ("clicks", 7, 1, 9000, 3, None)


def test_timestamp_targets_stop_at_the_first_segment_reaching_them(clicks):
    """2000 is reached first by segment 0 (largest 9000): Kafka answers from there (offset 1) although offset 3
    carries exactly 2000."""
    assert answer(list_offset(clicks, 1000)) == ("clicks", 7, 0, 1000, 3, None)
    assert answer(list_offset(clicks, 2000)) == ("clicks", 7, 1, 9000, 3, None)
    assert answer(list_offset(clicks, 9001)) == ("clicks", 7, -1, -1, -1, None)


def test_the_log_start_offset_bounds_the_answers(clicks):
    assert answer(list_offset(clicks, EARLIEST_TIMESTAMP, log_start_offset=1)) == ("clicks", 7, 1, -1, 3, None)
    assert answer(list_offset(clicks, 1000, log_start_offset=1)) == ("clicks", 7, 1, 9000, 3, None)
    assert answer(list_offset(clicks, 1000, None, None)) == ("clicks", 7, 0, 1000, 3, None)


def test_a_log_not_starting_at_zero(tmp_path):
    """The first segment's base offset is the log start offset unless the checkpoint holds a larger one."""
    part = partition(tmp_path, "orders-0", [[one(1000, 50), one(1001, 60)]])
    assert answer(list_offset(part, EARLIEST_TIMESTAMP)) == ("orders", 0, 1000, -1, 0, None)
    assert answer(list_offset(part, EARLIEST_TIMESTAMP, log_start_offset=5)) == ("orders", 0, 1000, -1, 0, None)
    assert answer(list_offset(part, LATEST_TIMESTAMP)) == ("orders", 0, 1002, -1, 0, None)


def test_an_empty_partition_dir(tmp_path):
    """No segment yet: Kafka's loader makes one empty segment at 0, so earliest and latest are both 0."""
    part = tmp_path / "fresh-1"
    part.mkdir()
    assert answer(list_offset(part, EARLIEST_TIMESTAMP)) == ("fresh", 1, 0, -1, -1, None)
    assert answer(list_offset(part, LATEST_TIMESTAMP)) == ("fresh", 1, 0, -1, -1, None)


def test_magic_0_only_logs_refuse_timestamp_targets(tmp_path):
    part = partition(tmp_path, "legacy-2", [[build_batch(0, [(0, b"k", b"a"), (0, b"k", b"b")], magic=0)]])
    assert answer(list_offset(part, 0)) == ("legacy", 2, -1, -1, -1, (
        "Cannot search offsets based on timestamp: the log holds magic 0 batches only, which have no timestamps "
        "(Kafka: UnsupportedForMessageFormatException)"))


def test_a_segment_without_timestamps_is_dated_by_its_modification_time(tmp_path):
    """Segment 0 holds magic 0 messages (no timestamps), last modified at 5 s = 5000 ms; segment 3 holds
    timestamps 6000..6002. Target 5000 picks segment 0 and finds nothing there; 5001 picks segment 3."""
    part = partition(tmp_path, "mixed-0", [[build_batch(0, [(0, b"k", b"a"), (0, b"k", b"b"), (0, b"k", b"c")],
                                                        magic=0)],
                                           [one(3, 6000, 2), one(4, 6001, 2), one(5, 6002, 2)]])
    os.utime(part / "00000000000000000000.log", (5, 5))
    assert answer(list_offset(part, 5000)) == ("mixed", 0, -1, -1, -1, None)
    assert answer(list_offset(part, 5001)) == ("mixed", 0, 3, 6000, 2, None)


def test_timestamp_zero_is_a_timestamp_not_a_missing_one(tmp_path):
    """Segment 0's largest timestamp is 0 (>= 0, so not replaced by the modification time): target 1 goes on to
    segment 2."""
    part = partition(tmp_path, "zero-0", [[one(0, 0), one(1, 0)], [one(2, 6000), one(3, 6001)]])
    os.utime(part / "00000000000000000000.log", (5, 5))
    assert answer(list_offset(part, 1)) == ("zero", 0, 2, 6000, 0, None)


def test_nothing_past_a_corrupt_batch_is_searched(tmp_path):
    """Batch 0 has no timestamp (-1), batch 1's CRC is broken, batch 2 is intact: Kafka's recovery truncates at
    batch 1, so the log ends at offset 1 (epoch 0) and no record reaches timestamp 500."""
    batches = [one(0, -1), one(1, 1000), one(2, 2000)]
    bad = bytearray(batches[1])
    bad[-1] ^= 0xFF
    part = partition(tmp_path, "tail-0", [[batches[0], bytes(bad), batches[2]]])
    assert answer(list_offset(part, 500)) == ("tail", 0, -1, -1, -1, None)
    assert answer(list_offset(part, LATEST_TIMESTAMP)) == ("tail", 0, 1, -1, 0, None)


def test_max_timestamp_drops_a_negative_leader_epoch(tmp_path):
    """``Optional.of(batch.partitionLeaderEpoch).filter(_ >= 0)``: epoch -2 answers as no epoch (-1)."""
    part = partition(tmp_path, "odd-0", [[one(0, 100, -2), one(1, 50, -2)]])
    assert answer(list_offset(part, MAX_TIMESTAMP)) == ("odd", 0, 0, 100, -1, None)


def test_timestamp_targets_answer_any_epoch_but_minus_one(tmp_path):
    """``FileRecords.maybeLeaderEpoch`` (Kafka 4.4.0's bytecode: ``epoch == -1 ? empty : of(epoch)``): a timestamp
    lookup answers a batch's epoch -2 (a value outside the v2 CRC, so a bit flip can leave it) as -2."""
    part = partition(tmp_path, "odd-0", [[one(0, 100, -2), one(1, 150, -1)]])
    assert answer(list_offset(part, 50)) == ("odd", 0, 0, 100, -2, None)
    assert answer(list_offset(part, 120)) == ("odd", 0, 1, 150, -1, None)


def test_segments_kafka_cannot_load_fail_the_request(tmp_path):
    """A .log that is a directory, and a segment whose indexes overflow the configured segment.index.bytes (Kafka's
    recovery throws "Attempt to append to a full time index"), fail the whole lookup, naming the segment."""
    part = tmp_path / "broken-0"
    (part / "00000000000000000000.log").mkdir(parents=True)
    with pytest.raises(SegdexError) as e:
        list_offset(part, LATEST_TIMESTAMP)
    assert str(e.value) == "00000000000000000000.log: cannot read: a directory, not a regular file"

    batches = [one(i, 1000 + i) for i in range(6)]
    part = partition(tmp_path, "tiny-0", [batches])
    config = LogConfig(index_interval_bytes=1, segment_index_bytes=32)  # 2 time slots, the last kept for the roll
    with pytest.raises(SegdexError) as e:
        list_offset(part, LATEST_TIMESTAMP, config)
    assert str(e.value) == (f"00000000000000000000.log: IndexFullException at position {2 * len(batches[0])}: "
                            f"Attempt to append to a full time index (size = 1).")
    assert answer(list_offset(part, LATEST_TIMESTAMP)) == ("tiny", 0, 6, -1, 0, None)


def test_a_control_record_without_a_key_fails_the_request(tmp_path):
    """Kafka's recovery throws NullPointerException on an end-transaction marker without a key: the log cannot be
    loaded, and the lookup fails with the cause."""
    from tests.support.control_batches import control_batch

    part = partition(tmp_path, "txn-0", [[control_batch(None, struct.pack(">hi", 0, 1), offset=5)]])
    with pytest.raises(SegdexError) as e:
        list_offset(part, LATEST_TIMESTAMP)
    assert str(e.value) == ("00000000000000000005.log: RecoveryFailedException at position 0: control record at "
                            "offset 5 has no key (Kafka: NullPointerException)")


def test_log_start_offsets_of_a_log_dir(tmp_path):
    assert log_start_offsets(tmp_path) == {}
    (tmp_path / "log-start-offset-checkpoint").write_text("0\n2\nclicks 7 4\norders 0 1000\n")
    assert log_start_offsets(tmp_path) == {("clicks", 7): 4, ("orders", 0): 1000}


def test_count_records_equals_a_count_of_every_record(tmp_path: Path):
    """``RecoveredPartition.count_records(start, end)`` (a consumer's read_uncommitted count of data records in a
    range: whole batches counted from their headers, cut ones record by record) equals a count of every record of
    every batch, for every range over three segments: batches of one and of three records, a compressed one, an
    aborted-or-committed transaction's marker (a control batch, never counted) and a batch whose offsets have a gap
    (compacted: its count is not its offset span), a zero-filled tail after the last batch (not read)."""
    from segdex.indexcore.record.file_records import batches
    from segdex.indexcore.record.records import Record, records
    from segdex.indexcore.tools.list_offsets import recovered_partition

    t = 1_700_000_000_000
    three = [(t, b"a", b"1"), (t + 1, b"b", b"2"), (t + 2, b"c", b"3")]
    segs = [[build_batch(0, three), build_batch(3, [(t, b"d", b"4")])],
            [build_batch(4, three, compression=1), build_batch(7, [Record(7, t, b"e", b"5"), Record(9, t, b"f", b"6")]),
             build_batch(10, [], producer_id=5, producer_epoch=0, control=("COMMIT", 0), control_timestamp=t)],
            [build_batch(11, three), bytes(20)]]  # a zero-filled tail: recovery's valid bytes end before it
    part = partition(tmp_path, "t-0", segs)
    recovered = recovered_partition(str(part), LogConfig(), None)
    every = []
    for log in sorted(part.glob("*.log")):
        data = log.read_bytes()
        every += [r.offset for b in batches(data, 0, len(data) - 20 if log.name.startswith("0000000000000000001")
                                                 else len(data)) if not b.is_control for r in records(data, b)]
    assert every == [0, 1, 2, 3, 4, 5, 6, 7, 9, 11, 12, 13]
    for start in range(0, 15):
        for end in range(start, 16):
            assert recovered.count_records(start, end) == sum(start <= o < end for o in every), (start, end)
