"""The transactions a transaction coordinator holds after loading ``__transaction_state``
(``TransactionStateManager.loadTransactionMetadata``), replayed offline: on the partition a real Kafka 4.4.0 broker
wrote (one transactional id through commits and an abort), and on records written here with the
``TransactionLogValue`` v0 layout: the last record wins, a tombstone removes, an ongoing transaction keeps its
partitions, and what Kafka cannot read is named."""

from __future__ import annotations

from pathlib import Path

from segdex.indexcore.coordinator.transaction_state_manager import TransactionMetadata, load_transactions
from segdex.indexcore.tools.segment_writer import build_batch, write_partition
from tests.support.fixtures import GOLDEN
from tests.support.kafka_bytes import i8, i16, i32, i64, s16

T = 1_795_000_000_000
ONGOING, COMPLETE_COMMIT = 1, 4  # TransactionState ids


def txn_key(transactional_id: str, record_type: int = 0) -> bytes:
    return i16(record_type) + s16(transactional_id)


def txn_value(pid: int, state: int, partitions: dict[str, list[int]], epoch: int = 3, timeout: int = 60_000,
              start: int = T) -> bytes:
    """TransactionLogValue v0 (non-flexible): producer id and epoch, timeout, state, partitions, timestamps."""
    body = i64(pid) + i16(epoch) + i32(timeout) + i8(state) + i32(len(partitions))
    for topic, ids in partitions.items():
        body += s16(topic) + i32(len(ids)) + b"".join(i32(p) for p in ids)
    return i16(0) + body + i64(start + 5) + i64(start)


def _write(tmp_path: Path, batches: list[bytes]) -> Path:
    write_partition(tmp_path, "__transaction_state", 3, batches)
    return tmp_path / "__transaction_state-3"


def test_a_real_brokers_partition_leaves_the_last_state_of_each_transactional_id():
    load = load_transactions(GOLDEN / "broker_logs" / "__transaction_state-0")
    assert load.stopped is None and load.undecodable == [] and load.next_offset == 10
    assert load.transactions == {"tx-dump": TransactionMetadata(
        "tx-dump", 9, 0, 0, -1, 0, -1, 60000, "CompleteCommit", (), 1795623199373, 1795623199369, 0)}


def test_the_last_record_wins_and_a_tombstone_removes(tmp_path: Path):
    part = _write(tmp_path, [
        build_batch(0, [(T, txn_key("a"), txn_value(10, ONGOING, {"t": [2, 0], "s": [1]}))]),
        build_batch(1, [(T, txn_key("b"), txn_value(11, COMPLETE_COMMIT, {}))]),
        build_batch(2, [(T, txn_key("b"), None)]),  # expired: removed
        build_batch(3, [(T, txn_key("c"), txn_value(12, COMPLETE_COMMIT, {}))]),
        build_batch(4, [(T, txn_key("c"), txn_value(12, ONGOING, {"t": [0]}, epoch=4, start=T + 9))]),
    ])
    load = load_transactions(part)
    assert load.next_offset == 5 and sorted(load.transactions) == ["a", "c"]
    a = load.transactions["a"]
    # the partitions in the record's order, as readTxnRecordValue reads them
    assert (a.state, a.partitions, a.producer_id, a.producer_epoch) == ("Ongoing", (("t", 2), ("t", 0), ("s", 1)),
                                                                         10, 3)
    assert (a.previous_producer_id, a.next_producer_id, a.client_transaction_version) == (-1, -1, 0)  # v0
    assert (a.start_timestamp_ms, a.last_update_timestamp_ms, a.transaction_timeout_ms) == (T, T + 5, 60_000)
    c = load.transactions["c"]
    assert (c.record_offset, c.state, c.producer_epoch, c.start_timestamp_ms) == (4, "Ongoing", 4, T + 9)


def test_what_kafka_cannot_read_is_named_and_unknown_key_types_skipped(tmp_path: Path):
    part = _write(tmp_path, [
        build_batch(0, [(T, b"\0", txn_value(1, ONGOING, {})),
                        (T, txn_key("x"), txn_value(1, 99, {})),
                        (T, txn_key("y", record_type=7), txn_value(1, ONGOING, {})),
                        (T, txn_key("z"), txn_value(1, ONGOING, {}))]),
    ])
    load = load_transactions(part)
    assert load.undecodable == ["offset 0: a record without a transaction log key",
                                "offset 1: Unknown transaction state id 99"]
    assert sorted(load.transactions) == ["z"]


def test_both_transaction_log_value_versions_load(tmp_path: Path):
    """TransactionLogValue v0 (no previous/next producer ids: -1) and v1 (flexible, its tagged fields read)."""
    from tests.support.coordinator_versions import T as TV
    from tests.support.coordinator_versions import transaction_records

    write_partition(tmp_path, "__transaction_state", 0, [build_batch(0, transaction_records())])
    load = load_transactions(tmp_path / "__transaction_state-0")
    assert load.undecodable == []
    v0, v1, ongoing = (load.transactions[t] for t in ("tx-v0", "tx-v1", "tx-v1-ongoing"))
    assert (v0.producer_id, v0.previous_producer_id, v0.next_producer_id, v0.state, v0.partitions,
            v0.client_transaction_version) == (10, -1, -1, "Ongoing", (("t", 0), ("t", 1)), 0)
    assert (v1.producer_id, v1.previous_producer_id, v1.next_producer_id, v1.next_producer_epoch, v1.state,
            v1.partitions, v1.client_transaction_version) == (20, 19, 21, 2, "CompleteCommit", (), 2)
    assert (ongoing.partitions, ongoing.start_timestamp_ms, ongoing.last_update_timestamp_ms) == (
        (("u", 2),), TV, TV + 5)


def test_the_load_begins_at_the_log_start(tmp_path: Path):
    """``CoordinatorLoaderImpl`` reads from the log start: a transactional id whose only record lies below it is
    not loaded; one whose later record lies above it is, with that record."""
    part = _write(tmp_path, [
        build_batch(0, [(T, txn_key("gone"), txn_value(10, ONGOING, {"t": [0]}))]),
        build_batch(1, [(T, txn_key("kept"), txn_value(11, ONGOING, {"t": [1]}))]),
        build_batch(2, [(T, txn_key("kept"), txn_value(11, COMPLETE_COMMIT, {}))]),
    ])
    assert sorted(load_transactions(part).transactions) == ["gone", "kept"]
    load = load_transactions(part, log_start_offset=2)
    assert sorted(load.transactions) == ["kept"] and load.transactions["kept"].state == "CompleteCommit"
    assert load.next_offset == 3
