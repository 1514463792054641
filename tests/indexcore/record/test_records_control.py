"""End-transaction markers read as Kafka's recovery reads them (``EndTransactionMarker.deserialize``), in the test
process, on control batches built byte by byte: the good ones, and each malformed key or value with what Kafka
throws (``InvalidRecordException``, which recovery truncates at, or the exceptions that escape it)."""

from __future__ import annotations

import struct

import crc32c
import pytest

from segdex.indexcore.errors import InvalidRecordException, RecoveryFailedException
from segdex.indexcore.record.batch_header import ATTRIBUTES_OFFSET, CRC_OFFSET, RECORD_BATCH_OVERHEAD
from segdex.indexcore.record.file_records import batches
from segdex.indexcore.record.records import control_record, end_txn_marker
from segdex.indexcore.tools.segment_writer import build_batch
from tests.support.control_batches import control_batch


def marker(data: bytes):
    [batch] = list(batches(data))
    return end_txn_marker(data, batch)


def test_good_markers():
    assert marker(control_batch(struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 9))) == (
        "COMMIT", 9, 1_700_000_000_000)
    assert marker(control_batch(struct.pack(">hh", 3, 0), struct.pack(">hi", 2, -1) + b"tail"))[:2] == ("ABORT", -1)
    assert marker(build_batch(3, [], control=("ABORT", 4), control_timestamp=12, producer_id=7,
                              is_transactional=True)) == ("ABORT", 4, 12)


@pytest.mark.parametrize(("key", "value", "error", "words"), [
    (None, struct.pack(">hi", 0, 1), RecoveryFailedException,
     "control record at offset 5 has no key (Kafka: NullPointerException)"),
    (b"\0\0\0", struct.pack(">hi", 0, 1), InvalidRecordException,
     "Invalid value size found for end control record key. Must have at least 4 bytes, but found only 3"),
    (struct.pack(">hh", -1, 1), struct.pack(">hi", 0, 1), InvalidRecordException,
     "Invalid version found for control record: -1"),
    (struct.pack(">hh", 0, 7), struct.pack(">hi", 0, 1), RecoveryFailedException,
     "Invalid control record type for end transaction marker UNKNOWN (Kafka: IllegalArgumentException)"),
    (struct.pack(">hh", 0, 2), struct.pack(">hi", 0, 1), RecoveryFailedException,
     "Invalid control record type for end transaction marker LEADER_CHANGE (Kafka: IllegalArgumentException)"),
    (struct.pack(">hh", 0, 6), struct.pack(">hi", 0, 1), RecoveryFailedException,
     "Invalid control record type for end transaction marker KRAFT_VOTERS (Kafka: IllegalArgumentException)"),
    (struct.pack(">hh", 0, 0), None, RecoveryFailedException,
     "end transaction marker at offset 5 has no value (Kafka: NullPointerException)"),
    (struct.pack(">hh", 0, 0), b"\0" * 5, InvalidRecordException,
     "Invalid value size found for end transaction marker. Must have at least 6 bytes, but found only 5"),
    (struct.pack(">hh", 0, 0), struct.pack(">hi", -2, 1), InvalidRecordException,
     "Invalid version found for end transaction marker: -2"),
])
def test_malformed_markers_raise_what_kafka_raises(key, value, error, words):
    with pytest.raises(error) as e:
        marker(control_batch(key, value))
    assert str(e.value) == words


def test_a_control_batch_kafka_cannot_decompress():
    """LZ4 frames of dependent blocks: Kafka's reader refuses them when it opens the stream (``FLG.fromByte``), a
    ``KafkaException`` its recovery does not catch."""
    data = bytearray(control_batch(struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 9), compression=3))
    flg = RECORD_BATCH_OVERHEAD + 4
    data[flg] &= ~0x20  # block independence off
    struct.pack_into(">I", data, CRC_OFFSET, crc32c.crc32c(bytes(data[ATTRIBUTES_OFFSET:])))
    with pytest.raises(RecoveryFailedException) as e:
        marker(bytes(data))
    assert str(e.value) == ("control batch at offset 5: java.lang.RuntimeException: Dependent block stream is "
                            "unsupported (Kafka: KafkaException)")


def test_control_record_for_display_is_lenient():
    [batch] = list(batches(data := control_batch(struct.pack(">hh", 0, 9), None)))
    assert control_record(data, batch) == ("UNKNOWN(9)", -1)
    [batch] = list(batches(data := control_batch(struct.pack(">hh", 0, 0), struct.pack(">hi", 0, 3))))
    assert control_record(data, batch) == ("ABORT", 3)
