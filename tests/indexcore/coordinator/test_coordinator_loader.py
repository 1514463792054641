"""``CoordinatorLoaderImpl.load`` offline: every record of every valid batch in offset order with its batch's
producer id, each end-transaction marker with its producer and outcome, and a stop at the first invalid batch."""

from __future__ import annotations

from pathlib import Path

from segdex.indexcore.coordinator.coordinator_loader import (
    DIFFERS,
    SAME,
    PartitionReplay,
    after_broker_start,
    replay_coordinator_partition,
)
from segdex.indexcore.log.log_segments import segment_logs
from segdex.indexcore.tools.segment_writer import build_batch, write_partition

T = 1_795_000_000_000


def test_records_and_markers_reach_their_callbacks_in_offset_order(tmp_path: Path):
    write_partition(tmp_path, "__consumer_offsets", 0, [
        build_batch(0, [(T, b"k0", b"v0"), (T, b"k1", None)]),
        build_batch(2, [(T, b"k2", b"v2")], producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True),
        build_batch(3, [], producer_id=7, producer_epoch=0, control=("ABORT", 0), control_timestamp=T),
        build_batch(4, [(T, b"k4", b"v4")], producer_id=8, producer_epoch=0, base_sequence=0, is_transactional=True),
        build_batch(5, [], producer_id=8, producer_epoch=0, control=("COMMIT", 0), control_timestamp=T),
    ])
    seen: list[tuple] = []
    summary = replay_coordinator_partition(
        tmp_path / "__consumer_offsets-0",
        lambda pid, r: seen.append(("record", r.offset, pid, r.key, r.value)),
        lambda pid, commit: seen.append(("marker", pid, commit)))
    assert seen == [("record", 0, -1, b"k0", b"v0"), ("record", 1, -1, b"k1", None), ("record", 2, 7, b"k2", b"v2"),
                    ("marker", 7, False), ("record", 4, 8, b"k4", b"v4"), ("marker", 8, True)]
    assert (summary.next_offset, summary.stopped) == (6, None)


def test_the_first_invalid_batch_ends_the_load_and_later_segments_are_not_read(tmp_path: Path):
    write_partition(tmp_path, "__consumer_offsets", 0, [
        build_batch(0, [(T, b"a", b"1")]), build_batch(1, [(T, b"b", b"2")]), build_batch(2, [(T, b"c", b"3")]),
    ], segment_bytes=2 * len(build_batch(0, [(T, b"a", b"1")])))
    part = tmp_path / "__consumer_offsets-0"
    first = sorted(part.glob("*.log"))[0]
    data = bytearray(first.read_bytes())
    data[-2] ^= 0x01  # the second batch's payload: its CRC no longer matches
    first.write_bytes(bytes(data))
    assert len(list(part.glob("*.log"))) == 2
    offsets: list[int] = []
    summary = replay_coordinator_partition(part, lambda _pid, r: offsets.append(r.offset))
    assert offsets == [0] and summary.next_offset == 1
    assert summary.stopped.startswith("00000000000000000000.log: Record is corrupt (stored crc = ")


def _two_segments(root: Path) -> Path:
    """Batches at offsets 0, 1 (segment 0) and 2 (segment 2), each with its offset index, as a broker leaves
    them."""
    one = len(build_batch(0, [(T, b"a", b"1")]))
    write_partition(root, "__consumer_offsets", 0, [
        build_batch(0, [(T, b"a", b"1")]), build_batch(1, [(T, b"b", b"2")]), build_batch(2, [(T, b"c", b"3")]),
    ], segment_bytes=2 * one)
    part = root / "__consumer_offsets-0"
    for log in part.glob("*.log"):
        log.with_suffix(".index").write_bytes(b"")  # an empty offset index: present, nothing to check
    return part


def _flip(path: Path, position: int) -> None:
    data = bytearray(path.read_bytes())
    data[position] ^= 0x01
    path.write_bytes(bytes(data))


def test_a_load_stopped_by_a_corrupt_batch_is_partial_and_says_where_and_what_it_left(tmp_path: Path):
    part = _two_segments(tmp_path)
    first, second = sorted(part.glob("*.log"))
    _flip(first, first.stat().st_size - 2)  # the second batch's payload
    summary = replay_coordinator_partition(part, lambda _pid, _r: None)
    half = first.stat().st_size // 2
    assert summary.partial and (summary.next_offset, summary.stopped_segment) == (1, 0)
    assert summary.unread_bytes == half + second.stat().st_size  # the corrupt batch and the whole later segment
    assert f"(position {half})" in summary.stopped
    # a broker's recovery pass (no clean-shutdown marker, no recovery point) truncates there and deletes
    # segment 2: Kafka's coordinator loads what this load did
    after = after_broker_start(part, summary, clean_shutdown=False, recovery_point=None, log_start_offset=None)
    assert (after.answer, after.log_end_offset) == (SAME, 1)
    assert "truncates it at offset 1" in after.note
    # with the marker, or a recovery point in segment 2, the broker serves the damaged batch as it is
    for clean, point in ((True, None), (False, 2)):
        after = after_broker_start(part, summary, clean_shutdown=clean, recovery_point=point, log_start_offset=None)
        assert after.answer == DIFFERS and after.log_end_offset == 3 and "serves it as it is" in after.note


def test_a_segment_cut_inside_a_batch_ends_the_load_there_as_recovery_would(tmp_path: Path):
    part = _two_segments(tmp_path)
    first = sorted(part.glob("*.log"))[0]
    first.write_bytes(first.read_bytes()[:-5])  # the second batch cut short: segment 2 follows it
    offsets: list[int] = []
    summary = replay_coordinator_partition(part, lambda _pid, r: offsets.append(r.offset))
    assert offsets == [0] and summary.next_offset == 1 and summary.partial
    assert "are not a whole batch (the segment is cut inside a batch)" in summary.stopped
    assert after_broker_start(part, summary, False, None, None).answer == SAME
    # without its offset index, the broker recovers that segment when it opens it, cuts it only and keeps
    # segment 2 (an offset gap): not this load's records
    first.with_suffix(".index").unlink()
    after = after_broker_start(part, summary, False, None, None)
    assert after.answer == DIFFERS and after.log_end_offset == 3 and "offset gap" in after.note


def test_a_whole_load_is_not_partial(tmp_path: Path):
    summary = replay_coordinator_partition(_two_segments(tmp_path), lambda _pid, _r: None)
    assert not summary.partial and summary.unread_bytes == 0 and summary.next_offset == 3


def test_a_replay_fed_segment_by_segment_reads_only_what_it_was_not_handed(tmp_path: Path):
    """``PartitionReplay``: the bytes handed over are what it replays (not the file: here they differ); a segment
    skipped by the feeder is read from its file before the next one handed over, the rest at ``finish``; what
    follows a stop is ignored."""
    batch = [build_batch(i, [(T, f"k{i}".encode(), b"v")]) for i in range(4)]
    write_partition(tmp_path, "__consumer_offsets", 0, batch, segment_bytes=1)
    logs = segment_logs(tmp_path / "__consumer_offsets-0")[0]
    assert [b for b, _ in logs] == [0, 1, 2, 3]
    keys: list[bytes] = []
    replay = PartitionReplay(logs, lambda _pid, r: keys.append(r.key))
    replay.feed(logs[1][1], build_batch(1, [(T, b"handed", b"v")]))
    replay.feed("elsewhere.log", batch[0])  # not one of its segments: ignored
    replay.feed(logs[0][1], batch[0])  # behind the last one replayed: ignored
    summary = replay.finish()
    assert keys == [b"k0", b"handed", b"k2", b"k3"] and summary.next_offset == 4 and not summary.partial
    assert (replay.fed, replay.read_here) == (1, 3)
    stopped = PartitionReplay(logs, lambda _pid, r: keys.append(r.key))
    stopped.feed(logs[0][1], batch[0][:-1])  # cut inside its batch: the load stops there
    stopped.feed(logs[1][1], batch[1])
    assert stopped.finish().partial and stopped.summary.next_offset == 0 and (stopped.fed, stopped.read_here) == (1, 0)


def _replayed(part: Path, log_start_offset: int | None) -> tuple[list[int], int | None, str | None]:
    """The offsets of the records a load from ``log_start_offset`` replays, its next offset and where it stopped."""
    seen: list[int] = []
    replay = PartitionReplay(segment_logs(part)[0], lambda pid, r: seen.append(r.offset),
                             log_start_offset=log_start_offset)
    summary = replay.finish()
    return seen, summary.next_offset, summary.stopped


def test_the_load_begins_at_the_log_start_as_kafkas_coordinator_loader_does(tmp_path: Path):
    """``CoordinatorLoaderImpl.load`` reads from ``log.logStartOffset``: the batches ending below it are not
    replayed, the batch holding it is, whole (its records below the start too). No log start: everything. A
    damaged batch below the start still ends the load (the view partial), as a broker's recovery meets it."""
    batches = [build_batch(0, [(T, b"k0", b"v0")]), build_batch(1, [(T, b"k1", b"v1"), (T, b"k2", b"v2")]),
               build_batch(3, [(T, b"k3", b"v3")]),
               build_batch(4, [(T, b"k4", b"v4")], producer_id=9, producer_epoch=0, base_sequence=0,
                           is_transactional=True),
               build_batch(5, [], producer_id=9, producer_epoch=0, control=("COMMIT", 0), control_timestamp=T)]
    rolled = write_partition(tmp_path / "rolled", "__consumer_offsets", 0, batches, segment_bytes=1)
    assert [int(p.name[:20]) for p in rolled] == [0, 1, 3, 4, 5]  # a segment a batch
    one = write_partition(tmp_path / "one", "__consumer_offsets", 0, batches)
    for part in (rolled[0].parent, one[0].parent):
        assert _replayed(part, None) == ([0, 1, 2, 3, 4], 6, None)
        assert _replayed(part, 0) == ([0, 1, 2, 3, 4], 6, None)
        assert _replayed(part, 1) == ([1, 2, 3, 4], 6, None)
        assert _replayed(part, 2) == ([1, 2, 3, 4], 6, None)  # the batch holding 2 begins at 1
        assert _replayed(part, 3) == ([3, 4], 6, None)
        assert _replayed(part, 9) == ([], 6, None)  # past the end: nothing replayed
    data = bytearray(one[0].read_bytes())
    data[17] ^= 0xFF  # the first batch's CRC
    one[0].write_bytes(bytes(data))
    seen, next_offset, stopped = _replayed(one[0].parent, 3)
    assert (seen, next_offset) == ([], 0) and stopped is not None
