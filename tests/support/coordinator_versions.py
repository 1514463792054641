"""Every version of the coordinator records Kafka writes, built byte by byte from its message schemas: offset
commits (``LegacyOffsetCommitValue``, ``OffsetCommitValue`` v0-v4), classic groups (``GroupMetadataValue`` v0-v4,
members with ``ConsumerProtocolSubscription`` v0-v3 and ``ConsumerProtocolAssignment`` v0-v3) and transactions
(``TransactionLogValue`` v0-v1). Non-flexible versions: int16/int32 lengths; flexible ones (offset commit v4, group
metadata v4, transaction log v1): compact lengths (uvarint n+1) and a tagged-field section after each struct.

Shared by the unit tests of the loads (tests/indexcore/coordinator) and the check against Kafka 4.4.0's own
``kafka-dump-log`` decoders (tests/kafka/test_dump_data_log.py)."""

from __future__ import annotations

from tests.support.kafka_bytes import b32, cstr, i8, i16, i32, i64, s16, uv

T = 1_795_100_000_000
TOPIC_ID = bytes(range(16, 32))


def cbytes(raw: bytes | None) -> bytes:
    """Compact bytes: uvarint length + 1 (0: null)."""
    return uv(0) if raw is None else uv(len(raw) + 1) + raw


def offset_commit_key(group: str, topic: str, partition: int, record_type: int = 1) -> bytes:
    return i16(record_type) + s16(group) + s16(topic) + i32(partition)


def offset_commit_value(version: int, offset: int, metadata: str = "m", leader_epoch: int = 3,
                        topic_id: bytes | None = None) -> bytes:
    """OffsetCommitValue at ``version``: v1 adds expireTimestamp (v1 only), v3 leaderEpoch, v4 is flexible with
    the topic id as tagged field 0."""
    if version == 4:
        tags = uv(0) if topic_id is None else uv(1) + uv(0) + uv(16) + topic_id
        return i16(4) + i64(offset) + i32(leader_epoch) + cstr(metadata) + i64(T) + tags
    out = i16(version) + i64(offset) + (i32(leader_epoch) if version >= 3 else b"") + s16(metadata) + i64(T)
    return out + (i64(T + 60_000) if version == 1 else b"")


def subscription(version: int, topics: list[str], owned: dict[str, list[int]] | None = None) -> bytes:
    """ConsumerProtocolSubscription: topics and user data; v1 owned partitions, v2 generation id, v3 rack id."""
    out = i16(version) + i32(len(topics)) + b"".join(s16(t) for t in topics) + b32(b"ud")
    if version >= 1:
        owned = owned or {}
        out += i32(len(owned)) + b"".join(s16(t) + i32(len(ps)) + b"".join(i32(p) for p in ps)
                                          for t, ps in owned.items())
    if version >= 2:
        out += i32(4)
    if version >= 3:
        out += s16("rack-a")
    return out


def assignment(version: int, partitions: dict[str, list[int]]) -> bytes:
    """ConsumerProtocolAssignment (the same fields at every version): partitions by topic, user data."""
    return (i16(version) + i32(len(partitions)) + b"".join(s16(t) + i32(len(ps)) + b"".join(i32(p) for p in ps)
                                                        for t, ps in partitions.items()) + b32(None))


def group_metadata_key(group: str) -> bytes:
    return i16(2) + s16(group)


def group_metadata_value(version: int, members: list[tuple[str, bytes, bytes]], generation: int = 2,
                         protocol: str | None = "range") -> bytes:
    """GroupMetadataValue: v1 adds each member's rebalanceTimeout, v2 currentStateTimestamp, v3 each member's
    groupInstanceId, v4 is flexible. ``members``: (member id, subscription bytes, assignment bytes)."""
    flexible = version >= 4
    string = cstr if flexible else s16
    data = cbytes if flexible else b32

    def array(n: int) -> bytes:
        return uv(n + 1) if flexible else i32(n)

    out = (i16(version) + string("consumer") + i32(generation) + string(protocol)
           + string(members[0][0] if members else None) + (i64(T) if version >= 2 else b"") + array(len(members)))
    for member_id, sub, assign in members:
        out += string(member_id) + (string(None) if version >= 3 else b"") + string("client") + string("/10.0.0.1")
        out += (i32(30_000) if version >= 1 else b"") + i32(10_000) + data(sub) + data(assign)
        out += uv(0) if flexible else b""
    return out + (uv(0) if flexible else b"")


def transaction_key(transactional_id: str) -> bytes:
    return i16(0) + s16(transactional_id)


def transaction_value(version: int, producer_id: int, state: int, partitions: dict[str, list[int]],
                      epoch: int = 1, start: int = T) -> bytes:
    """TransactionLogValue: v0 non-flexible; v1 flexible with previousProducerId (tag 0), nextProducerId (1),
    clientTransactionVersion (2) and nextProducerEpoch (3) as tagged fields. ``start``: the
    transactionStartTimestampMs (-1: no transaction started, as Kafka writes an ``Empty`` id)."""
    if version == 0:
        parts = i32(len(partitions)) + b"".join(s16(t) + i32(len(ps)) + b"".join(i32(p) for p in ps)
                                                for t, ps in partitions.items())
        return (i16(0) + i64(producer_id) + i16(epoch) + i32(60_000) + i8(state) + parts + i64(T + 5) + i64(start))
    parts = uv(len(partitions) + 1) + b"".join(cstr(t) + uv(len(ps) + 1) + b"".join(i32(p) for p in ps) + uv(0)
                                               for t, ps in partitions.items())
    tags = uv(4) + uv(0) + uv(8) + i64(producer_id - 1) + uv(1) + uv(8) + i64(producer_id + 1) \
        + uv(2) + uv(2) + i16(2) + uv(3) + uv(2) + i16(epoch + 1)
    return (i16(1) + i64(producer_id) + i16(epoch) + i32(60_000) + i8(state) + parts + i64(T + 5) + i64(start)
            + tags)


def group_records() -> list[tuple[int, bytes, bytes | None]]:
    """One record of every group coordinator record version, in an order whose replay is known: see
    ``GROUP_EXPECTED`` in the load tests."""
    rec = []
    for v in range(5):  # OffsetCommitValue v0-v4, one group per version
        rec.append((T, offset_commit_key(f"commit-v{v}", "t", v), offset_commit_value(v, 100 + v, topic_id=TOPIC_ID
                                                                                     if v == 4 else None)))
    rec.append((T, offset_commit_key("legacy", "t", 0, record_type=0), offset_commit_value(0, 7)))
    for v in range(5):  # GroupMetadataValue v0-v4 with the consumer protocol at v0-v3
        sub_v = min(v, 3)
        rec.append((T, group_metadata_key(f"group-v{v}"), group_metadata_value(
            v, [(f"m-{v}", subscription(sub_v, ["t", "u"], {"t": [v]}), assignment(sub_v, {"t": [v], "u": [0]}))])))
    rec.append((T, group_metadata_key("empty"), group_metadata_value(3, [], generation=0, protocol=None)))
    return rec


def transaction_records() -> list[tuple[int, bytes, bytes | None]]:
    """TransactionLogValue v0 and v1, Ongoing (with partitions) and CompleteCommit (without)."""
    return [(T, transaction_key("tx-v0"), transaction_value(0, 10, 1, {"t": [0, 1]})),
            (T, transaction_key("tx-v1"), transaction_value(1, 20, 4, {})),
            (T, transaction_key("tx-v1-ongoing"), transaction_value(1, 30, 1, {"u": [2]}))]
