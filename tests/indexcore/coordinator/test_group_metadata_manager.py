"""The groups a group coordinator holds after its load (``GroupMetadataManager.replay``), offline: on the
partition a real Kafka 4.4.0 broker wrote (a classic and a consumer-protocol group, both left), and on partitions
written here with the record layouts of Kafka's message schemas: classic groups with members and their consumer
protocol assignment, every consumer-group state, simple groups, deletions, and tombstones out of Kafka's order."""

from __future__ import annotations

from pathlib import Path

from segdex.indexcore.coordinator.group_coordinator_shard import load_group_coordinator
from segdex.indexcore.coordinator.group_metadata_manager import (
    ASSIGNING,
    EMPTY,
    RECONCILING,
    STABLE,
    ClassicGroup,
    ClassicGroupMember,
    ConsumerGroup,
)
from segdex.indexcore.protocol.message_format import uuid_string
from segdex.indexcore.tools.segment_writer import build_batch, write_partition
from tests.support.coordinator_bytes import TOPIC_ID, member_metadata
from tests.support.fixtures import GOLDEN
from tests.support.group_log_dirs import T, cg_epoch, cg_key, group_value
from tests.support.kafka_bytes import i8, i16, i32, s16, uv

TID = uuid_string(TOPIC_ID)


def group_key(group: str) -> bytes:
    return i16(2) + s16(group)


def _topics(partitions: list[int]) -> bytes:
    """A compact array of one (topic id, partitions) entry, no tagged fields."""
    if not partitions:
        return uv(1)
    return uv(2) + TOPIC_ID + uv(len(partitions) + 1) + b"".join(i32(p) for p in partitions) + uv(0)


def current_assignment(epoch: int, partitions: list[int], state: int = 0, previous: int = 0) -> bytes:
    """ConsumerGroupCurrentMemberAssignmentValue v0: epochs, state, assigned and pending partitions."""
    return i16(0) + i32(epoch) + i32(previous) + i8(state) + _topics(partitions) + uv(1) + uv(0)


def target_member(partitions: list[int]) -> bytes:
    return i16(0) + _topics(partitions) + uv(0)


def _load(tmp_path: Path, records: list[tuple[bytes, bytes | None]]):
    write_partition(tmp_path, "__consumer_offsets", 3,
                    [build_batch(i, [(T, k, v)]) for i, (k, v) in enumerate(records)])
    return load_group_coordinator(tmp_path / "__consumer_offsets-3")


def test_a_real_brokers_groups_load_empty_after_their_members_left():
    load = load_group_coordinator(GOLDEN / "broker_logs" / "__consumer_offsets-0")
    assert load.undecodable == [] and load.stopped is None
    classic, consumer = load.shard.groups.groups["g-classic"], load.shard.groups.groups["g-consumer"]
    assert isinstance(classic, ClassicGroup) and isinstance(consumer, ConsumerGroup)
    assert (classic.state, classic.protocol_type, classic.generation, classic.record_offset) == (EMPTY, "consumer", 2,
                                                                                                   4)
    assert (consumer.state, consumer.group_epoch, consumer.target_assignment_epoch, consumer.members) == (EMPTY, 3, 3,
                                                                                                          {})


def test_a_classic_group_with_members_loads_stable_with_its_assignment(tmp_path: Path):
    load = _load(tmp_path, [
        (group_key("g"), group_value([("m1", {"t": [0, 2]}), ("m2", {"t": [1], "u": [0]})])),
        (group_key("gone"), group_value([("x", {"t": [0]})])),
        (group_key("gone"), None),
    ])
    group = load.shard.groups.groups["g"]
    assert list(load.shard.groups.groups) == ["g"]
    assert (group.state, group.generation, group.protocol, group.leader) == (STABLE, 3, "range", "m1")
    assert group.members["m2"] == ClassicGroupMember("m2", None, "client-m2", "/127.0.0.1", 45000, 45000,
                                                     (("t", 1), ("u", 0)), ("t", "u"))



def _member(group: str, member: str, epoch: int, partitions: list[int], state: int = 0):
    return [(cg_key(5, group, member), member_metadata(uv(0))),
            (cg_key(8, group, member), current_assignment(epoch, partitions, state))]


def test_consumer_group_states_follow_kafkas_epoch_rules(tmp_path: Path):
    load = _load(tmp_path, [
        # stable: every member at the target epoch, STABLE
        (cg_key(3, "stable"), cg_epoch(3, 4)), (cg_key(6, "stable"), cg_epoch(6, 4)),
        (cg_key(7, "stable", "a"), target_member([0, 1])), *_member("stable", "a", 4, [0, 1]),
        # assigning: the group epoch is ahead of the target assignment's
        (cg_key(3, "assigning"), cg_epoch(3, 5)), (cg_key(6, "assigning"), cg_epoch(6, 4)),
        *_member("assigning", "a", 4, [0]),
        # reconciling: a member behind the target epoch, another not STABLE
        (cg_key(3, "reconciling"), cg_epoch(3, 6)), (cg_key(6, "reconciling"), cg_epoch(6, 6)),
        *_member("reconciling", "a", 5, [0]), *_member("reconciling", "b", 6, [1], state=1),
    ])
    groups = load.shard.groups.groups
    assert {g: groups[g].state for g in groups} == {"stable": STABLE, "assigning": ASSIGNING,
                                                     "reconciling": RECONCILING}
    member = groups["stable"].members["a"]
    assert member.assigned_partitions == {TID: (0, 1)} and groups["stable"].target_assignment == {"a": {TID: (0, 1)}}
    assert (member.client_id, member.client_host, member.subscribed_topic_names) == ("c", "/h", ("data",))


def test_a_consumer_group_deleted_in_kafkas_order_is_gone_and_out_of_order_fails_the_load(tmp_path: Path):
    leave = [(cg_key(8, "g", "a"), None), (cg_key(7, "g", "a"), None), (cg_key(5, "g", "a"), None),
             (cg_key(6, "g"), None), (cg_key(3, "g"), None)]
    setup = [(cg_key(3, "g"), cg_epoch(3, 1)), (cg_key(6, "g"), cg_epoch(6, 1)),
             (cg_key(7, "g", "a"), target_member([0])), *_member("g", "a", 1, [0])]
    assert _load(tmp_path / "ok", setup + leave).shard.groups.groups == {}
    bad = _load(tmp_path / "bad", setup + [(cg_key(5, "g", "a"), None), (cg_key(3, "g"), None)])
    assert bad.undecodable == [
        "offset 5: Received a tombstone record to delete member a but did not receive "
        "ConsumerGroupCurrentMemberAssignmentValue tombstone.",
        "offset 6: Received a tombstone record to delete group g but the group still has 1 members."]
    assert bad.shard.groups.groups["g"].state == STABLE


def test_a_consumer_group_record_for_a_classic_group_fails_the_load(tmp_path: Path):
    load = _load(tmp_path, [(group_key("g"), group_value([("m", {"t": [0]})])), (cg_key(3, "g"), cg_epoch(3, 1))])
    assert load.undecodable == ["offset 1: Group g is not a consumer group"]
    assert isinstance(load.shard.groups.groups["g"], ClassicGroup)


def test_every_record_version_replays_as_the_coordinator_loads_it(tmp_path: Path):
    """``tests.support.coordinator_versions``: an offset commit per OffsetCommitValue version (the expire
    timestamp of v1 only, a leader epoch from v3), a legacy commit (record type 0), and a classic group per
    GroupMetadataValue version with its consumer protocol decoded (v0 has no rebalance timeout: the session
    timeout stands for it, as ``GroupMetadataManager.replay`` does)."""
    from tests.support.coordinator_versions import T as TV
    from tests.support.coordinator_versions import group_records

    write_partition(tmp_path, "__consumer_offsets", 0, [build_batch(0, group_records())])
    load = load_group_coordinator(tmp_path / "__consumer_offsets-0")
    assert load.undecodable == [] and load.stopped is None
    offsets = load.shard.offsets.offsets
    assert {k: (o.committed_offset, o.leader_epoch, o.expire_timestamp_ms) for k, o in offsets.items()} == {
        ("commit-v0", "t", 0): (100, -1, -1), ("commit-v1", "t", 1): (101, -1, TV + 60_000),
        ("commit-v2", "t", 2): (102, -1, -1), ("commit-v3", "t", 3): (103, 3, -1), ("commit-v4", "t", 4): (104, 3, -1),
        ("legacy", "t", 0): (7, -1, -1)}
    groups = load.shard.groups.groups
    for v in range(5):
        g = groups[f"group-v{v}"]
        member = g.members[f"m-{v}"]
        assert (g.state, g.generation, g.protocol, g.leader) == (STABLE, 2, "range", f"m-{v}")
        assert g.current_state_timestamp_ms == (None if v < 2 else TV)
        assert member.assignment == (("t", v), ("u", 0)) and member.subscription == ("t", "u")
        assert (member.rebalance_timeout_ms, member.session_timeout_ms) == ((10_000 if v == 0 else 30_000), 10_000)
    assert groups["empty"].state == EMPTY and groups["commit-v0"].is_simple_group()

