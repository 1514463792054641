"""``kafka-consumer-groups --describe`` offline and the restore check, on a log dir written here
(``tests.support.group_log_dirs``): rows in Kafka's order and columns, and each out-of-range commit with the
records a consumer re-reads or skips."""

from __future__ import annotations

from pathlib import Path

import pytest

from segdex.indexcore.coordinator.coordinator_loader import ANSWERS
from segdex.indexcore.coordinator.coordinator_loader import UNKNOWN as AFTER_START_UNKNOWN
from segdex.indexcore.coordinator.group_coordinator_shard import load_group_coordinator
from segdex.indexcore.log.java_hash_map import java_string_hash, timeline_capacity, timeline_hash_order
from segdex.indexcore.protocol.message_format import uuid_string
from segdex.indexcore.tools.cluster_view import CONSUMER_OFFSETS, ClusterView, CoordinatorPartition
from segdex.indexcore.tools.consumer_groups import (
    AHEAD_OF_END,
    ALL_GROUP_TYPES,
    BEFORE_START,
    DEAD,
    OK,
    GroupDescription,
    MemberDescription,
    PartitionAssignmentState,
    describe_groups,
    format_offsets,
    restore_check,
)
from segdex.indexcore.tools.segment_writer import build_batch, write_partition
from tests.support.coordinator_versions import T as TV
from tests.support.coordinator_versions import offset_commit_key, offset_commit_value
from tests.support.group_log_dirs import (
    cg_epoch,
    cg_key,
    consumer_assignment,
    consumer_subscription,
    group_value,
    restored_log_dir,
)
from tests.support.kafka_bytes import b32, cstr, i8, i16, i32, i64, s16, uv


def _describe(tmp_path: Path, group_ids=None):
    view = ClusterView([str(restored_log_dir(tmp_path))])
    return view, describe_groups(view.group_coordinators, view.topic_names, view.log_offsets, group_ids)


def test_describe_prints_kafkas_rows_members_first_then_unassigned(tmp_path: Path):
    _view, groups = _describe(tmp_path)
    assert [(g.group, g.type, g.state, g.coordinator, len(g.members)) for g in groups] == [
        ("app", "classic", "Stable", 3, 2), ("simple", "classic", "Empty", 3, 0)]
    out, err = format_offsets(groups)
    assert out == (
        "\nGROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID     "
        "HOST            CLIENT-ID"
        "\napp             orders          0          5               10              5               m-a             "
        "/127.0.0.1      client-m-a"
        "\napp             orders          1          40              5               -35             m-a             "
        "/127.0.0.1      client-m-a\n"
        "\nGROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID     "
        "HOST            CLIENT-ID"
        "\nsimple          orders          2          2               20              18              -               "
        "-               -\n")
    assert err == "\nConsumer group 'simple' has no active members.\n"


def test_a_group_asked_for_that_no_coordinator_holds_does_not_exist(tmp_path: Path):
    _view, groups = _describe(tmp_path, ["nope"])
    assert [(g.group, g.state, g.offsets) for g in groups] == [("nope", DEAD, ())]
    assert format_offsets(groups) == ("\nError: Consumer group 'nope' does not exist.\n", "")  # printError: stdout


def test_restore_check_counts_records_a_reset_rereads_or_skips(tmp_path: Path):
    view, groups = _describe(tmp_path)
    checks = {(c.group, c.partition): c for c in restore_check(groups, view.count_records)}
    assert checks[("app", 0)].status == OK
    ahead = checks[("app", 1)]  # 4 records and a COMMIT marker: earliest re-reads the 4 records
    assert (ahead.status, ahead.log_start_offset, ahead.log_end_offset, ahead.reread_if_earliest,
            ahead.skipped_if_latest) == (AHEAD_OF_END, 0, 5, 4, 0)
    before = checks[("simple", 2)]
    assert (before.status, before.lost_offsets, before.skipped_if_latest, before.reread_if_earliest) == (
        BEFORE_START, 8, 10, 0)
    assert "past the log end offset 5: auto.offset.reset=earliest re-reads 4 records" in ahead.describe()
    assert "before the log start offset 10 (8 offsets gone): auto.offset.reset=latest skips 10 records" in \
        before.describe()



def test_share_groups_are_not_consumer_groups_but_are_recorded(tmp_path: Path):
    from segdex.indexcore.tools.consumer_groups import ALL_GROUP_TYPES
    from segdex.indexcore.tools.segment_writer import build_batch, write_partition
    from tests.support.kafka_bytes import i16, i32, s16

    log_dir = restored_log_dir(tmp_path)
    write_partition(log_dir, "__consumer_offsets", 1, [build_batch(0, [(0, i16(11) + s16("sg"), i16(0) + i32(2))])])
    view = ClusterView([str(log_dir)])
    listed = describe_groups(view.group_coordinators, view.topic_names, view.log_offsets)
    everything = describe_groups(view.group_coordinators, view.topic_names, view.log_offsets, types=ALL_GROUP_TYPES)
    assert "sg" not in {g.group for g in listed}
    assert [(g.type, g.state, g.epoch, g.coordinator_partition) for g in everything if g.group == "sg"] == [
        ("share", "Empty", 2, 1)]



def test_descriptions_field_by_field(tmp_path: Path):
    """Every field of what ``describe_groups`` answers: a classic group's members as its ``GroupMetadataValue``
    holds them (``tests.support.group_log_dirs``: client id ``client-<member>``, host ``/127.0.0.1``, no instance
    id; the assignment as (topic, partition), sorted, topic ids named); a group no coordinator holds, ``Dead`` and
    empty, and, where a ``__consumer_offsets`` partition is in no log dir given, partial with why."""
    from segdex.indexcore.tools.consumer_groups import GroupDescription, MemberDescription

    view, groups = _describe(tmp_path, ["app", "nope"])
    app, nope = groups
    assert app.members == (MemberDescription("m-a", None, "client-m-a", "/127.0.0.1", (("orders", 0), ("orders", 1))),
                           MemberDescription("m-b", None, "client-m-b", "/127.0.0.1", ()))
    assert nope == GroupDescription("nope", "unknown", "", DEAD, "", -1, None, -1, (), ())
    (missing,) = describe_groups(view.group_coordinators, view.topic_names, view.log_offsets, ["nope"], missing=[7])
    assert missing == GroupDescription(
        "nope", "unknown", "", DEAD, "", -1, None, -1, (), (), True, None, None,
        "not in the coordinator partitions loaded, but __consumer_offsets-7 in none of the log dirs given: not known")


# The cases restored_log_dir lacks: a consumer-protocol group, static members, partitions without a commit,
# commits of -1, 1 and -2, several groups with their messages, a share group's members, a partial load.

ORDERS_ID = bytes(range(16))  # the topic id orders-0..2's partition.metadata names
UNNAMED_ID = bytes(range(100, 116))  # a topic id no partition.metadata names
# Kafka's printOffsetFormat when no value is wider than its column (every width 15, PARTITION 10)
ROW = "\n%-15s %-15s %-10s %-15s %-15s %-15s %-15s %-15s %s"
HEADER = ROW % ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
                "CLIENT-ID")


def _classic_value(members: list[tuple[str, str | None, str, str, dict[str, list[int]]]]) -> bytes:
    """GroupMetadataValue v3 (the first version with ``groupInstanceId``): protocol type ``consumer``, generation
    7, protocol ``range``; ``members``: (member id, group instance id, client id, host, assignment)."""
    out = (i16(3) + s16("consumer") + i32(7) + s16("range") + s16(members[0][0]) + i64(TV) + i32(len(members)))
    for member_id, instance_id, client_id, host, assignment in members:
        out += (s16(member_id) + s16(instance_id) + s16(client_id) + s16(host) + i32(30_000) + i32(10_000)
                + b32(consumer_subscription(sorted(assignment))) + b32(consumer_assignment(assignment)))
    return out


def _member_value(instance_id: str | None, client_id: str, host: str) -> bytes:
    """ConsumerGroupMemberMetadataValue v0 (flexible): instance id, rack (null), client id and host, subscribed
    topics, regex (null), rebalance timeout, server assignor, no tagged fields."""
    return (i16(0) + cstr(instance_id) + cstr(None) + cstr(client_id) + cstr(host) + uv(2) + cstr("orders")
            + cstr(None) + i32(300_000) + cstr("uniform") + uv(0))


def _current_assignment(epoch: int, partitions: dict[bytes, list[int]]) -> bytes:
    """ConsumerGroupCurrentMemberAssignmentValue v0: member epoch, previous epoch, state STABLE (0), the assigned
    partitions by topic id (compact arrays), none pending revocation."""
    topics = uv(len(partitions) + 1) + b"".join(tid + uv(len(ps) + 1) + b"".join(i32(p) for p in ps) + uv(0)
                                                for tid, ps in partitions.items())
    return i16(0) + i32(epoch) + i32(epoch - 1) + i8(0) + topics + uv(1) + uv(0)


def _data_partition(log_dir: Path, topic: str, partition: int, records: int, topic_id: bytes | None) -> None:
    """A data partition of ``records`` records (log end offset ``records``), with its ``partition.metadata``."""
    write_partition(log_dir, topic, partition, [build_batch(0, [(TV + i, b"k", b"v") for i in range(records)])])
    if topic_id is not None:
        (log_dir / f"{topic}-{partition}" / "partition.metadata").write_text(
            f"version: 0\ntopic_id: {uuid_string(topic_id)}\n")


@pytest.fixture(scope="module")
def groups_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One ``__consumer_offsets-0`` (node 3) holding:

    - ``a-empty``: a classic consumer group without members or commits (``Empty``, no row);
    - ``b-848``: a consumer-protocol group whose group epoch (5) is ahead of its target assignment's (4):
      ``Assigning``, which ``--describe`` warns is rebalancing. Member ``m1`` (static: instance ``i-1``) holds
      orders-0 and orders-2 by topic id, ``m2`` orders-1. Commits: orders-0 at 1 (v3: leader epoch 7, metadata
      ``meta-0``), orders-1 at -1, items-0 at -2 (no member holds items); orders-2 has none;
    - ``c-static``: a classic group whose member ``s1`` is static (instance ``static-1``) and holds orders-0,
      committed at 5 by an OffsetCommitValue v1 (the version with an expire timestamp); ``s2`` holds nothing;
    - ``sg``: a share group with one member (a group ``kafka-consumer-groups`` does not describe).

    orders-0..2 hold 10 records each (named by ``ORDERS_ID``), items-0 4 records."""
    log_dir = tmp_path_factory.mktemp("groups") / "logs"
    write_partition(log_dir, CONSUMER_OFFSETS, 0, [
        build_batch(0, [(TV, i16(2) + s16("a-empty"), group_value([], generation=4))]),
        build_batch(1, [
            (TV, cg_key(3, "b-848"), cg_epoch(3, 5)),
            (TV, cg_key(6, "b-848"), cg_epoch(6, 4)),
            (TV, cg_key(5, "b-848", "m1"), _member_value("i-1", "c1", "/10.0.0.1")),
            (TV, cg_key(8, "b-848", "m1"), _current_assignment(4, {ORDERS_ID: [0, 2]})),
            (TV, cg_key(5, "b-848", "m2"), _member_value(None, "c2", "/10.0.0.2")),
            (TV, cg_key(8, "b-848", "m2"), _current_assignment(4, {ORDERS_ID: [1]})),
        ]),
        build_batch(7, [(TV, i16(2) + s16("c-static"), _classic_value([
            ("s1", "static-1", "cs1", "/10.0.0.3", {"orders": [0]}), ("s2", None, "cs2", "/10.0.0.4", {})]))]),
        build_batch(8, [
            (TV, offset_commit_key("b-848", "orders", 0), offset_commit_value(3, 1, "meta-0", leader_epoch=7)),
            (TV, offset_commit_key("b-848", "orders", 1), offset_commit_value(3, -1)),
            (TV, offset_commit_key("b-848", "items", 0), offset_commit_value(3, -2)),
            (TV, offset_commit_key("c-static", "orders", 0), offset_commit_value(1, 5, "static")),
        ]),
        build_batch(12, [(TV, i16(11) + s16("sg"), i16(0) + i32(2)),
                         (TV, i16(10) + s16("sg") + s16("sm"), i16(0))]),
    ])
    for p in range(3):
        _data_partition(log_dir, "orders", p, 10, ORDERS_ID)
    _data_partition(log_dir, "items", 0, 4, None)
    (log_dir / "meta.properties").write_text("version=1\nnode.id=3\ncluster.id=c\n")
    return log_dir


def _groups(log_dir: Path, group_ids: list[str] | None = None, **kwargs) -> dict[str, GroupDescription]:
    view = ClusterView([str(log_dir)])
    described = describe_groups(view.group_coordinators, view.topic_names, view.log_offsets, group_ids, **kwargs)
    return {g.group: g for g in described}


def test_consumer_protocol_members_carry_their_instance_id_and_named_assignment(groups_dir: Path):
    """A consumer-protocol (KIP-848) group's members as ``ConsumerGroupDescribe`` gives them
    (``ConsumerGroupMember.asConsumerGroupDescribeMember``): member id, instance id, client id, host, and the
    assigned partitions by topic name (the topic id named by the partition dirs' ``partition.metadata``); in the
    order of the group's ``members`` ``TimelineHashMap`` (``asDescribedGroup``): m2 (slot 0 of 4) before m1 (slot 2),
    though m1 was put first."""
    g = _groups(groups_dir)["b-848"]
    assert (g.type, g.state, g.epoch, g.assignment_strategy, g.coordinator, g.coordinator_partition) == (
        "consumer", "Assigning", 5, "uniform", 3, 0)
    assert g.members == (MemberDescription("m2", None, "c2", "/10.0.0.2", (("orders", 1),)),
                         MemberDescription("m1", "i-1", "c1", "/10.0.0.1", (("orders", 0), ("orders", 2))))


def test_a_static_classic_member_keeps_its_group_instance_id(groups_dir: Path):
    """A classic member's ``groupInstanceId`` (GroupMetadataValue v3+, static membership) is the member's
    ``groupInstanceId`` in ``describeConsumerGroups``."""
    g = _groups(groups_dir)["c-static"]
    assert g.members == (MemberDescription("s1", "static-1", "cs1", "/10.0.0.3", (("orders", 0),)),
                         MemberDescription("s2", None, "cs2", "/10.0.0.4", ()))


def test_rows_carry_each_commits_fields_and_kafkas_lag(groups_dir: Path):
    """Each row as ``collectGroupsOffsets`` builds it, with the commit's fields beside it: a partition a member
    holds without a commit has no offset and no lag (``getLag`` of an empty offset); a commit of -1 has no lag
    (``getLag`` filters -1 only), one of 1 or -2 has ``end - offset``; the commit's leader epoch (-1 below v3),
    metadata, timestamps (the expire timestamp of v1 only) and record offset, None where there is no commit."""
    groups = _groups(groups_dir)
    no_commit = (None, None, None, None, None)
    assert groups["b-848"].offsets == (
        PartitionAssignmentState("b-848", "orders", 0, 1, 10, 9, "m1", "/10.0.0.1", "c1", 0, 7, "meta-0", TV, -1, 8),
        PartitionAssignmentState("b-848", "orders", 2, None, 10, None, "m1", "/10.0.0.1", "c1", 0, *no_commit),
        PartitionAssignmentState("b-848", "orders", 1, -1, 10, None, "m2", "/10.0.0.2", "c2", 0, 3, "m", TV, -1, 9),
        PartitionAssignmentState("b-848", "items", 0, -2, 4, 6, "-", "-", "-", 0, 3, "m", TV, -1, 10))
    assert groups["c-static"].offsets == (
        PartitionAssignmentState("c-static", "orders", 0, 5, 10, 5, "s1", "/10.0.0.3", "cs1", 0, -1, "static", TV,
                                 TV + 60_000, 11),)


def test_several_groups_print_each_groups_message_and_rows(groups_dir: Path):
    """``printOffsets`` over every group: an ``Empty`` group without rows prints its message only and the groups
    after it still print; an ``Assigning`` group warns it is rebalancing (``shouldPrintMemberState``) and prints
    its rows; each message on stderr in group order. A column without a value prints ``-``
    (``MISSING_COLUMN_VALUE``), never ``None``."""
    out, err = format_offsets(list(_groups(groups_dir).values()))
    assert out == (
        HEADER
        + ROW % ("b-848", "orders", 0, 1, 10, 9, "m1", "/10.0.0.1", "c1")
        + ROW % ("b-848", "orders", 2, "-", 10, "-", "m1", "/10.0.0.1", "c1")
        + ROW % ("b-848", "orders", 1, -1, 10, "-", "m2", "/10.0.0.2", "c2")
        + ROW % ("b-848", "items", 0, -2, 4, 6, "-", "-", "-") + "\n"
        + HEADER
        + ROW % ("c-static", "orders", 0, 5, 10, 5, "s1", "/10.0.0.3", "cs1") + "\n")
    assert err == ("\nConsumer group 'a-empty' has no active members.\n"
                   "\nWarning: Consumer group 'b-848' is rebalancing.\n")


def test_a_group_that_does_not_exist_does_not_stop_the_groups_after_it(groups_dir: Path):
    """A group asked for that does not exist prints Kafka's error, then the next group asked for prints its
    rows (``printOffsets`` goes on through every group), both on stdout (Kafka 4.4's ``printError`` writes to
    ``System.out``)."""
    out, err = format_offsets(list(_groups(groups_dir, ["a-nope", "c-static"]).values()))
    table = HEADER + ROW % ("c-static", "orders", 0, 5, 10, 5, "s1", "/10.0.0.3", "cs1") + "\n"
    assert out == "\nError: Consumer group 'a-nope' does not exist.\n" + table and err == ""


def test_share_group_members_are_described_by_their_ids_only(groups_dir: Path):
    """A share group (recorded from its keys only, ``RecordedGroup``) described with every group type: its
    members by id, without instance id, client id, host or assignment; ``kafka-consumer-groups``'s types leave
    it out."""
    assert "sg" not in _groups(groups_dir)
    sg = _groups(groups_dir, types=ALL_GROUP_TYPES)["sg"]
    assert (sg.type, sg.state, sg.epoch, sg.offsets) == ("share", "Stable", 2, ())
    assert sg.members == (MemberDescription("sm", None, "", "", ()),)


def test_a_member_holding_a_topic_id_no_log_dir_names_still_describes_its_named_partitions(tmp_path: Path):
    """A consumer-protocol member assigned partitions of a topic id no ``partition.metadata`` names (a deleted
    topic, or one on a log dir not given) beside a named one: the group still describes, its named partitions
    under their name. (What is shown for the unnamed id is not asserted: Kafka's
    ``ConsumerGroupMember.topicPartitionsFromMap`` drops a topic id the metadata image does not hold.)"""
    log_dir = tmp_path / "logs"
    write_partition(log_dir, CONSUMER_OFFSETS, 0, [build_batch(0, [
        (TV, cg_key(3, "g"), cg_epoch(3, 2)), (TV, cg_key(6, "g"), cg_epoch(6, 2)),
        (TV, cg_key(5, "g", "m"), _member_value(None, "c", "/h")),
        (TV, cg_key(8, "g", "m"), _current_assignment(2, {UNNAMED_ID: [0], ORDERS_ID: [0]})),
    ])])
    _data_partition(log_dir, "orders", 0, 10, ORDERS_ID)
    (member,) = _groups(log_dir)["g"].members
    assert [tp for tp in member.assignment if tp[0] == "orders"] == [("orders", 0)]


def test_a_partial_load_without_an_after_start_answer_marks_its_groups(tmp_path: Path):
    """A coordinator partition whose load stopped inside its second batch (the segment cut short), loaded
    without asking what Kafka loads after the broker's start (``after_start`` None): its group is partial, with
    the offset the load reached, no ``kafka_after_start`` and the reason saying no prediction; the mark prints
    above its rows. A group asked for and found nowhere then has two reasons, joined by ``; ``."""
    log_dir = tmp_path / "logs"
    (segment,) = write_partition(log_dir, CONSUMER_OFFSETS, 0, [
        build_batch(0, [(TV, offset_commit_key("g", "orders", 0), offset_commit_value(3, 4))]),
        build_batch(1, [(TV, offset_commit_key("g", "orders", 0), offset_commit_value(3, 6))])])
    segment.write_bytes(segment.read_bytes()[:-5])
    _data_partition(log_dir, "orders", 0, 10, None)
    load = load_group_coordinator(log_dir / f"{CONSUMER_OFFSETS}-0")
    assert (load.partial, load.next_offset, load.after_start) == (True, 1, None)
    view = ClusterView([str(log_dir)])
    coordinator = CoordinatorPartition(CONSUMER_OFFSETS, 0, str(log_dir), None, load)
    g, nope = describe_groups([coordinator], view.topic_names, view.log_offsets, ["g", "nope"], missing=[5])
    reason = f"{CONSUMER_OFFSETS}-0 loaded up to offset 1 only: the rows may be stale; {ANSWERS[AFTER_START_UNKNOWN]}"
    assert (g.partial, g.loaded_to_offset, g.kafka_after_start, g.partial_reason) == (True, 1, None, reason)
    assert [(r.topic, r.partition, r.offset, r.lag) for r in g.offsets] == [("orders", 0, 4, 6)]
    assert nope.partial_reason == (f"not in the coordinator partitions loaded, but {CONSUMER_OFFSETS}-0 loaded up "
                                   f"to offset 1 only; {CONSUMER_OFFSETS}-5 in none of the log dirs given: not known")
    out, _err = format_offsets([g])
    assert out.startswith(f"\nPARTIAL: group g: {reason}\n" + HEADER)


# The order of --describe's rows where several come in a tie: a member holding the same partition number on two
# topics, members holding as many partitions, groups whose ids differ past the Basic Multilingual Plane.

AUDIT_ID = bytes(range(32, 48))  # the topic id audit-0..2's partition.metadata names


@pytest.fixture(scope="module")
def ties_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One ``__consumer_offsets-0`` (node 3) holding:

    - ``c-ties``: a classic group whose ``GroupMetadataValue`` lists ``x2`` (orders-0, orders-1, audit-1) before
      ``x1`` (audit-0, audit-2, orders-2), each assignment written topic by topic, partitions out of order;
      commits on orders-1 and audit-2;
    - ``k-ties``: a consumer-protocol group, ``m1`` (orders-2, audit-0) put before ``m2`` (orders-0, audit-1),
      both by topic id, and a commit on orders-1, which neither holds;
    - ``s-ties``: a simple group (commits only) on orders-1, audit-2 and audit-0;
    - ``z\U0001F600`` and ``z\uff5e``: simple groups committed in that order.

    orders-0..2 and audit-0..2 hold 10 records each."""
    log_dir = tmp_path_factory.mktemp("ties") / "logs"
    simple = [offset_commit_key("s-ties", t, p) for t, p in (("orders", 1), ("audit", 2), ("audit", 0))]
    write_partition(log_dir, CONSUMER_OFFSETS, 0, [
        build_batch(0, [(TV, i16(2) + s16("c-ties"), _classic_value([
            ("x2", None, "cx2", "/10.0.0.2", {"orders": [1, 0], "audit": [1]}),
            ("x1", None, "cx1", "/10.0.0.1", {"orders": [2], "audit": [2, 0]})]))]),
        build_batch(1, [
            (TV, cg_key(3, "k-ties"), cg_epoch(3, 4)),
            (TV, cg_key(6, "k-ties"), cg_epoch(6, 4)),
            (TV, cg_key(5, "k-ties", "m1"), _member_value(None, "c1", "/10.0.0.1")),
            (TV, cg_key(8, "k-ties", "m1"), _current_assignment(4, {ORDERS_ID: [2], AUDIT_ID: [0]})),
            (TV, cg_key(5, "k-ties", "m2"), _member_value(None, "c2", "/10.0.0.2")),
            (TV, cg_key(8, "k-ties", "m2"), _current_assignment(4, {AUDIT_ID: [1], ORDERS_ID: [0]})),
        ]),
        build_batch(7, [
            (TV, offset_commit_key("c-ties", "orders", 1), offset_commit_value(3, 1)),
            (TV, offset_commit_key("c-ties", "audit", 2), offset_commit_value(3, 2)),
            (TV, offset_commit_key("k-ties", "orders", 1), offset_commit_value(3, 3)),
            *((TV, key, offset_commit_value(3, 4)) for key in simple),
            (TV, offset_commit_key("z\U0001F600", "orders", 0), offset_commit_value(3, 5)),
            (TV, offset_commit_key("z\uff5e", "orders", 0), offset_commit_value(3, 6)),
        ]),
    ])
    for p in range(3):
        _data_partition(log_dir, "orders", p, 10, ORDERS_ID)
        _data_partition(log_dir, "audit", p, 10, AUDIT_ID)
    (log_dir / "meta.properties").write_text("version=1\nnode.id=3\ncluster.id=c\n")
    return log_dir


def _row_keys(g: GroupDescription) -> list[tuple[str, str, int]]:
    return [(r.consumer_id, r.topic, r.partition) for r in g.offsets]


def test_a_members_rows_come_by_topic_then_partition(ties_dir: Path):
    """Kafka 4.4's ``describePartitions`` sorts a member's rows with ``Comparator.comparing(topic,
    String::compareTo).thenComparingInt(partition)`` (``javap -c`` of ``ConsumerGroupCommand$ConsumerGroupService``
    in kafka-tools-4.4.0.jar): a member holding the same partition number on two topics prints one topic's rows,
    then the other's; so do the rows of no member. Classic members in the order of their group's
    ``GroupMetadataValue`` (``ClassicGroup.allMembers()``, the ``HashMap`` that record was written from): x2
    first, though x1 sorts before it, both holding three partitions."""
    g = _groups(ties_dir)["c-ties"]
    assert _row_keys(g) == [("x2", "audit", 1), ("x2", "orders", 0), ("x2", "orders", 1),
                            ("x1", "audit", 0), ("x1", "audit", 2), ("x1", "orders", 2)]
    assert _row_keys(_groups(ties_dir)["s-ties"]) == [("-", "audit", 0), ("-", "audit", 2), ("-", "orders", 1)]


def test_members_holding_as_many_partitions_come_in_the_coordinators_describe_order(ties_dir: Path):
    """``collectGroupsOffsets`` sorts the described members by assignment size, descending, with a stable sort:
    members holding as many partitions keep the order ``ConsumerGroupDescribe`` lists them in, that of the group's
    ``members`` ``TimelineHashMap`` (``ConsumerGroup.asDescribedGroup`` iterates it): by slot
    (``BaseHashTable.findSlot``: the member id's ``hashCode`` times the Fibonacci constant, its top bits), the last
    put first within a slot, 4 slots for 2 members. m2 comes before m1, which was put first; each member's rows by
    topic then partition, then the commit no member holds."""
    g = _groups(ties_dir)["k-ties"]
    order = timeline_hash_order(["m1", "m2"], java_string_hash, timeline_capacity(2))
    assert order == ["m2", "m1"] and [m.consumer_id for m in g.members] == order
    assert _row_keys(g) == [("m2", "audit", 1), ("m2", "orders", 0), ("m1", "audit", 0), ("m1", "orders", 2),
                            ("-", "orders", 1)]


def test_groups_come_in_java_string_order(ties_dir: Path):
    """``collectGroupsOffsets`` keeps the groups in a ``TreeMap``: by ``String.compareTo``, UTF-16 code unit by code
    unit. U+1F600 is the surrogate pair D83D DE00, which sorts before U+FF5E (Python's code point order puts it
    after)."""
    assert [g for g in _groups(ties_dir) if g.startswith("z")] == ["z\U0001F600", "z\uff5e"]


def _join(group: str, member: str, epoch: int, partitions: dict[bytes, list[int]]) -> list[tuple]:
    """A member's metadata then its current assignment (records 5 and 8): two ``members.put``s."""
    return [(TV, cg_key(5, group, member), _member_value(None, f"c-{member}", "/10.0.0.9")),
            (TV, cg_key(8, group, member), _current_assignment(epoch, partitions))]


def _leave(group: str, member: str) -> list[tuple]:
    """A member leaving as Kafka writes it: its current assignment's tombstone (a put: ``updateMember`` at epoch
    -1), then its metadata's (``removeMember``)."""
    return [(TV, cg_key(8, group, member), None), (TV, cg_key(5, group, member), None)]


@pytest.fixture(scope="module")
def history_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One ``__consumer_offsets-0`` (node 3) of consumer-protocol groups whose ``members`` tables went through more
    than their members now (each at group and target epoch 4, ``Stable``):

    - ``k-shrunk``: p1, p2, p3, p4, p6 joined (one partition each), p2, p3 and p4 left, p1 and p6 took three
      partitions each: the table grew to 8 slots (a put while it held 5), which 2 members alone never need;
    - ``k-tomb``: q1..q4 joined (one partition each), q5 joined and left before any assignment: its current
      assignment's tombstone is a put made while the table held 5 members, its only one: 8 slots;
    - ``k-rejoin``: r1 then r4 joined (one partition each), r1 left and joined again (the same member id, as a
      consumer keeps its id, KIP-1082) with the same partition.

    orders-0..2 and audit-0..2 hold 10 records each."""
    log_dir = tmp_path_factory.mktemp("history") / "logs"
    epochs = [(TV, cg_key(t, g), cg_epoch(t, 4)) for g in ("k-shrunk", "k-tomb", "k-rejoin") for t in (3, 6)]
    one = [{ORDERS_ID: [0]}, {ORDERS_ID: [1]}, {ORDERS_ID: [2]}, {AUDIT_ID: [0]}, {AUDIT_ID: [1]}]
    shrunk = [r for m, p in zip(("p1", "p2", "p3", "p4", "p6"), one, strict=True) for r in _join("k-shrunk", m, 4, p)]
    shrunk += [r for m in ("p2", "p3", "p4") for r in _leave("k-shrunk", m)]
    shrunk += [(TV, cg_key(8, "k-shrunk", "p1"), _current_assignment(4, {ORDERS_ID: [0, 1, 2]})),
               (TV, cg_key(8, "k-shrunk", "p6"), _current_assignment(4, {AUDIT_ID: [0, 1, 2]}))]
    tomb = [r for m, p in zip(("q1", "q2", "q3", "q4"), one, strict=False) for r in _join("k-tomb", m, 4, p)]
    tomb += [(TV, cg_key(5, "k-tomb", "q5"), _member_value(None, "c-q5", "/10.0.0.9")), *_leave("k-tomb", "q5")]
    rejoin = [*_join("k-rejoin", "r1", 4, one[0]), *_join("k-rejoin", "r4", 4, one[3]), *_leave("k-rejoin", "r1"),
              *_join("k-rejoin", "r1", 4, one[0])]
    write_partition(log_dir, CONSUMER_OFFSETS, 0, [build_batch(0, epochs + shrunk + tomb + rejoin)])
    for p in range(3):
        _data_partition(log_dir, "orders", p, 10, ORDERS_ID)
        _data_partition(log_dir, "audit", p, 10, AUDIT_ID)
    (log_dir / "meta.properties").write_text("version=1\nnode.id=3\ncluster.id=c\n")
    return log_dir


def test_a_group_that_held_more_members_lists_them_in_its_grown_tables_order(history_dir: Path):
    """Kafka 4.4's ``GroupMetadataManager.replay`` of a member's records 5 and 8 calls ``ConsumerGroup.updateMember``,
    whose ``members.put`` grows the ``TimelineHashMap``'s ``BaseHashTable`` before any put while ``(size + 1) * 0.75``
    exceeds its slots; ``removeMember``'s ``members.remove`` never shrinks it (``javap -c`` of kafka-group-coordinator
    and kafka-server-common 4.4.0; the table against Kafka's own class: test_java_hash_map.py). ``k-shrunk`` held 5
    members: 8 slots, where p1 (slot 0) comes before p6 (slot 1); in the 4 slots two members need, both share slot
    0 and p6, put last, would come first. ``collectGroupsOffsets`` keeps that order between the two, tied at three
    partitions each."""
    g = _groups(history_dir)["k-shrunk"]
    assert timeline_hash_order(["p1", "p6"], java_string_hash, timeline_capacity(2)) == ["p6", "p1"]
    assert [m.consumer_id for m in g.members] == timeline_hash_order(["p1", "p6"], java_string_hash, 8) == ["p1", "p6"]
    assert g.state == "Stable" and [r.consumer_id for r in g.offsets] == ["p1"] * 3 + ["p6"] * 3


def test_a_current_assignments_tombstone_is_a_put_that_grows_the_table(history_dir: Path):
    """A current assignment's tombstone replays as ``updateMember`` of the member at epoch -1: a put, replacing, which
    grows the table as any put does. ``k-tomb``'s q5 joined as fifth member (a put while the table held 4: 4 slots)
    and left before any assignment: its tombstone is the only put made while the table held 5 (8 slots). The four
    left, one partition each, come in the order of 8 slots, not 4."""
    members = ["q1", "q2", "q3", "q4"]
    assert timeline_hash_order(members, java_string_hash, 4) == ["q4", "q3", "q1", "q2"]
    g = _groups(history_dir)["k-tomb"]
    assert [m.consumer_id for m in g.members] == timeline_hash_order(members, java_string_hash, 8) == \
        ["q4", "q1", "q3", "q2"]
    assert [r.consumer_id for r in g.offsets] == ["q4", "q1", "q3", "q2"]


def test_a_member_that_left_and_joined_again_comes_from_its_slots_end(history_dir: Path):
    """``removeMember`` takes the member out of its slot; its next put (``BaseHashTable.baseAddOrReplace``) appends it
    to the slot's end, which the iterators read first. ``k-rejoin``'s r1 and r4 share slot 1 of 4: r4, put last,
    came first until r1 left and joined again; now r1 does."""
    assert timeline_hash_order(["r1", "r4"], java_string_hash, 4) == ["r4", "r1"]
    g = _groups(history_dir)["k-rejoin"]
    assert [m.consumer_id for m in g.members] == ["r1", "r4"]
    assert [r.consumer_id for r in g.offsets] == ["r1", "r4"]
