"""Write Kafka segment bytes: magic 2 record batches and legacy magic 0/1 message sets.

Tests, the demo and the benchmarks need ``.log`` files in Kafka's exact format
without running a broker. The encoding follows the Kafka protocol guide
("Record Batch", "Record", "Message Sets") and ``MemoryRecordsBuilder``:
CRC-32C from the attributes field to the end for magic 2, CRC-32 from the magic
byte to the end for magic 0/1, zig-zag varints inside v2 records.

``uniform_segment`` is the fast path for big files: it encodes one template
batch, then for every copy patches only baseOffset and the two timestamps and
recomputes the CRC.
"""

from __future__ import annotations

import os
import random
import struct
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from segdex.indexcore.log.layout import segment_file_name
from segdex.indexcore.record import crc32c
from segdex.indexcore.record.compression import compress
from segdex.indexcore.record.memory_records_builder import encode_record, varint
from segdex.indexcore.record.record_batch import (
    CONTROL_FLAG_MASK,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    RECORD_BATCH_V2,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
)
from segdex.indexcore.record.records import Record

CREATE_TIME = 0
LOG_APPEND_TIME = 1
CONTROL_TYPE_IDS = {"ABORT": 0, "COMMIT": 1}

_INT64 = struct.Struct(">q")
_UINT32 = struct.Struct(">I")
_TIMESTAMPS = struct.Struct(">qq")  # baseTimestamp, maxTimestamp at byte 27 of a v2 batch
_LEGACY_HEADER = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_INT32 = struct.Struct(">i")
_CONTROL_KEY = struct.Struct(">hh")
_END_TXN_VALUE = struct.Struct(">hi")


RecordLike = Record | tuple  # Record, or (timestamp, key, value[, headers]) with offsets base_offset + i


def _normalise(base_offset: int, records: Iterable[RecordLike]) -> list[Record]:
    out = []
    for i, r in enumerate(records):
        if isinstance(r, Record):
            out.append(r)
        else:
            ts, key, value, *rest = r
            out.append(Record(base_offset + i, ts, key, value, list(rest[0]) if rest else []))
    return out


def build_control_record(control: tuple[str | int, int], timestamp: int, offset: int) -> Record:
    """The record of an end-transaction marker: key (version 0, type), value (version 0, coordinatorEpoch)."""
    ctype, coordinator_epoch = control
    type_id = CONTROL_TYPE_IDS[ctype] if isinstance(ctype, str) else ctype
    return Record(offset, timestamp, _CONTROL_KEY.pack(0, type_id), _END_TXN_VALUE.pack(0, coordinator_epoch))


def build_batch(base_offset: int, records: Iterable[RecordLike], *, magic: int = 2, compression: int = 0,
                timestamp_type: int = CREATE_TIME, log_append_time: int | None = None,
                producer_id: int = NO_PRODUCER_ID, producer_epoch: int = -1, base_sequence: int = NO_SEQUENCE,
                partition_leader_epoch: int = 0, is_transactional: bool = False,
                control: tuple[str | int, int] | None = None, control_timestamp: int | None = None,
                base_timestamp: int | None = None, max_timestamp: int | None = None) -> bytes:
    """Encode one batch as Kafka stores it.

    Magic 2: one record batch. ``control=("ABORT"|"COMMIT", coordinatorEpoch)`` makes an end-transaction
    marker batch (its single record at ``base_offset``, timestamp ``control_timestamp``), which is always
    transactional. ``log_append_time`` sets the LogAppendTime flag and the batch maxTimestamp as the broker
    does. ``base_timestamp``/``max_timestamp`` override the values derived from the records.

    Magic 0/1: uncompressed gives the messages end to end (each is its own batch to Kafka); compressed gives
    one wrapper message whose offset is the last inner offset (inner offsets relative for magic 1).
    """
    if magic < 2:
        return build_legacy(base_offset, records, magic=magic, compression=compression,
                            timestamp_type=timestamp_type, log_append_time=log_append_time)
    if control is not None:
        ts = control_timestamp if control_timestamp is not None else 0
        recs = [build_control_record(control, ts, base_offset)]
        is_transactional = True
    else:
        recs = _normalise(base_offset, records)
    if log_append_time is not None:
        timestamp_type = LOG_APPEND_TIME
    if recs:
        first_ts = recs[0].timestamp if base_timestamp is None else base_timestamp
        max_ts = max(r.timestamp for r in recs)
        last_delta = recs[-1].offset - base_offset
    else:
        first_ts = NO_TIMESTAMP if base_timestamp is None else base_timestamp
        max_ts = NO_TIMESTAMP
        last_delta = -1
    if log_append_time is not None:
        max_ts = log_append_time
    if max_timestamp is not None:
        max_ts = max_timestamp
    payload = b"".join(encode_record(r.offset - base_offset, r.timestamp - first_ts, r.key, r.value, r.headers)
                       for r in recs)
    payload = compress(compression, payload)
    attributes = compression & 0x07
    if timestamp_type == LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    if is_transactional:
        attributes |= TRANSACTIONAL_FLAG_MASK
    if control is not None:
        attributes |= CONTROL_FLAG_MASK
    out = bytearray(RECORD_BATCH_V2.size + len(payload))
    RECORD_BATCH_V2.pack_into(out, 0, base_offset, len(out) - 12, partition_leader_epoch, 2, 0, attributes,
                              last_delta, first_ts, max_ts, producer_id, producer_epoch, base_sequence, len(recs))
    out[RECORD_BATCH_V2.size:] = payload
    _UINT32.pack_into(out, 17, crc32c.crc32c(memoryview(out)[21:]))
    return bytes(out)


def legacy_message(offset: int, key: bytes | None, value: bytes | None, *, magic: int = 1,
                   attributes: int = 0, timestamp: int = NO_TIMESTAMP) -> bytes:
    """One magic 0/1 message: offset, size, crc (CRC-32 from magic on), magic, attributes, [timestamp], key, value."""
    body = bytearray(struct.pack(">bb", magic, attributes))
    if magic >= 1:
        body += _INT64.pack(timestamp)
    for field in (key, value):
        if field is None:
            body += _INT32.pack(-1)
        else:
            body += _INT32.pack(len(field)) + field
    crc = zlib.crc32(body) & 0xFFFFFFFF
    return struct.pack(">qiI", offset, len(body) + 4, crc) + bytes(body)


def build_legacy(base_offset: int, records: Iterable[RecordLike], *, magic: int = 1, compression: int = 0,
                 timestamp_type: int = CREATE_TIME, log_append_time: int | None = None) -> bytes:
    """A legacy message set: plain messages, or one compressed wrapper holding them."""
    recs = _normalise(base_offset, records)
    ts_attr = TIMESTAMP_TYPE_MASK if magic >= 1 and (timestamp_type == LOG_APPEND_TIME
                                                     or log_append_time is not None) else 0

    def ts_of(r: Record) -> int:
        if magic == 0:
            return NO_TIMESTAMP
        return log_append_time if log_append_time is not None else r.timestamp

    if compression == 0:
        return b"".join(legacy_message(r.offset, r.key, r.value, magic=magic, attributes=ts_attr,
                                       timestamp=ts_of(r)) for r in recs)
    if not recs:
        raise ValueError("a compressed legacy wrapper needs at least one message")
    last = recs[-1].offset
    inner = b"".join(
        legacy_message(r.offset - recs[0].offset if magic >= 1 else r.offset, r.key, r.value, magic=magic,
                       timestamp=r.timestamp if magic >= 1 else NO_TIMESTAMP)
        for r in recs)
    wrapper_ts = NO_TIMESTAMP
    if magic >= 1:
        wrapper_ts = log_append_time if log_append_time is not None else max(r.timestamp for r in recs)
    return legacy_message(last, None, compress(compression, inner), magic=magic,
                          attributes=(compression & 0x07) | ts_attr, timestamp=wrapper_ts)


def segment_name(base_offset: int, suffix: str = ".log") -> str:
    """Kafka's file name for a segment (``layout.segment_file_name``)."""
    return segment_file_name(base_offset, suffix)


class SegmentWriter:
    """Append batches to a partition directory, rolling to a new ``.log`` as Kafka does at ``segment_bytes``.

    A roll happens before an append that would take the segment past ``segment_bytes`` (never on an empty
    segment), and the new segment is named after the first offset of that append.
    """

    def __init__(self, directory: str | os.PathLike, topic: str, partition: int,
                 segment_bytes: int = 1 << 30) -> None:
        self.dir = Path(directory) / f"{topic}-{partition}"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.segment_bytes = segment_bytes
        self.paths: list[Path] = []
        self._file = None
        self._size = 0

    def append(self, data: bytes, first_offset: int | None = None) -> None:
        """Write the bytes of one or more batches; ``first_offset`` defaults to the first batch's baseOffset."""
        if self._file is None or (self._size > 0 and self._size + len(data) > self.segment_bytes):
            self.roll(first_offset if first_offset is not None else _INT64.unpack_from(data, 0)[0])
        self._file.write(data)
        self._size += len(data)

    def roll(self, base_offset: int) -> Path:
        """Close the current segment and open ``<base_offset>.log``."""
        self.close()
        path = self.dir / segment_name(base_offset)
        self._file = open(path, "wb")  # noqa: SIM115 - kept open across appends
        self._size = 0
        self.paths.append(path)
        return path

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> SegmentWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def write_partition(directory: str | os.PathLike, topic: str, partition: int,
                    batches: Iterable[bytes | tuple[bytes, int]], segment_bytes: int = 1 << 30) -> list[Path]:
    """Write encoded batches (or (bytes, first_offset) pairs) into ``<dir>/<topic>-<partition>/``; return the logs.

    An empty ``batches`` still makes one empty segment at offset 0, as a new log has.
    """
    with SegmentWriter(directory, topic, partition, segment_bytes) as w:
        for item in batches:
            if isinstance(item, tuple):
                w.append(item[0], item[1])
            else:
                w.append(item)
        if not w.paths:
            w.roll(0)
        return w.paths


def uniform_batches(count: int, *, base_offset: int = 0, records_per_batch: int = 1, value_size: int = 100,
                    key_size: int = 8, start_timestamp: int = 1_700_000_000_000, timestamp_step: int = 1,
                    partition_leader_epoch: int = 0, compression: int = 0, seed: int = 0) -> Iterator[bytes]:
    """``count`` copies of one template batch with increasing offsets and timestamps (each copy re-CRC'd).

    Payload bytes are random (seeded) so that they do not compress away, and identical in every copy.
    """
    rng = random.Random(seed)
    recs = [Record(base_offset + i, start_timestamp, rng.randbytes(key_size), rng.randbytes(value_size))
            for i in range(records_per_batch)]
    template = bytearray(build_batch(base_offset, recs, compression=compression,
                                     partition_leader_epoch=partition_leader_epoch))
    mv = memoryview(template)
    tail = mv[21:]
    pack_offset, pack_ts, pack_crc, crc = _INT64.pack_into, _TIMESTAMPS.pack_into, _UINT32.pack_into, crc32c.crc32c
    offset, ts = base_offset, start_timestamp
    for _ in range(count):
        pack_offset(template, 0, offset)
        pack_ts(template, 27, ts, ts)
        pack_crc(template, 17, crc(tail))
        yield bytes(template)
        offset += records_per_batch
        ts += timestamp_step


def uniform_segment(path: str | os.PathLike, target_bytes: int, *, chunk_bytes: int = 8 << 20, **kwargs) -> int:
    """Write a ``.log`` of uniform batches (see ``uniform_batches``) of at least ``target_bytes``; return its size.

    Batches are gathered into ``chunk_bytes`` writes so that memory stays flat whatever the file size.
    """
    first = next(uniform_batches(1, **kwargs))
    count = -(-target_bytes // len(first))
    written = 0
    chunk: list[bytes] = []
    pending = 0
    with open(path, "wb") as f:
        for batch in uniform_batches(count, **kwargs):
            chunk.append(batch)
            pending += len(batch)
            if pending >= chunk_bytes:
                f.write(b"".join(chunk))
                written += pending
                chunk.clear()
                pending = 0
        f.write(b"".join(chunk))
        written += pending
    return written


__all__ = [
    "CREATE_TIME",
    "LOG_APPEND_TIME",
    "NO_PARTITION_LEADER_EPOCH",
    "SegmentWriter",
    "build_batch",
    "build_legacy",
    "build_control_record",
    "encode_record",
    "legacy_message",
    "segment_name",
    "uniform_batches",
    "uniform_segment",
    "varint",
    "write_partition",
]
