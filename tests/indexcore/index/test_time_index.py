"""Kafka's ``TimeIndex``: append rules and lookups."""

from __future__ import annotations

import pytest

from segdex.indexcore.errors import (
    IndexFullException,
    InvalidOffsetException,
)
from segdex.indexcore.index.time_index import TimeIndex


def test_time_index_rules_and_lookup():
    idx = TimeIndex(0, max_index_size=48)  # 4 slots, the last kept for the roll
    idx.maybe_append(1000, 3)
    idx.maybe_append(1000, 5)  # not strictly greater: ignored
    with pytest.raises(InvalidOffsetException):
        idx.maybe_append(2000, 2)  # offset went back
    with pytest.raises(InvalidOffsetException):
        idx.maybe_append(999, 6)  # timestamp went back
    idx.maybe_append(2000, 9)
    idx.maybe_append(3000, 12)
    with pytest.raises(IndexFullException):
        idx.maybe_append(4000, 13)
    idx.maybe_append(4000, 13, skip_full_check=True)
    assert idx.entries() == [(1000, 3), (2000, 9), (3000, 12), (4000, 13)]
    assert idx.lookup(999) == (-1, 0) and idx.lookup(2500) == (2000, 9) and idx.lookup(5000) == (4000, 13)
    empty = TimeIndex(7)
    empty.maybe_append(-1, 7)
    assert len(empty) == 0 and empty.last_entry() == (-1, 7)
