"""Where Kafka's ``FileLogInputStream.nextBatch`` stops, at the byte: a tail of exactly 17 bytes (offset, size,
and up to magic) is not read, whatever its size field says; a batch cut by a single byte is partial. And a
magic-1 message of exactly the minimum size (null key and value) still has its timestamp. Bytes laid out by hand
from the message formats; ``open_regular`` decodes text with the encoding it is given."""

from __future__ import annotations

import struct

from segdex.indexcore.fs.file_access import open_regular
from segdex.indexcore.record.file_records import batches
from segdex.indexcore.record.record_batch import read_batch_header
from tests.support.kafka_bytes import legacy_message


def legacy_v1(offset: int, timestamp: int) -> bytes:
    """A magic-1 message with null key and value: size 22, the least a magic-1 message can have."""
    return legacy_message(offset, 0, timestamp, None, None)


def test_a_17_byte_tail_is_not_read_even_with_a_bad_size():
    """nextBatch returns null when ``position + HEADER_SIZE_UP_TO_MAGIC >= end``: 17 bytes whose size field is 0
    (below the 14-byte minimum) end the iteration quietly, after the whole message before them."""
    message = legacy_v1(0, 1_700_000_000_000)
    tail = struct.pack(">qi", 1, 0) + b"\x01" * 5
    assert len(tail) == 17
    found = list(batches(message + tail))
    assert [(b.position, b.size_in_bytes) for b in found] == [(0, len(message))]


def test_a_batch_cut_by_one_byte_is_partial():
    """``position > end - LOG_OVERHEAD - size``: one byte short of the size it declares, a message is not read."""
    message = legacy_v1(0, 1_700_000_000_000)
    assert list(batches(message[:-1])) == []
    assert [b.size_in_bytes for b in batches(message)] == [len(message)] == [34]


def test_a_minimum_size_magic_1_message_keeps_its_timestamp():
    """Size 22 is RECORD_OVERHEAD_V1 itself: the message has a timestamp, read as its max timestamp."""
    batch = read_batch_header(legacy_v1(5, 1_700_000_000_123), 0)
    assert (batch.magic, batch.base_offset, batch.max_timestamp) == (1, 5, 1_700_000_000_123)


def test_open_regular_decodes_with_the_encoding_given(tmp_path):
    path = tmp_path / "latin1.properties"
    path.write_bytes("caf\u00e9=1\n".encode("latin-1"))
    with open_regular(path, encoding="latin-1") as f:
        assert f.read() == "caf\u00e9=1\n"
