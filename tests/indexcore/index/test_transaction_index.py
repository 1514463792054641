"""Kafka's ``TransactionIndex``: entries, order, the segment's base offset."""

from __future__ import annotations

import pytest

from segdex.indexcore.errors import (
    CorruptIndexException,
    InvalidOffsetException,
)
from segdex.indexcore.index.transaction_index import AbortedTxn, TransactionIndex, parse_transaction_index


def test_transaction_index_round_trip_and_order():
    idx = TransactionIndex(0)
    idx.append(AbortedTxn(4001, 3, 33, 34))
    with pytest.raises(InvalidOffsetException):
        idx.append(AbortedTxn(4002, 1, 20, 21))
    data = idx.to_bytes()
    assert len(data) == 34
    assert parse_transaction_index(data) == [AbortedTxn(4001, 3, 33, 34)]
    with pytest.raises(CorruptIndexException):
        parse_transaction_index(data[:-1])
