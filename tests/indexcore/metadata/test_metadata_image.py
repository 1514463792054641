"""``indexcore.metadata.metadata_image``: the image a KRaft broker builds from its metadata log, replayed from
written logs (``tests.support.metadata_log``): the latest snapshot then the log after it, metadata transactions
committed, aborted and left open, a removed topic, partition and broker changes, a torn tail. Real brokers' logs
are in tests/kafka/test_broker.py."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from segdex.indexcore.metadata.metadata_image import (
    MetadataLogException,
    load_metadata_image,
    most_advanced_image,
    stray_replicas,
)
from segdex.indexcore.protocol.message_format import uuid_string
from tests.support.metadata_log import record, stray_log_dir, uuid, write_metadata_log, write_snapshot

PART = "__cluster_metadata-0"


def topic(name: str, n: int) -> list[bytes]:
    return [record("TopicRecord", name=name, topicId=uuid(n)),
            record("PartitionRecord", 2, partitionId=0, topicId=uuid(n), replicas=[1, 2], isr=[1, 2], leader=1,
                   leaderEpoch=0, partitionEpoch=0, directories=[uuid(9), uuid(9)])]


def config(kind: int, name: str, key: str, value: str | None) -> bytes:
    return record("ConfigRecord", resourceType=kind, resourceName=name, name=key, value=value)


def test_the_latest_snapshot_then_the_log_after_it(tmp_path: Path):
    """Records below the latest snapshot's end offset are the snapshot's; an older snapshot is not read; the log
    goes on from the end offset: a partition change names a new leader (its leader epoch and partition epoch
    move), a config is set and another deleted (a null value)."""
    part = tmp_path / PART
    write_snapshot(part, 3, topic("stale", 7))  # an older snapshot: superseded
    write_snapshot(part, 5, [*topic("orders", 1), config(2, "orders", "cleanup.policy", "compact"),
                             config(2, "orders", "retention.ms", "5")])
    write_metadata_log(part, [topic("ignored", 8), [record("NoOpRecord")] * 3,
                              [record("PartitionChangeRecord", 0, partitionId=0, topicId=uuid(1), leader=2,
                                      isr=[2]),
                               config(2, "orders", "segment.bytes", "1048576"),
                               config(2, "orders", "retention.ms", None)]])
    image = load_metadata_image(str(part))
    assert image.snapshot == f"{5:020d}-{1:010d}.checkpoint" and image.offset == 7 and image.stopped is None
    assert [t.name for t in image.topics.values()] == ["orders"]
    orders = image.topic("orders")
    assert orders.topic_id == uuid_string(uuid(1))
    p = orders.partitions[0]
    assert (p.replicas, p.isr, p.leader, p.leader_epoch, p.partition_epoch) == ([1, 2], [2], 2, 1, 1)
    assert p.directories == [uuid_string(uuid(9))] * 2
    assert image.topic_configs("orders") == {"cleanup.policy": "compact", "segment.bytes": "1048576"}


def test_metadata_transactions_are_applied_at_their_end(tmp_path: Path):
    """Begin .. End: published together. Begin .. Abort: dropped where the read of the log (a segment) ends
    there, also when an End follows the abort (a fault Kafka's loader goes past); applied where a record follows
    the abort in the same read, as Kafka 3.9.2's and 4.4.0's ``MetadataBatchLoader`` apply it (asked once: its
    abort changes the state, not the delta). A Begin with no end at the end of the log: not published, and said
    so."""
    part = tmp_path / PART
    follows = write_metadata_log(part, [
        [record("BeginTransactionRecord", name="Bootstrap records"), *topic("committed", 1)],
        [record("EndTransactionRecord")],
        [record("BeginTransactionRecord"), *topic("dropped", 2), record("AbortTransactionRecord", reason="test")],
    ])
    follows = write_metadata_log(part, [
        [record("BeginTransactionRecord"), *topic("faulted", 3), record("AbortTransactionRecord", reason="test"),
         record("EndTransactionRecord")],
    ], base=follows)
    write_metadata_log(part, [
        [record("BeginTransactionRecord"), *topic("applied", 4), record("AbortTransactionRecord", reason="test")],
        topic("after", 5),
        [record("BeginTransactionRecord"), *topic("open", 6)],
    ], base=follows)
    image = load_metadata_image(str(part))
    assert [t.name for t in image.topics.values()] == ["committed", "applied", "after"]
    assert image.offset == 18  # the last record applied: the open transaction's records are not
    assert "open at the end of the log" in image.stopped


def test_removed_topics_brokers_and_features(tmp_path: Path):
    """A removed topic goes (kept by name among the removed); its configs, set in the same delta (the log replayed
    in one read), stay under its name, as Kafka's ``ConfigurationsDelta`` keeps them; a broker registers fenced,
    is unfenced, changes its log dirs, and another one unregisters; a feature at level 0 is gone."""
    part = tmp_path / PART
    endpoint = {"name": "PLAINTEXT", "host": "10.0.0.1", "port": 9092, "securityProtocol": 0}
    register = [record("RegisterBrokerRecord", 4, brokerId=b, incarnationId=uuid(b), brokerEpoch=10 + b,
                       endPoints=[endpoint], features=[], rack="r1", fenced=True, logDirs=[uuid(9)])
                for b in (1, 2)]
    write_metadata_log(part, [
        [record("FeatureLevelRecord", name="metadata.version", featureLevel=26),
         record("FeatureLevelRecord", name="group.version", featureLevel=1)],
        register,
        [record("UnfenceBrokerRecord", id=1, epoch=11), record("UnregisterBrokerRecord", brokerId=2, brokerEpoch=12),
         record("BrokerRegistrationChangeRecord", 2, brokerId=1, brokerEpoch=11, logDirs=[uuid(5)])],
        [*topic("gone", 4), config(2, "gone", "cleanup.policy", "compact"), record("RemoveTopicRecord",
                                                                                   topicId=uuid(4))],
        [record("FeatureLevelRecord", name="group.version", featureLevel=0)],
    ])
    image = load_metadata_image(str(part))
    assert image.topics == {} and image.removed_topics == {uuid_string(uuid(4)): "gone"}
    assert image.topic_configs("gone") == {"cleanup.policy": "compact"}
    assert list(image.brokers) == [1]
    b = image.brokers[1]
    assert (b.fenced, b.rack, b.endpoints, b.log_dirs) == (False, "r1", [("PLAINTEXT", "10.0.0.1", 9092)],
                                                          [uuid_string(uuid(5))])
    assert image.features == {"metadata.version": 26}


def test_a_removed_topics_configs_go_only_where_the_deltas_image_held_them(tmp_path: Path):
    """``ConfigurationsDelta.replay(RemoveTopicRecord)`` deletes a topic's configs only where the image the delta
    started from holds them; ``MetadataLoader`` starts a delta after the snapshot, after each read of the log (to
    the end of a segment) and before a metadata transaction. Kafka 4.4.0's ``MetadataDelta`` over the same
    records (asked once): a topic of the snapshot removed in the log loses its configs, also one set in the same
    delta, and the topic created again under its name and removed again in that delta has none to lose; one
    created and configured in one segment and removed in the next loses them; one created, configured and
    removed within one delta keeps them, and the topic created again under its name has them and its own;
    records before a transaction are applied before it, so a removal inside it deletes the configs."""
    part = tmp_path / PART
    write_snapshot(part, 3, [*topic("snap", 1), config(2, "snap", "cleanup.policy", "compact")])
    follows = write_metadata_log(part, [
        [config(2, "snap", "retention.ms", "5"), record("RemoveTopicRecord", topicId=uuid(1)), *topic("snap", 6),
         record("RemoveTopicRecord", topicId=uuid(6))],
        [*topic("split", 2), config(2, "split", "cleanup.policy", "compact")],
        [*topic("again", 3), config(2, "again", "cleanup.policy", "compact"), record("RemoveTopicRecord",
                                                                                    topicId=uuid(3))],
        [*topic("again", 4), config(2, "again", "retention.ms", "7")],
    ], base=3)
    write_metadata_log(part, [
        [record("RemoveTopicRecord", topicId=uuid(2))],
        [*topic("txn", 5), config(2, "txn", "cleanup.policy", "compact")],
        [record("BeginTransactionRecord"), record("RemoveTopicRecord", topicId=uuid(5)),
         record("EndTransactionRecord")],
    ], base=follows)
    image = load_metadata_image(str(part))
    assert image.stopped is None and [t.name for t in image.topics.values()] == ["again"]
    assert image.topic_configs("snap") == {} and image.topic_configs("split") == {}
    assert image.topic_configs("again") == {"cleanup.policy": "compact", "retention.ms": "7"}
    assert image.topic_configs("txn") == {}


def test_a_torn_tail_or_an_unreadable_record_stops_the_replay_there(tmp_path: Path):
    """Bytes after the last whole batch (a crash mid-append): the image is the prefix, ``stopped`` says where;
    a record Kafka's serde refuses (frame 0) stops it at that record."""
    part = tmp_path / "a" / PART
    write_metadata_log(part, [topic("kept", 1)])
    log = part / "00000000000000000000.log"
    log.write_bytes(log.read_bytes() + b"\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00")
    image = load_metadata_image(str(part))
    assert image.topic("kept") is not None and "10 bytes at position" in image.stopped
    other = tmp_path / "b" / PART
    write_metadata_log(other, [topic("first", 1), [b"\x00\x02\x00"], topic("never", 2)])
    image = load_metadata_image(str(other))
    assert [t.name for t in image.topics.values()] == ["first"] and image.offset == 1
    assert "offset 2: Could not deserialize metadata record with frame version 0" in image.stopped
    (tmp_path / "empty").mkdir()
    with pytest.raises(MetadataLogException):  # no snapshot and no segment
        load_metadata_image(str(tmp_path / "empty"))


def test_the_most_advanced_replica_of_several_log_dirs(tmp_path: Path):
    """Of several log dirs holding the metadata log, the replica that reaches furthest; none: None."""
    for name, n in (("behind", 1), ("ahead", 3), ("plain", 0)):
        (tmp_path / name).mkdir()
        if n:
            write_metadata_log(tmp_path / name / PART, [topic(f"t{i}", i) for i in range(n)])
    found = most_advanced_image([str(tmp_path / d) for d in ("behind", "ahead", "plain")])
    assert found[0] == str(tmp_path / "ahead" / PART) and found[1].offset == 5
    assert most_advanced_image([str(tmp_path / "plain")]) is None


def test_a_stray_replica_is_what_logmanager_renames(tmp_path: Path):
    """``LogManager.isStrayKraftReplica`` (seen on a real 4.4.0 broker: a dir without ``partition.metadata``, a
    topic id the image does not hold, a partition the topic does not have, each renamed ``-stray`` at start):
    and a replica assignment without this broker."""
    part = tmp_path / PART
    write_metadata_log(part, [topic("orders", 1)])
    image = load_metadata_image(str(part))
    orders = uuid_string(uuid(1))
    assert image.stray_reason(1, orders, 0) is None and image.stray_reason(2, orders, 0) is None
    assert image.stray_reason(3, orders, 0) == ("the current replica assignment [1, 2] does not contain the local "
                                                "brokerId 3")
    assert image.stray_reason(1, orders, 5) == f"the topicId {orders} does not exist in the metadata image"
    assert image.stray_reason(1, "AAAAAAAAAAAAAAAAAAAAAQ", 0) == (
        "the topicId AAAAAAAAAAAAAAAAAAAAAQ does not exist in the metadata image")
    assert "does not exist in its partition.metadata" in image.stray_reason(1, None, 0)


def test_stray_replicas_of_a_log_dir(tmp_path: Path):
    """``stray_replicas``: each partition dir of the log dirs judged against their metadata log for the log dir's
    broker (``meta.properties``), as the 4.4.0 broker judged the same three dirs; none without a metadata log."""
    log_dir = stray_log_dir(tmp_path)
    strays = stray_replicas([str(log_dir)])
    assert sorted(os.path.basename(p) for p in strays) == ["ghost-0", "nometa-0", "orders-5"]
    orders = uuid_string(uuid(1))
    assert strays[str(log_dir / "orders-5")] == f"the topicId {orders} does not exist in the metadata image"
    shutil.rmtree(log_dir / "__cluster_metadata-0")
    assert stray_replicas([str(log_dir)]) == {}
    write_metadata_log(log_dir / "__cluster_metadata-0", [topic("other", 3)])  # no metadata.version: no KRaft log's
    assert stray_replicas([str(log_dir)]) == {}


def test_every_field_of_a_broker_registration_and_its_changes(tmp_path: Path):
    """``BrokerRegistration`` as a KRaft broker's image holds it: a ``RegisterBrokerRecord`` (every field kept; an
    older version without ``inControlledShutdown`` or ``logDirs`` reads as not in shutdown, no log dir), then
    ``BrokerRegistrationChangeRecord``s (``BrokerRegistrationFencingChange``: 1 fences, -1 unfences, 0 leaves it;
    ``BrokerRegistrationInControlledShutdownChange``: 1 sets it, 0 leaves it; ``logDirs`` replaced when it names
    any), and a change for a broker the image does not hold (ignored)."""
    part = tmp_path / PART
    endpoints = [{"name": "PLAINTEXT", "host": "h1", "port": 9092, "securityProtocol": 0},
                 {"name": "CONTROLLER", "host": "h1", "port": 9093, "securityProtocol": 0}]
    write_metadata_log(part, [
        [record("RegisterBrokerRecord", 4, brokerId=1, incarnationId=uuid(11), brokerEpoch=21, endPoints=endpoints,
                features=[], rack="r1", fenced=True, inControlledShutdown=False, logDirs=[uuid(31), uuid(32)]),
         record("RegisterBrokerRecord", 0, brokerId=2, incarnationId=uuid(12), brokerEpoch=22,
                endPoints=endpoints[:1], features=[], rack=None),
         record("RegisterBrokerRecord", 4, brokerId=3, incarnationId=uuid(13), brokerEpoch=23,
                endPoints=endpoints[:1], features=[], rack=None, fenced=False, logDirs=[uuid(33)])],
        [record("BrokerRegistrationChangeRecord", 2, brokerId=1, brokerEpoch=21, fenced=-1, inControlledShutdown=1,
                logDirs=[uuid(34)]),
         record("BrokerRegistrationChangeRecord", 2, brokerId=3, brokerEpoch=23, fenced=1, inControlledShutdown=0,
                logDirs=[]),
         record("BrokerRegistrationChangeRecord", 2, brokerId=9, brokerEpoch=29, fenced=1)],
    ])
    brokers = load_metadata_image(str(part)).brokers
    assert sorted(brokers) == [1, 2, 3]
    one, two, three = brokers[1], brokers[2], brokers[3]
    assert (one.broker_id, one.incarnation_id, one.epoch, one.endpoints, one.rack) == (
        1, uuid_string(uuid(11)), 21, [("PLAINTEXT", "h1", 9092), ("CONTROLLER", "h1", 9093)], "r1")
    assert (one.fenced, one.in_controlled_shutdown, one.log_dirs) == (False, True, [uuid_string(uuid(34))])
    assert (two.incarnation_id, two.epoch, two.rack, two.fenced, two.in_controlled_shutdown, two.log_dirs) == (
        uuid_string(uuid(12)), 22, None, True, False, [])
    assert (three.fenced, three.in_controlled_shutdown, three.log_dirs) == (True, False, [uuid_string(uuid(33))])


def test_a_partition_change_merges_what_it_carries(tmp_path: Path):
    """``PartitionRegistration.merge``: replicas, ISR and directories where the record carries them; a new leader
    epoch only where it names a leader (``NO_LEADER_CHANGE``, -2, names none); a new partition epoch always; a
    change for a partition or topic the image does not hold is ignored."""
    part = tmp_path / PART
    change = {"partitionId": 0, "topicId": uuid(1)}
    write_metadata_log(part, [
        topic("orders", 1),
        [record("PartitionChangeRecord", 1, **change, isr=[1], replicas=[1, 2, 3], directories=[uuid(5)] * 3)],
        [record("PartitionChangeRecord", 0, **change, leader=-2)],
        [record("PartitionChangeRecord", 0, **change, leader=3)] * 2,
        [record("PartitionChangeRecord", 0, partitionId=7, topicId=uuid(1), leader=1),
         record("PartitionChangeRecord", 0, partitionId=0, topicId=uuid(2), leader=1)],
    ])
    p = load_metadata_image(str(part)).topic("orders").partitions[0]
    assert (p.replicas, p.isr, p.leader, p.leader_epoch, p.partition_epoch) == ([1, 2, 3], [1], 3, 2, 4)
    assert p.directories == [uuid_string(uuid(5))] * 3


def test_removing_what_the_image_does_not_hold_changes_nothing(tmp_path: Path):
    """A ``RemoveTopicRecord`` for a topic id the image does not hold, an ``UnregisterBrokerRecord`` for a broker
    it does not hold, a config deleted (null value) that is not set, for a topic and for a broker, and a topic
    without configs removed. Kafka 4.4.0's ``MetadataDelta`` over the same records (asked once, each record
    replayed as ``MetadataBatchLoader.loadBatch`` does): the unknown topic's removal throws ``RuntimeException:
    Unable to delete topic with id ...: no such topic found.``, which the loader hands to its fault handler and
    goes on with the next record (a broker-only node logs it; a node with the controller role stops), so it
    changes nothing; the unknown broker's unregistration and the deletions of unset configs are accepted and
    change nothing; the topic without configs goes. The image after them holds what it held before, less that
    topic, and the records after them are applied; asking for a topic by a name it does not hold is None."""
    part = tmp_path / PART
    endpoint = {"name": "PLAINTEXT", "host": "10.0.0.1", "port": 9092, "securityProtocol": 0}
    write_metadata_log(part, [
        [record("FeatureLevelRecord", name="metadata.version", featureLevel=26), *topic("kept", 1),
         config(2, "kept", "cleanup.policy", "compact"), *topic("bare", 2),
         record("RegisterBrokerRecord", 4, brokerId=1, incarnationId=uuid(11), brokerEpoch=21, endPoints=[endpoint],
                features=[], rack=None, fenced=False, logDirs=[uuid(9)])],
        [record("RemoveTopicRecord", topicId=uuid(9)),
         record("UnregisterBrokerRecord", brokerId=7, brokerEpoch=0),
         config(2, "kept", "retention.ms", None),
         config(4, "5", "log.retention.ms", None),
         record("RemoveTopicRecord", topicId=uuid(2))],
        topic("after", 3),
    ])
    image = load_metadata_image(str(part))
    assert image.stopped is None and image.offset == 13
    assert [t.name for t in image.topics.values()] == ["kept", "after"]
    assert image.removed_topics == {uuid_string(uuid(2)): "bare"}
    assert image.topic_configs("kept") == {"cleanup.policy": "compact"} and image.topic_configs("bare") == {}
    assert list(image.brokers) == [1] and image.broker_configs(5) == ({}, {})
    assert image.topic("missing") is None and image.topic("bare") is None
    assert image.topic("kept").partitions[0].replicas == [1, 2]
