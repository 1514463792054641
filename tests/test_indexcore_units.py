"""Kafka's append rules, lookups and sanity checks of the index classes; checkpoints; file naming."""

from __future__ import annotations

import pytest

from segdex.indexcore.errors import (
    CorruptIndexException,
    IndexFullException,
    IndexOffsetOverflowException,
    InvalidLayoutException,
    InvalidOffsetException,
)
from segdex.indexcore.index.offset_index import OffsetIndex, trimmed_entry_count
from segdex.indexcore.index.offset_index import sanity_check as offset_sanity
from segdex.indexcore.index.time_index import TimeIndex
from segdex.indexcore.index.time_index import sanity_check as time_sanity
from segdex.indexcore.index.transaction_index import AbortedTxn, TransactionIndex, parse_transaction_index
from segdex.indexcore.log.checkpoints import (
    CorruptCheckpointException,
    format_offset_checkpoint,
    read_leader_epoch_checkpoint,
    read_offset_checkpoint,
    write_leader_epoch_checkpoint,
    write_offset_checkpoint,
)
from segdex.indexcore.log.layout import parse_partition_dir_name, parse_segment_file_name, segment_file_name


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


def test_checkpoints_round_trip_and_corruption(tmp_path):
    p = tmp_path / "replication-offset-checkpoint"
    write_offset_checkpoint(p, {("orders", 0): 42, ("my-topic", 12): 7})
    assert p.read_text() == "0\n2\norders 0 42\nmy-topic 12 7\n"
    assert read_offset_checkpoint(p) == {("orders", 0): 42, ("my-topic", 12): 7}
    assert read_offset_checkpoint(tmp_path / "absent") == {}
    assert format_offset_checkpoint({}) == b"0\n0\n"
    e = tmp_path / "leader-epoch-checkpoint"
    write_leader_epoch_checkpoint(e, [(0, 0), (3, 120)])
    assert e.read_text() == "0\n2\n0 0\n3 120\n"
    assert read_leader_epoch_checkpoint(e) == [(0, 0), (3, 120)]
    for bad in ("1\n0\n", "0\n2\norders 0 42\n", "0\n1\norders 0\n", "0\n1\norders x 1\n", "0\n"):
        p.write_text(bad)
        with pytest.raises(CorruptCheckpointException):
            read_offset_checkpoint(p)
    # CheckpointReadBuffer.read: an empty file (created, never written: Kafka 4.4 leaves one for a log whose
    # leader-epoch cache never changed) holds no entry
    p.write_text("")
    assert read_offset_checkpoint(p) == {}
    e.write_text("")
    assert read_leader_epoch_checkpoint(e) == []


def test_layout_names():
    assert segment_file_name(1000, ".log") == "00000000000000001000.log"
    parsed = parse_segment_file_name("00000000000000001000.timeindex.deleted")
    assert (parsed.base_offset, parsed.suffix, parsed.state_suffix) == (1000, ".timeindex", ".deleted")
    for bad in ("1000.log", "0000000000000000100a.log", "00000000000000001000", "x.log"):
        with pytest.raises(InvalidLayoutException):
            parse_segment_file_name(bad)
    tp = parse_partition_dir_name("my.topic-12.0123456789abcdef0123456789abcdef-future")
    assert (tp.topic, tp.partition, tp.kind) == ("my.topic", 12, "future")
    assert parse_partition_dir_name("orders-3-delete").kind == "delete"
    for bad in ("orders", "orders-", "bad topic-1", "-1"):
        with pytest.raises(InvalidLayoutException):
            parse_partition_dir_name(bad)
