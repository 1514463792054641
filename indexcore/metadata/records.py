"""The records of Kafka's metadata log (``__cluster_metadata``), read as ``MetadataRecordSerde`` reads them and
printed as ``kafka-dump-log --cluster-metadata-decoder`` prints them.

A metadata record's key is null; its value is a frame (``AbstractApiMessageSerde``):

- uvarint frame version: 1 (0 was KRaft's 2.8 preview, refused; any other is refused too);
- uvarint record type (``MetadataRecordType``: the message's api key, 0-29);
- uvarint version of that message;
- the message at that version (every metadata record is flexible from version 0), nothing after it.

Control batches carry the raft layer's records instead: the key is int16 version + int16 ``ControlRecordType``
(2 leader change, 3 snapshot header, 4 snapshot footer, 5 kraft version, 6 voters), the value the message, whose
first field (int16 ``Version``) is the version it is written at (``ControlRecordUtils``).

The schemas are Kafka 4.4's (``common/metadata/*.json`` in ``kafka-metadata``, ``common/message/*.json`` in
``kafka-clients`` for the control records), the ones a 3.9 broker writes being earlier versions of the same;
``tests/indexcore/metadata/test_records.py`` checks every field against the schema files in both releases' jars.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from segdex.indexcore.protocol.message_format import (
    ANY_VERSION,
    INT16,
    NULL,
    Array,
    Field,
    Message,
    MessageFormatException,
    Struct,
    json_text,
    read_message,
    read_uvarint,
    struct_json,
)

FRAME_VERSION = 1
V1 = (1, 32767)
V2 = (2, 32767)
V3 = (3, 32767)
V4 = (4, 32767)


def _record(name: str, *fields: Field, valid: tuple[int, int] = (0, 0)) -> Message:
    """A metadata record: flexible from version 0."""
    return Message(name, Struct(fields), valid, flexible_from=0)


def _tagged(name: str, type_: Any, tag: int, versions: tuple[int, int] = ANY_VERSION, default: Any = None,
            nullable: bool = False) -> Field:
    return Field(name, type_, versions=versions, nullable=versions if nullable else None, tag=tag, default=default)


_ENDPOINT = Struct((Field("name", "string"), Field("host", "string"), Field("port", "uint16"),
                    Field("securityProtocol", "int16")))
_FEATURE = Struct((Field("name", "string"), Field("minSupportedVersion", "int16"),
                   Field("maxSupportedVersion", "int16")))
_INT32S = Array("int32")
_UUIDS = Array("uuid")

# MetadataRecordType: api key -> schema
RECORDS: dict[int, Message] = {m_key: m for m_key, m in (
    (0, _record(
        "RegisterBrokerRecord",
        Field("brokerId", "int32"),
        Field("isMigratingZkBroker", "bool", versions=V2, default=False),
        Field("incarnationId", "uuid"),
        Field("brokerEpoch", "int64"),
        Field("endPoints", Array(_ENDPOINT)),
        Field("features", Array(_FEATURE)),
        Field("rack", "string", nullable=ANY_VERSION),
        Field("fenced", "bool", default=True),
        Field("inControlledShutdown", "bool", versions=V1, default=False),
        _tagged("logDirs", _UUIDS, 0, V3),
        _tagged("cordonedLogDirs", _UUIDS, 1, V4, NULL, nullable=True),
        valid=(0, 4))),
    (1, _record("UnregisterBrokerRecord", Field("brokerId", "int32"), Field("brokerEpoch", "int64"))),
    (2, _record("TopicRecord", Field("name", "string"), Field("topicId", "uuid"))),
    (3, _record(
        "PartitionRecord",
        Field("partitionId", "int32", default=-1),
        Field("topicId", "uuid"),
        Field("replicas", _INT32S),
        Field("isr", _INT32S),
        Field("removingReplicas", _INT32S),
        Field("addingReplicas", _INT32S),
        Field("leader", "int32", default=-1),
        _tagged("leaderRecoveryState", "int8", 0, default=0),
        Field("leaderEpoch", "int32", default=-1),
        Field("partitionEpoch", "int32", default=-1),
        Field("directories", _UUIDS, versions=V1),
        _tagged("eligibleLeaderReplicas", _INT32S, 1, V2, NULL, nullable=True),
        _tagged("lastKnownElr", _INT32S, 2, V2, NULL, nullable=True),
        valid=(0, 2))),
    (4, _record("ConfigRecord", Field("resourceType", "int8"), Field("resourceName", "string"),
                Field("name", "string"), Field("value", "string", nullable=ANY_VERSION))),
    (5, _record(
        "PartitionChangeRecord",
        Field("partitionId", "int32", default=-1),
        Field("topicId", "uuid"),
        _tagged("isr", _INT32S, 0, default=NULL, nullable=True),
        _tagged("leader", "int32", 1, default=-2),
        _tagged("replicas", _INT32S, 2, default=NULL, nullable=True),
        _tagged("removingReplicas", _INT32S, 3, default=NULL, nullable=True),
        _tagged("addingReplicas", _INT32S, 4, default=NULL, nullable=True),
        _tagged("leaderRecoveryState", "int8", 5, default=-1),
        _tagged("directories", _UUIDS, 8, V1, NULL, nullable=True),
        _tagged("eligibleLeaderReplicas", _INT32S, 6, V2, NULL, nullable=True),
        _tagged("lastKnownElr", _INT32S, 7, V2, NULL, nullable=True),
        valid=(0, 2))),
    (7, _record("FenceBrokerRecord", Field("id", "int32"), Field("epoch", "int64"))),
    (8, _record("UnfenceBrokerRecord", Field("id", "int32"), Field("epoch", "int64"))),
    (9, _record("RemoveTopicRecord", Field("topicId", "uuid"))),
    (10, _record("DelegationTokenRecord", Field("owner", "string"), Field("requester", "string"),
                 Field("renewers", Array("string")), Field("issueTimestamp", "int64"),
                 Field("maxTimestamp", "int64"), Field("expirationTimestamp", "int64"), Field("tokenId", "string"))),
    (11, _record("UserScramCredentialRecord", Field("name", "string"), Field("mechanism", "int8"),
                 Field("salt", "bytes"), Field("storedKey", "bytes"), Field("serverKey", "bytes"),
                 Field("iterations", "int32"))),
    (12, _record("FeatureLevelRecord", Field("name", "string"), Field("featureLevel", "int16"))),
    (14, _record("ClientQuotaRecord",
                 Field("entity", Array(Struct((Field("entityType", "string"),
                                               Field("entityName", "string", nullable=ANY_VERSION))))),
                 Field("key", "string"), Field("value", "float64"), Field("remove", "bool"))),
    (15, _record("ProducerIdsRecord", Field("brokerId", "int32"), Field("brokerEpoch", "int64", default=-1),
                 Field("nextProducerId", "int64"))),
    (17, _record(
        "BrokerRegistrationChangeRecord",
        Field("brokerId", "int32"),
        Field("brokerEpoch", "int64"),
        _tagged("fenced", "int8", 0),
        _tagged("inControlledShutdown", "int8", 1, V1),
        _tagged("logDirs", _UUIDS, 2, V2),
        _tagged("cordonedLogDirs", _UUIDS, 3, V3, NULL, nullable=True),
        valid=(0, 3))),
    (18, _record("AccessControlEntryRecord", Field("id", "uuid"), Field("resourceType", "int8"),
                 Field("resourceName", "string"), Field("patternType", "int8"), Field("principal", "string"),
                 Field("host", "string"), Field("operation", "int8"), Field("permissionType", "int8"))),
    (19, _record("RemoveAccessControlEntryRecord", Field("id", "uuid"))),
    (20, _record("NoOpRecord")),
    (21, _record("ZkMigrationStateRecord", Field("zkMigrationState", "int8"))),
    (22, _record("RemoveUserScramCredentialRecord", Field("name", "string"), Field("mechanism", "int8"))),
    (23, _record("BeginTransactionRecord", _tagged("name", "string", 0, default=NULL, nullable=True))),
    (24, _record("EndTransactionRecord")),
    (25, _record("AbortTransactionRecord", _tagged("reason", "string", 0, default=NULL, nullable=True))),
    (26, _record("RemoveDelegationTokenRecord", Field("tokenId", "string"))),
    (27, _record("RegisterControllerRecord", Field("controllerId", "int32"), Field("incarnationId", "uuid"),
                 Field("zkMigrationReady", "bool"), Field("endPoints", Array(_ENDPOINT)),
                 Field("features", Array(_FEATURE)))),
    (28, _record("ClearElrRecord", Field("topicName", "string"))),
    (29, _record("UnregisterControllerRecord", Field("controllerId", "int32"))),
)}

# ConfigResource.Type ids a ConfigRecord names
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4


def type_name(message: Message) -> str:
    """``MetadataRecordType``'s name: ``TopicRecord`` -> ``TOPIC_RECORD``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", message.name).upper()


@dataclass(frozen=True)
class MetadataRecord:
    """One metadata record as ``ApiMessageAndVersion``: its type (api key), version and fields (JSON names)."""

    api_key: int
    version: int
    data: dict[str, Any]

    @property
    def message(self) -> Message:
        return RECORDS[self.api_key]

    def json(self) -> str:
        """``{"type":..,"version":..,"data":{..}}`` as ``ClusterMetadataLogMessageParser`` prints it."""
        return json_text({"type": type_name(self.message), "version": self.version,
                         "data": struct_json(self.message.struct, self.data)})


def read_metadata_record(value: bytes | None) -> MetadataRecord:
    """``MetadataRecordSerde.read``: the frame, then the message; MessageFormatException with Kafka's reason when
    the bytes do not hold one."""
    if value is None:
        raise MessageFormatException("a metadata record without a value")
    frame, pos = read_uvarint(value, 0)
    if frame == 0:
        raise MessageFormatException("Could not deserialize metadata record with frame version 0. Note that "
                                     "upgrades from the preview release of KRaft in 2.8 to newer versions are not "
                                     "supported.")
    if frame != FRAME_VERSION:
        raise MessageFormatException(f"Could not deserialize metadata record due to unknown frame version {frame}"
                                     f"(only frame version {FRAME_VERSION} is supported)")
    api_key, pos = read_uvarint(value, pos)
    version, pos = read_uvarint(value, pos)
    message = RECORDS.get(api_key)
    if message is None:
        raise MessageFormatException(f"Unknown metadata id {api_key}")
    return MetadataRecord(api_key, version, read_message(message, value[pos:], version, whole=True))


# --- the raft layer's control records -------------------------------------------------------------------------
_VOTER = Struct((Field("voterId", "int32"), Field("voterDirectoryId", "uuid", versions=V1)))
CONTROL_RECORDS: dict[int, tuple[str, Message]] = {
    2: ("LeaderChange:", Message("LeaderChangeMessage", Struct((
        Field("version", "int16"), Field("leaderId", "int32"), Field("voters", Array(_VOTER)),
        Field("grantingVoters", Array(_VOTER)))), (0, 1), flexible_from=0)),
    3: ("SnapshotHeader", Message("SnapshotHeaderRecord", Struct((
        Field("version", "int16"), Field("lastContainedLogTimestamp", "int64"))), flexible_from=0)),
    4: ("SnapshotFooter", Message("SnapshotFooterRecord", Struct((Field("version", "int16"),)), flexible_from=0)),
    5: ("KRaftVersion", Message("KRaftVersionRecord", Struct((
        Field("version", "int16"), Field("kRaftVersion", "int16"))), flexible_from=0)),
    6: ("KRaftVoters", Message("VotersRecord", Struct((
        Field("version", "int16"),
        Field("voters", Array(Struct((
            Field("voterId", "int32"), Field("voterDirectoryId", "uuid"),
            Field("endpoints", Array(Struct((Field("name", "string"), Field("host", "string"),
                                             Field("port", "uint16"))))),
            Field("kRaftVersionFeature", Struct((Field("minSupportedVersion", "int16"),
                                                 Field("maxSupportedVersion", "int16")))),
        ))))),
    ), flexible_from=0)),
}


def control_record_text(control_type: int, value: bytes | None) -> str | None:
    """What ``DumpLogSegments`` prints for a raft control record (``LeaderChange: {...}``, ``SnapshotHeader
    {...}``, ...): its label and the message as JSON; None for a type it does not decode."""
    found = CONTROL_RECORDS.get(control_type)
    if found is None or value is None or len(value) < INT16.size:
        return None
    label, message = found
    version = INT16.unpack_from(value)[0]  # the message's own first field: the version it is written at
    data = read_message(message, value, version)
    return f"{label} {json_text(struct_json(message.struct, data))}"


class ClusterMetadataLogMessageParser:
    """``DumpLogSegments.ClusterMetadataLogMessageParser`` (``--cluster-metadata-decoder``): no key; the value as
    ``{"type":..,"version":..,"data":{..}}``, or Kafka's ``Error at <offset>, skipping. <reason>``."""

    def parse(self, offset: int, key: bytes | None, value: bytes | None) -> tuple[str | None, str | None]:
        try:
            return None, read_metadata_record(value).json()
        except MessageFormatException as e:
            return None, f"Error at {offset}, skipping. {e}"
