"""``kafka-dump-log --offsets-decoder / --transaction-log-decoder`` record decoding (``indexcore.coordinator_records``)
on coordinator records built here byte by byte.

The bytes follow Kafka's message schemas (``group-coordinator/src/main/resources/common/message/*.json``,
``TransactionLogValue.json``, clients' ``ConsumerProtocolSubscription``/``ConsumerProtocolAssignment``): a key is
an int16 record type then the key message (version 0, non-flexible), a value an int16 version then the value
message at that version (OffsetCommitValue/GroupMetadataValue flexible from 4, TransactionLogValue from 1, the
KIP-848 consumer group records flexible at 0). The expected text follows ``DumpLogSegments``'
``CoordinatorRecordMessageParser``: ``{"type":"<id>","data":{...}}`` for the key,
``{"version":"<v>","data":{...}}`` for the value, ``<DELETE>`` for a tombstone, ``Unknown record type N at offset O,
skipping.``, ``Error at offset O, skipping. <reason>``; a consumer-protocol group's subscription and assignment
decoded (or kept as base64 when they do not decode); the transaction status as its state name. The JSON rules
are the generated ``*JsonConverter``'s (see tests/indexcore/coordinator/test_message_format.py).
"""

from __future__ import annotations

import base64
import re
import struct

import pytest

from segdex.indexcore.coordinator.records import (
    DELETE,
    OffsetsMessageParser,
    TransactionLogMessageParser,
)
from segdex.indexcore.protocol.message_format import MessageFormatException
from tests.support.coordinator_bytes import MEMBER_KEY, TOPIC_ID, member_metadata
from tests.support.kafka_bytes import b32, cstr, i16, i32, i64, s16, uv

TOPIC_ID_TEXT = "AAECAwQFBgcICQoLDA0ODw"  # Uuid.toString of TOPIC_ID: URL-safe base64 of 00 01 .. 0f, no padding


def offsets(offset: int, key: bytes | None, value: bytes | None) -> tuple[str | None, str | None]:
    return OffsetsMessageParser().parse(offset, key, value)


def txn(offset: int, key: bytes | None, value: bytes | None) -> tuple[str | None, str | None]:
    return TransactionLogMessageParser().parse(offset, key, value)


# --- offset commits -----------------------------------------------------------------------------------------

OFFSET_KEY = i16(1) + s16("grp") + s16("topic") + i32(7)
OFFSET_KEY_TEXT = '{"type":"1","data":{"group":"grp","topic":"topic","partition":7}}'


def test_offset_commit_v1_with_its_expire_timestamp():
    """OffsetCommitKey (group, topic, int32 partition); OffsetCommitValue v1 holds expireTimestamp ("versions": "1")."""
    value = i16(1) + i64(42) + s16("meta") + i64(1000) + i64(2000)
    assert offsets(3, OFFSET_KEY, value) == (
        OFFSET_KEY_TEXT,
        '{"version":"1","data":{"offset":42,"metadata":"meta","commitTimestamp":1000,"expireTimestamp":2000}}')


def test_offset_commit_v3_has_a_leader_epoch_and_no_expire_timestamp():
    value = i16(3) + i64(42) + i32(5) + s16("") + i64(1000)
    assert offsets(3, OFFSET_KEY, value) == (
        OFFSET_KEY_TEXT,
        '{"version":"3","data":{"offset":42,"leaderEpoch":5,"metadata":"","commitTimestamp":1000}}')


def test_offset_commit_v4_is_flexible_with_a_tagged_topic_id():
    """Version 4: compact strings and a tagged-field section; the topic id (tag 0) printed as ``Uuid.toString``."""
    value = i16(4) + i64(20) + i32(0) + cstr("m") + i64(1000) + uv(1) + uv(0) + uv(16) + TOPIC_ID
    assert offsets(3, OFFSET_KEY, value) == (
        OFFSET_KEY_TEXT,
        '{"version":"4","data":{"offset":20,"leaderEpoch":0,"metadata":"m","commitTimestamp":1000,'
        f'"topicId":"{TOPIC_ID_TEXT}"}}}}')
    assert offsets(3, OFFSET_KEY, i16(4) + i64(20) + i32(0) + cstr("m") + i64(1000) + uv(0)) == (
        OFFSET_KEY_TEXT,
        '{"version":"4","data":{"offset":20,"leaderEpoch":0,"metadata":"m","commitTimestamp":1000}}')


def test_offset_commit_tombstone():
    assert offsets(3, OFFSET_KEY, None) == (OFFSET_KEY_TEXT, DELETE)
    assert DELETE == "<DELETE>"


def test_offset_commit_value_version_out_of_range():
    """OffsetCommitValue's ``validVersions`` are 0-4."""
    assert offsets(9, OFFSET_KEY, i16(5) + i64(1)) == (
        "Error at offset 9, skipping. OffsetCommitValue: version 5 is not in the supported range 0-4", None)


def test_offset_commit_with_a_null_metadata_is_an_error():
    """``metadata`` is not nullable: Kafka's reader throws ``non-nullable field metadata was serialized as null``."""
    assert offsets(9, OFFSET_KEY, i16(1) + i64(1) + s16(None) + i64(1) + i64(1)) == (
        "Error at offset 9, skipping. non-nullable field metadata was serialized as null", None)


# --- keys and values too short, unknown types, missing keys -------------------------------------------------

def test_missing_key_is_refused_outright():
    """Kafka throws (it does not skip) on a coordinator record without a key, with 4.4.0's text (the string in
    kafka-tools-4.4.0.jar's ``DumpLogSegments$CoordinatorRecordMessageParser``)."""
    with pytest.raises(MessageFormatException) as info:
        offsets(7, None, b"\x00\x01")
    assert str(info.value) == ("Failed to decode message at offset 7 using the specified decoder "
                               "(message had a missing key)")
    with pytest.raises(MessageFormatException) as info:
        txn(8, None, None)
    assert str(info.value) == ("Failed to decode message at offset 8 using the specified decoder "
                               "(message had a missing key)")


@pytest.mark.parametrize("key", [b"", b"\x00"])
def test_key_too_short_for_its_record_type(key: bytes):
    assert offsets(5, key, None) == (
        f"Error at offset 5, skipping. record key too short for its version ({len(key)} bytes)", None)


@pytest.mark.parametrize("value", [b"", b"\x00"])
def test_value_too_short_for_its_version(value: bytes):
    assert offsets(5, OFFSET_KEY, value) == (
        f"Error at offset 5, skipping. record value too short for its version ({len(value)} bytes)", None)


def test_two_byte_keys_hold_just_a_record_type():
    """A key of exactly its int16 record type is long enough to name the type."""
    assert offsets(5, i16(99), None) == ("Unknown record type 99 at offset 5, skipping.", None)
    assert offsets(5, i16(10), None) == (
        "Record type 10 (SHARE_GROUP_MEMBER_METADATA) at offset 5 is not decoded by segdex, skipping.", None)
    assert txn(5, i16(1), None) == ("Unknown record type 1 at offset 5, skipping.", None)


# --- classic groups and the embedded consumer protocol ------------------------------------------------------

SUBSCRIPTION_V1 = i16(1) + i32(1) + s16("data") + b32(None) + i32(1) + s16("data") + i32(1) + i32(0)
ASSIGNMENT_V0 = i16(0) + i32(1) + s16("data") + i32(2) + i32(0) + i32(1) + b32(b"")
SUBSCRIPTION_V1_JSON = '{"topics":["data"],"userData":null,"ownedPartitions":[{"topic":"data","partitions":[0]}]}'
ASSIGNMENT_V0_JSON = '{"assignedPartitions":[{"topic":"data","partitions":[0,1]}],"userData":""}'


def member_v3(member_id: str, subscription: bytes | None, assignment: bytes | None) -> bytes:
    """GroupMetadataValue v3's MemberMetadata: groupInstanceId (v3+) null, rebalanceTimeout (v1+)."""
    return (s16(member_id) + s16(None) + s16("c") + s16("/h") + i32(300000) + i32(45000)
            + b32(subscription) + b32(assignment))


def member_json(member_id: str, subscription: str, assignment: str) -> str:
    return (f'{{"memberId":"{member_id}","groupInstanceId":null,"clientId":"c","clientHost":"/h",'
            f'"rebalanceTimeout":300000,"sessionTimeout":45000,"subscription":{subscription},'
            f'"assignment":{assignment}}}')


def group_v3(protocol_type: str, *members: bytes) -> bytes:
    return (i16(3) + s16(protocol_type) + i32(5) + s16("range") + s16("m1") + i64(1700) + i32(len(members))
            + b"".join(members))


def group_json(protocol_type: str, *members: str) -> str:
    return (f'{{"version":"3","data":{{"protocolType":"{protocol_type}","generation":5,"protocol":"range",'
            f'"leader":"m1","currentStateTimestamp":1700,"members":[{",".join(members)}]}}}}')


GROUP_KEY = i16(2) + s16("g")
GROUP_KEY_TEXT = '{"type":"2","data":{"group":"g"}}'


def test_consumer_group_members_show_their_protocol_decoded():
    """``prepareGroupMetadataValue``: for protocol type ``consumer`` each member's subscription and assignment
    are read (int16 version, then the message at it) and printed as JSON."""
    value = group_v3("consumer", member_v3("m1", SUBSCRIPTION_V1, ASSIGNMENT_V0))
    assert offsets(0, GROUP_KEY, value) == (
        GROUP_KEY_TEXT, group_json("consumer", member_json("m1", SUBSCRIPTION_V1_JSON, ASSIGNMENT_V0_JSON)))


def test_consumer_protocol_bytes_that_do_not_decode_stay_base64():
    """``replace`` swallows the reader's exception and keeps the bytes (Jackson prints them as base64)."""
    bad_version = i16(9) + i32(0) + b32(None)
    one_byte = b"\x00"
    value = group_v3("consumer", member_v3("m1", bad_version, one_byte), member_v3("m2", SUBSCRIPTION_V1, b""))
    expected = group_json(
        "consumer",
        member_json("m1", f'"{base64.b64encode(bad_version).decode()}"', '"AA=="'),
        member_json("m2", SUBSCRIPTION_V1_JSON, '""'))
    assert offsets(0, GROUP_KEY, value) == (GROUP_KEY_TEXT, expected)


def test_other_protocol_types_keep_their_bytes():
    value = group_v3("connect", member_v3("m1", SUBSCRIPTION_V1, ASSIGNMENT_V0))
    expected = group_json("connect", member_json("m1", f'"{base64.b64encode(SUBSCRIPTION_V1).decode()}"',
                                                 f'"{base64.b64encode(ASSIGNMENT_V0).decode()}"'))
    assert offsets(0, GROUP_KEY, value) == (GROUP_KEY_TEXT, expected)


# --- consumer groups (KIP-848): flexible at version 0 -------------------------------------------------------

GROUP_ID_KEY = i16(3) + s16("g")
GROUP_ID_KEY_TEXT = '{"type":"3","data":{"groupId":"g"}}'


def test_consumer_group_metadata_is_flexible_with_a_tagged_hash():
    """ConsumerGroupMetadataValue: epoch, then the tagged metadataHash (tag 0, default 0) printed when set."""
    tags = uv(2) + uv(0) + uv(8) + i64(123) + uv(5) + uv(1) + b"\xff"
    assert offsets(1, GROUP_ID_KEY, i16(0) + i32(7) + tags) == (
        GROUP_ID_KEY_TEXT, '{"version":"0","data":{"epoch":7,"metadataHash":123}}')
    assert offsets(1, GROUP_ID_KEY, i16(0) + i32(7) + uv(1) + uv(0) + uv(8) + i64(0)) == (
        GROUP_ID_KEY_TEXT, '{"version":"0","data":{"epoch":7}}')


def test_consumer_group_metadata_version_out_of_range():
    """The KIP-848 records have ``"validVersions": "0"``."""
    assert offsets(1, GROUP_ID_KEY, i16(1) + i32(7) + uv(0)) == (
        "Error at offset 1, skipping. ConsumerGroupMetadataValue: version 1 is not in the supported range 0-0", None)


MEMBER_KEY_TEXT = '{"type":"5","data":{"groupId":"g","memberId":"m"}}'


def member_metadata_json(tail: str) -> str:
    return ('{"version":"0","data":{"instanceId":null,"rackId":"r1","clientId":"c","clientHost":"/h",'
            '"subscribedTopicNames":["data"],"subscribedTopicRegex":"d.*","rebalanceTimeoutMs":300000,'
            f'"serverAssignor":"uniform"{tail}}}}}')


def test_consumer_group_member_classic_metadata():
    """classicMemberMetadata (tag 0, nullable, JSON default null = the empty struct): printed when null or when it
    differs from ``new ClassicMemberMetadata()`` (sessionTimeoutMs -1, no protocols); its marker is a uvarint."""
    protocols = uv(2) + cstr("range") + uv(3) + b"\x01\x02" + uv(0)
    classic = uv(1) + i32(45000) + protocols + uv(0)
    tags = uv(1) + uv(0) + uv(len(classic)) + classic
    assert offsets(2, MEMBER_KEY, member_metadata(tags)) == (MEMBER_KEY_TEXT, member_metadata_json(
        ',"classicMemberMetadata":{"sessionTimeoutMs":45000,'
        '"supportedProtocols":[{"name":"range","metadata":"AQI="}]}'))
    empty = uv(1) + i32(-1) + uv(1) + uv(0)
    tags = uv(1) + uv(0) + uv(len(empty)) + empty
    assert offsets(2, MEMBER_KEY, member_metadata(tags)) == (MEMBER_KEY_TEXT, member_metadata_json(""))
    tags = uv(1) + uv(0) + uv(1) + uv(0)
    assert offsets(2, MEMBER_KEY, member_metadata(tags)) == (
        MEMBER_KEY_TEXT, member_metadata_json(',"classicMemberMetadata":null'))


def test_absent_tagged_fields_with_an_empty_default_are_not_printed():
    """Kafka's generated ``read`` sets an absent tagged field to its default before reading the tagged section;
    ``"default": null`` is the empty default (``new ClassicMemberMetadata()``, ``new ArrayList<>(0)``), which
    the converter skips. Records written before these tags existed have neither."""
    assert offsets(2, MEMBER_KEY, member_metadata(uv(0))) == (MEMBER_KEY_TEXT, member_metadata_json(""))
    key = i16(8) + s16("g") + s16("m")
    value = (i16(0) + i32(5) + i32(4) + b"\x00" + uv(2) + TOPIC_ID + uv(2) + i32(0) + uv(0) + uv(1) + uv(0))
    assert offsets(2, key, value) == (
        '{"type":"8","data":{"groupId":"g","memberId":"m"}}',
        '{"version":"0","data":{"memberEpoch":5,"previousMemberEpoch":4,"state":0,"assignedPartitions":'
        f'[{{"topicId":"{TOPIC_ID_TEXT}","partitions":[0]}}],"partitionsPendingRevocation":[]}}}}')


def test_current_member_assignment_with_assignment_epochs():
    """ConsumerGroupCurrentMemberAssignmentValue: topic partitions with their tagged assignmentEpochs (tag 0)."""
    key = i16(8) + s16("g") + s16("m")
    epochs = uv(3) + i32(2) + i32(3)
    entry = TOPIC_ID + uv(3) + i32(0) + i32(1) + uv(1) + uv(0) + uv(len(epochs)) + epochs
    value = i16(0) + i32(5) + i32(4) + b"\x01" + uv(2) + entry + uv(1) + uv(0)
    assert offsets(4, key, value) == (
        '{"type":"8","data":{"groupId":"g","memberId":"m"}}',
        '{"version":"0","data":{"memberEpoch":5,"previousMemberEpoch":4,"state":1,"assignedPartitions":'
        f'[{{"topicId":"{TOPIC_ID_TEXT}","partitions":[0,1],"assignmentEpochs":[2,3]}}],'
        '"partitionsPendingRevocation":[]}}')


def test_regular_expression_record_key_has_two_strings():
    key = i16(16) + s16("g") + s16("d.*")
    value = i16(0) + uv(2) + cstr("data") + i64(1) + i64(99) + uv(0)
    assert offsets(6, key, value) == (
        '{"type":"16","data":{"groupId":"g","regularExpression":"d.*"}}',
        '{"version":"0","data":{"topics":["data"],"version":1,"timestamp":99}}')


# --- transactions -------------------------------------------------------------------------------------------

TXN_KEY = i16(0) + s16("txn")
TXN_KEY_TEXT = '{"type":"0","data":{"transactionalId":"txn"}}'


def txn_v0(status: int) -> bytes:
    return i16(0) + i64(1000) + i16(2) + i32(60000) + struct.pack(">b", status) + i32(-1) + i64(5) + i64(4)


def txn_v0_json(state: str) -> str:
    return ('{"version":"0","data":{"producerId":1000,"producerEpoch":2,"transactionTimeoutMs":60000,'
            f'"transactionStatus":"{state}","transactionPartitions":null,"transactionLastUpdateTimestampMs":5,'
            '"transactionStartTimestampMs":4}}')


@pytest.mark.parametrize(("status", "state"), [(0, "Empty"), (4, "CompleteCommit"), (7, "PrepareEpochFence")])
def test_transaction_log_v0_status_by_name(status: int, state: str):
    """TransactionLogValue v0 (non-flexible; transactionPartitions nullable); the status as its state name."""
    assert txn(2, TXN_KEY, txn_v0(status)) == (TXN_KEY_TEXT, txn_v0_json(state))


def test_transaction_log_unknown_status_is_an_error():
    """``TransactionState.fromId`` knows ids 0-7 only."""
    key_text, payload = txn(2, TXN_KEY, txn_v0(9))
    assert payload is None
    assert re.fullmatch(r"Error at offset 2, skipping\. Unknown transaction state id 9"
                        r"( from the transaction status message)?", key_text)


def test_transaction_log_v1_is_flexible_with_tagged_producer_fields():
    """Version 1: compact arrays and strings; previousProducerId (tag 0) and clientTransactionVersion (tag 2)
    printed in declaration order when they differ from their defaults (-1, 0)."""
    partitions = uv(2) + cstr("data") + uv(2) + i32(0) + uv(0)
    tags = uv(3) + uv(0) + uv(8) + i64(999) + uv(1) + uv(8) + i64(-1) + uv(2) + uv(2) + i16(2)
    value = i16(1) + i64(1000) + i16(2) + i32(60000) + b"\x01" + partitions + i64(5) + i64(4) + tags
    assert txn(2, TXN_KEY, value) == (
        TXN_KEY_TEXT,
        '{"version":"1","data":{"producerId":1000,"previousProducerId":999,"producerEpoch":2,'
        '"transactionTimeoutMs":60000,"transactionStatus":"Ongoing","transactionPartitions":'
        '[{"topic":"data","partitionIds":[0]}],"transactionLastUpdateTimestampMs":5,'
        '"transactionStartTimestampMs":4,"clientTransactionVersion":2}}')
    assert txn(2, TXN_KEY, None) == (TXN_KEY_TEXT, DELETE)
