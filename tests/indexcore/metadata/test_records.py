"""``indexcore.metadata.records``: the metadata log's record schemas against the schema files in Kafka's own jars
(4.4.0 and 3.9.2: every record type, field, type, version range, tag, nullability and default; the control
records too), and the frame ``MetadataRecordSerde`` reads, with Kafka's refusals."""

from __future__ import annotations

import json
import re
import zipfile

import pytest

from segdex.indexcore.metadata.records import (
    CONTROL_RECORDS,
    RECORDS,
    ClusterMetadataLogMessageParser,
    MetadataRecord,
    read_metadata_record,
    type_name,
)
from segdex.indexcore.protocol.message_format import NULL, Array, MessageFormatException, Struct
from tests.support.kafka_harness import KafkaInstall

TOP = 32767


def _versions(text: str | None) -> tuple[int, int] | None:
    if text is None or text == "none":
        return None
    if text.endswith("+"):
        return int(text[:-1]), TOP
    lo, _, hi = text.partition("-")
    return int(lo), int(hi or lo)


def _schemas(version: str, prefix: str) -> dict[str, dict]:
    """Kafka's schema files under ``prefix`` in its release's jars, by message name."""
    out = {}
    for jar in (KafkaInstall(version).home / "libs").glob("kafka-*.jar"):
        with zipfile.ZipFile(jar) as z:
            for name in z.namelist():
                if name.startswith(prefix) and name.endswith(".json"):
                    spec = json.loads(re.sub(r"^\s*//.*$", "", z.read(name).decode(), flags=re.M))
                    out[spec["name"]] = spec
    return out


def _json_name(name: str) -> str:
    return name[0].lower() + name[1:]


def _type(spec_type: str, spec: dict, ours, common: dict) -> None:
    """A schema type against ours: primitives by name, arrays and structs (inline or common) field by field."""
    if spec_type.startswith("[]"):
        assert isinstance(ours, Array), (spec_type, ours)
        _type(spec_type[2:], spec, ours.element, common)
    elif "fields" in spec or spec_type[0].isupper():
        assert isinstance(ours, Struct), (spec_type, ours)
        _fields(spec.get("fields") or common[spec_type], ours, common)
    else:
        assert ours == spec_type, (spec_type, ours)


def _common(spec: dict) -> dict:
    return {c["name"]: c["fields"] for c in spec.get("commonStructs", [])}


def _fields(specs: list[dict], struct: Struct, common: dict) -> None:
    """Each of Kafka's fields has ours, in its order, with its versions, tag, nullability and default."""
    assert [f.name for f in struct.fields] == [_json_name(s["name"]) for s in specs]
    for spec, f in zip(specs, struct.fields, strict=True):
        assert f.versions[0] == _versions(spec["versions"])[0], f.name
        tagged = _versions(spec.get("taggedVersions"))
        tag = int(spec["tag"]) if "tag" in spec else None
        assert (f.tag is not None) == (tagged is not None) and f.tag == tag, f.name
        nullable = _versions(spec.get("nullableVersions"))
        assert (f.nullable[0] if f.nullable else None) == (nullable[0] if nullable else None), f.name
        default = spec.get("default")
        if default == "null":
            assert f.default is NULL, f.name
        elif default is not None and not str(default).startswith("0"):
            assert str(f.default).lower() == str(default).lower(), (f.name, f.default, default)
        _type(spec["type"], spec, f.type, common)


@pytest.mark.parametrize("version", ["4.4.0", "3.9.2"])
def test_every_metadata_record_is_kafkas(version):
    """Every record type of the release's ``common/metadata``: ours by api key, with its name, its valid and
    flexible versions (ours may reach higher than 3.9's: the same fields at more versions) and its fields."""
    specs = {s["apiKey"]: s for s in _schemas(version, "common/metadata/").values() if "apiKey" in s}
    assert len(specs) >= 25
    for api_key, spec in specs.items():
        ours = RECORDS[api_key]
        assert ours.name == spec["name"] and ours.flexible_from == _versions(spec["flexibleVersions"])[0]
        lo, hi = _versions(spec["validVersions"])
        assert ours.valid_versions[0] == lo and ours.valid_versions[1] >= hi
        if version == "4.4.0":
            assert ours.valid_versions[1] == hi, spec["name"]
        _fields([f for f in spec["fields"] if _versions(f["versions"])[0] <= hi], Struct(tuple(
            f for f in ours.struct.fields if f.versions[0] <= hi)), _common(spec))
    assert set(RECORDS) == set(specs) if version == "4.4.0" else set(specs) <= set(RECORDS)


def test_control_records_are_kafkas():
    specs = _schemas("4.4.0", "common/message/")
    for _label, message in CONTROL_RECORDS.values():
        spec = specs[message.name]
        assert message.valid_versions == _versions(spec["validVersions"]), message.name
        _fields(spec["fields"], message.struct, _common(spec))


def test_a_frame_is_read_as_kafkas_serde_reads_it():
    """Frame 1, the type, the version, the message; Kafka's refusals for frame 0, another frame, an unknown
    type and bytes after the message."""
    topic = bytes([1, 2, 0]) + bytes([7]) + b"orders" + bytes(range(16)) + bytes([0])
    record = read_metadata_record(topic)
    assert record == MetadataRecord(2, 0, {"name": "orders", "topicId": bytes(range(16))})
    assert record.json() == ('{"type":"TOPIC_RECORD","version":0,"data":{"name":"orders",'
                             '"topicId":"AAECAwQFBgcICQoLDA0ODw"}}')
    for value, message in ((bytes([0]) + topic[1:], "Could not deserialize metadata record with frame version 0."),
                           (bytes([2]) + topic[1:], "unknown frame version 2(only frame version 1 is supported)"),
                           (bytes([1, 16, 0, 0]), "Unknown metadata id 16"),
                           (topic + b"x", "Found 1 byte(s) of garbage after TopicRecord")):
        with pytest.raises(MessageFormatException) as e:
            read_metadata_record(value)
        assert message in str(e.value)
    assert ClusterMetadataLogMessageParser().parse(7, None, bytes([1, 16, 0, 0])) == (
        None, "Error at 7, skipping. Unknown metadata id 16")
    assert type_name(RECORDS[21]) == "ZK_MIGRATION_STATE_RECORD" and type_name(RECORDS[28]) == "CLEAR_ELR_RECORD"


def test_a_tagged_field_whose_default_is_null_is_printed_when_empty():
    """``cordonedLogDirs`` (nullable, default null): absent it is not printed, present and empty it is ``[]``, as
    Kafka 4.4's converter prints a registration change; ``logDirs`` (default empty) is printed only when not
    empty."""
    head = bytes([1, 17, 3]) + (1).to_bytes(4, "big") + (11).to_bytes(8, "big")
    absent = read_metadata_record(head + bytes([0]))
    empty = read_metadata_record(head + bytes([1, 3, 1, 1]))  # one tagged field: tag 3, 1 byte, an empty array
    assert absent.json() == ('{"type":"BROKER_REGISTRATION_CHANGE_RECORD","version":3,"data":{"brokerId":1,'
                             '"brokerEpoch":11}}')
    assert empty.json() == ('{"type":"BROKER_REGISTRATION_CHANGE_RECORD","version":3,"data":{"brokerId":1,'
                            '"brokerEpoch":11,"cordonedLogDirs":[]}}')


def test_control_record_text_is_the_label_and_the_message_as_json():
    """``control_record_text``: ``DumpLogSegments``' line for a raft control record, its label then the message
    read at the version its first field names, as JSON (a real broker's, compared with Kafka's tool, in
    tests/kafka/test_broker.py); None for a type it does not decode, a null value or one shorter than its
    version."""
    from segdex.indexcore.metadata.records import control_record_text
    from tests.support.metadata_log import write_struct

    _label, leader = CONTROL_RECORDS[2]
    value = write_struct(leader.struct, {"version": 0, "leaderId": 3, "voters": [{"voterId": 3}],
                                         "grantingVoters": [{"voterId": 3}]})
    assert control_record_text(2, value) == (
        'LeaderChange: {"version":0,"leaderId":3,"voters":[{"voterId":3}],"grantingVoters":[{"voterId":3}]}')
    _label, header = CONTROL_RECORDS[3]
    value = write_struct(header.struct, {"version": 0, "lastContainedLogTimestamp": 1_700_000_000_000})
    assert control_record_text(3, value) == 'SnapshotHeader {"version":0,"lastContainedLogTimestamp":1700000000000}'
    assert [control_record_text(t, v) for t, v in ((1, value), (3, None), (3, b"\x00"))] == [None, None, None]


@pytest.mark.parametrize("control_type", [2, 3, 4, 5, 6])
def test_a_control_record_holding_its_version_alone_cannot_be_read(control_type: int):
    """A raft control record whose value is two bytes, its version (0) alone: the message's fields (and a
    flexible message's tagged-field count) are missing, and Kafka 4.4.0's ``ControlRecordUtils.deserialize*``
    throws ``java.nio.BufferUnderflowException`` for each of the five types (asked of the jars on these bytes;
    ``kafka-dump-log`` dies on the SnapshotFooter one, recorded in tests/kafka/golden/raft_control_records):
    segdex refuses it too, where a shorter value is no control record it decodes (None)."""
    import json

    from segdex.indexcore.metadata.records import control_record_text
    from tests.support.fixtures import GOLDEN

    with pytest.raises(MessageFormatException):
        control_record_text(control_type, b"\x00\x00")
    assert control_record_text(control_type, b"\x00") is None
    recorded = json.loads((GOLDEN / "raft_control_records" / "kafka_dump_log.json").read_text())
    assert recorded["--deep-iteration"]["cut_footer-0/00000000000000000005.log"]["died"] == (
        "java.nio.BufferUnderflowException")
