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
