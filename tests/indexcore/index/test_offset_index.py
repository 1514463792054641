"""Kafka's ``OffsetIndex``: append rules, lookups, sanity checks."""

from __future__ import annotations

import pytest

from segdex.indexcore.errors import (
    CorruptIndexException,
    IndexFullException,
    IndexOffsetOverflowException,
    InvalidOffsetException,
)
from segdex.indexcore.index.offset_index import OffsetIndex, trimmed_entry_count
from segdex.indexcore.index.offset_index import sanity_check as offset_sanity
from segdex.indexcore.index.time_index import sanity_check as time_sanity


def test_offset_index_rules_and_lookup():
    idx = OffsetIndex(100, max_index_size=24)
    idx.append(105, 300)
    idx.append(110, 900)
    with pytest.raises(InvalidOffsetException):
        idx.append(110, 1000)  # offsets must strictly grow
    idx.append(120, 1500)
    with pytest.raises(IndexFullException):
        idx.append(130, 2000)
    assert idx.to_bytes() == bytes.fromhex("00000005 0000012c 0000000a 00000384 00000014 000005dc".replace(" ", ""))
    assert idx.lookup(99) == (100, 0) and idx.lookup(105) == (105, 300)
    assert idx.lookup(119) == (110, 900) and idx.lookup(10**9) == (120, 1500)
    assert len(idx.to_bytes(preallocate=True)) == 24
    with pytest.raises(IndexOffsetOverflowException):
        OffsetIndex(0).append(2**31, 10)
    with pytest.raises(IndexOffsetOverflowException):
        OffsetIndex(50).append(49, 10)


def test_sanity_checks():
    offset_sanity(b"", 0)
    with pytest.raises(CorruptIndexException):
        offset_sanity(b"\x00" * 7, 0)
    with pytest.raises(CorruptIndexException):
        offset_sanity(bytes.fromhex("0000000a000000ff00000005000001ff"), 0)  # offsets go back
    with pytest.raises(CorruptIndexException):
        time_sanity(bytes.fromhex("000000000000000200000001000000000000000100000002"), 0)  # timestamps go back
    padded = OffsetIndex(0)
    padded.append(5, 100)
    assert trimmed_entry_count(padded.to_bytes(preallocate=True)) == 1
