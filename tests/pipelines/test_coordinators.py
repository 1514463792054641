"""The coordinator tables a scan fills (``group_offsets``, ``groups``, ``transactions``, ``open_transactions``) and
verify's restore check: a real SparkSession and real Delta tables over a log dir written here."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
from chispa import assert_df_equality
from deltalake import write_deltalake

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.tools.segment_writer import build_batch, write_partition
from segdex.jobs.cli import main as cli
from segdex.pipelines import reindex, schemas
from segdex.pipelines.metadata_store import MetadataStore
from segdex.pipelines.run_context import RunRequest
from tests.support.fixtures import GOLDEN
from tests.support.group_log_dirs import T, restored_log_dir


def test_verify_fills_the_coordinator_tables_and_prints_one_line_per_group(tmp_path: Path, spark, capsys):
    log_dir = restored_log_dir(tmp_path)
    shutil.copytree(GOLDEN / "broker_logs" / "__transaction_state-0", log_dir / "__transaction_state-0")
    write_partition(log_dir, "orders", 3, [build_batch(0, [(T, b"k", b"v")], producer_id=99, producer_epoch=0,
                                                       base_sequence=0, is_transactional=True)])
    meta = tmp_path / "meta"
    assert cli(["verify", "--metadata", str(meta), "--no-progress", str(log_dir)]) == 1
    err = capsys.readouterr().err
    assert "restore check: group app: 1 partition committed past the log end (auto.offset.reset=earliest " \
           "re-reads 4 records)" in err
    assert "restore check: group simple: 1 committed before the log start (8 offsets gone; latest skips 10 " \
           "records)" in err
    store = MetadataStore(str(meta), spark)
    got = store.read_df("group_offsets").select("group", "topic", "partition", "committed_offset", "log_end_offset",
                                                "restore_status", "reread_if_earliest", "skipped_if_latest")
    expected = spark.createDataFrame(
        [("app", "orders", 0, 5, 10, "ok", 0, 0), ("app", "orders", 1, 40, 5, "ahead_of_end", 4, 0),
         ("simple", "orders", 2, 2, 20, "before_start", 0, 10)], got.schema)
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)
    groups = {r["group"]: r for r in store.read_df("groups").collect()}
    assert (groups["app"]["state"], groups["app"]["members"], groups["app"]["coordinator"]) == ("Stable", 2, 3)
    txns = store.read_df("transactions").collect()
    assert [(r["transactional_id"], r["state"]) for r in txns] == [("tx-dump", "CompleteCommit")]
    opened = store.read_df("open_transactions").collect()
    assert [(r["topic"], r["partition"], r["producer_id"], r["hanging"]) for r in opened] == [("orders", 3, 99, True)]


def test_a_rerun_drops_the_rows_of_groups_that_are_gone(tmp_path: Path, spark):
    log_dir = restored_log_dir(tmp_path)
    meta = str(tmp_path / "meta")
    reindex.run(spark, "verify", RunRequest([str(log_dir)], meta, LogConfig(), {}), progress=False)
    shutil.rmtree(log_dir / "__consumer_offsets-0")
    write_partition(log_dir, "__consumer_offsets", 0, [])
    summary = reindex.run(spark, "verify", RunRequest([str(log_dir)], meta, LogConfig(), {}), progress=False)
    assert summary.coordination.restore_checks == [] and summary.coordination.groups == []
    assert MetadataStore(meta, spark).read("group_offsets").num_rows == 0
    assert MetadataStore(meta, spark).read("groups").num_rows == 0


def _without_marks(table) -> pa.Schema:
    """The table's schema as segdex wrote it before the partial columns."""
    return pa.schema([f for f in table.schema if f.name not in ("partial", "loaded_to_offset", "kafka_after_start")])


def test_a_damaged_coordinator_partition_marks_its_rows_in_tables_that_gain_the_columns(tmp_path: Path, spark):
    log_dir = restored_log_dir(tmp_path)
    shutil.copytree(GOLDEN / "broker_logs" / "__transaction_state-0", log_dir / "__transaction_state-0")
    txn_log = log_dir / "__transaction_state-0" / "00000000000000000000.log"
    data = bytearray(txn_log.read_bytes())
    data[656 + 100] ^= 0x01  # offset 5's batch (Kafka 4.4's own bytes) fails its CRC: the load reaches offset 5
    txn_log.write_bytes(bytes(data))
    meta = tmp_path / "meta"
    # tables an earlier segdex wrote, without the partial columns, holding another log dir's rows
    older = {schemas.GROUPS_TABLE: {"group": "elsewhere", "log_dir": "/other"},
             schemas.TRANSACTIONS_TABLE: {"transactional_id": "elsewhere", "log_dir": "/other"}}
    for table, row in older.items():
        schema = _without_marks(table)
        write_deltalake(str(meta / table.name), pa.Table.from_pylist([row], schema), mode="append")
    summary = reindex.run(spark, "verify", RunRequest([str(log_dir)], str(meta), LogConfig(), {}), progress=False)
    assert summary.exit_status == 1
    assert any(p.startswith("PARTIAL: __transaction_state-0 loaded up to offset 5 only") and
               "Kafka: a broker's start truncates it at offset 5" in p for p in summary.coordination.problems)
    store = MetadataStore(str(meta), spark)
    txns = {r["transactional_id"]: r for r in store.read("transactions").to_pylist()}
    assert {t: (r["partial"], r["loaded_to_offset"], r["kafka_after_start"], r["state"]) for t, r in txns.items()} \
        == {"tx-dump": (True, 5, "same", "Ongoing"), "elsewhere": (None, None, None, None)}
    groups = {r["group"]: r["partial"] for r in store.read("groups").to_pylist()}
    assert groups == {"app": False, "simple": False, "elsewhere": None}
    assert {r["partial"] for r in store.read("group_offsets").to_pylist()} == {False}


def test_verify_and_segdex_groups_read_the_same_replica_of_a_tie(tmp_path: Path):
    """Two replicas of ``__consumer_offsets-0`` loaded to the same offset but not equal (group ``app`` committed 5
    on one broker's disk, 6 on the other's): ``segdex groups`` (``ClusterView``) and a run's ``groups`` table
    read the same one, the replica of the log dir given first, whatever order the scan's tasks come back in.
    Before one rule decided both, the table took the first task's replica and ``segdex groups`` the first log
    dir's."""
    from datetime import UTC, datetime

    from segdex.indexcore.tools.cluster_view import ClusterView
    from segdex.pipelines import coordinators
    from segdex.pipelines.run_context import RunContext
    from segdex.pipelines.scan import PartitionTask, scan_partition
    from tests.support.group_log_dirs import commit

    dirs = []
    for node, offset in ((1, 5), (2, 6)):
        log_dir = tmp_path / f"broker-{node}"
        write_partition(log_dir, "__consumer_offsets", 0, [build_batch(0, [commit("app", "orders", 0, offset)])])
        (log_dir / "meta.properties").write_text(f"version=1\nnode.id={node}\ncluster.id=c\n")
        dirs.append(str(log_dir))
    view = ClusterView(dirs)
    first = view.group_coordinators[0]
    assert (first.log_dir, first.node_id) == (dirs[0], 1)
    assert ClusterView(dirs[::-1]).group_coordinators[0].log_dir == dirs[1]
    ctx = RunContext("verify", "verify-tie", datetime.now(UTC))
    outcomes = [scan_partition(PartitionTask(d, str(Path(d) / "__consumer_offsets-0"), "__consumer_offsets", 0,
                                             False, LogConfig()), ctx) for d in dirs]
    assert outcomes[0].coordination.load.next_offset == outcomes[1].coordination.load.next_offset == 1
    for order in (outcomes, outcomes[::-1]):  # the tasks' order decides nothing
        tables = coordinators.build(order, ctx, dirs)
        assert {(g.log_dir, g.coordinator) for g in tables.groups} == {(dirs[0], 1)}
        assert {r.committed_offset for r in tables.group_offsets} == {5}
    assert {g.log_dir for g in coordinators.build(outcomes, ctx, dirs[::-1]).groups} == {dirs[1]}
