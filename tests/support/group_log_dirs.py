"""A log dir written here whose groups and partitions cover the restore check's cases: a classic group with two
members, one committed offset in range, one past its partition's end (a partition restored from an older copy),
a simple group committed before its partition's log start (retention moved it), and a transaction's control
batch inside a counted range."""

from __future__ import annotations

from pathlib import Path

from segdex.indexcore.log.checkpoints import write_offset_checkpoint
from segdex.indexcore.tools.segment_writer import build_batch, write_partition
from tests.support.kafka_bytes import b32, i16, i32, i64, s16, uv

T = 1_795_000_000_000


def consumer_assignment(partitions: dict[str, list[int]]) -> bytes:
    """ConsumerProtocolAssignment v0 behind its int16 version: (topic, partitions) pairs, null user data."""
    body = i32(len(partitions)) + b"".join(s16(t) + i32(len(ps)) + b"".join(i32(p) for p in ps)
                                           for t, ps in partitions.items())
    return i16(0) + body + b32(None)


def consumer_subscription(topics: list[str]) -> bytes:
    """ConsumerProtocolSubscription v0: the topics, null user data."""
    return i16(0) + i32(len(topics)) + b"".join(s16(t) for t in topics) + b32(None)


def group_value(members: list[tuple[str, dict[str, list[int]]]], generation: int = 3,
                protocol_type: str = "consumer") -> bytes:
    """GroupMetadataValue v3 (non-flexible): protocol type, generation, protocol, leader, state timestamp,
    members (id, instance id, client id, host, rebalance and session timeouts, subscription, assignment)."""
    out = (i16(3) + s16(protocol_type) + i32(generation) + s16("range") + s16(members[0][0] if members else None)
           + i64(T) + i32(len(members)))
    for member_id, assignment in members:
        out += (s16(member_id) + s16(None) + s16("client-" + member_id) + s16("/127.0.0.1") + i32(-1) + i32(45000)
                + b32(consumer_subscription(sorted(assignment))) + b32(consumer_assignment(assignment)))
    return out


def commit(group: str, topic: str, partition: int, offset: int) -> tuple[int, bytes, bytes]:
    """An OffsetCommit record (type 1, value v3: offset, leader epoch 0, metadata, commit timestamp)."""
    return (T, i16(1) + s16(group) + s16(topic) + i32(partition), i16(3) + i64(offset) + i32(0) + s16("") + i64(T))


def restored_log_dir(root: Path) -> Path:
    """``orders-0`` holds offsets 0-9 (group ``app`` committed 5), ``orders-1`` 0-3 and a COMMIT marker at 4
    (``app`` committed 40: past the end), ``orders-2`` 10-19 after retention (``simple`` committed 2: before the
    start)."""
    log_dir = root / "logs"
    write_partition(log_dir, "__consumer_offsets", 0, [
        build_batch(0, [(T, i16(2) + s16("app"), group_value([("m-a", {"orders": [0, 1]}), ("m-b", {})]))]),
        build_batch(1, [commit("app", "orders", 0, 5), commit("app", "orders", 1, 40),
                        commit("simple", "orders", 2, 2)]),
    ])
    write_partition(log_dir, "orders", 0, [build_batch(0, [(T + i, b"k", b"v") for i in range(10)])])
    txn = {"producer_id": 7, "producer_epoch": 0}
    write_partition(log_dir, "orders", 1, [
        build_batch(0, [(T + i, b"k", b"v") for i in range(4)], base_sequence=0, is_transactional=True, **txn),
        build_batch(4, [], control=("COMMIT", 0), control_timestamp=T, **txn)])
    write_partition(log_dir, "orders", 2, [build_batch(10, [(T + i, b"k", b"v") for i in range(10)])])
    write_offset_checkpoint(log_dir / "log-start-offset-checkpoint", {("orders", 2): 10})
    (log_dir / "meta.properties").write_text("version=1\nnode.id=3\ncluster.id=c\n")
    return log_dir


def cg_key(record_type: int, group: str, member: str | None = None) -> bytes:
    """A consumer (or share, streams) group record's key: its type, the group id, and a member id when it has
    one."""
    return i16(record_type) + s16(group) + (s16(member) if member is not None else b"")


def cg_epoch(record_type: int, epoch: int) -> bytes:
    """ConsumerGroupMetadataValue / TargetAssignmentMetadataValue v0: an int32 epoch, no tagged fields."""
    return i16(0) + i32(epoch) + uv(0)
