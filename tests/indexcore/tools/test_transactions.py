"""``kafka-transactions list`` and ``describe`` offline, printed as ``ToolsUtils.prettyPrintTable`` prints, on a
``__transaction_state`` partition a real Kafka 4.4.0 broker wrote, and ``find-hanging`` over a cluster view."""

from __future__ import annotations

import shutil
from pathlib import Path

from segdex.indexcore.tools.cluster_view import ClusterView
from segdex.indexcore.tools.segment_writer import build_batch, write_partition
from segdex.indexcore.tools.transactions import (
    LIST_HEADERS,
    find_hanging_transactions,
    list_transactions,
    pretty_print_table,
)
from tests.support.fixtures import GOLDEN

MIN = 60_000


def test_pretty_print_table_pads_each_column_and_ends_cells_with_a_tab():
    assert pretty_print_table(("A", "Long"), [["xyz", "1"], ["", "22"]]) == "A  \tLong\t\nxyz\t1   \t\n   \t22  \t\n"


def test_list_and_describe_a_real_brokers_transaction(tmp_path: Path):
    shutil.copytree(GOLDEN / "broker_logs" / "__transaction_state-0", tmp_path / "__transaction_state-0")
    (tmp_path / "meta.properties").write_text("node.id=5\n")
    listed = list_transactions(ClusterView([str(tmp_path)]), now_ms=0)
    assert pretty_print_table(LIST_HEADERS, [t.list_row() for t in listed]) == (
        "TransactionalId\tCoordinator\tProducerId\tTransactionState\t\n"
        "tx-dump        \t5          \t0         \tCompleteCommit  \t\n")
    row = listed[0].describe_row(now_ms=10)
    assert row[:5] == ["5", "tx-dump", "0", "0", "CompleteCommit"] and row[-1] == ""


def test_find_hanging_over_the_log_dirs_finds_a_transaction_no_coordinator_holds(tmp_path: Path):
    now = 1_795_000_000_000
    write_partition(tmp_path, "data", 0, [
        build_batch(0, [(now - 20 * MIN, b"k", b"v")], producer_id=42, producer_epoch=1, base_sequence=0,
                    is_transactional=True)])
    view = ClusterView([str(tmp_path)])
    assert [(t.topic, t.producer_id, t.start_offset) for t in find_hanging_transactions(view, now)] == [
        ("data", 42, 0)]
    assert find_hanging_transactions(view, now, topic="other") == []
    assert find_hanging_transactions(view, now, max_transaction_timeout_ms=30 * MIN) == []


def test_describe_rows_field_by_field(tmp_path: Path):
    """``describe`` rows as ``kafka-transactions describe`` prints them (``TransactionDescription``): coordinator,
    id, producer id and epoch, state, timeout, the start time and the duration since (``None`` before a start), the
    partitions as ``topic-partition`` joined by commas; ``list`` rows: id, coordinator, producer id, state."""
    from tests.support.coordinator_versions import T, transaction_records

    write_partition(tmp_path, "__transaction_state", 0, [
        build_batch(i, [(ts, key, value)]) for i, (ts, key, value) in enumerate(transaction_records())])
    (tmp_path / "meta.properties").write_text("node.id=7\n")
    listed = {t.metadata.transactional_id: t for t in list_transactions(ClusterView([str(tmp_path)]), now_ms=0)}
    now = T + 90_000
    assert listed["tx-v0"].describe_row(now) == ["7", "tx-v0", "10", "1", "Ongoing", "60000", str(T), "90000",
                                                 "t-0,t-1"]
    assert listed["tx-v1-ongoing"].describe_row(now) == ["7", "tx-v1-ongoing", "30", "1", "Ongoing", "60000", str(T),
                                                         "90000", "u-2"]
    assert [t.list_row() for t in listed.values()] == [["tx-v0", "7", "10", "Ongoing"],
                                                       ["tx-v1", "7", "20", "CompleteCommit"],
                                                       ["tx-v1-ongoing", "7", "30", "Ongoing"]]
