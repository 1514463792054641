"""``topics`` and ``brokers`` (``pipelines.cluster_metadata``): what the metadata log in a run's log dirs says,
recorded by verify beside the segments: each topic-partition's replicas and leadership, each registered broker,
keyed by the log dir's cluster (two clusters' rows side by side); a rerun after a topic's removal drops its rows,
its cluster's only."""

from __future__ import annotations

from pathlib import Path

from chispa import assert_df_equality

from segdex.indexcore.protocol.message_format import uuid_string
from segdex.indexcore.tools.segment_writer import build_batch, write_partition
from segdex.jobs.cli import main as cli
from segdex.pipelines.metadata_store import MetadataStore
from tests.support.metadata_log import record, uuid, write_metadata_log

T = 1_700_000_000_000


def _metadata(log_dir: Path, removed: bool) -> None:
    endpoint = {"name": "PLAINTEXT", "host": "10.1.2.3", "port": 9092, "securityProtocol": 0}
    batches = [
        [record("RegisterBrokerRecord", 4, brokerId=1, incarnationId=uuid(7), brokerEpoch=5, endPoints=[endpoint],
                features=[], rack="eu-1a", fenced=False, logDirs=[uuid(9)])],
        [record("TopicRecord", name=name, topicId=uuid(n)) for name, n in (("orders", 1), ("gone", 2))],
        [record("PartitionRecord", 2, partitionId=p, topicId=uuid(n), replicas=[1], isr=[1], leader=1,
                leaderEpoch=3, partitionEpoch=4, directories=[uuid(9)]) for n, p in ((1, 0), (1, 1), (2, 0))],
    ]
    if removed:
        batches.append([record("RemoveTopicRecord", topicId=uuid(2))])
    write_metadata_log(log_dir / "__cluster_metadata-0", batches)


def test_verify_records_the_metadata_logs_topics_and_brokers(tmp_path: Path, spark):
    log_dir = tmp_path / "logs"
    write_partition(log_dir, "orders", 0, [build_batch(0, [(T, b"k", b"v")])])
    (log_dir / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=blue\n")
    _metadata(log_dir, removed=False)
    other = tmp_path / "other"  # another cluster's log dir: its rows stay beside blue's
    write_partition(other, "orders", 0, [build_batch(0, [(T, b"k", b"v")])])
    (other / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=green\n")
    _metadata(other, removed=True)
    meta = tmp_path / "meta"
    # exit 1: the written segments have no index files (found `missing`), which does not concern these tables
    assert cli(["verify", "--no-progress", "--metadata", str(meta), str(other)]) == 1
    assert cli(["verify", "--no-progress", "--metadata", str(meta), str(log_dir)]) == 1
    store = MetadataStore(str(meta), spark)
    got = store.read_df("topics").where("cluster_id = 'blue'").select(
        "topic", "partition", "topic_id", "partitions", "replicas", "leader", "leader_epoch", "partition_epoch",
        "metadata_offset")
    orders, gone = uuid_string(uuid(1)), uuid_string(uuid(2))
    expected = spark.createDataFrame([("orders", 0, orders, 2, [1], 1, 3, 4, 5),
                                      ("orders", 1, orders, 2, [1], 1, 3, 4, 5),
                                      ("gone", 0, gone, 1, [1], 1, 3, 4, 5)], got.schema)
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)
    brokers = [b for b in store.read("brokers").to_pylist() if b["cluster_id"] == "blue"]
    assert [(b["broker_id"], b["host"], b["port"], b["endpoints"], b["rack"], b["fenced"], b["log_dir_ids"])
            for b in brokers] == [(1, "10.1.2.3", 9092, ["PLAINTEXT://10.1.2.3:9092"], "eu-1a", False,
                                   [uuid_string(uuid(9))])]

    _metadata(log_dir, removed=True)  # the topic is deleted: its rows go at the next run
    assert cli(["verify", "--no-progress", "--metadata", str(meta), str(log_dir)]) == 1
    rows = store.read("topics").to_pylist()
    assert sorted((r["cluster_id"], r["topic"], r["partition"], r["metadata_offset"]) for r in rows) == [
        ("blue", "orders", 0, 6), ("blue", "orders", 1, 6), ("green", "orders", 0, 6), ("green", "orders", 1, 6)]
