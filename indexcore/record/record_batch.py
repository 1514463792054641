"""Shallow views of record batches: magic 2 batches and legacy magic 0/1 message sets.

Field names follow the Kafka protocol guide ("Record Batch" and "Message Sets").
A batch here is what Kafka's ``FileLogInputStream`` yields: a v2 record batch,
an uncompressed legacy message, or a compressed legacy wrapper message.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from enum import IntEnum

from segdex.indexcore.errors import CorruptRecordException
from segdex.indexcore.record import crc32c

# The v2 header layout and its attribute bits are the scan package's (one definition for Python and C); every
# batch starts with baseOffset (int64) and batchLength/messageSize (int32), and Kafka reads up to the magic byte
# before it decides which batch type it has.
from segdex.indexcore.record.batch_header import (  # noqa: F401 - re-exported
    ATTRIBUTES_OFFSET as ATTRIBUTES_V2_OFFSET,
)
from segdex.indexcore.record.batch_header import (  # noqa: F401
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    HEADER_SIZE_UP_TO_MAGIC,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    NO_TIMESTAMP,
    RECORD_BATCH_OVERHEAD,
    RECORD_BATCH_V2,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
)
from segdex.indexcore.record.batch_header import CRC_OFFSET as CRC_V2_OFFSET  # noqa: F401

# magic 0/1: offset, messageSize, crc, magic, attributes [, timestamp (v1)].
MESSAGE_V0 = struct.Struct(">qiIbb")
MESSAGE_V1 = struct.Struct(">qiIbbq")
LOG_ENTRY_HEADER = struct.Struct(">qi")
# LegacyRecord.RECORD_OVERHEAD_V0 / V1: crc, magic, attributes, [timestamp,] key length, value length.
RECORD_OVERHEAD_V0 = 14
RECORD_OVERHEAD_V1 = 22
LEGACY_CRC_FROM = LOG_OVERHEAD + 4  # CRC32 covers magic .. end of the message

NO_PRODUCER_ID = -1
NO_PARTITION_LEADER_EPOCH = -1
NO_SEQUENCE = -1
INT32_MAX = 2**31 - 1  # sequences are int32


class CompressionType(IntEnum):
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def label(self) -> str:
        return self.name.lower()


def compression_name(code: int) -> str:
    """Kafka's name for a compression codec id, or ``unknown(N)``."""
    try:
        return CompressionType(code).label
    except ValueError:
        return f"unknown({code})"


@dataclass(slots=True)
class RecordBatch:
    """One batch as ``FileChannelRecordBatch`` sees it, without decompressing it."""

    position: int
    size_in_bytes: int
    magic: int
    crc: int
    base_offset: int  # for legacy wrappers: the wrapper's own offset until deep iteration says otherwise
    last_offset: int
    attributes: int
    max_timestamp: int
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = -1
    base_sequence: int = NO_SEQUENCE
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH
    records_count: int | None = None  # from the v2 header; None for legacy (count needs deep iteration)

    @property
    def compression_type(self) -> int:
        return self.attributes & COMPRESSION_CODEC_MASK

    @property
    def compression(self) -> str:
        return compression_name(self.compression_type)

    @property
    def timestamp_type(self) -> str:
        if self.magic == 0:
            return "NoTimestampType"
        return "LogAppendTime" if self.attributes & TIMESTAMP_TYPE_MASK else "CreateTime"

    @property
    def is_transactional(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & TRANSACTIONAL_FLAG_MASK)

    @property
    def is_control(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & CONTROL_FLAG_MASK)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id > NO_PRODUCER_ID

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1


def increment_sequence(sequence: int, increment: int) -> int:
    """``DefaultRecordBatch.incrementSequence``: sequences wrap from Integer.MAX_VALUE back to 0."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


def last_sequence(base_sequence: int, last_offset_delta: int) -> int:
    """``DefaultRecordBatch.lastSequence``: the sequence of the batch's last record (none without a base)."""
    if base_sequence == NO_SEQUENCE:
        return NO_SEQUENCE
    return increment_sequence(base_sequence, last_offset_delta)


def read_batch_header(buf, position: int) -> RecordBatch:
    """Parse the header of the batch starting at ``position`` (its size was already checked)."""
    magic = buf[position + MAGIC_OFFSET]
    if magic >= 0x80:
        magic -= 0x100  # a Java byte: magic values >= 0x80 are negative, hence legacy, to Kafka
    if magic >= 2:
        if position + RECORD_BATCH_OVERHEAD > len(buf):
            # Too short to carry a v2 header: ensure_valid will call it corrupt.
            base_offset, batch_length = LOG_ENTRY_HEADER.unpack_from(buf, position)
            return RecordBatch(position, batch_length + LOG_OVERHEAD, magic, 0, base_offset, base_offset, 0,
                               NO_TIMESTAMP)
        (base_offset, batch_length, leader_epoch, magic, crc, attributes, last_offset_delta, _base_ts,
         max_ts, producer_id, producer_epoch, base_sequence, records_count) = RECORD_BATCH_V2.unpack_from(
            buf, position)
        return RecordBatch(position, batch_length + LOG_OVERHEAD, magic, crc, base_offset,
                           base_offset + last_offset_delta, attributes, max_ts, producer_id, producer_epoch,
                           base_sequence, leader_epoch, records_count)
    offset, message_size = LOG_ENTRY_HEADER.unpack_from(buf, position)
    if magic != 0:  # LegacyRecord.timestamp: any magic but 0 (a size field of 14 or more holds it)
        _, _, crc, _, attributes, timestamp = MESSAGE_V1.unpack_from(buf, position)
    else:
        _, _, crc, _, attributes = MESSAGE_V0.unpack_from(buf, position)
        timestamp = NO_TIMESTAMP
    return RecordBatch(position, message_size + LOG_OVERHEAD, magic, crc, offset, offset, attributes & 0xFF,
                       timestamp)


def compute_checksum(buf, batch: RecordBatch) -> int:
    """The CRC Kafka computes: CRC-32C from attributes (v2), CRC-32 from magic (v0/v1)."""
    end = batch.position + batch.size_in_bytes
    if batch.magic >= 2:
        return crc32c.crc32c(memoryview(buf)[batch.position + ATTRIBUTES_V2_OFFSET:end])
    return zlib.crc32(memoryview(buf)[batch.position + LEGACY_CRC_FROM:end]) & 0xFFFFFFFF


def ensure_valid(buf, batch: RecordBatch) -> None:
    """Kafka's ``RecordBatch.ensureValid``: minimum size, then the stored CRC."""
    if batch.magic >= 2:
        if batch.size_in_bytes < RECORD_BATCH_OVERHEAD:
            raise CorruptRecordException(
                f"Record batch is corrupt (the size {batch.size_in_bytes} is smaller than the minimum "
                f"allowed overhead {RECORD_BATCH_OVERHEAD})")
    elif batch.size_in_bytes - LOG_OVERHEAD < RECORD_OVERHEAD_V0:
        raise CorruptRecordException(
            f"Record is corrupt (crc could not be retrieved as the record is too small, size = "
            f"{batch.size_in_bytes - LOG_OVERHEAD})")
    computed = compute_checksum(buf, batch)
    if computed != batch.crc:
        raise CorruptRecordException(f"Record is corrupt (stored crc = {batch.crc}, computed crc = {computed})")
