"""Metadata logs written for tests: records encoded from segdex's schemas (the generated message format's writer,
the mirror of ``protocol.message_format``'s reader) in ``MetadataRecordSerde``'s frame, batched as a KRaft
controller batches them, into ``__cluster_metadata-0`` segments and snapshots. Real brokers' metadata logs are
what tests/kafka reads; these reach what a short-lived broker rarely writes (aborted and unfinished metadata
transactions, a removed topic, a torn batch)."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

from segdex.indexcore.metadata.records import RECORDS
from segdex.indexcore.protocol.message_format import FIXED, NULL, Array, Struct, default_value
from segdex.indexcore.tools.segment_writer import Record, build_batch, segment_name

KEYS = {m.name: k for k, m in RECORDS.items()}


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _value(ftype: Any, value: Any) -> bytes:
    if isinstance(ftype, str) and ftype in FIXED:
        return FIXED[ftype].pack(value)
    if ftype == "bool":
        return b"\x01" if value else b"\x00"
    if ftype == "uuid":
        return value
    if isinstance(ftype, Struct):
        return write_struct(ftype, value)
    if value is None:
        return _uvarint(0)
    if ftype == "string":
        raw = value.encode()
        return _uvarint(len(raw) + 1) + raw
    if ftype == "bytes":
        return _uvarint(len(value) + 1) + value
    assert isinstance(ftype, Array)
    return _uvarint(len(value) + 1) + b"".join(_value(ftype.element, v) for v in value)


def write_struct(schema: Struct, values: dict[str, Any], version: int = 0) -> bytes:
    """A flexible struct at ``version``: its fields in order, then its tagged fields that differ from default."""
    out, tagged = bytearray(), []
    for f in schema.fields:
        if not f.versions[0] <= version <= f.versions[1]:
            continue
        value = values.get(f.name, default_value(f))
        if f.tag is not None:
            if value != default_value(f) or (f.default is NULL and value is not None):
                tagged.append((f.tag, _value(f.type, value)))
            continue
        out += _value(f.type, value)
    out += _uvarint(len(tagged))
    for tag, raw in sorted(tagged):
        out += _uvarint(tag) + _uvarint(len(raw)) + raw
    return bytes(out)


def record(record_type: str, version: int = 0, **values: Any) -> bytes:
    """A metadata record's value: frame 1, its type and version, the message."""
    key = KEYS[record_type]
    return _uvarint(1) + _uvarint(key) + _uvarint(version) + write_struct(RECORDS[key].struct, values, version)


def uuid(n: int) -> bytes:
    return struct.pack(">QQ", n, n)


def write_metadata_log(part: Path, batches: list[list[bytes]], base: int = 0, t0: int = 1_700_000_000_000) -> int:
    """``batches`` of record values as one segment from offset ``base``; returns the next offset."""
    part.mkdir(parents=True, exist_ok=True)
    data, offset = bytearray(), base
    for values in batches:
        data += build_batch(offset, [Record(offset + i, t0, None, v) for i, v in enumerate(values)],
                            partition_leader_epoch=1)
        offset += len(values)
    (part / segment_name(base)).write_bytes(bytes(data))
    return offset



def write_snapshot(part: Path, end_offset: int, values: list[bytes], epoch: int = 1,
                   t0: int = 1_700_000_000_000) -> Path:
    """A snapshot ``<end>-<epoch>.checkpoint`` of ``values`` (one data batch; the header and footer control
    batches a controller writes around it are what readers skip)."""
    part.mkdir(parents=True, exist_ok=True)
    path = part / f"{end_offset:020d}-{epoch:010d}.checkpoint"
    path.write_bytes(build_batch(1, [Record(1 + i, t0, None, v) for i, v in enumerate(values)],
                                 partition_leader_epoch=epoch))
    return path


def stray_log_dir(root: Path, t0: int = 1_700_000_000_000) -> Path:
    """A KRaft broker's log dir (node 1) whose metadata log holds topic ``orders`` (one partition, replica 1):
    ``orders-0`` is its; ``orders-5`` (a partition the topic does not have), ``ghost-0`` (a topic id the image
    does not hold) and ``nometa-0`` (no ``partition.metadata``) are what a 4.4.0 broker renamed ``-stray``."""
    from segdex.indexcore.protocol.message_format import uuid_string

    log_dir = root / "logs"
    write_metadata_log(log_dir / "__cluster_metadata-0", [[
        record("FeatureLevelRecord", name="metadata.version", featureLevel=26),  # what every bootstrap writes
        record("TopicRecord", name="orders", topicId=uuid(1)),
        record("PartitionRecord", 2, partitionId=0, topicId=uuid(1), replicas=[1], isr=[1], leader=1, leaderEpoch=0,
               partitionEpoch=0, directories=[uuid(9)]),
    ]])
    (log_dir / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=stray-test\n")
    for name, topic_id in (("orders-0", uuid(1)), ("orders-5", uuid(1)), ("ghost-0", uuid(7)), ("nometa-0", None)):
        part = log_dir / name
        part.mkdir()
        batches = [build_batch(o, [Record(o, t0 + o, b"k", b"v%d" % o)]) for o in range(3)]
        (part / segment_name(0)).write_bytes(b"".join(batches))
        if topic_id is not None:
            (part / "partition.metadata").write_text(f"version: 0\ntopic_id: {uuid_string(topic_id)}\n")
    return log_dir
