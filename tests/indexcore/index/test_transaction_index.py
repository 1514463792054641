"""Kafka's ``TransactionIndex``: entries, order, the segment's base offset."""

from __future__ import annotations

import struct
from pathlib import Path

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


def _aborted(version: int, pid: int, first: int, last: int, lso: int) -> bytes:
    return struct.pack(">hqqqq", version, pid, first, last, lso)  # AbortedTxn: 34 bytes


def test_txn_index_partial_last_entry_is_not_read(tmp_path: Path):
    """``TransactionIndex.sanityCheck`` reads ``entries = length / 34``: a whole valid entry followed by 10 stray
    bytes passes; no file passes too."""
    path = tmp_path / "00000000000000000000.txnindex"
    path.write_bytes(_aborted(0, 7, 0, 5, 6) + b"\1" * 10)
    assert TransactionIndex.sanity_check(str(path), 0) is None
    assert TransactionIndex.sanity_check(str(tmp_path / "none.txnindex"), 0) is None


def test_txn_index_entry_ending_below_the_base_is_corrupt(tmp_path: Path):
    """``sanityCheck``: an aborted transaction whose last offset lies below the segment's base offset."""
    path = tmp_path / "00000000000000000010.txnindex"
    path.write_bytes(_aborted(0, 7, 2, 9, 10))
    assert TransactionIndex.sanity_check(str(path), 10) == (
        "corrupt", "aborted transaction ending at 9 below the base offset 10 in 00000000000000000010.txnindex")


def test_txn_index_entry_of_an_unknown_version_fails_the_load(tmp_path: Path):
    """Kafka 4.x reads an entry of any version but 0 as an error its load does not catch."""
    path = tmp_path / "00000000000000000000.txnindex"
    path.write_bytes(_aborted(1, 7, 2, 9, 10))
    assert TransactionIndex.sanity_check(str(path), 0) == (
        "fail", "unexpected aborted transaction version 1 in 00000000000000000000.txnindex")
