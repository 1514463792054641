"""The records of Kafka's internal topics, decoded as ``kafka-dump-log`` decodes them.

``__consumer_offsets`` (the group coordinator, ``--offsets-decoder``) and ``__transaction_state`` (the transaction
coordinator, ``--transaction-log-decoder``) hold *coordinator records*: the key is an int16 record type followed
by that type's key message (version 0), the value an int16 version followed by the value message at that
version; a null value is a tombstone (``<DELETE>``). ``DumpLogSegments`` (Kafka 4.x, ``OffsetsMessageParser``,
``TransactionLogMessageParser``) prints ``{"type":"<record type>","data":{...}}`` for the key and
``{"version":"<version>","data":{...}}`` for the value, with two refinements kept here: a classic group's members
of protocol type ``consumer`` show their subscription and assignment decoded (``ConsumerProtocolSubscription``,
``ConsumerProtocolAssignment``: an int16 version, then the message; bytes that do not decode stay base64), and a
transaction's status shows as its state name.

The schemas below are those of Kafka 4.4 (``CoordinatorRecordType`` 0-8 and 16: offset commits, classic groups,
consumer groups; ``TransactionLogKey``/``TransactionLogValue``). Share and streams group records (types 10-15,
17-23) are named but not decoded.
"""

from __future__ import annotations

from typing import Any

from segdex.indexcore.protocol.message_format import (
    ANY_VERSION,
    INT16,
    Array,
    Field,
    Message,
    MessageFormatException,
    Struct,
    java_utf8,
    json_text,
    read_message,
    struct_json,
)

V0 = (0, 0)


def _key(name: str, *fields: str) -> Message:
    """A coordinator key: version 0, non-flexible strings (and the partition of an offset commit)."""
    return Message(name, Struct(tuple(Field(f, "int32" if f == "partition" else "string") for f in fields)))


def _flexible(name: str, *fields: Field) -> Message:
    return Message(name, Struct(fields), V0, flexible_from=0)


# --- offset commits -----------------------------------------------------------------------------------------
OFFSET_COMMIT_KEY = _key("OffsetCommitKey", "group", "topic", "partition")
LEGACY_OFFSET_COMMIT_VALUE = Message("LegacyOffsetCommitValue", Struct((
    Field("offset", "int64"), Field("metadata", "string"), Field("commitTimestamp", "int64"))))
OFFSET_COMMIT_VALUE = Message("OffsetCommitValue", Struct((
    Field("offset", "int64"),
    Field("leaderEpoch", "int32", versions=(3, 32767), default=-1),
    Field("metadata", "string"),
    Field("commitTimestamp", "int64"),
    Field("expireTimestamp", "int64", versions=(1, 1), default=-1),
    Field("topicId", "uuid", versions=(4, 32767), tag=0, default=bytes(16)),
)), valid_versions=(0, 4), flexible_from=4)

# --- classic groups -----------------------------------------------------------------------------------------
GROUP_METADATA_KEY = _key("GroupMetadataKey", "group")
_MEMBER_METADATA = Struct((
    Field("memberId", "string"),
    Field("groupInstanceId", "string", versions=(3, 32767), nullable=(3, 32767)),
    Field("clientId", "string"),
    Field("clientHost", "string"),
    Field("rebalanceTimeout", "int32", versions=(1, 32767)),
    Field("sessionTimeout", "int32"),
    Field("subscription", "bytes"),
    Field("assignment", "bytes"),
))
GROUP_METADATA_VALUE = Message("GroupMetadataValue", Struct((
    Field("protocolType", "string"),
    Field("generation", "int32"),
    Field("protocol", "string", nullable=(0, 32767)),
    Field("leader", "string", nullable=(0, 32767)),
    Field("currentStateTimestamp", "int64", versions=(2, 32767), default=-1),
    Field("members", Array(_MEMBER_METADATA)),
)), valid_versions=(0, 4), flexible_from=4)

# The embedded consumer protocol (clients' ConsumerProtocol): never flexible.
_TOPIC_PARTITION = Struct((Field("topic", "string"), Field("partitions", Array("int32"))))
CONSUMER_PROTOCOL_SUBSCRIPTION = Message("ConsumerProtocolSubscription", Struct((
    Field("topics", Array("string")),
    Field("userData", "bytes", nullable=(0, 32767)),
    Field("ownedPartitions", Array(_TOPIC_PARTITION), versions=(1, 32767)),
    Field("generationId", "int32", versions=(2, 32767), default=-1),
    Field("rackId", "string", versions=(3, 32767), nullable=(3, 32767)),
)), valid_versions=(0, 3))
CONSUMER_PROTOCOL_ASSIGNMENT = Message("ConsumerProtocolAssignment", Struct((
    Field("assignedPartitions", Array(_TOPIC_PARTITION)),
    Field("userData", "bytes", nullable=(0, 32767)),
)), valid_versions=(0, 3))

# --- consumer groups (KIP-848) ------------------------------------------------------------------------------
GROUP_ID_KEY = _key("ConsumerGroupKey", "groupId")
GROUP_MEMBER_KEY = _key("ConsumerGroupMemberKey", "groupId", "memberId")
_NULLABLE = ANY_VERSION
CONSUMER_GROUP_METADATA_VALUE = _flexible(
    "ConsumerGroupMetadataValue",
    Field("epoch", "int32"),
    Field("metadataHash", "int64", tag=0, default=0))
CONSUMER_GROUP_PARTITION_METADATA_VALUE = _flexible(
    "ConsumerGroupPartitionMetadataValue",
    Field("topics", Array(Struct((
        Field("topicId", "uuid"),
        Field("topicName", "string"),
        Field("numPartitions", "int32"),
        Field("partitionMetadata", Array(Struct((Field("partition", "int32"), Field("racks", Array("string")))))),
    )))))
CONSUMER_GROUP_MEMBER_METADATA_VALUE = _flexible(
    "ConsumerGroupMemberMetadataValue",
    Field("instanceId", "string", nullable=_NULLABLE),
    Field("rackId", "string", nullable=_NULLABLE),
    Field("clientId", "string"),
    Field("clientHost", "string"),
    Field("subscribedTopicNames", Array("string")),
    Field("subscribedTopicRegex", "string", nullable=_NULLABLE),
    Field("rebalanceTimeoutMs", "int32", default=-1),
    Field("serverAssignor", "string", nullable=_NULLABLE),
    Field("classicMemberMetadata", Struct((
        Field("sessionTimeoutMs", "int32", default=-1),
        Field("supportedProtocols", Array(Struct((Field("name", "string"), Field("metadata", "bytes")))),
              default=[]),
    )), nullable=_NULLABLE, tag=0, default=None))
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = _flexible(
    "ConsumerGroupTargetAssignmentMetadataValue",
    Field("assignmentEpoch", "int32"),
    Field("assignmentTimestamp", "int64", tag=0, default=0))
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = _flexible(
    "ConsumerGroupTargetAssignmentMemberValue",
    Field("topicPartitions", Array(Struct((Field("topicId", "uuid"), Field("partitions", Array("int32")))))))
_ASSIGNED = Array(Struct((
    Field("topicId", "uuid"),
    Field("partitions", Array("int32")),
    Field("assignmentEpochs", Array("int32"), nullable=_NULLABLE, tag=0, default=None),
)))
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = _flexible(
    "ConsumerGroupCurrentMemberAssignmentValue",
    Field("memberEpoch", "int32"),
    Field("previousMemberEpoch", "int32"),
    Field("state", "int8"),
    Field("assignedPartitions", _ASSIGNED),
    Field("partitionsPendingRevocation", _ASSIGNED))
CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE = _flexible(
    "ConsumerGroupRegularExpressionValue",
    Field("topics", Array("string")),
    Field("version", "int64"),
    Field("timestamp", "int64"))

# record type (CoordinatorRecordType.id) -> (key schema, value schema or None when segdex does not decode it)
GROUP_RECORD_TYPES: dict[int, tuple[str, Message, Message | None]] = {
    0: ("LEGACY_OFFSET_COMMIT", OFFSET_COMMIT_KEY, LEGACY_OFFSET_COMMIT_VALUE),
    1: ("OFFSET_COMMIT", OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
    2: ("GROUP_METADATA", GROUP_METADATA_KEY, GROUP_METADATA_VALUE),
    3: ("CONSUMER_GROUP_METADATA", GROUP_ID_KEY, CONSUMER_GROUP_METADATA_VALUE),
    4: ("CONSUMER_GROUP_PARTITION_METADATA", GROUP_ID_KEY, CONSUMER_GROUP_PARTITION_METADATA_VALUE),
    5: ("CONSUMER_GROUP_MEMBER_METADATA", GROUP_MEMBER_KEY, CONSUMER_GROUP_MEMBER_METADATA_VALUE),
    6: ("CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA", GROUP_ID_KEY, CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    7: ("CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER", GROUP_MEMBER_KEY, CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    8: ("CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT", GROUP_MEMBER_KEY,
        CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
    16: ("CONSUMER_GROUP_REGULAR_EXPRESSION", _key("ConsumerGroupRegularExpressionKey", "groupId",
                                                   "regularExpression"), CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE),
}
UNDECODED_GROUP_RECORD_TYPES = {
    10: "SHARE_GROUP_MEMBER_METADATA", 11: "SHARE_GROUP_METADATA", 12: "SHARE_GROUP_TARGET_ASSIGNMENT_METADATA",
    13: "SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER", 14: "SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT",
    15: "SHARE_GROUP_STATE_PARTITION_METADATA", 17: "STREAMS_GROUP_METADATA", 19: "STREAMS_GROUP_MEMBER_METADATA",
    20: "STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA", 21: "STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER",
    22: "STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT", 23: "STREAMS_GROUP_TOPOLOGY",
}

# --- transactions -------------------------------------------------------------------------------------------
TRANSACTION_LOG_KEY = _key("TransactionLogKey", "transactionalId")
TRANSACTION_LOG_VALUE = Message("TransactionLogValue", Struct((
    Field("producerId", "int64"),
    Field("previousProducerId", "int64", versions=(1, 32767), tag=0, default=-1),
    Field("nextProducerId", "int64", versions=(1, 32767), tag=1, default=-1),
    Field("producerEpoch", "int16"),
    Field("nextProducerEpoch", "int16", versions=(1, 32767), tag=3, default=-1),
    Field("transactionTimeoutMs", "int32"),
    Field("transactionStatus", "int8"),
    Field("transactionPartitions", Array(Struct((Field("topic", "string"), Field("partitionIds", Array("int32"))))),
          nullable=(0, 32767)),
    Field("transactionLastUpdateTimestampMs", "int64"),
    Field("transactionStartTimestampMs", "int64"),
    Field("clientTransactionVersion", "int16", versions=(1, 32767), tag=2, default=0),
)), valid_versions=(0, 1), flexible_from=1)
TRANSACTION_RECORD_TYPES: dict[int, tuple[str, Message, Message | None]] = {
    0: ("TRANSACTION_LOG", TRANSACTION_LOG_KEY, TRANSACTION_LOG_VALUE),
}
# TransactionState.stateName by id
TRANSACTION_STATES = {0: "Empty", 1: "Ongoing", 2: "PrepareCommit", 3: "PrepareAbort", 4: "CompleteCommit",
                      5: "CompleteAbort", 6: "Dead", 7: "PrepareEpochFence"}

DELETE = "<DELETE>"


def _version(data: bytes, what: str) -> int:
    if len(data) < INT16.size:
        raise MessageFormatException(f"record {what} too short for its version ({len(data)} bytes)")
    return INT16.unpack_from(data)[0]


def read_record_key(schema: Message, key: bytes) -> dict[str, Any]:
    """A coordinator record's key: its int16 record type, then the key message (version 0)."""
    return read_message(schema, key[INT16.size:], 0)


def read_record_value(schema: Message, value: bytes) -> dict[str, Any]:
    """A coordinator record's value: its int16 version, then the message at that version
    (``CoordinatorRecordSerde.readMessage``). MessageFormatException when it cannot be read."""
    version = _version(value, "value")
    return read_message(schema, value[INT16.size:], version)


def _decode_consumer_protocol(message: Message, raw: bytes | None) -> Any:
    """A member's subscription or assignment bytes decoded (int16 version + message), or the bytes kept."""
    import base64

    if raw is None:
        return None
    try:
        version = _version(raw, "consumer protocol")
        return struct_json(message.struct, read_message(message, raw[INT16.size:], version))
    except MessageFormatException:
        return base64.b64encode(raw).decode()  # base64 is ASCII, which UTF-8 reads alike


def _group_metadata_json(data: dict) -> dict:
    out = struct_json(GROUP_METADATA_VALUE.struct, data)
    if data.get("protocolType") == "consumer":
        for member, raw in zip(out["members"], data["members"], strict=True):
            member["subscription"] = _decode_consumer_protocol(CONSUMER_PROTOCOL_SUBSCRIPTION, raw["subscription"])
            member["assignment"] = _decode_consumer_protocol(CONSUMER_PROTOCOL_ASSIGNMENT, raw["assignment"])
    return out


class CoordinatorRecordParser:
    """``DumpLogSegments.CoordinatorRecordMessageParser``: (key text, value text) of one coordinator record.

    Kafka's messages for what it cannot decode are kept: ``Unknown record type N at offset O, skipping.`` and
    ``Error at offset O, skipping. <reason>`` (the reason in segdex's words).
    """

    types: dict[int, tuple[str, Message, Message | None]] = {}
    undecoded: dict[int, str] = {}

    def value_json(self, record_type: int, data: dict) -> dict:
        return struct_json(self.types[record_type][2].struct, data)

    def parse(self, offset: int, key: bytes | None, value: bytes | None) -> tuple[str | None, str | None]:
        if key is None:
            raise MessageFormatException(f"Failed to decode message at offset {offset} using the specified "
                                         f"decoder (message had a missing key)")
        try:
            record_type = _version(key, "key")
            if record_type in self.undecoded:
                return (f"Record type {record_type} ({self.undecoded[record_type]}) at offset {offset} is not "
                        f"decoded by segdex, skipping.", None)
            if record_type not in self.types:
                return f"Unknown record type {record_type} at offset {offset}, skipping.", None
            _name, key_schema, value_schema = self.types[record_type]
            key_data = read_record_key(key_schema, key)
            key_text = json_text({"type": str(record_type), "data": struct_json(key_schema.struct, key_data)})
            if value is None:
                return key_text, DELETE
            version = _version(value, "value")
            data = read_message(value_schema, value[INT16.size:], version)
            return key_text, json_text({"version": str(version),
                                       "data": self.value_json(record_type, data)})
        except MessageFormatException as e:
            return f"Error at offset {offset}, skipping. {e}", None


class OffsetsMessageParser(CoordinatorRecordParser):
    """``--offsets-decoder``: the group coordinator's records of ``__consumer_offsets``."""

    types = GROUP_RECORD_TYPES
    undecoded = UNDECODED_GROUP_RECORD_TYPES

    def value_json(self, record_type: int, data: dict) -> dict:
        if record_type == 2:
            return _group_metadata_json(data)
        return super().value_json(record_type, data)


class TransactionLogMessageParser(CoordinatorRecordParser):
    """``--transaction-log-decoder``: the transaction coordinator's records of ``__transaction_state``."""

    types = TRANSACTION_RECORD_TYPES

    def value_json(self, record_type: int, data: dict) -> dict:
        out = super().value_json(record_type, data)
        status = data["transactionStatus"]
        if status not in TRANSACTION_STATES:
            raise MessageFormatException(f"Unknown transaction state id {status}")
        out["transactionStatus"] = TRANSACTION_STATES[status]
        return out


class StringMessageParser:
    """The default ``DecoderMessageParser`` with ``StringDecoder``: keys and values as UTF-8 text (malformed
    bytes as U+FFFD, as Java's ``new String(bytes, UTF_8)``)."""

    def parse(self, offset: int, key: bytes | None, value: bytes | None) -> tuple[str | None, str | None]:
        return (None if key is None else java_utf8(key), None if value is None else java_utf8(value))


DECODERS = {"offsets": OffsetsMessageParser, "transaction-log": TransactionLogMessageParser}
