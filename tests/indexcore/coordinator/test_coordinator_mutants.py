"""Tests written for the mutation run's survivors and untested functions in ``indexcore/coordinator/`` (issue 42):
each pins what a mutant of the named function changes (benchmarks/mutation/report.md lists them)."""

from __future__ import annotations

from segdex.indexcore.coordinator.coordinator_loader import (
    ANSWERS,
    DIFFERS,
    SAME,
    UNKNOWN,
    AfterStart,
    LoadSummary,
)
from segdex.indexcore.coordinator.group_metadata_manager import ConsumerGroup, GroupMetadataManager
from segdex.indexcore.coordinator.records import StringMessageParser

TOPIC_A = bytes(range(16))
TOPIC_B = bytes(range(16, 32))


# --- coordinator_loader.LoadSummary: what an operator reads of a partial load ---------------------------------


def test_a_whole_loads_problems_are_its_undecodable_records_only():
    summary = LoadSummary(next_offset=7, undecodable=["offset 3: bad", "offset 5: worse"])
    assert summary.problems() == ["offset 3: bad", "offset 5: worse"]
    assert LoadSummary().problems() == []


def test_a_partial_loads_problems_end_with_where_it_stopped():
    summary = LoadSummary(next_offset=7, stopped="00000000000000000000.log: a CRC", undecodable=["offset 3: bad"])
    assert summary.problems() == ["offset 3: bad", "00000000000000000000.log: a CRC"]


def test_the_partial_line_says_how_far_and_what_was_left_and_kafkas_answer_when_asked():
    summary = LoadSummary(next_offset=12, stopped="00000000000000000000.log: a CRC", unread_bytes=345)
    line = ("PARTIAL: __consumer_offsets-3 loaded up to offset 12 only (00000000000000000000.log: a CRC); 345 bytes "
            "after it not read: its rows may be stale, records after it are missing")
    assert summary.partial_line("__consumer_offsets-3") == line
    summary.after_start = AfterStart(SAME, 12, "the start truncates there")
    assert summary.partial_line("__consumer_offsets-3") == f"{line}. Kafka: the start truncates there"


def test_the_partial_reason_names_kafkas_answer_or_that_none_was_predicted():
    summary = LoadSummary(next_offset=12, stopped="x")
    assert summary.partial_reason("__transaction_state-0") == (
        f"__transaction_state-0 loaded up to offset 12 only: the rows may be stale; {ANSWERS[UNKNOWN]}")
    summary.after_start = AfterStart(DIFFERS, None, "kept")
    assert summary.partial_reason("p") == f"p loaded up to offset 12 only: the rows may be stale; {ANSWERS[DIFFERS]}"
    assert ANSWERS[DIFFERS] != ANSWERS[UNKNOWN]


# --- group_metadata_manager.replay_partition_metadata ----------------------------------------------------------


def _topics(*pairs: tuple[str, bytes]) -> dict:
    return {"topics": [{"topicName": name, "topicId": tid} for name, tid in pairs]}


def test_partition_metadata_sets_a_consumer_groups_subscribed_topics_and_a_tombstone_clears_them():
    m = GroupMetadataManager()
    m.replay_partition_metadata("g", _topics(("a", TOPIC_A), ("b", TOPIC_B)))
    group = m.groups["g"]
    assert isinstance(group, ConsumerGroup)  # a record of a group not seen yet creates it
    assert group.subscription_metadata == {"a": "AAECAwQFBgcICQoLDA0ODw", "b": "EBESExQVFhcYGRobHB0eHw"}
    m.replay_partition_metadata("g", _topics(("b", TOPIC_B)))  # replaced whole
    assert group.subscription_metadata == {"b": "EBESExQVFhcYGRobHB0eHw"}
    m.replay_partition_metadata("g", None)
    assert m.groups["g"] is group and group.subscription_metadata == {}


def test_a_partition_metadata_tombstone_of_an_unknown_group_creates_none():
    m = GroupMetadataManager()
    m.replay_partition_metadata("gone", None)
    assert m.groups == {}


# --- records.StringMessageParser: the default decoder of kafka-dump-log --------------------------------------


def test_the_string_parser_reads_key_and_value_as_java_reads_utf8():
    p = StringMessageParser()
    assert p.parse(0, b"k\xc3\xa9y", b"v\xffal") == ("kéy", "v\ufffdal")
    assert p.parse(1, None, b"v") == (None, "v")
    assert p.parse(2, b"k", None) == ("k", None)
    assert p.parse(3, None, None) == (None, None)


# --- records._key and _flexible: the schema builders (run at import for the module's constants; called here so
# that a changed builder is noticed by what it builds, not only through the constants built before it changed) ---


def test_a_key_schema_is_version_0_strings_with_an_int32_partition():
    from segdex.indexcore.coordinator import records
    from segdex.indexcore.protocol.message_format import Field, Message, Struct

    assert records._key("OffsetCommitKey", "group", "topic", "partition") == Message(
        "OffsetCommitKey", Struct((Field("group", "string"), Field("topic", "string"), Field("partition", "int32"))))
    assert records._key("TransactionLogKey", "transactionalId") == records.TRANSACTION_LOG_KEY
    key = records._key("K", "a")
    assert (key.valid_versions, key.flexible_from, key.is_flexible(0)) == ((0, 0), None, False)


def test_a_flexible_schema_is_version_0_and_flexible_from_it():
    from segdex.indexcore.coordinator import records
    from segdex.indexcore.protocol.message_format import Field, Message, Struct

    fields = (Field("groupEpoch", "int32"), Field("metadataHash", "int64", tag=0))
    m = records._flexible("ConsumerGroupMetadataValue", *fields)
    assert m == Message("ConsumerGroupMetadataValue", Struct(fields), (0, 0), flexible_from=0)
    assert m.is_flexible(0)
    assert records._flexible("X", *records.CONSUMER_GROUP_PARTITION_METADATA_VALUE.struct.fields).struct == \
        records.CONSUMER_GROUP_PARTITION_METADATA_VALUE.struct


# --- transaction_state_manager.transaction_record: a v0 value has no tagged fields ---------------------------


def test_a_v0_transaction_value_has_no_next_producer_epoch():
    from segdex.indexcore.coordinator.transaction_state_manager import transaction_record
    from tests.indexcore.coordinator.test_transaction_state_manager import txn_key, txn_value

    tid, meta = transaction_record(5, 0, txn_key("a"), txn_value(10, 4, {}, epoch=7))
    assert tid == "a"
    assert (meta.producer_epoch, meta.next_producer_epoch, meta.next_producer_id, meta.previous_producer_id) == \
        (7, -1, -1, -1)


# --- coordinator_loader.after_broker_start: each answer with its note -----------------------------------------


def _partial_two_segments(root):
    """The loader tests' two segments (batches 0, 1 | 2, each with an offset index), the second batch corrupt."""
    from segdex.indexcore.coordinator.coordinator_loader import replay_coordinator_partition
    from tests.indexcore.coordinator.test_coordinator_loader import _flip, _two_segments

    part = _two_segments(root)
    first = sorted(part.glob("*.log"))[0]
    _flip(first, first.stat().st_size - 2)
    return part, replay_coordinator_partition(part, lambda _pid, _r: None)


def test_a_start_that_keeps_the_damage_says_why_in_its_note(tmp_path):
    from segdex.indexcore.coordinator.coordinator_loader import after_broker_start

    part, summary = _partial_two_segments(tmp_path)
    tail = ("and serves it as it is; its coordinator reads the damaged bytes: not predicted here, not Kafka's "
            "answer")
    after = after_broker_start(part, summary, clean_shutdown=True, recovery_point=None, log_start_offset=None)
    assert after == AfterStart(
        DIFFERS, 3,
        f"a broker's start does not re-read the damaged segment (the log dir's clean-shutdown marker) {tail}")
    after = after_broker_start(part, summary, clean_shutdown=False, recovery_point=2, log_start_offset=None)
    assert after == AfterStart(
        DIFFERS, 3, f"a broker's start does not re-read the damaged segment (the recovery point 2 is past the damaged "
                    f"segment) {tail}")


def _cut_below_the_stop(root):
    """Segment 0: a transactional batch at 0, its abort marker at 1 whose control key version is -1, a batch at 2;
    segment 3: batches 3 and 4, batch 4's payload flipped. With the log start at 2 the coordinator's load skips the
    marker and stops at batch 4; a start without a clean-shutdown marker or recovery point re-reads segment 0, cuts
    it at the marker's batch end (offset 2) and deletes segment 3."""
    import struct

    from segdex.indexcore.coordinator.coordinator_loader import PartitionReplay
    from segdex.indexcore.record import crc32c
    from segdex.indexcore.tools.segment_writer import build_batch, segment_name

    t = 1_700_000_000_000
    part = root / "__consumer_offsets-0"
    part.mkdir(parents=True)
    marker = bytearray(build_batch(1, [], producer_id=7, producer_epoch=0, control=("ABORT", 0), control_timestamp=t))
    marker[66:68] = b"\xff\xff"  # the control key's version
    struct.pack_into(">I", marker, 17, crc32c.crc32c(memoryview(marker)[21:]))
    last = bytearray(build_batch(4, [(t, b"d", b"4")]))
    last[-2] ^= 1
    (part / segment_name(0)).write_bytes(
        build_batch(0, [(t, b"a", b"1")], producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True)
        + bytes(marker) + build_batch(2, [(t, b"b", b"2")]))
    (part / segment_name(3)).write_bytes(build_batch(3, [(t, b"c", b"3")]) + bytes(last))
    for base in (0, 3):
        (part / (segment_name(base)[:-4] + ".index")).write_bytes(b"")
    summary = PartitionReplay([(b, str(part / segment_name(b))) for b in (0, 3)], lambda _p, _r: None,
                              log_start_offset=2).finish()
    return part, summary


def test_a_start_that_cuts_below_where_the_load_stopped_says_so(tmp_path):
    """The start re-reads the segment below the damaged one and truncates there (``_cut_below_the_stop``): its
    coordinator loads fewer records than this load did, and the note says where the start cuts, not that it serves
    the damaged segment as it is."""
    from segdex.indexcore.coordinator.coordinator_loader import after_broker_start

    part, summary = _cut_below_the_stop(tmp_path)
    assert (summary.next_offset, summary.stopped_segment) == (4, 3)
    for point in (None, 0):
        after = after_broker_start(part, summary, clean_shutdown=False, recovery_point=point, log_start_offset=2)
        assert after.answer == DIFFERS and after.log_end_offset == 2, point
        assert after.note.startswith("a broker's start truncates it at offset 2 (") and after.note.endswith(
            "bytes deleted), below where this load stopped (offset 4); its coordinator loads only the records below "
            "offset 2: not Kafka's answer"), after.note


def test_kafkas_start_cuts_below_where_the_load_stopped(kafka44, tmp_path):
    """Kafka 4.4's own load of the same partition (log start 2, no clean shutdown, recovery point 0): log end 2,
    segment 3 deleted, as the note above says."""
    part, _ = _cut_below_the_stop(tmp_path)
    answer = kafka44.load(part, 1_700_000_001_000, log_start_offset=2, recovery_point=0, clean=False)
    assert answer.get("logEndOffset") == 2, answer
    assert not (part / "00000000000000000003.log").exists()


def test_a_start_whose_load_fails_is_offline_with_the_failure_in_its_note(tmp_path):
    import struct

    from segdex.indexcore.coordinator.coordinator_loader import OFFLINE, after_broker_start

    part, summary = _partial_two_segments(tmp_path)
    # an aborted-transaction entry of version 256 in the first segment's .txnindex: Kafka 4.x's load throws
    (part / "00000000000000000000.txnindex").write_bytes(struct.pack(">hqqqq", 256, 7, 0, 1, 2))
    after = after_broker_start(part, summary, clean_shutdown=False, recovery_point=None, log_start_offset=None)
    assert after == AfterStart(
        OFFLINE, None, "the broker's load fails: unexpected aborted transaction version 256 in "
                       "00000000000000000000.txnindex; the broker will not start (LogManager.loadLogs rethrows it: "
                       "\"Error starting LogManager\"): no coordinator loads this partition")


def test_a_segment_that_cannot_be_read_leaves_kafkas_answer_unknown(tmp_path):
    import os

    from segdex.indexcore.coordinator.coordinator_loader import after_broker_start

    part, summary = _partial_two_segments(tmp_path)
    second = sorted(part.glob("*.log"))[1]
    second.unlink()
    os.mkfifo(second)  # not a regular file: recovery does not read it
    after = after_broker_start(part, summary, clean_shutdown=False, recovery_point=None, log_start_offset=None)
    assert after == AfterStart(UNKNOWN, None, "00000000000000000002.log cannot be read: no prediction")


def test_the_unread_bytes_of_a_later_segment_that_is_gone_count_as_none(tmp_path):
    """``_size``: a later ``.log`` that cannot be stat'ed (a dangling link) adds no unread bytes."""
    from segdex.indexcore.coordinator.coordinator_loader import replay_coordinator_partition
    from tests.indexcore.coordinator.test_coordinator_loader import _flip, _two_segments

    part = _two_segments(tmp_path)
    first, second = sorted(part.glob("*.log"))
    _flip(first, first.stat().st_size - 2)
    second.unlink()
    second.symlink_to(tmp_path / "nowhere.log")
    summary = replay_coordinator_partition(part, lambda _pid, _r: None)
    assert summary.partial and summary.unread_bytes == first.stat().st_size // 2


# --- group_metadata_manager.replay_recorded_group: share and streams groups -----------------------------------


def test_a_recorded_group_is_created_named_and_typed_by_its_first_record():
    from segdex.indexcore.coordinator.group_metadata_manager import RecordedGroup

    m = GroupMetadataManager()
    m.replay_recorded_group("share", "s", "m1", False, 3)
    group = m.groups["s"]
    assert group == RecordedGroup("s", "share", 0, {"m1": None})
    assert group.members == {"m1": None} and group.members["m1"] is None
    m.replay_recorded_group("share", "s", "m2", False, 4)
    m.replay_recorded_group("share", "s", "m1", False, None)  # the member's tombstone
    m.replay_recorded_group("share", "s", "never", False, None)  # a tombstone of a member not there: nothing
    assert group.members == {"m2": None}


def test_a_recorded_group_of_another_type_or_a_classic_group_is_refused_by_name():
    import pytest

    from segdex.indexcore.coordinator.group_metadata_manager import ClassicGroup, GroupLoadException

    m = GroupMetadataManager()
    m.replay_recorded_group("share", "s", None, True, 5)
    with pytest.raises(GroupLoadException, match="^Group s is not a streams group$"):
        m.replay_recorded_group("streams", "s", None, True, 6)
    m.groups["c"] = ClassicGroup("c", 0, "consumer", 1, "range", "l", None, {})  # a classic group, not simple
    with pytest.raises(GroupLoadException, match="^Group c is not a share group$"):
        m.replay_recorded_group("share", "c", "m", False, 1)


# --- transaction_state_manager.load_transactions: a tombstone of an id never seen -----------------------------


def test_a_tombstone_of_a_transactional_id_never_seen_removes_nothing(tmp_path):
    from segdex.indexcore.coordinator.transaction_state_manager import load_transactions
    from segdex.indexcore.tools.segment_writer import build_batch, write_partition
    from tests.indexcore.coordinator.test_transaction_state_manager import T, txn_key, txn_value

    write_partition(tmp_path, "__transaction_state", 0, [
        build_batch(0, [(T, txn_key("ghost"), None)]),
        build_batch(1, [(T, txn_key("a"), txn_value(10, 4, {}))]),
    ])
    load = load_transactions(tmp_path / "__transaction_state-0")
    assert load.undecodable == [] and load.stopped is None and sorted(load.transactions) == ["a"]


def test_a_stop_in_the_last_segment_leaves_only_the_rest_of_that_segment_unread(tmp_path):
    """``_stop``: the unread bytes are the rest of the stopping segment and every *later* one (none here)."""
    from segdex.indexcore.coordinator.coordinator_loader import replay_coordinator_partition
    from tests.indexcore.coordinator.test_coordinator_loader import _flip, _two_segments

    part = _two_segments(tmp_path)
    first, second = sorted(part.glob("*.log"))
    _flip(second, second.stat().st_size - 2)  # segment 2's only batch
    summary = replay_coordinator_partition(part, lambda _pid, _r: None)
    assert (summary.next_offset, summary.stopped_segment) == (2, 2)
    assert summary.unread_bytes == second.stat().st_size


# --- group_metadata_manager: classic groups (GroupMetadataValue) ----------------------------------------------


def _consumer_assignment() -> bytes:
    from tests.support.kafka_bytes import i16, i32, s16

    return i16(0) + i32(1) + s16("t") + i32(2) + i32(1) + i32(0) + i32(-1)  # t: [1, 0], no user data


def _subscription() -> bytes:
    from tests.support.kafka_bytes import i16, i32, s16

    return i16(0) + i32(1) + s16("t") + i32(-1)


def _classic_member(member_id: str, **over) -> dict:
    m = {"memberId": member_id, "groupInstanceId": None, "clientId": "c", "clientHost": "/h",
         "rebalanceTimeout": 30000, "sessionTimeout": 10000, "subscription": _subscription(),
         "assignment": _consumer_assignment()}
    m.update(over)
    return m


def _classic_value(protocol_type: str, *members: dict) -> dict:
    return {"protocolType": protocol_type, "generation": 4, "protocol": "range", "leader": "m1",
            "members": list(members)}


def test_consumer_protocol_bytes_too_short_or_absent_read_as_none():
    from segdex.indexcore.coordinator.group_metadata_manager import read_consumer_protocol
    from segdex.indexcore.coordinator.records import CONSUMER_PROTOCOL_ASSIGNMENT

    assert read_consumer_protocol(CONSUMER_PROTOCOL_ASSIGNMENT, None) is None
    assert read_consumer_protocol(CONSUMER_PROTOCOL_ASSIGNMENT, b"\x00") is None
    assert read_consumer_protocol(CONSUMER_PROTOCOL_ASSIGNMENT, _consumer_assignment()) == {
        "assignedPartitions": [{"topic": "t", "partitions": [1, 0]}], "userData": None}


def test_a_classic_group_with_a_protocol_type_or_members_is_not_simple():
    from segdex.indexcore.coordinator.group_metadata_manager import ClassicGroup

    assert ClassicGroup("g", -1).is_simple_group()
    assert not ClassicGroup("g", 5, "consumer").is_simple_group()
    assert not ClassicGroup("g", 5, None, members={"m": None}).is_simple_group()


def test_a_classic_groups_record_names_the_group_and_its_members_instance_ids():
    m = GroupMetadataManager()
    m.replay_group_metadata(9, "g", _classic_value("consumer", _classic_member("m1", groupInstanceId="inst-1")))
    group = m.groups["g"]
    assert (group.group_id, group.record_offset, group.current_state_timestamp_ms) == ("g", 9, None)
    member = group.members["m1"]
    assert (member.group_instance_id, member.assignment, member.subscription) == ("inst-1", (("t", 0), ("t", 1)),
                                                                                  ("t",))


def test_a_consumer_members_unreadable_assignment_is_none_and_other_protocols_are_not_read():
    m = GroupMetadataManager()
    m.replay_group_metadata(1, "g", _classic_value("consumer", _classic_member("m1", assignment=b"", subscription=b"")))
    assert (m.groups["g"].members["m1"].assignment, m.groups["g"].members["m1"].subscription) == (None, None)
    m.replay_group_metadata(2, "k", _classic_value("connect", _classic_member("w1")))  # consumer-protocol bytes
    assert (m.groups["k"].members["w1"].assignment, m.groups["k"].members["w1"].subscription) == (None, None)


def test_a_classic_groups_tombstone_of_a_group_never_seen_removes_nothing():
    m = GroupMetadataManager()
    m.replay_group_metadata(1, "never", None)
    assert m.groups == {}


# --- group_metadata_manager: consumer groups (KIP-848 records) ------------------------------------------------


def _member_value(**over) -> dict:
    v = {"instanceId": None, "rackId": None, "clientId": "c", "clientHost": "/h", "subscribedTopicNames": ["t"],
         "subscribedTopicRegex": "t.*", "rebalanceTimeoutMs": 300000, "serverAssignor": "uniform",
         "classicMemberMetadata": None}
    v.update(over)
    return v


def _assignment_value(epoch: int, partitions: list[int], pending: list[int]) -> dict:
    return {"memberEpoch": epoch, "previousMemberEpoch": epoch - 1, "state": 0,
            "assignedPartitions": [{"topicId": TOPIC_A, "partitions": partitions}],
            "partitionsPendingRevocation": [{"topicId": TOPIC_B, "partitions": pending}]}


def test_each_member_record_creates_its_group_and_member_by_id():
    for replay in ("member", "assignment", "target"):
        m = GroupMetadataManager()
        if replay == "member":
            m.replay_member_metadata("g", "m1", _member_value())
        elif replay == "assignment":
            m.replay_current_member_assignment("g", "m1", _assignment_value(3, [0], [1]))
        else:
            m.replay_target_assignment_member("g", "m1", {"topicPartitions": [{"topicId": TOPIC_A,
                                                                                "partitions": [2]}]})
        group = m.groups["g"]
        assert isinstance(group, ConsumerGroup) and group.group_id == "g", replay
        if replay == "target":
            assert group.target_assignment == {"m1": {"AAECAwQFBgcICQoLDA0ODw": (2,)}}
        else:
            assert group.members["m1"].member_id == "m1", replay


def test_each_tombstone_of_a_group_never_seen_creates_nothing():
    m = GroupMetadataManager()
    m.replay_member_metadata("g", "m1", None)
    m.replay_current_member_assignment("g", "m1", None)
    m.replay_target_assignment_member("g", "m1", None)
    m.replay_target_assignment_metadata("g", None)
    m.replay_consumer_group_metadata("g", None)
    assert m.groups == {}


def test_a_members_metadata_and_assignment_are_kept_field_by_field():
    m = GroupMetadataManager()
    m.replay_member_metadata("g", "m1", _member_value())
    m.replay_member_metadata("g", "m2", _member_value(subscribedTopicRegex=None, classicMemberMetadata={"x": 1}))
    m.replay_current_member_assignment("g", "m1", _assignment_value(3, [0, 2], [1]))
    one, two = m.groups["g"].members["m1"], m.groups["g"].members["m2"]
    assert (one.subscribed_topic_regex, one.uses_classic_protocol) == ("t.*", False)
    assert (two.subscribed_topic_regex, two.uses_classic_protocol) == (None, True)
    assert one.uses_classic_protocol is False and two.uses_classic_protocol is True
    assert one.assigned_partitions == {"AAECAwQFBgcICQoLDA0ODw": (0, 2)}
    assert one.partitions_pending_revocation == {"EBESExQVFhcYGRobHB0eHw": (1,)}


def test_a_target_assignment_tombstone_of_a_member_without_one_removes_nothing():
    m = GroupMetadataManager()
    m.replay_target_assignment_metadata("g", {"assignmentEpoch": 2})
    m.replay_target_assignment_member("g", "m1", None)
    assert m.groups["g"].target_assignment == {} and m.groups["g"].target_assignment_epoch == 2


def test_consumer_group_tombstones_out_of_order_are_kafkas_errors_word_for_word():
    import pytest

    from segdex.indexcore.coordinator.group_metadata_manager import GroupLoadException

    target = {"topicPartitions": [{"topicId": TOPIC_A, "partitions": [0]}]}
    m = GroupMetadataManager()
    m.replay_target_assignment_member("g", "m1", target)
    with pytest.raises(GroupLoadException, match=r"^Received a tombstone record to delete group g but the target "
                                                 r"assignment still has 1 members\.$"):
        m.replay_consumer_group_metadata("g", None)
    with pytest.raises(GroupLoadException, match=r"^Received a tombstone record to delete target assignment of g but "
                                                 r"the assignment still has 1 members\.$"):
        m.replay_target_assignment_metadata("g", None)
    m = GroupMetadataManager()
    m.replay_target_assignment_metadata("g", {"assignmentEpoch": 2})
    with pytest.raises(GroupLoadException, match=r"^Received a tombstone record to delete group g but did not receive "
                                                 r"ConsumerGroupTargetAssignmentMetadataValue tombstone\.$"):
        m.replay_consumer_group_metadata("g", None)
    m = GroupMetadataManager()
    m.replay_member_metadata("g", "m1", _member_value())
    m.replay_current_member_assignment("g", "m1", None)  # the member at epoch -1
    m.replay_target_assignment_member("g", "m1", target)
    with pytest.raises(GroupLoadException, match=r"^Received a tombstone record to delete member m1 but did not "
                                                 r"receive ConsumerGroupTargetAssignmentMetadataValue tombstone\.$"):
        m.replay_member_metadata("g", "m1", None)


# --- offset_metadata_manager.replay_end_transaction_marker ----------------------------------------------------


def test_a_marker_of_a_producer_without_pending_offsets_changes_nothing():
    from segdex.indexcore.coordinator.offset_metadata_manager import OffsetMetadataManager

    m = OffsetMetadataManager()
    m.replay_end_transaction_marker(42, True)
    m.replay_end_transaction_marker(43, False)
    assert (m.offsets, m.pending_transactional_offsets, m.open_transactions) == ({}, {}, {})


# --- group_coordinator_shard.replay: record type 4 reaches replay_partition_metadata --------------------------


def test_the_shard_replays_a_partition_metadata_record_and_its_tombstone():
    from segdex.indexcore.coordinator.group_coordinator_shard import GroupCoordinatorShard

    shard = GroupCoordinatorShard()
    shard.replay(0, -1, 4, {"groupId": "g"}, _topics(("a", TOPIC_A)))
    assert shard.groups.groups["g"].subscription_metadata == {"a": "AAECAwQFBgcICQoLDA0ODw"}
    shard.replay(1, -1, 4, {"groupId": "g"}, None)
    assert shard.groups.groups["g"].subscription_metadata == {}


# --- coordinator_loader.replay_coordinator_partition / replay_coordinator_records -----------------------------


def test_a_corrupt_first_batch_stops_the_load_at_position_0_with_the_whole_partition_unread(tmp_path):
    from segdex.indexcore.coordinator.coordinator_loader import replay_coordinator_partition
    from tests.indexcore.coordinator.test_coordinator_loader import _flip, _two_segments

    part = _two_segments(tmp_path)
    first, second = sorted(part.glob("*.log"))
    _flip(first, first.stat().st_size // 2 - 2)  # the first batch's payload
    summary = replay_coordinator_partition(part, lambda _pid, _r: None)
    assert (summary.next_offset, summary.stopped_segment) == (0, 0)
    assert summary.stopped.endswith("(position 0)")
    assert summary.unread_bytes == first.stat().st_size + second.stat().st_size


def test_a_segment_cut_inside_a_batch_says_how_many_bytes_are_left_where(tmp_path):
    from segdex.indexcore.coordinator.coordinator_loader import replay_coordinator_partition
    from tests.indexcore.coordinator.test_coordinator_loader import _two_segments

    part = _two_segments(tmp_path)
    first = sorted(part.glob("*.log"))[0]
    whole = first.stat().st_size
    first.write_bytes(first.read_bytes()[:-5])
    summary = replay_coordinator_partition(part, lambda _pid, _r: None)
    half = whole // 2
    assert summary.stopped == (f"00000000000000000000.log: {half - 5} bytes at position {half} are not a whole batch "
                               f"(the segment is cut inside a batch)")


def test_markers_are_skipped_without_a_marker_callback(tmp_path):
    from segdex.indexcore.coordinator.coordinator_loader import replay_coordinator_partition
    from segdex.indexcore.tools.segment_writer import build_batch, write_partition

    write_partition(tmp_path, "__consumer_offsets", 0, [
        build_batch(0, [(1, b"k0", b"v0")], producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True),
        build_batch(1, [], producer_id=7, producer_epoch=0, control=("COMMIT", 0), control_timestamp=1),
    ])
    seen: list = []
    summary = replay_coordinator_partition(tmp_path / "__consumer_offsets-0", lambda pid, r: seen.append(r.offset))
    assert seen == [0] and (summary.next_offset, summary.stopped) == (2, None)


def test_records_are_replayed_into_a_new_summary_and_a_two_byte_key_is_decoded(tmp_path):
    from segdex.indexcore.coordinator.coordinator_loader import replay_coordinator_records
    from segdex.indexcore.tools.segment_writer import build_batch, write_partition

    write_partition(tmp_path, "__consumer_offsets", 0, [
        build_batch(0, [(1, b"\x00\x01", b"v0"), (1, b"\x00", b"v1"), (1, b"\x00\x01rest", None)]),
    ])
    applied: list = []
    summary = replay_coordinator_records(tmp_path / "__consumer_offsets-0", (1,),
                                         lambda offset, rtype, key, value: (rtype, key, value),
                                         lambda offset, pid, decoded: applied.append((offset, decoded)))
    assert isinstance(summary, LoadSummary) and summary.next_offset == 3
    assert applied == [(0, (1, b"\x00\x01", b"v0")), (2, (1, b"\x00\x01rest", None))]
    assert summary.undecodable == ["offset 1: a record without a coordinator key"]


def test_records_are_replayed_into_the_summary_given_with_markers_and_the_key_named(tmp_path):
    """A caller's summary is the one filled and returned; markers reach ``on_marker``; a keyless record is listed
    under the caller's name for the key."""
    from segdex.indexcore.coordinator.coordinator_loader import replay_coordinator_records
    from segdex.indexcore.tools.segment_writer import build_batch, write_partition

    write_partition(tmp_path, "__transaction_state", 0, [
        build_batch(0, [(1, b"\x00\x00", b"v0"), (1, None, b"v1")], producer_id=7, producer_epoch=0,
                    base_sequence=0, is_transactional=True),
        build_batch(2, [], producer_id=7, producer_epoch=0, control=("ABORT", 0), control_timestamp=1),
    ])
    given, markers = LoadSummary(), []
    summary = replay_coordinator_records(tmp_path / "__transaction_state-0", (0,),
                                         lambda offset, rtype, key, value: value, lambda offset, pid, value: None,
                                         lambda pid, commit: markers.append((pid, commit)), given,
                                         key_name="transactional id")
    assert summary is given and summary.next_offset == 3 and markers == [(7, False)]
    assert summary.undecodable == ["offset 1: a record without a transactional id"]


def test_a_replay_counts_each_segment_handed_over(tmp_path):
    from segdex.indexcore.coordinator.coordinator_loader import PartitionReplay
    from segdex.indexcore.log.log_segments import segment_logs
    from segdex.indexcore.tools.segment_writer import build_batch, write_partition

    batch = [build_batch(i, [(1, f"k{i}".encode(), b"v")]) for i in range(3)]
    write_partition(tmp_path, "__consumer_offsets", 0, batch, segment_bytes=1)
    logs = segment_logs(tmp_path / "__consumer_offsets-0")[0]
    replay = PartitionReplay(logs, lambda _pid, _r: None)
    for (_, path), data in zip(logs, batch, strict=True):
        replay.feed(path, data)
    assert (replay.fed, replay.read_here, replay.finish().next_offset) == (3, 0, 3)


def test_a_log_start_offset_past_the_truncation_point_is_not_kafkas_same_answer(tmp_path):
    """The checkpointed log start offset reaches the preview: past where the start truncates (offset 1), Kafka's
    load deletes what is left and starts the log at it, so its coordinator does not load these records."""
    from segdex.indexcore.coordinator.coordinator_loader import after_broker_start

    part, summary = _partial_two_segments(tmp_path)
    assert after_broker_start(part, summary, False, None, 1).answer == SAME
    after = after_broker_start(part, summary, False, None, 2)
    assert (after.answer, after.log_end_offset) == (DIFFERS, 2)


# --- offset commits of a group no record describes; a value too short for its version ------------------------


def test_an_offset_commit_of_an_unknown_group_creates_its_simple_group():
    from segdex.indexcore.coordinator.group_metadata_manager import ClassicGroup
    from segdex.indexcore.coordinator.offset_metadata_manager import OffsetMetadataManager

    m = OffsetMetadataManager()
    m.group_metadata_manager.get_or_maybe_create_classic_group("g")
    assert m.group_metadata_manager.groups == {"g": ClassicGroup("g", -1)}
    assert m.group_metadata_manager.groups["g"].is_simple_group()


def test_a_transaction_value_too_short_for_its_version_is_named_as_the_value(tmp_path):
    from segdex.indexcore.coordinator.transaction_state_manager import load_transactions
    from segdex.indexcore.tools.segment_writer import build_batch, write_partition
    from tests.indexcore.coordinator.test_transaction_state_manager import T, txn_key

    write_partition(tmp_path, "__transaction_state", 0, [build_batch(0, [(T, txn_key("a"), b"\x00")])])
    load = load_transactions(tmp_path / "__transaction_state-0")
    assert load.undecodable == ["offset 0: record value too short for its version (1 bytes)"]


def _cut_above_the_stop(root):
    """Segment 0: batches 0, 1 and 2, batch 1's payload flipped (its CRC fails); segment 3: batches 3 and 4 and
    batch 5 cut inside. The coordinator's load stops at offset 1 in segment 0; a start without a clean-shutdown
    marker but with recovery point 3 re-reads segment 3 alone, truncates it at 5 and serves segment 0 as it is."""
    from segdex.indexcore.coordinator.coordinator_loader import replay_coordinator_partition
    from segdex.indexcore.tools.segment_writer import build_batch, segment_name

    t = 1_700_000_000_000
    part = root / "__consumer_offsets-0"
    part.mkdir(parents=True)
    bad = bytearray(build_batch(1, [(t, b"b", b"1")]))
    bad[-2] ^= 1
    (part / segment_name(0)).write_bytes(build_batch(0, [(t, b"a", b"0")]) + bytes(bad)
                                         + build_batch(2, [(t, b"c", b"2")]))
    (part / segment_name(3)).write_bytes(build_batch(3, [(t, b"d", b"3")]) + build_batch(4, [(t, b"e", b"4")])
                                         + build_batch(5, [(t, b"f", b"5")])[:-7])
    for base in (0, 3):
        (part / (segment_name(base)[:-4] + ".index")).write_bytes(b"")
    return part, replay_coordinator_partition(part, lambda _pid, _r: None)


def test_a_start_that_truncates_a_later_segment_says_it_serves_the_damaged_one(tmp_path):
    """A start that truncates (segment 3's cut tail) above where the load stopped (offset 1, segment 0, below the
    recovery point 3, ``_cut_above_the_stop``): Kafka's ``LogLoader.recoverLog`` re-reads only the segments from
    the recovery point's floor, so the damaged batch in segment 0 is served as it is: the note says so, not that
    the start cuts below where this load stopped."""
    from segdex.indexcore.coordinator.coordinator_loader import after_broker_start

    part, summary = _cut_above_the_stop(tmp_path)
    assert (summary.next_offset, summary.stopped_segment) == (1, 0)
    after = after_broker_start(part, summary, clean_shutdown=False, recovery_point=3, log_start_offset=None)
    assert after == AfterStart(
        DIFFERS, 5, "a broker's start does not re-read the damaged segment (the recovery point 3 is past the damaged "
                    "segment) and serves it as it is; its coordinator reads the damaged bytes: not predicted here, "
                    "not Kafka's answer")


def test_kafkas_start_truncates_a_later_segment_and_keeps_the_damaged_one(kafka44, tmp_path):
    """Kafka 4.4's own load of the same partition (no clean shutdown, recovery point 3): it recovers segment 3
    alone and ends the log at 5, as the note above says."""
    part, _ = _cut_above_the_stop(tmp_path)
    answer = kafka44.load(part, 1_700_000_001_000, recovery_point=3, clean=False)
    assert answer.get("logEndOffset") == 5 and answer.get("recovered") == [3], answer
