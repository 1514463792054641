"""Compressed message sets of the formats before 0.11 (magic 0 and 1) whose inner messages are malformed: a null
or empty value, a stream that ends inside a header or a message, a size field below the minimum, a compressed
inner message, a v1 wrapper offset of 0 or below the last inner offset, inner messages of another magic. Each is
a segment of one wrapper; Kafka's own reading of them (``AbstractLegacyRecordBatch.DeepRecordsIterator``) is asked
through kafka-dump-log's deep iteration in tests/kafka/test_dump_data_log.py."""

from __future__ import annotations

from segdex.indexcore.record.compression import compress
from segdex.indexcore.tools.segment_writer import legacy_message

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
    return cases
