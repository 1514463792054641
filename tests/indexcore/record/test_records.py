"""Deep iteration over legacy (magic 0/1) messages and control batches, on bytes packed here by hand.

Where the expected values come from: every message is packed with ``struct`` from the legacy message format of
the Kafka protocol guide (offset int64, size int32, crc uint32 = CRC-32 of the bytes from magic on, magic int8,
attributes int8, [timestamp int64 for magic 1], key and value as int32 length (-1: null) then the bytes), and the
v2 batch header from its field list (baseOffset, batchLength, partitionLeaderEpoch, magic, crc = CRC-32C from
attributes on, attributes, lastOffsetDelta, baseTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence,
recordsCount). The rules are Kafka's ``LegacyRecord`` / ``AbstractLegacyRecordBatch``: a message is at least
``RECORD_OVERHEAD_V0`` (14) bytes; an empty key or value is not a null one; a compressed wrapper's inner offsets are
relative for magic 1 (the wrapper carries the last one's absolute offset) and absolute for magic 0; a magic 1
LogAppendTime wrapper gives its own timestamp to every inner message.
"""

from __future__ import annotations

import gzip
import struct
import zlib

import crc32c
import pytest

from segdex.indexcore.errors import CorruptRecordException, RecoveryFailedException, UnknownCompressionTypeException
from segdex.indexcore.record.file_records import batches
from segdex.indexcore.record.records import (
    KEYS,
    Record,
    control_record,
    end_txn_marker,
    records,
    streaming_iterator,
)

GZIP = 1
SNAPPY = 2
LZ4 = 3
LOG_APPEND_TIME = 0x08  # attributes bit 3 (magic 1)
TRANSACTIONAL = 0x10
CONTROL = 0x20


def field(data: bytes | None) -> bytes:
    return struct.pack(">i", -1) if data is None else struct.pack(">i", len(data)) + data


def body(magic: int, key: bytes | None, value: bytes | None, attributes: int = 0, ts: int = -1) -> bytes:
    """The bytes of a legacy message after its crc: magic, attributes, [timestamp], key, value."""
    return struct.pack(">bb", magic, attributes) + (struct.pack(">q", ts) if magic == 1 else b"") + field(key) + \
        field(value)


def message(offset: int, rest: bytes) -> tuple[bytes, int]:
    """One message: offset, size, crc over ``rest``, then ``rest``; and its crc."""
    crc = zlib.crc32(rest) & 0xFFFFFFFF
    return struct.pack(">qiI", offset, len(rest) + 4, crc) + rest, crc


def msg(offset: int, rest: bytes) -> bytes:
    return message(offset, rest)[0]


def deep(data: bytes) -> list[Record]:
    """Every record of every batch in ``data``."""
    return [r for batch in batches(data) for r in records(data, batch)]


def wrapper(offset: int, magic: int, inner: bytes, attributes: int = GZIP, ts: int = -1) -> bytes:
    return msg(offset, body(magic, None, gzip.compress(inner), attributes, ts))


def test_plain_messages_with_null_and_empty_fields():
    """The smallest message (14 bytes after offset and size: null key, null value) is valid; an empty key reads as
    b"" and an empty value ends exactly at the message end."""
    m0, c0 = message(0, body(0, None, None))
    m1, c1 = message(1, body(0, b"", b"v"))
    m2, c2 = message(2, body(1, b"k", b"", ts=123))
    assert len(m0) == 12 + 14
    assert deep(m0 + m1 + m2) == [Record(0, -1, None, None, crc=c0, valid=True),
                                  Record(1, -1, b"", b"v", crc=c1, valid=True),
                                  Record(2, 123, b"k", b"", crc=c2, valid=True)]


def test_magic_1_wrapper_offsets_and_timestamps():
    """Inner offsets 0 and 1 under a wrapper at offset 41 are 40 and 41; CreateTime keeps the inner timestamps,
    LogAppendTime gives both the wrapper's."""
    a, ca = message(0, body(1, b"a", b"x", ts=10))
    b, cb = message(1, body(1, None, b"y", ts=20))
    assert deep(wrapper(41, 1, a + b, ts=20)) == [Record(40, 10, b"a", b"x", crc=ca, valid=True),
                                                  Record(41, 20, None, b"y", crc=cb, valid=True)]
    assert deep(wrapper(41, 1, a + b, GZIP | LOG_APPEND_TIME, ts=999)) == [
        Record(40, 999, b"a", b"x", crc=ca, valid=True), Record(41, 999, None, b"y", crc=cb, valid=True)]


def test_magic_0_wrapper_inner_offsets_are_absolute():
    """Magic 0 inner messages carry absolute offsets, used as they are whatever the wrapper's offset."""
    inner = [message(o, body(0, None, bytes([o]))) for o in (5, 6, 7)]
    assert deep(wrapper(20, 0, b"".join(m for m, _ in inner))) == [
        Record(o, -1, None, bytes([o]), crc=c, valid=True) for o, (_, c) in zip((5, 6, 7), inner, strict=True)]


GOOD = msg(0, body(0, b"k", b"v"))


@pytest.mark.parametrize("inner", [
    # magic 1, size 14: the header (with its timestamp) fits, the key length field does not
    msg(0, body(1, None, None)[:-8]),
    # a key length of 100 in a message holding 5 bytes after it: the value's length, asked for first, lies past
    # its end (a reader of keys only gets the key's slice's IllegalArgumentException: test_a_key_past_...)
    msg(0, struct.pack(">bbi", 0, 0, 100) + b"abcde")])
def test_a_field_past_an_inner_messages_end_is_bytebuffers_error(inner):
    """``ByteBuffer.getInt`` past the end: ``IndexOutOfBoundsException``, which has no message."""
    from segdex.indexcore.errors import BufferBoundsException

    with pytest.raises(BufferBoundsException) as e:
        deep(wrapper(0, 0, inner))
    assert (e.value.kafka_class, e.value.java_message) == ("java.lang.IndexOutOfBoundsException", None)


@pytest.mark.parametrize(("inner", "words"), [
    # a whole offset+size header (12 bytes) left after the last message, size 0 (DataLogInputStream.nextBatch)
    (GOOD + struct.pack(">qi", 1, 0), "Record size is less than the minimum record overhead (14)"),
    # a size of 13 (below the 14-byte minimum) followed by more messages
    (struct.pack(">qi", 0, 13) + bytes(13) + GOOD, "Record size is less than the minimum record overhead (14)"),
])
def test_malformed_inner_messages(inner, words):
    with pytest.raises(CorruptRecordException) as e:
        deep(wrapper(0, 0, inner))
    assert str(e.value) == words


@pytest.mark.parametrize("tail", [b"\0" * 5, struct.pack(">qi", 1, 40) + b"\0" * 39])
def test_an_inner_stream_ends_quietly_where_its_bytes_run_out(tail):
    """``DataLogInputStream.nextBatch``: a header or a message the bytes left cannot hold ends the stream (its
    ``readFully`` comes up short), with the messages before it read."""
    assert [(r.offset, r.key, r.value) for r in deep(wrapper(0, 0, GOOD + tail))] == [(0, b"k", b"v")]


def v2_batch(offset: int, attributes: int, payload: bytes, count: int = 1) -> bytes:
    """A v2 batch header (from the protocol's field list) over ``payload``, CRC-32C from attributes on."""
    head = struct.pack(">qiibIhiqqqhii", offset, 49 + len(payload), 0, 2, 0, attributes, count - 1, 1000, 1000, 7,
                       0, -1, count)
    data = bytearray(head + payload)
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    return bytes(data)


def record_v2(key: bytes | None, value: bytes | None) -> bytes:
    """A v2 record with offset and timestamp deltas 0 and no headers (varints zig-zag encoded, all < 64 here)."""
    def varint(n: int) -> bytes:
        return bytes([(n << 1) ^ (n >> 63)])

    def nullable(b: bytes | None) -> bytes:
        return varint(-1) if b is None else varint(len(b)) + b

    rec = b"\0" + varint(0) + varint(0) + nullable(key) + nullable(value) + varint(0)
    return varint(len(rec)) + rec


@pytest.mark.parametrize("key", [None, b"\0\1"])
def test_control_record_without_a_valid_key(key):
    data = v2_batch(5, TRANSACTIONAL | CONTROL, record_v2(key, struct.pack(">hi", 0, 1)))
    [batch] = list(batches(data))
    with pytest.raises(CorruptRecordException) as e:
        control_record(data, batch)
    assert str(e.value) == "Control record has no valid key"


def test_lz4_control_batch_of_dependent_blocks_after_another_batch():
    """Kafka reads the LZ4 frame at the control batch's own payload (its FLG byte's block-independence bit is
    off): refused, whatever the batch before it holds."""
    import cramjam

    before = v2_batch(0, 0, record_v2(None, b"\xff" * 80))
    compressor = cramjam.lz4.Compressor(block_linked=True)
    compressor.compress(record_v2(struct.pack(">hh", 0, 0), struct.pack(">hi", 0, 9)))
    frame = bytearray(compressor.finish())
    frame[4] &= ~0x20
    data = before + v2_batch(5, LZ4 | TRANSACTIONAL | CONTROL, bytes(frame))
    control = list(batches(data))[1]
    with pytest.raises(RecoveryFailedException) as e:
        end_txn_marker(data, control)
    assert str(e.value) == ("control batch at offset 5: java.lang.RuntimeException: Dependent block stream is "
                            "unsupported (Kafka: KafkaException)")


def test_control_batch_whose_payload_cannot_be_decompressed():
    """A snappy (xerial framed) payload whose block length runs past the payload: Kafka's SnappyInputStream throws,
    which escapes recovery as a KafkaException."""
    payload = b"\x82SNAPPY\x00" + struct.pack(">iii", 1, 1, 1000) + b"abc"
    data = v2_batch(5, SNAPPY | TRANSACTIONAL | CONTROL, payload)
    [batch] = list(batches(data))
    with pytest.raises(RecoveryFailedException) as e:
        end_txn_marker(data, batch)
    assert str(e.value) == "control batch at offset 5: Failed to decompress record stream (Kafka: KafkaException)"


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_a_streaming_read_asks_for_the_compression_type_before_any_record(codec: int):
    """``RecordBatch.streamingIterator`` asks ``CompressionType.forId`` whether the batch is compressed first: an
    id Kafka does not know throws ``IllegalArgumentException``, from a batch declaring no record too, and from a
    v1 message; a known id reads the records."""
    plain = v2_batch(3, 0, record_v2(b"k", b"v"))
    assert [(r.offset, r.key) for r in streaming_iterator(plain, next(batches(plain)))] == [(3, b"k")]
    for data in (v2_batch(3, codec, record_v2(b"k", b"v")), v2_batch(3, codec, b"", count=0),
                 msg(0, body(1, b"k", b"v", attributes=codec))):
        with pytest.raises(UnknownCompressionTypeException) as e:
            streaming_iterator(data, next(batches(data)))
        assert (str(e.value), e.value.kafka_class) == (f"Unknown compression type id: {codec}",
                                                       "java.lang.IllegalArgumentException")


OPENED = {  # legacy_wrapper_cases(): (offset, timestamp, key) of each record, as Kafka 4.4's deep iteration reads
    # them (tests/kafka/test_dump_data_log.py asks it), or what it throws
    "m0_null_value": "Found invalid compressed record set with null value (magic = 0)",
    "m1_null_value": "Found invalid compressed record set with null value (magic = 1)",
    "m1_empty_value": "Found invalid compressed record set with no inner records",
    "m1_size_below_14": "Record size is less than the minimum record overhead (14)",
    "m1_wrapper_below_last_inner": "Found invalid wrapper offset in compressed v1 message set, wrapper offset '1' is "
                                   "less than the last inner message offset '2' and it is not zero.",
    "m0_wrapper_below_last_inner": [(0, -1, b"k0"), (1, -1, b"k1"), (2, -1, b"k2")],
    "m1_zero_wrapper_offset": [(0, 1000, b"k0"), (1, 1001, b"k1"), (2, 1002, b"k2")],
    "m1_last_message_cut": [(1, 1000, b"k0"), (2, 1001, b"k1")],
    "m0_partial_header_after": [(0, -1, b"k0"), (1, -1, b"k1"), (2, -1, b"k2")],
    "m1_inner_magic_2": [(1, 1000, b"k0"), (2, 77, b"kk")],  # magic 2 is read in the v1 layout, its own timestamp
    "m0_inner_of_the_other_magic": [(0, 1000, b"k0"), (1, 1001, b"k1"), (2, 1002, b"k2")],
    "m1_inner_of_the_other_magic": [(0, -1, b"k0"), (1, -1, b"k1"), (2, -1, b"k2")],
    # LogAppendTime: the wrapper's timestamp for a magic 1 inner message, none for magic 0
    "m1_log_append_time": [(1, -1, b"k0"), (2, 2000, b"k1")],
}


@pytest.mark.parametrize("name", sorted(OPENED))
def test_a_wrapper_opens_as_kafkas_deep_records_iterator(name):
    from segdex.indexcore.errors import InvalidRecordException
    from tests.support.malformed_records import legacy_wrapper_cases

    data = legacy_wrapper_cases()[name]
    want = OPENED[name]
    if isinstance(want, str):
        with pytest.raises((InvalidRecordException, CorruptRecordException)) as e:
            deep(data)
        assert str(e.value) == want
    else:
        assert [(r.offset, r.timestamp, r.key) for r in deep(data)] == want


def test_a_compressed_inner_message_throws_when_the_iteration_reaches_it():
    from segdex.indexcore.errors import InvalidRecordException
    from tests.support.malformed_records import legacy_wrapper_cases

    data = legacy_wrapper_cases()["m1_inner_compressed"]
    it = records(data, next(batches(data)))
    assert next(it).key == b"k0"
    with pytest.raises(InvalidRecordException, match="^Inner messages must not be compressed$"):
        next(it)


@pytest.mark.parametrize(("name", "words"), [
    ("negative_header_count", "Found invalid number of record headers -2"),
    ("header_count_past_the_end", "Found invalid number of record headers. 50 is larger than the remaining size of "
                                  "the buffer"),
    ("null_header_key", "Invalid negative header key size -1")])
def test_malformed_v2_headers_throw_kafkas_words_at_their_record(name, words):
    """``DefaultRecord.readFrom``'s checks (Kafka 4.4's dump throws these, tests/kafka/test_dump_data_log.py): the
    record before is read."""
    from segdex.indexcore.errors import InvalidRecordException
    from tests.support.malformed_records import v2_header_cases

    data = v2_header_cases()[name]
    it = records(data, next(batches(data)))
    first = next(it)
    assert (first.offset, first.key, first.value, first.headers) == (0, None, b"v", [("h", b"x")])
    with pytest.raises(InvalidRecordException) as e:
        next(it)
    assert str(e.value) == words


def test_an_unreadable_legacy_message_of_a_mapped_file_raises_its_own_error(tmp_path):
    """The error of a message read from a mapped ``.log`` holds no view of the mapping: the file closes and the
    caller gets the message's error (a view in the traceback made the close raise ``BufferError`` instead)."""
    from segdex.indexcore.record.file_records import open_log

    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(msg(0, body(1, b"k", b"v")) + msg(1, struct.pack(">bbqi", 1, 0, -1, 100) + b"abcde"))
    from segdex.indexcore.errors import BufferBoundsException

    with pytest.raises(BufferBoundsException, match="^null$"):  # IndexOutOfBoundsException: the value's length
        with open_log(log) as buf:
            for batch in batches(buf):
                list(records(buf, batch))


def test_a_key_past_the_message_end_is_the_slices_error_for_a_reader_of_keys():
    """The cleaner's offset map asks for keys only (``KEYS``), and for a key only when the map takes it: a key
    length of 100 with 5 bytes left is then ``Utils.sizeDelimited``'s ``IllegalArgumentException``, kept in
    ``key_error`` until asked for. A reader of whole records asks for the value's length first, past the end
    (``IndexOutOfBoundsException``, no message)."""
    from segdex.indexcore.errors import BufferBoundsException

    data = msg(0, struct.pack(">bbqi", 1, 0, 1000, 100) + b"abcde")
    batch = next(batches(data))
    (record,) = records(data, batch, KEYS)
    assert record.key == b"" and record.value is None
    e = record.key_error
    assert (e.kafka_class, str(e)) == ("java.lang.IllegalArgumentException", "newLimit > capacity: (100 > 5)")
    with pytest.raises(BufferBoundsException) as e:
        list(records(data, batch))
    assert (e.value.kafka_class, e.value.java_message, str(e.value)) == ("java.lang.IndexOutOfBoundsException", None,
                                                                          "null")


def test_filter_reads_each_field_where_filter_batch_asks_for_it():
    """``FILTER`` (the cleaner's ``filterBatch``): no field past a message's end throws when the message is read;
    each waits in the record for its question. A value's bytes past the end (``value_error``: asked by the
    rebuild), its length past the end (``value_size_error``: asked by ``hasValue``), the key's length past it
    (both: the value's length lies after the key); a keyless message's too, never asked (``shouldRetainRecord``
    drops it first). The same through a compressed wrapper's inner messages."""
    from segdex.indexcore.record.records import FILTER

    value_past = struct.pack(">bbi", 0, 0, 1) + b"k" + struct.pack(">i", 9) + b"ab"
    value_size_past = struct.pack(">bbi", 0, 0, 4) + b"keys"
    key_size_past = struct.pack(">bbq", 1, 0, 5)
    keyless = struct.pack(">bbi", 0, 0, -1) + struct.pack(">i", 9) + b"ab"
    for data in (b"".join(msg(o, rest) for o, rest in enumerate((value_past, value_size_past, key_size_past,
                                                                 keyless))),
                 wrapper(3, 0, b"".join(msg(o, rest) for o, rest in enumerate((value_past, value_size_past,
                                                                                key_size_past, keyless))))):
        got = [r for b in batches(data) for r in records(data, b, FILTER)]
        errors = [(r.key_error, r.value_size_error, r.value_error) for r in got]
        assert [tuple(e and (e.kafka_class.rsplit(".", 1)[1], str(e)) for e in triple) for triple in errors] == [
            (None, None, ("IllegalArgumentException", "newLimit > capacity: (9 > 2)")),
            (None, ("IndexOutOfBoundsException", "null"), None),
            (("IndexOutOfBoundsException", "null"), ("IndexOutOfBoundsException", "null"), None),
            (None, None, ("IllegalArgumentException", "newLimit > capacity: (9 > 2)"))]
        assert [(r.key, r.value) for r in got] == [(b"k", b""), (b"keys", b""), (b"", b""), (None, b"")]


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_a_legacy_wrapper_of_an_unknown_codec_throws_as_kafkas_deep_iterator(codec: int, tmp_path):
    """``DeepRecordsIterator`` asks the wrapper's ``compressionType()`` right after its magic: ids 5 to 7 throw
    ``IllegalArgumentException("Unknown compression type id: N")``. Recovery never opens a wrapper (it checks the
    outer CRC only), so the segment is kept whole, its wrapper counted with no record read."""
    from segdex.indexcore.log.log_segment import recover_file

    data = wrapper(0, 1, msg(0, body(1, None, b"v")), attributes=codec) + msg(1, body(1, None, b"w"))
    with pytest.raises(UnknownCompressionTypeException, match=f"^Unknown compression type id: {codec}$"):
        deep(data)
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(data)
    result = recover_file(str(log), 0)
    assert (result.valid_bytes, result.next_offset) == (len(data), 2)
