"""``kafka-transactions list`` and ``describe`` offline, printed as ``ToolsUtils.prettyPrintTable`` prints, on a
``__transaction_state`` partition a real Kafka 4.4.0 broker wrote, and ``find-hanging`` over a cluster view."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from segdex.indexcore.coordinator.coordinator_loader import ANSWERS, SAME
from segdex.indexcore.tools.cluster_view import ClusterView
from segdex.indexcore.tools.segment_writer import build_batch, write_partition
from segdex.indexcore.tools.transactions import (
    LIST_HEADERS,
    coordinated_transactions,
    described_partitions,
    find_hanging_row,
    find_hanging_transactions,
    list_transactions,
    pretty_print_table,
)
from tests.support.coordinator_versions import T, transaction_key, transaction_value
from tests.support.fixtures import GOLDEN
from tests.support.kafka_harness import KafkaInstall

MIN = 60_000
EMPTY, ONGOING, DEAD = 0, 1, 6  # TransactionState ids (TransactionLogValue.transactionStatus)


def _transaction_state(log_dir: Path, partition: int, node_id: int | None,
                       transactions: list[tuple[str, int, int, int, dict[str, list[int]]]]) -> Path:
    """``__transaction_state-<partition>`` in ``log_dir``, one batch per (transactional id, producer id, state id,
    transaction start, partitions), its record a TransactionLogValue v1; ``node.id`` in the log dir's
    ``meta.properties`` (None: no ``meta.properties``, the coordinator's broker id unknown). Returns the
    segment's ``.log``."""
    (log, *_) = write_partition(log_dir, "__transaction_state", partition, [
        build_batch(i, [(T, transaction_key(tid), transaction_value(1, pid, state, parts, start=start))])
        for i, (tid, pid, state, start, parts) in enumerate(transactions)])
    if node_id is not None:
        (log_dir / "meta.properties").write_text(f"node.id={node_id}\n")
    return log


def _open_transaction(producer_id: int, last_timestamp: int) -> bytes:
    """A transactional batch at offset 0 of one record at ``last_timestamp``, left open (no marker)."""
    return build_batch(0, [(last_timestamp, b"k", b"v")], producer_id=producer_id, producer_epoch=1, base_sequence=0,
                       is_transactional=True)


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
                                                 "t-1,t-0"]
    assert listed["tx-v1-ongoing"].describe_row(now) == ["7", "tx-v1-ongoing", "30", "1", "Ongoing", "60000", str(T),
                                                         "90000", "u-2"]
    assert [t.list_row() for t in listed.values()] == [["tx-v0", "7", "10", "Ongoing"],
                                                       ["tx-v1", "7", "20", "CompleteCommit"],
                                                       ["tx-v1-ongoing", "7", "30", "Ongoing"]]


def test_pretty_print_table_refuses_a_row_longer_than_the_headers():
    """A row with a cell no header names is an error, not a cell dropped: Kafka's ``ToolsUtils.printRow`` reads the
    column width of every cell of the row and fails past the headers' (``IndexOutOfBoundsException``)."""
    with pytest.raises(ValueError):
        pretty_print_table(("A", "B"), [["x", "y", "z"]])


def test_rows_of_a_coordinator_without_node_id_and_of_a_transaction_never_started(tmp_path: Path):
    """A log dir without ``meta.properties`` gives no broker id: the coordinator column says ``-1``. A transactional
    id whose producer never started a transaction (``Empty``, start ``-1``) describes its start time and duration as
    ``None``, as ``DescribeTransactionsHandler`` (a start below 0: none) then ``DescribeTransactionsCommand`` print
    it; a start at 0 is a start (duration ``now``)."""
    _transaction_state(tmp_path, 0, None, [("tx-empty", 50, EMPTY, -1, {}), ("tx-zero", 51, ONGOING, 0, {"t": [3]})])
    found = coordinated_transactions(ClusterView([str(tmp_path)]))
    assert found["tx-empty"].describe_row(T) == ["-1", "tx-empty", "50", "1", "Empty", "60000", "None", "None", ""]
    assert found["tx-zero"].describe_row(T) == ["-1", "tx-zero", "51", "1", "Ongoing", "60000", "0", str(T), "t-3"]
    assert found["tx-empty"].list_row() == ["tx-empty", "-1", "50", "Empty"]


def test_list_leaves_out_dead_ids_and_those_not_running_longer_than_the_filter(tmp_path: Path):
    """``listTransactionStates``: never ``Dead``; with ``--duration-filter`` d >= 0 only transactions whose
    ``now - start`` is more than d (``<= d`` left out, so d = 0 leaves out one started at ``now``); d < 0 or none:
    all. An ``Empty`` id's start is -1: ``now + 1`` since. Compared as sets: Kafka's tool prints each broker's rows
    in its coordinator's hash order."""
    now = T + 10_000
    _transaction_state(tmp_path, 0, 1, [
        ("a-dead", 60, DEAD, now - 9_000, {}), ("b-short", 61, ONGOING, now - 1_000, {"t": [0]}),
        ("c-exact", 62, ONGOING, now - 5_000, {"t": [0]}), ("d-long", 63, ONGOING, now - 9_000, {"t": [0]}),
        ("e-now", 64, ONGOING, now, {"t": [0]}), ("f-empty", 65, EMPTY, -1, {})])
    view = ClusterView([str(tmp_path)])

    def listed(duration_filter_ms: int | None) -> set[str]:
        return {t.metadata.transactional_id for t in list_transactions(view, now, duration_filter_ms)}

    everyone = {"b-short", "c-exact", "d-long", "e-now", "f-empty"}
    assert listed(None) == everyone and listed(-1) == everyone
    assert listed(5_000) == {"d-long", "f-empty"}
    assert listed(0) == everyone - {"e-now"}


def test_transactions_of_several_coordinators_one_loaded_in_part(tmp_path: Path):
    """Two brokers' log dirs, each with one ``__transaction_state`` partition: every id carries its coordinator's
    broker id and partition. Partition 1's segment is cut inside its last batch: the load stops at offset 2, and
    each id it holds is marked partial with that offset, Kafka's load after the broker's next start (``same``: its
    recovery truncates there) and why, naming the partition; partition 0's ids are not marked."""
    (one, two) = (tmp_path / "broker-1", tmp_path / "broker-2")
    _transaction_state(one, 0, 1, [("tx-a", 70, ONGOING, T, {"t": [0]})])
    log = _transaction_state(two, 1, 2, [("tx-b", 71, ONGOING, T, {"t": [1]}), ("tx-c", 72, ONGOING, T, {"t": [2]}),
                                         ("tx-cut", 73, ONGOING, T, {"t": [3]})])
    os.truncate(log, log.stat().st_size - 5)
    found = coordinated_transactions(ClusterView([str(one), str(two)]))
    assert {tid: (t.coordinator, t.coordinator_partition) for tid, t in found.items()} == {
        "tx-a": (1, 0), "tx-b": (2, 1), "tx-c": (2, 1)}
    assert found["tx-a"].marks() == {"partial": False, "loaded_to_offset": None, "kafka_after_start": None}
    assert found["tx-a"].partial_reason is None
    for tid in ("tx-b", "tx-c"):
        assert found[tid].marks() == {"partial": True, "loaded_to_offset": 2, "kafka_after_start": SAME}
        assert found[tid].partial_reason == (
            f"__transaction_state-1 loaded up to offset 2 only: the rows may be stale; {ANSWERS[SAME]}")


def test_find_hanging_searches_the_topic_and_partition_asked_for_only(tmp_path: Path):
    """``--topic`` and ``--partition`` limit the partitions searched; every open transaction found carries its own
    partition. No coordinator holds any producer here: every transaction open longer than the timeout hangs."""
    now = T
    write_partition(tmp_path, "a", 0, [_open_transaction(79, now - 20 * MIN)])  # sorts before "data"
    for p in range(3):
        write_partition(tmp_path, "data", p, [_open_transaction(80 + p, now - 20 * MIN)])
    view = ClusterView([str(tmp_path)])

    def hanging(topic: str | None = None, partition: int | None = None) -> set[tuple[str, int, int]]:
        return {(t.topic, t.partition, t.producer_id)
                for t in find_hanging_transactions(view, now, topic=topic, partition=partition)}

    assert hanging() == {("a", 0, 79), ("data", 0, 80), ("data", 1, 81), ("data", 2, 82)}
    assert hanging("data") == {("data", 0, 80), ("data", 1, 81), ("data", 2, 82)}
    assert hanging("data", 1) == {("data", 1, 81)}
    assert hanging("a", 1) == set()


def test_find_hanging_rows_print_every_column_and_whole_minutes(tmp_path: Path):
    """A ``find-hanging`` row as ``printHangingTransactions`` prints it: topic, partition, producer id and epoch,
    coordinator epoch (the last marker's: 9), the open transaction's start offset, the producer's last timestamp,
    and the minutes since it (``TimeUnit.MILLISECONDS.toMinutes``: 20.5 minutes print as 20)."""
    now = T + 100 * MIN
    last = now - 20 * MIN - 30_000
    write_partition(tmp_path, "data", 3, [
        build_batch(0, [(now - 60 * MIN, b"k", b"v")], producer_id=42, producer_epoch=5, base_sequence=0,
                    is_transactional=True),
        build_batch(1, [], producer_id=42, producer_epoch=5, control=("COMMIT", 9), control_timestamp=now - 59 * MIN),
        build_batch(2, [(last, b"k", b"v")], producer_id=42, producer_epoch=5, base_sequence=1,
                    is_transactional=True)])
    (hanging,) = find_hanging_transactions(ClusterView([str(tmp_path)]), now)
    assert find_hanging_row(hanging, now) == ["data", "3", "42", "5", "9", "2", str(last), "20"]


DESCRIBE_ORDER_JAVA = """
import java.io.*;
import java.util.*;
import org.apache.kafka.common.TopicPartition;

public class DescribeOrder {
  public static void main(String[] args) throws IOException {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
    PrintStream out = new PrintStream(System.out, true, "UTF-8");
    for (String line; (line = in.readLine()) != null; ) {
      HashSet<TopicPartition> read = new HashSet<>();  // TransactionLog.readTxnRecordValue
      for (String tp : line.split(" ")) {
        int at = tp.lastIndexOf(':');
        read.add(new TopicPartition(tp.substring(0, at), Integer.parseInt(tp.substring(at + 1))));
      }
      HashSet<TopicPartition> copied = new HashSet<>(read);  // TransactionMetadata's constructor
      LinkedHashMap<String, List<Integer>> byTopic = new LinkedHashMap<>();  // handleDescribeTransactions
      for (TopicPartition tp : copied) byTopic.computeIfAbsent(tp.topic(), t -> new ArrayList<>()).add(tp.partition());
      HashSet<TopicPartition> described = new HashSet<>();  // DescribeTransactionsHandler.collectTopicPartitions
      for (Map.Entry<String, List<Integer>> e : byTopic.entrySet())
        for (int p : e.getValue()) described.add(new TopicPartition(e.getKey(), p));
      StringJoiner j = new StringJoiner(",");
      for (TopicPartition tp : described) j.add(tp.toString());
      out.println(j);
    }
  }
}
"""


def test_describe_prints_a_transactions_partitions_in_kafkas_hash_set_order(tmp_path: Path):
    """``TopicPartitions`` as ``kafka-transactions describe`` orders them (``described_partitions``): Java 17's
    own ``HashSet`` and Kafka 4.4's ``TopicPartition`` through the sets the coordinator's load, its describe and
    the admin client fill, over 120 drawn transactions (1 to 70 partitions: past the resizes at 13, 25 and 49,
    topic names with non-ASCII characters and partitions colliding in a bucket)."""
    rng = random.Random(20261128)
    topics = ["t", "orders", "événements", "a" * 40, "x-\u4e2d", "__consumer_offsets", "T1", "t0"]
    cases = [[(t, 0)] for t in topics] + [[("t", 0), ("t", 1)]]
    while len(cases) < 120:
        chosen = rng.sample(topics, rng.randint(1, 4))
        drawn = list(dict.fromkeys((rng.choice(chosen), rng.choice([rng.randrange(8), rng.randrange(300)]))
                                   for _ in range(rng.randint(1, 70))))
        cases.append(drawn)
    (tmp_path / "DescribeOrder.java").write_text(DESCRIBE_ORDER_JAVA)
    classpath = f"{KafkaInstall('4.4.0').home / 'libs' / '*'}{os.pathsep}{tmp_path}"
    subprocess.run(["javac", "-encoding", "UTF-8", "-cp", classpath, "-d", str(tmp_path),
                    str(tmp_path / "DescribeOrder.java")], check=True, timeout=120)
    proc = subprocess.run(["java", "-cp", classpath, "DescribeOrder"], check=True, timeout=120, capture_output=True,
                          input="".join(" ".join(f"{t}:{p}" for t, p in c) + "\n" for c in cases).encode())
    java = proc.stdout.decode().split("\n")[:len(cases)]
    ours = [",".join(f"{t}-{p}" for t, p in described_partitions(tuple(c))) for c in cases]
    assert ours == java
    assert java[-1] != ",".join(f"{t}-{p}" for t, p in sorted(cases[-1]))  # Kafka's order is not sorted
    assert java[len(topics)] == "t-1,t-0"
