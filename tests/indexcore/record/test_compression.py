"""The codecs of batch payloads: xerial snappy framing."""

from __future__ import annotations

import struct

import cramjam
import pytest

from segdex.indexcore.errors import (
    CorruptRecordException,
    DecompressionException,
)
from segdex.indexcore.record.compression import _xerial_snappy, decompress

XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)


def _xerial(*blocks: bytes) -> bytes:
    """SnappyOutputStream's framing: the header, then [int32 length][raw snappy block] per block."""
    out = XERIAL_HEADER
    for b in blocks:
        raw = bytes(cramjam.snappy.compress_raw(b))
        out += struct.pack(">i", len(raw)) + raw
    return out


def test_every_xerial_block_is_kept():
    parts = [b"first block " * 20, b"second " * 30, b"third"]
    assert decompress(2, _xerial(*parts)) == b"".join(parts)


def test_a_truncated_xerial_block_is_refused():
    data = _xerial(b"a" * 100, b"b" * 300)
    cut = data[:-3]
    with pytest.raises(CorruptRecordException) as e:
        _xerial_snappy(cut)
    assert str(e.value) == "Truncated xerial snappy block"
    with pytest.raises(DecompressionException) as e:
        decompress(2, cut)
    assert str(e.value) == "Truncated xerial snappy block"


def test_snappy_is_snappy_javas_for_every_batch_kafka_wrote():
    """The ``_snappy`` kernel in SnappyOutputStream's framing gives back the very payload of each snappy batch of
    Kafka's fixture (written through snappy-java): decompressed, then compressed again, byte for byte."""
    from segdex.indexcore.record.compression import snappy_java_raw, xerial_snappy
    from segdex.indexcore.record.file_records import batches
    from tests.support.fixtures import FIXTURES

    raw = snappy_java_raw()
    assert raw is not None  # built by setup.py
    log = (FIXTURES / "v2_snappy" / "broker" / "00000000000000000000.log").read_bytes()
    n = 0
    for batch in batches(log):
        payload = log[batch.position + 61:batch.position + batch.size_in_bytes]
        assert xerial_snappy(decompress(2, payload), raw) == payload, batch.base_offset
        n += 1
    assert n >= 100
    # cramjam's snappy (snappy 1.1.8's hash) is not snappy-java's: what made the kernel necessary
    assert any(xerial_snappy(decompress(2, log[b.position + 61:b.position + b.size_in_bytes]),
                             lambda d: bytes(cramjam.snappy.compress_raw(d)))
               != log[b.position + 61:b.position + b.size_in_bytes] for b in batches(log))


def test_snappy_output_stream_blocks_are_32_kib():
    from segdex.indexcore.record.compression import XERIAL_BLOCK_SIZE, xerial_snappy

    data = bytes(range(256)) * 300  # 76,800 bytes: blocks of 32 KiB, 32 KiB and 11,264 bytes
    out = xerial_snappy(data)
    assert out[:16] == XERIAL_HEADER and decompress(2, out) == data
    pos, sizes = 16, []
    while pos < len(out):
        (length,) = struct.unpack_from(">i", out, pos)
        sizes.append(len(cramjam.snappy.decompress_raw(out[pos + 4:pos + 4 + length])))
        pos += 4 + length
    assert sizes == [XERIAL_BLOCK_SIZE, XERIAL_BLOCK_SIZE, 76_800 - 2 * XERIAL_BLOCK_SIZE]
    assert xerial_snappy(b"") == XERIAL_HEADER  # an empty stream: the header alone


def test_a_snappy_payload_without_xerial_framing_is_one_raw_block():
    """snappy-java's ``SnappyInputStream`` reads a stream that does not start with the xerial magic as one raw
    snappy block (``Snappy.compress``'s output), as some old clients wrote it."""
    data = b"kafka " * 500
    assert decompress(2, bytes(cramjam.snappy.compress_raw(data))) == data


def test_xerial_framing_falls_back_to_cramjam_where_the_kernel_is_not_built(monkeypatch):
    """Without the ``_snappy`` kernel, cramjam's raw snappy compresses each block: other bytes than snappy-java's
    for some inputs, the same data once decompressed, in the same framing."""
    from segdex.indexcore.record import compression

    monkeypatch.setattr(compression, "snappy_java_raw", lambda: None)
    data = bytes(range(256)) * 200
    out = compression.xerial_snappy(data)
    assert out[:16] == XERIAL_HEADER and decompress(2, out) == data
    assert out == compression.xerial_snappy(data, lambda b: bytes(cramjam.snappy.compress_raw(b)))
