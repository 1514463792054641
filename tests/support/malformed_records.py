"""Records malformed inside batches whose CRC is right, as Kafka's reader meets them:

- compressed message sets of the formats before 0.11 (magic 0 and 1) whose inner messages are malformed: a null or
  empty value, a stream that ends inside a header or a message, a size field below the minimum, a compressed inner
  message, a v1 wrapper offset of 0 or below the last inner offset, inner messages of another magic
  (``AbstractLegacyRecordBatch.DeepRecordsIterator``);
- v2 records whose headers are malformed (``DefaultRecord.readFrom``).

Each is a segment of one batch; Kafka's own reading of them is asked through kafka-dump-log's deep iteration in
tests/kafka/test_dump_data_log.py."""

from __future__ import annotations

import gzip
import struct
import zlib

from segdex.indexcore.record import crc32c
from segdex.indexcore.record.compression import compress
from segdex.indexcore.tools.segment_writer import legacy_message
from tests.support.kafka_bytes import varint

GZIP = 1


def _inner(magic: int, n: int, ts: int = 1000) -> bytes:
    """``n`` messages of ``magic`` with relative offsets 0..n-1, keys k0.., values v0.."""
    return b"".join(legacy_message(i, b"k%d" % i, b"v%d" % i, magic=magic, timestamp=ts + i) for i in range(n))


def _wrap(offset: int, payload: bytes | None, magic: int, attributes: int = GZIP, ts: int = 2000) -> bytes:
    value = None if payload is None else compress(attributes & 0x07, payload)
    return legacy_message(offset, None, value, magic=magic, attributes=attributes, timestamp=ts)


def _with_magic(message: bytes, magic: int) -> bytes:
    """``message`` with its magic byte changed (its CRC left as it was)."""
    out = bytearray(message)
    out[16] = magic & 0xFF
    return bytes(out)


def legacy_wrapper_cases() -> dict[str, bytes]:
    """Name -> the bytes of a one-wrapper segment."""
    cases = {}
    for m in (0, 1):
        one = _inner(m, 1)
        cases[f"m{m}_null_value"] = _wrap(5, None, m)
        cases[f"m{m}_empty_value"] = _wrap(5, b"", m)
        cases[f"m{m}_partial_header_after"] = _wrap(2, _inner(m, 3) + b"\x00" * 7, m)
        cases[f"m{m}_last_message_cut"] = _wrap(2, _inner(m, 3)[:-5], m)
        cases[f"m{m}_size_below_14"] = _wrap(2, one + b"\x00" * 8 + b"\x00\x00\x00\x0a" + b"\x00" * 10, m)
        cases[f"m{m}_inner_compressed"] = _wrap(
            2, one + legacy_message(1, None, compress(GZIP, one), magic=m, attributes=GZIP) + one, m)
        cases[f"m{m}_zero_wrapper_offset"] = _wrap(0, _inner(m, 3), m)
        cases[f"m{m}_wrapper_below_last_inner"] = _wrap(1, _inner(m, 3), m)
        cases[f"m{m}_inner_of_the_other_magic"] = _wrap(2, _inner(1 - m, 3), m)
        cases[f"m{m}_inner_magic_2"] = _wrap(2, one + _with_magic(legacy_message(1, b"kk", b"vv", timestamp=77), 2), m)
        cases[f"m{m}_log_append_time"] = _wrap(2, _inner(0, 1) + _inner(1, 2)[len(_inner(1, 1)):], m,
                                               attributes=GZIP | 0x08)
        # a value its codec's stream cannot read whole (the message's CRC right): cut, or a byte changed
        many = _inner(m, 40)
        for codec, name in ((1, "gzip"), (2, "snappy"), (3, "lz4")):
            value = compress(codec, many)
            cases[f"m{m}_{name}_value_cut"] = legacy_message(39, None, value[:len(value) * 2 // 3], magic=m,
                                                             attributes=codec, timestamp=2000)
        flipped = bytearray(compress(GZIP, many))
        flipped[len(flipped) // 2] ^= 0x10
        cases[f"m{m}_gzip_value_corrupt"] = legacy_message(39, None, bytes(flipped), magic=m, attributes=GZIP,
                                                           timestamp=2000)
    return cases


def _v2_record(headers: bytes) -> bytes:
    """A v2 record at deltas 0 with no key, value ``v``, then ``headers`` (its count first) as they are."""
    body = bytes([0]) + varint(0) + varint(0) + varint(-1) + varint(1) + b"v" + headers
    return varint(len(body)) + body


def v2_header_cases() -> dict[str, bytes]:
    """Name -> a one-batch segment whose second record's headers are malformed (a negative count, a count larger
    than the bytes left, a null header key), its CRC right."""
    good = _v2_record(varint(1) + varint(1) + b"h" + varint(1) + b"x")
    tails = {"negative_header_count": varint(-2), "header_count_past_the_end": varint(50),
             "null_header_key": varint(1) + varint(-1) + varint(-1)}
    cases = {}
    for name, headers in tails.items():
        records = good + _v2_record(headers)
        head = struct.pack(">qiibIhiqqqhii", 0, 49 + len(records), 0, 2, 0, 0, 1, 1000, 1000, -1, -1, -1, 2)
        batch = bytearray(head + records)
        struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
        cases[name] = bytes(batch)
    return cases


def _message(offset: int, rest: bytes) -> bytes:
    """A legacy message whose bytes after its CRC are ``rest`` (magic first), its CRC right."""
    return struct.pack(">qiI", offset, len(rest) + 4, zlib.crc32(rest) & 0xFFFFFFFF) + rest


def short_cases() -> dict[str, bytes]:
    """Name -> a segment whose last batch holds less than its fields: a v2 batch shorter than its 61-byte header
    (at the file's end, or before another batch), a v1 message whose key's length runs past its end, another
    whose key does (the value's length, asked for first, lies past the end), a v0 message whose value does."""
    from segdex.indexcore.tools.segment_writer import build_batch

    good, after = build_batch(0, [(1000, b"k", b"v")]), build_batch(2, [(1000, b"k", b"v")])
    short = struct.pack(">qiib", 1, 20, 0, 2) + bytes(15)  # a size field of 20: 32 bytes
    return {"v2_short_at_the_end": good + short,
            "v2_short_before_a_batch": good + short + after,
            "v1_key_length_past_the_end": _message(0, struct.pack(">bbq", 1, 0, 1000)),  # size 14
            "v1_key_past_the_end": _message(0, struct.pack(">bbqi", 1, 0, 1000, 100) + b"abcde"),
            "v0_value_past_the_end": _message(0, struct.pack(">bbi", 0, 0, -1) + struct.pack(">i", 9) + b"ab")}


def _v2_batch(records: bytes, count: int, attributes: int = 0) -> bytes:
    """A v2 batch at offset 0 of ``count`` records whose encoded bytes (compressed where ``attributes`` says) are
    ``records``, its CRC right."""
    head = struct.pack(">qiibIhiqqqhii", 0, 49 + len(records), 0, 2, 0, attributes, count - 1, 1000, 1000, -1, -1,
                       -1, count)
    batch = bytearray(head + records)
    struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
    return bytes(batch)


def v2_record_cases() -> dict[str, bytes]:
    """Name -> a one-batch segment whose records do not fit their batch or stream as ``DefaultRecord.readFrom``
    reads them, its CRC right: uncompressed, a record's length past the batch, a negative one, one longer than
    its fields, bytes after the last record, a record length varint cut by the batch's end or too long, a key
    past the batch; gzip, its stream cut inside the records or after them (its trailer gone), a header that is
    not gzip's, bytes after the last record in the stream, a record of length 0, a negative one, one past the
    stream's end, and fewer records than the batch counts."""
    good = _v2_record(varint(0))
    rec = _v2_record(varint(0))
    body = rec[1:]  # the record's fields, its length varint dropped
    stream = gzip.compress(good + good, mtime=0)
    cases = {
        "v2_record_length_past_the_batch": _v2_batch(good + varint(len(body) + 30) + body, 2),
        "v2_negative_record_length": _v2_batch(good + varint(-1) + body, 2),
        "v2_record_longer_than_its_fields": _v2_batch(good + varint(len(body) + 2) + body + b"\0\0", 2),
        "v2_bytes_after_the_last_record": _v2_batch(good + good + b"\x01\x02", 2),
        "v2_record_length_cut": _v2_batch(good + b"\x80", 2),
        "v2_record_length_too_long": _v2_batch(good + b"\xff\xff\xff\xff\x8f", 2),
        "v2_key_past_the_batch": _v2_batch(good + varint(5) + b"\0" + varint(0) + varint(0) + varint(40) + b"k", 2),
        "gzip_cut_inside_the_records": _v2_batch(stream[:len(stream) // 2], 2, GZIP),
        "gzip_trailer_cut": _v2_batch(stream[:-8], 2, GZIP),
        "gzip_not_gzip": _v2_batch(b"\x00\x01" + stream[2:], 2, GZIP),
        "gzip_bytes_after_the_last_record": _v2_batch(gzip.compress(good + good + b"\x05", mtime=0), 2, GZIP),
        "gzip_record_of_length_zero": _v2_batch(gzip.compress(good + varint(0), mtime=0), 2, GZIP),
        "gzip_fewer_records_than_counted": _v2_batch(gzip.compress(good, mtime=0), 2, GZIP),
        "gzip_negative_record_length": _v2_batch(gzip.compress(good + varint(-1), mtime=0), 2, GZIP),
        "gzip_record_length_past_the_ceiling": _v2_batch(gzip.compress(good + varint(2**31 - 1), mtime=0), 2, GZIP),
        "gzip_record_past_the_stream": _v2_batch(gzip.compress(good + varint(len(body) + 5) + body, mtime=0), 2,
                                                 GZIP),
    }
    return cases
