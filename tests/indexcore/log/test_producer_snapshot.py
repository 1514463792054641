"""Producer snapshot files (``ProducerStateManager.readSnapshot``/``writeSnapshot``) in the test process.

Kafka's own snapshot of ``v2_txn_two_producers`` is read field by field against Kafka's batch listing of the same
log (``*.batches.json``: each producer's last batch), and written bytes are checked against a layout written out
here from Kafka's ``ProducerSnapshot`` schema, with values that need every bit of their fields (a CRC above 2^31,
negative epochs and offsets, 64-bit producer ids)."""

from __future__ import annotations

import json
import struct

import crc32c
import pytest

from segdex.indexcore.log.java_hash_map import hash_map_order
from segdex.indexcore.log.producer_snapshot import (
    CorruptSnapshotException,
    read_snapshot,
    remove_stray_snapshots,
    snapshot_bytes,
    snapshot_to_load,
)
from segdex.indexcore.log.producer_state import (
    BatchMetadata,
    ProducerStateEntry,
    ProducerStateManager,
)
from tests.support.fixtures import FIXTURES
from tests.support.producer_snapshot_bytes import reference

TXN = FIXTURES / "v2_txn_two_producers" / "broker"


def test_kafkas_snapshot_reads_as_kafkas_batches_say():
    [snap] = TXN.glob("*.snapshot")
    at = int(snap.name[:20])
    batches = [b for p in sorted(TXN.glob("*.batches.json")) for b in json.loads(p.read_text())
               if b["lastOffset"] < at]
    last_data, last_any = {}, {}
    open_txn: dict[int, int] = {}
    for b in batches:
        pid = b["producerId"]
        if pid < 0:  # not idempotent: Kafka keeps no state for it
            continue
        last_any[pid] = b
        if b["isControl"]:
            open_txn.pop(pid, None)
            continue
        last_data[pid] = b
        if b["isTransactional"]:
            open_txn.setdefault(pid, b["baseOffset"])
    entries = {e.producer_id: e for e in read_snapshot(snap.read_bytes(), snap.name)}
    assert sorted(entries) == sorted(last_data) == [4001, 4002, 4003]
    for pid, b in last_data.items():
        e = entries[pid]
        # the file keeps one timestamp per producer: its last batch's, a transaction marker's included
        ts = last_any[pid]["maxTimestamp"]
        assert (e.producer_epoch, e.last_timestamp) == (b["producerEpoch"], ts)
        assert e.last_batch == BatchMetadata(b["baseSequence"] + b["recordCount"] - 1, b["lastOffset"],
                                             b["lastOffset"] - b["baseOffset"], ts)
        assert e.current_txn_first_offset == open_txn.get(pid)
    assert open_txn == {4001: 952}
    assert any(last_any[p] is not last_data[p] for p in last_data)  # a marker came after some producer's data


def test_written_bytes_follow_kafkas_layout_to_the_last_bit():
    ts = 1_700_000_000_000
    while True:  # a timestamp that puts the CRC's top bit on: the field is unsigned
        rows = [(2**62 + 7, 32767, 2**31 - 1, 2**40, 99, ts, 2**31 - 1, 2**39),
                (4001, -1, -1, -1, 0, -1, -1, -1),  # a producer with no data batch, no transaction
                (-(2**63), -32768, 0, 0, 0, 0, 0, -1)]
        ref = reference(rows)
        if int.from_bytes(ref[2:6], "big") >= 2**31:
            break
        ts += 1
    entries = [ProducerStateEntry(2**62 + 7, 32767, 2**31 - 1, ts, 2**39, BatchMetadata(2**31 - 1, 2**40, 99, ts)),
               ProducerStateEntry(4001, -1, -1, -1, None, None),
               ProducerStateEntry(-(2**63), -32768, 0, 0, None, BatchMetadata(0, 0, 0, 0))]
    assert snapshot_bytes(entries) == ref
    assert read_snapshot(ref) == entries
    assert snapshot_bytes([]) == reference([]) and read_snapshot(reference([])) == []


@pytest.mark.parametrize(("data", "why"), [
    (b"\0\1\0\0\0", "x: 5 bytes, shorter than the 10-byte header"),
    ((2).to_bytes(2, "big") + bytes(8), "x: snapshot contained an unknown file version 2"),
    (reference([(1, 0, 0, 0, 0, 0, 0, -1)])[:-1], "x: snapshot failed schema validation: 1 entries in 55 bytes"),
    ((1).to_bytes(2, "big") + bytes(4) + (-1).to_bytes(4, "big", signed=True),
     "x: snapshot failed schema validation: -1 entries in 10 bytes"),
])
def test_snapshots_kafka_refuses(data: bytes, why: str):
    with pytest.raises(CorruptSnapshotException) as e:
        read_snapshot(data, "x")
    assert str(e.value) == why


def test_a_snapshot_with_a_wrong_crc():
    ref = bytearray(reference([(1, 0, 0, 0, 0, 0, 0, -1)]))
    stored = int.from_bytes(ref[2:6], "big")
    ref[-1] ^= 1
    with pytest.raises(CorruptSnapshotException) as e:
        read_snapshot(bytes(ref), "x")
    computed = crc32c.crc32c(bytes(ref[6:]))
    assert str(e.value) == (f"x: snapshot is corrupt (CRC is no longer valid). Stored crc: {stored}. "
                            f"Computed crc: {computed}")
    assert struct.unpack(">hI", bytes(ref[:6]))[1] == stored


def test_a_load_drops_expired_producers_and_keeps_open_transactions():
    """``ProducerStateManager.loadFromSnapshot`` with ``isProducerExpired``: a producer is dropped when it has no
    open transaction and ``now - lastTimestamp >= producer.id.expiration.ms``; entries keep every field, in the
    snapshot's (HashMap) order, and open transactions are registered again."""

    now, exp = 10_000, 1_000
    batch = BatchMetadata(4, 40, 2, 8_999)
    entries = [ProducerStateEntry(17, 3, 5, now - exp, None, batch),  # idle exactly the limit: expired
               ProducerStateEntry(33, 1, 7, 0, 500, batch),  # old but inside a transaction: kept
               ProducerStateEntry(16, 2, 6, now - exp + 1, None, batch),  # one ms younger: kept
               ProducerStateEntry(1, 0, -1, now, 900, None)]
    manager = ProducerStateManager({e.producer_id: e for e in entries}, {500: 33, 900: 1})
    loaded = manager.reloaded(now, exp)
    assert list(loaded.producers) == [p for p in hash_map_order([17, 33, 16, 1]) if p != 17] == [16, 33, 1]
    # (HashMap order: 16 in bucket 0 before 33 and 1 in bucket 1, whatever the put order)
    for pid, e in loaded.producers.items():
        assert e == manager.producers[pid] and e is not manager.producers[pid]
    assert loaded.ongoing_txns == {500: 33, 900: 1}
    assert list(manager.reloaded(None, exp).producers) == [16, 17, 33, 1]  # no clock: none expire
    assert entries[0].is_expired(now, exp) and not entries[2].is_expired(now, exp)
    assert not entries[1].is_expired(now + 10**9, exp)


def test_a_snapshot_loaded_from_its_file_registers_its_open_transactions(tmp_path):
    """``load_from_snapshot`` (``loadFromSnapshot``): the file's entries, each open transaction registered again by
    its first offset (an entry without one registers none); no file at the offset loads nothing."""
    from segdex.indexcore.log.producer_snapshot import load_from_snapshot, producer_snapshot_file_name

    batch = BatchMetadata(4, 40, 2, 1_000)
    entries = [ProducerStateEntry(7, 0, 3, 1_000, 30, batch), ProducerStateEntry(8, 0, 3, 1_000, None, batch)]
    (tmp_path / producer_snapshot_file_name(45)).write_bytes(snapshot_bytes(entries))
    state = load_from_snapshot(str(tmp_path), 45, None, 1_000)
    assert (state.ongoing_txns, sorted(state.producers)) == ({30: 7}, [7, 8])
    assert load_from_snapshot(str(tmp_path), 46, None, 1_000) is None


# ------------------------------------------------------------------ from test_small_modules_units.py


def test_a_snapshot_too_short_names_the_default_name():
    with pytest.raises(CorruptSnapshotException) as e:
        read_snapshot(b"\x00\x01\x00")
    assert str(e.value) == "snapshot: 3 bytes, shorter than the 10-byte header"


@pytest.mark.parametrize(("offsets", "bases", "kept"), [
    ({0, 50, 100}, [0, 100], {0, 100}),  # a stray below the last base goes
    ({0, 70, 120, 150}, [0, 100], {0, 150}),  # only the latest stray, and it lies above every base
    ({0, 100}, [0, 100], {0, 100}),
    ({30, 60}, [], {60}),  # no segment: Kafka keeps the latest stray
    (set(), [0], set()),
])
def test_only_base_offsets_and_the_latest_stray_above_them_stay(offsets, bases, kept):
    """``ProducerStateManager.removeStraySnapshots``."""
    assert remove_stray_snapshots(offsets, bases) == kept


def test_the_snapshot_loaded_lies_above_the_log_start_and_at_or_below_the_target():
    """``truncateAndReload``: snapshots at or below the log start offset are deleted, those above the target are
    not loaded."""
    assert snapshot_to_load({0, 10, 20, 30}, 10, 25) == 20
    assert snapshot_to_load({0, 10, 20, 30}, 10, 30) == 30
    assert snapshot_to_load({0, 10}, 10, 25) is None
    assert snapshot_to_load(set(), 0, 25) is None
