"""``kafka-transactions find-hanging`` offline: a data partition's open transactions from its replayed producer
state, joined with the transaction coordinator's transactions by producer id, by Kafka's rules
(``FindHangingTransactionsCommand``): open longer than the timeout, and no transactional id holds the producer, or
its transaction does not list the partition."""

from __future__ import annotations

from pathlib import Path

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.coordinator.transaction_state_manager import TransactionMetadata
from segdex.indexcore.log.log_segments import PartitionRecovery, segment_logs
from segdex.indexcore.tools.find_hanging import OpenTransaction, find_hanging, open_transactions
from segdex.indexcore.tools.segment_writer import build_batch, write_partition

NOW = 1_795_000_000_000
MIN = 60_000


def _txn(pid: int, offset: int, ts: int) -> bytes:
    return build_batch(offset, [(ts, b"k", b"v")], producer_id=pid, producer_epoch=2, base_sequence=0,
                       is_transactional=True)


def _coordinator(tid: str, pid: int, state: str, partitions: tuple) -> TransactionMetadata:
    return TransactionMetadata(tid, 0, pid, -1, -1, 2, -1, 60_000, state, partitions, NOW - 30 * MIN,
                               NOW - 30 * MIN, 0)


def _replayed(tmp_path: Path):
    write_partition(tmp_path, "data", 0, [
        _txn(100, 0, NOW - 20 * MIN),
        _txn(101, 1, NOW - 20 * MIN),
        _txn(102, 2, NOW - 16 * MIN),
        _txn(103, 3, NOW - 5 * MIN),  # open, but not for longer than the timeout
        _txn(104, 4, NOW - 20 * MIN),
        build_batch(5, [], producer_id=104, producer_epoch=2, control=("COMMIT", 7), control_timestamp=NOW - 19 * MIN),
    ])
    recovery = PartitionRecovery(LogConfig())
    logs, _ = segment_logs(tmp_path / "data-0")
    list(recovery.recover_all(logs))
    return recovery.producer_state


def test_open_transactions_come_from_the_replayed_producer_state(tmp_path: Path):
    opened = open_transactions("data", 0, _replayed(tmp_path))
    assert [(t.producer_id, t.start_offset, t.producer_epoch, t.last_timestamp) for t in opened] == [
        (100, 0, 2, NOW - 20 * MIN), (101, 1, 2, NOW - 20 * MIN), (102, 2, 2, NOW - 16 * MIN),
        (103, 3, 2, NOW - 5 * MIN)]
    assert opened[0].duration_minutes(NOW) == 20


def test_hanging_is_old_and_unknown_to_the_coordinator_or_not_listed_there(tmp_path: Path):
    opened = open_transactions("data", 0, _replayed(tmp_path))
    coordinator = {
        "a": _coordinator("a", 100, "Ongoing", (("data", 0),)),  # the coordinator still expects to end it
        "b": _coordinator("b", 101, "CompleteCommit", ()),  # ended, but no marker reached this partition
        "c": _coordinator("c", 102, "Dead", (("data", 0),)),  # being removed: not listed by the coordinator
    }
    hanging = find_hanging(opened, coordinator, NOW)
    assert [t.producer_id for t in hanging] == [101, 102]
    assert [t.producer_id for t in find_hanging(opened, coordinator, NOW, max_transaction_timeout_ms=30 * MIN)] == []
    assert [t.producer_id for t in find_hanging(opened, {}, NOW, max_transaction_timeout_ms=MIN)] == [100, 101, 102,
                                                                                                      103]


def test_an_open_transaction_on_another_partition_of_the_same_producer_hangs_alone():
    t0 = OpenTransaction("data", 0, 7, 1, 3, 10, NOW - 60 * MIN)
    t1 = OpenTransaction("data", 1, 7, 1, 3, 12, NOW - 60 * MIN)
    coordinator = {"x": _coordinator("x", 7, "PrepareCommit", (("data", 1),))}
    assert find_hanging([t0, t1], coordinator, NOW) == [t0]


def test_the_duration_is_in_whole_minutes():
    """``Duration(min)`` counts whole minutes, as ``TimeUnit.MILLISECONDS.toMinutes`` does: 90 seconds are 1, and
    a last timestamp 90 seconds after the tool's clock (a negative ``--max-transaction-timeout`` lists it) is -1,
    rounded toward zero (Kafka 4.4's ``toMinutes(-90000)``)."""
    assert OpenTransaction("data", 0, 7, 1, 3, 10, NOW - 90_000).duration_minutes(NOW) == 1
    assert OpenTransaction("data", 0, 7, 1, 3, 10, NOW + 90_000).duration_minutes(NOW) == -1
    assert OpenTransaction("data", 0, 7, 1, 3, 10, NOW + 120_000).duration_minutes(NOW) == -2
