"""Control batches built byte by byte: a transactional one-record batch whose control bit is set after the fact
and its CRC-32C recomputed, so that its key and value can be anything (also what Kafka's writer would refuse).

Shared because the end-transaction marker reader (tests/indexcore/record/test_records_control.py), ``segdex dump``
(tests/indexcore/tools/test_dump_log.py) and ListOffsets (tests/indexcore/tools/test_list_offsets.py) all read
such markers."""

from __future__ import annotations

import struct

import crc32c

from segdex.indexcore.record.batch_header import ATTRIBUTES_OFFSET, CRC_OFFSET
from segdex.indexcore.tools.segment_writer import build_batch

CONTROL_FLAG = 0x20  # attributes bit 5


def control_batch(key: bytes | None, value: bytes | None, compression: int = 0, offset: int = 5) -> bytes:
    """A transactional batch of one record whose control bit is set after the fact, CRC-32C recomputed."""
    data = bytearray(build_batch(offset, [(1_700_000_000_000, key, value)], producer_id=7, producer_epoch=0,
                                 is_transactional=True, compression=compression))
    attrs = struct.unpack_from(">h", data, ATTRIBUTES_OFFSET)[0] | CONTROL_FLAG
    struct.pack_into(">h", data, ATTRIBUTES_OFFSET, attrs)
    struct.pack_into(">I", data, CRC_OFFSET, crc32c.crc32c(bytes(data[ATTRIBUTES_OFFSET:])))
    return bytes(data)
