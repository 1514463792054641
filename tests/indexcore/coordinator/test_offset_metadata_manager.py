"""The offsets a group coordinator serves after loading ``__consumer_offsets`` (``OffsetMetadataManager.replay``
and ``replayEndTransactionMarker``), replayed offline: on a partition a real Kafka 4.4.0 broker wrote (a classic and
a consumer-protocol group committing twice each), and on partitions written here with the commit record layouts of
Kafka's message schemas: later commits, tombstones, transactional commits committed and aborted, a regular commit
racing a transaction, and a corrupt tail."""

from __future__ import annotations

from pathlib import Path

from segdex.indexcore.coordinator.group_coordinator_shard import load_group_coordinator
from segdex.indexcore.coordinator.offset_metadata_manager import OffsetAndMetadata
from segdex.indexcore.tools.segment_writer import build_batch, write_partition
from tests.support.fixtures import GOLDEN
from tests.support.kafka_bytes import i16, i32, i64, s16

T = 1_795_000_000_000


def commit_key(group: str, topic: str, partition: int, record_type: int = 1) -> bytes:
    """OffsetCommitKey (version 0) behind its record type: group, topic (int16-length strings), partition."""
    return i16(record_type) + s16(group) + s16(topic) + i32(partition)


def commit_value(offset: int, metadata: str = "", ts: int = T, leader_epoch: int = 5, version: int = 3) -> bytes:
    """OffsetCommitValue v3 (offset, leaderEpoch, metadata, commitTimestamp) or v1 (offset, metadata, commit and
    expire timestamps), non-flexible."""
    if version == 1:
        return i16(1) + i64(offset) + s16(metadata) + i64(ts) + i64(ts + 1000)
    return i16(3) + i64(offset) + i32(leader_epoch) + s16(metadata) + i64(ts)


def _write(tmp_path: Path, batches: list[bytes]) -> Path:
    write_partition(tmp_path, "__consumer_offsets", 7, batches)
    return tmp_path / "__consumer_offsets-7"


def test_a_real_brokers_partition_serves_each_groups_latest_commit():
    load = load_group_coordinator(GOLDEN / "broker_logs" / "__consumer_offsets-0")
    assert load.stopped is None and load.undecodable == [] and load.next_offset == 17
    assert load.shard.offsets.offsets == {
        ("g-classic", "data", 0): OffsetAndMetadata(3, 7, 0, "meta é\0", 1795623200567, -1),
        ("g-consumer", "data", 0): OffsetAndMetadata(11, 7, 0, "meta é\0", 1795623200799, -1),
    }


def test_later_commits_win_and_tombstones_remove(tmp_path: Path):
    part = _write(tmp_path, [
        build_batch(0, [(T, commit_key("g", "t", 0), commit_value(10))]),
        build_batch(1, [(T, commit_key("g", "t", 1), commit_value(3, version=1)),
                        (T + 1, commit_key("g", "t", 0), commit_value(12, "m"))]),
        build_batch(3, [(T, commit_key("h", "t", 0), commit_value(9))]),
        build_batch(4, [(T, commit_key("h", "t", 0), None)]),  # expired or the group deleted: a tombstone
        build_batch(5, [(T, i16(2) + s16("g"), None)]),  # a group record: not an offset
    ])
    load = load_group_coordinator(part)
    assert load.next_offset == 6
    assert load.shard.offsets.offsets == {
        ("g", "t", 0): OffsetAndMetadata(2, 12, 5, "m", T, -1),
        ("g", "t", 1): OffsetAndMetadata(1, 3, -1, "", T, T + 1000),  # v1: no leader epoch, an expire time
    }


def test_transactional_commits_count_once_their_transaction_committed(tmp_path: Path):
    pid, other = 4001, 4002
    txn = {"producer_id": pid, "producer_epoch": 0, "base_sequence": 0, "is_transactional": True}
    part = _write(tmp_path, [
        build_batch(0, [(T, commit_key("g", "t", 0), commit_value(5))]),
        build_batch(1, [(T, commit_key("g", "t", 0), commit_value(50))], **txn),
        build_batch(2, [(T, commit_key("g", "t", 1), commit_value(60))],
                    **{**txn, "producer_id": other}),
        build_batch(3, [], producer_id=other, producer_epoch=0, control=("ABORT", 0), control_timestamp=T),
        build_batch(4, [], producer_id=pid, producer_epoch=0, control=("COMMIT", 0), control_timestamp=T),
        build_batch(5, [(T, commit_key("g", "t", 2), commit_value(70))], **{**txn, "producer_id": 4003}),
    ])
    load = load_group_coordinator(part)
    assert load.shard.offsets.offsets == {("g", "t", 0): OffsetAndMetadata(1, 50, 5, "", T, -1)}  # aborted 60 is gone
    assert load.shard.offsets.pending_transactional_offsets == {4003: {("g", "t", 2): OffsetAndMetadata(5, 70, 5, "", T,
                                                                                                   -1)}}
    assert load.shard.offsets.open_transactions == {("g", "t", 2): {4003}}


def test_a_regular_commit_after_a_pending_transactional_one_is_kept(tmp_path: Path):
    """The later record wins: a transactional commit at record 0 whose marker comes after a regular commit at
    record 1 does not replace it (``offsetAndMetadata.recordOffset > existing.recordOffset``)."""
    pid = 9
    part = _write(tmp_path, [
        build_batch(0, [(T, commit_key("g", "t", 0), commit_value(100))], producer_id=pid, producer_epoch=0,
                    base_sequence=0, is_transactional=True),
        build_batch(1, [(T, commit_key("g", "t", 0), commit_value(7))]),
        build_batch(2, [], producer_id=pid, producer_epoch=0, control=("COMMIT", 0), control_timestamp=T),
    ])
    assert load_group_coordinator(part).shard.offsets.offsets == {("g", "t", 0): OffsetAndMetadata(1, 7, 5, "", T, -1)}


def test_a_tombstone_drops_the_pending_transactional_offsets_of_its_partition(tmp_path: Path):
    pid = 11
    part = _write(tmp_path, [
        build_batch(0, [(T, commit_key("g", "t", 0), commit_value(100))], producer_id=pid, producer_epoch=0,
                    base_sequence=0, is_transactional=True),
        build_batch(1, [(T, commit_key("g", "t", 0), None)]),
        build_batch(2, [], producer_id=pid, producer_epoch=0, control=("COMMIT", 0), control_timestamp=T),
    ])
    load = load_group_coordinator(part)
    assert load.shard.offsets.offsets == {} and load.shard.offsets.open_transactions == {}


def test_undecodable_records_are_named_and_a_corrupt_tail_ends_the_replay(tmp_path: Path):
    part = _write(tmp_path, [
        build_batch(0, [(T, commit_key("g", "t", 0), commit_value(10)), (T, b"\0", commit_value(11)),
                        (T, commit_key("g", "t", 1), i16(3) + b"\0\0")]),
        build_batch(3, [(T, commit_key("g", "t", 0), commit_value(20))]),
    ])
    log = next(part.glob("*.log"))
    data = bytearray(log.read_bytes())
    data[-1] ^= 0xFF  # the second batch's last byte: its CRC no longer matches
    log.write_bytes(bytes(data))
    load = load_group_coordinator(part)
    assert load.shard.offsets.offsets == {("g", "t", 0): OffsetAndMetadata(0, 10, 5, "", T, -1)}
    assert load.next_offset == 3
    assert load.undecodable == ["offset 1: a record without a coordinator key",
                                "offset 2: offset: needs 8 bytes at position 0, 2 left"]
    assert load.stopped is not None
    assert load.stopped.startswith("00000000000000000000.log: Record is corrupt (stored crc = ")
