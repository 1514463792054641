"""``CoordinatorLoaderImpl.load`` offline: every record of every valid batch in offset order with its batch's
producer id, each end-transaction marker with its producer and outcome, and a stop at the first invalid batch."""

from __future__ import annotations

from pathlib import Path

from segdex.indexcore.coordinator.coordinator_loader import replay_coordinator_partition
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
