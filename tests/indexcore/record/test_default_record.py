"""``DefaultRecord`` (``record/default_record.py``): v2 records read as Kafka's ``DefaultRecordBatch`` iterators read
them, from the batch's own buffer and from a compressed batch's decompressed stream, on batches packed by hand
(``test_record_batch``'s helpers). The error texts are Kafka's (``DefaultRecord.readFrom``, ``ByteUtils``,
``DefaultRecordBatch.RecordIterator``/``StreamRecordIterator``), judged against Kafka 4.4's ``kafka-dump-log`` in
``tests/kafka/test_dump_data_log.py``."""

from __future__ import annotations

import gzip

import pytest

from segdex.indexcore.errors import BufferBoundsException, InvalidRecordException
from segdex.indexcore.record.compression import wrap_for_input
from segdex.indexcore.record.default_record import PREMATURE_EOF, stream_records
from segdex.indexcore.record.records import Record, v2_records
from tests.indexcore.record.test_record_batch import error_text, framed, read_all, record_body, v2_batch, v2_view, zz

# --- v2 records ---------------------------------------------------------------------------------------------


def test_ten_byte_varlong_timestamp_delta_is_read():
    """ByteUtils.readVarlong accepts 10 bytes: 2**62 zig-zags to 2**63, a 10-byte varlong."""
    ts_raw = zz(2**62)
    assert len(ts_raw) == 10
    data = v2_batch(framed(record_body(b"k", b"v", ts_raw=ts_raw)), 1, base_ts=0, max_ts=2**62)
    assert read_all(data) == [Record(100, 2**62, b"k", b"v", [])]


def test_eleven_byte_varint_is_too_long():
    """A varlong whose 10th byte still has its continuation bit set: ``ByteUtils``' ``IllegalArgumentException``,
    which ``DefaultRecord.readFrom`` turns into "Found invalid record structure"."""
    data = v2_batch(framed(record_body(b"k", b"v", ts_raw=b"\x80" * 10 + b"\x00")), 1)
    assert error_text(InvalidRecordException, read_all, data) == "Found invalid record structure"


def test_truncated_varint():
    """A record length varint cut by the end of the batch: ``uncompressedIterator``'s
    ``BufferUnderflowException``."""
    data = v2_batch(b"\x80", 1)
    assert error_text(InvalidRecordException, read_all, data) == PREMATURE_EOF


def test_a_five_byte_record_length_with_its_high_bit_set_escapes_the_iterator():
    """The record length's ``IllegalArgumentException`` is not the iterator's to catch: Kafka throws it as it
    is, with the value read so far in hexadecimal."""
    data = v2_batch(b"\xff\xff\xff\xff\x8f", 1)
    with pytest.raises(BufferBoundsException) as info:
        read_all(data)
    assert (info.value.kafka_class, str(info.value)) == (
        "java.lang.IllegalArgumentException", "Varint is too long, the most significant bit in the 5th byte is set, "
        "converted value: ffffffff")


def test_key_longer_than_the_batch():
    """A key length that runs past the batch, inside a record whose own length fits: the slice's
    ``IllegalArgumentException``, "Found invalid record structure"."""
    body = b"\x00" + zz(0) + zz(0) + zz(50) + b"abc"
    data = v2_batch(framed(body), 1)
    assert error_text(InvalidRecordException, read_all, data) == "Found invalid record structure"


def test_negative_record_count():
    """DefaultRecordBatch: 'Found invalid record count -1 in magic v2 batch'."""
    data = v2_batch(b"", -1)
    assert error_text(InvalidRecordException, read_all, data) == "Found invalid record count -1 in magic v2 batch"


def test_record_length_outside_the_payload():
    """A record length past the batch's end, or a negative one (read as the fields end, then refused)."""
    body = record_body(b"k", b"v")
    assert error_text(InvalidRecordException, read_all, v2_batch(zz(40) + body, 1)) == (
        f"Invalid record size: expected 40 bytes in record payload, but instead the buffer has only {len(body)} "
        f"remaining bytes.")
    assert error_text(InvalidRecordException, read_all, v2_batch(zz(-1) + body, 1)) == (
        f"Invalid record size: expected to read -1 bytes in record payload, but instead read {len(body)}")


def test_zero_record_length():
    """A record of length 0 cannot hold its attributes byte and fields: its size does not match them."""
    body = record_body(None, None)
    data = v2_batch(zz(0) + body, 1)
    assert error_text(InvalidRecordException, read_all, data) == (
        f"Invalid record size: expected to read 0 bytes in record payload, but instead read {len(body)}")


def test_record_longer_than_its_fields():
    """A record whose length counts two bytes more than its fields."""
    body = record_body(b"k", b"v") + b"\x00\x00"
    data = v2_batch(framed(body), 1)
    assert error_text(InvalidRecordException, read_all, data) == (
        f"Invalid record size: expected to read {len(body)} bytes in record payload, but instead read "
        f"{len(body) - 2}")


def test_bytes_after_the_last_declared_record():
    """The declared count is checked when the last record is read (Kafka's RecordIterator): 3 bytes remain."""
    payload = framed(record_body(b"a", b"1")) + b"\x01\x02\x03"
    data = v2_batch(payload, 1)
    it = v2_records(data, v2_view(data))
    with pytest.raises(InvalidRecordException) as info:
        next(it)
    assert str(info.value) == "Incorrect declared batch size, records still remaining in file"


def test_malformed_utf8_header_key_is_replaced():
    """Header keys are decoded as Utils.utf8 does (new String(bytes, UTF_8)): a malformed byte becomes U+FFFD."""
    body = record_body(b"k", b"v", offset_delta=1, headers=[(b"\xffh", b"x"), (b"ok", None)])
    data = v2_batch(framed(body), 1)
    assert read_all(data) == [Record(101, 1000, b"k", b"v", [("\ufffdh", b"x"), ("ok", None)])]



# --- a compressed batch's records: StreamRecordIterator over the decompressed stream ----------------------------


def _gzip_batch(payload: bytes, count: int, **kw) -> bytes:
    return v2_batch(gzip.compress(payload, mtime=0), count, attributes=kw.pop("attributes", 0) | 1, **kw)


def test_a_stream_record_of_length_zero_is_an_invalid_structure():
    """``ByteBuffer.allocate(0)`` is no failure: the record's empty buffer has no attributes byte to read."""
    data = _gzip_batch(zz(0), 1)
    assert error_text(InvalidRecordException, read_all, data) == "Found invalid record structure"


def test_a_stream_that_ends_before_a_records_length_is_a_premature_end():
    """Past the stream's end ``read()`` gives -1, a byte with its high bit set: five of them make a varint Kafka
    refuses, which the stream iterator reads as a premature end. A negative length is refused in Kafka 4.4's
    words, and so is one past the reader's ceiling (Integer.MAX_VALUE - 8)."""
    one = framed(record_body(b"k", b"v"))
    assert error_text(InvalidRecordException, read_all, _gzip_batch(one, 2)) == PREMATURE_EOF
    assert error_text(InvalidRecordException, read_all, _gzip_batch(one + zz(-1), 2)) == (
        "Invalid record size: -1 is negative.")
    assert error_text(InvalidRecordException, read_all, _gzip_batch(one + zz(2**31 - 1), 2)) == (
        "Invalid record size: 2147483647 exceeds the configured maximum record size of 2147483639.")


def test_a_stream_record_of_exactly_the_ceiling_is_read():
    """``readFrom`` refuses a length above ``maxRecordBodySize``, not one equal to it: a record of exactly the
    ceiling is read (here a ceiling of the record's own length; the readers' default is Integer.MAX_VALUE - 8)."""
    body = record_body(b"k", b"v")
    payload = gzip.compress(framed(body), mtime=0)
    assert [f[0] for f in stream_records(wrap_for_input(1, payload), 1, 100, 1000, None, len(body))] == [100]
    with pytest.raises(InvalidRecordException) as info:
        next(stream_records(wrap_for_input(1, payload), 1, 100, 1000, None, len(body) - 1))
    assert str(info.value) == (f"Invalid record size: {len(body)} exceeds the configured maximum record size of "
                               f"{len(body) - 1}.")


def test_a_stream_that_ends_inside_a_record_says_so():
    body = record_body(b"k", b"v")
    data = _gzip_batch(zz(len(body) + 5) + body, 1)
    assert error_text(InvalidRecordException, read_all, data) == (
        f"Invalid record size: expected {len(body) + 5} bytes in record payload, but the record payload reached EOF.")


def test_a_stream_records_length_with_a_byte_0x7f_and_its_log_append_time():
    """A record of 8,150 bytes: its length's varint ends with the byte 0x7F (a positive byte, the varint's last);
    with LogAppendTime every record takes the batch's max timestamp."""
    body = record_body(b"k", b"v" * 8140)
    assert zz(len(body))[-1] == 0x7F
    data = _gzip_batch(framed(body), 1, attributes=0x08, max_ts=5555)
    assert [(r.key, len(r.value), r.timestamp) for r in read_all(data)] == [(b"k", 8140, 5555)]
