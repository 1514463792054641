"""The metadata image a KRaft broker builds from its replica of the metadata log (``MetadataImage``,
``MetadataDelta.replay``, ``MetadataLoader``/``MetadataBatchLoader``), rebuilt offline from ``__cluster_metadata-0``.

What is replayed, in order (``load_metadata_image``):

1. the latest complete snapshot (``snapshots``): its records, the control records (header, footer) aside;
2. the log's segments from the snapshot's end offset on, batch by batch, control batches aside.

Metadata transactions (KIP-868) are applied as Kafka's batch loader applies them: the records between a
``BeginTransactionRecord`` and its ``EndTransactionRecord`` are published together at the end; an
``AbortTransactionRecord`` drops them when the read of the log ends there, and not when a record follows it in
the same read (``_BatchLoader``); a transaction still open at the end of the log is not published. Reading
stops at the first batch that is not whole or not valid (what recovery would truncate) and at the first record
Kafka's serde would refuse: the image is then the prefix before it, and ``stopped`` says where and why.

Records go into a delta (``MetadataDelta``) that is applied where a starting broker's ``MetadataLoader`` applies
it: after the snapshot, at the end of each segment (what one read of the raft client hands the loader:
Kafka 4.4 reads to the end of the segment; 3.9 reads 8 MiB at most, so a segment longer than that is several
deltas to it and one here) and before a metadata transaction. It matters for two things: a topic's removal
deletes its configs only where the delta's starting image holds them (``publish``), and an aborted transaction
is dropped only at the end of a read.

Offline there is no high watermark: the image is everything this replica holds, which may be ahead of what the
quorum committed (a broker publishes only committed records).

What the image keeps (the parts segdex uses): topics by id (name, partitions with replicas, ISR, leader, epochs,
directory ids), removed topics, configs by resource (``ConfigRecord``: topic, broker id, and ``""`` for the cluster
default of every broker), registered brokers (endpoints, rack, fencing, log dir ids), feature levels.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field

from segdex.indexcore.errors import CorruptRecordException, SegdexError
from segdex.indexcore.log.checkpoints import read_partition_metadata
from segdex.indexcore.log.layout import LOG_FILE_SUFFIX, parse_segment_file_name
from segdex.indexcore.log.log_dir import list_log_dir, read_node_id
from segdex.indexcore.metadata.records import (
    BROKER_RESOURCE,
    TOPIC_RESOURCE,
    MetadataRecord,
    read_metadata_record,
)
from segdex.indexcore.metadata.snapshots import snapshots
from segdex.indexcore.protocol.message_format import MessageFormatException, uuid_string
from segdex.indexcore.record.file_records import batches, open_log
from segdex.indexcore.record.records import records

CLUSTER_METADATA_PARTITION = "__cluster_metadata-0"
NO_LEADER_CHANGE = -2  # PartitionChangeRecord.leader when the leader stays
# record types (MetadataRecordType)
(REGISTER_BROKER, UNREGISTER_BROKER, TOPIC, PARTITION, CONFIG, PARTITION_CHANGE, FENCE_BROKER, UNFENCE_BROKER,
 REMOVE_TOPIC, FEATURE_LEVEL, BROKER_REGISTRATION_CHANGE, BEGIN_TRANSACTION, END_TRANSACTION,
 ABORT_TRANSACTION) = (0, 1, 2, 3, 4, 5, 7, 8, 9, 12, 17, 23, 24, 25)


@dataclass
class PartitionImage:
    """``PartitionRegistration``: a partition's replicas and leadership."""

    replicas: list[int]
    isr: list[int]
    leader: int
    leader_epoch: int
    partition_epoch: int
    directories: list[str] = field(default_factory=list)  # log dir ids, by replica


@dataclass
class TopicImage:
    name: str
    topic_id: str  # Uuid.toString
    partitions: dict[int, PartitionImage] = field(default_factory=dict)


@dataclass
class BrokerRegistration:
    broker_id: int
    incarnation_id: str
    epoch: int
    endpoints: list[tuple[str, str, int]]  # (listener name, host, port)
    rack: str | None
    fenced: bool
    in_controlled_shutdown: bool
    log_dirs: list[str]


@dataclass
class MetadataImage:
    """The image after the records replayed up to ``offset`` (the last offset applied; -1: none)."""

    offset: int = -1
    snapshot: str | None = None  # the snapshot file it started from
    stopped: str | None = None  # where and why reading stopped before the end of the log
    features: dict[str, int] = field(default_factory=dict)
    topics: dict[str, TopicImage] = field(default_factory=dict)  # by topic id
    removed_topics: dict[str, str] = field(default_factory=dict)  # topic id -> name
    configs: dict[tuple[int, str], dict[str, str]] = field(default_factory=dict)
    brokers: dict[int, BrokerRegistration] = field(default_factory=dict)
    # the config resources that held configs when the current delta began: ConfigurationsDelta's image
    delta_base: frozenset[tuple[int, str]] = field(default_factory=frozenset, repr=False)

    @property
    def is_kraft(self) -> bool:
        """Whether it is a KRaft cluster's image: read without a stop and holding ``metadata.version`` (every KRaft
        metadata log has it from its bootstrap records). Only such an image judges which replicas are stray: a
        metadata log cut short, or bytes that are not one, would make every partition stray."""
        return self.stopped is None and "metadata.version" in self.features

    def topic(self, name: str) -> TopicImage | None:
        return next((t for t in self.topics.values() if t.name == name), None)

    def topic_configs(self, name: str) -> dict[str, str]:
        """The topic's own configs (``kafka-configs --describe``'s dynamic topic configs)."""
        return dict(self.configs.get((TOPIC_RESOURCE, name), {}))

    def broker_configs(self, broker_id: int | None) -> tuple[dict[str, str], dict[str, str]]:
        """(the cluster-wide broker defaults, this broker's own dynamic configs)."""
        own = self.configs.get((BROKER_RESOURCE, str(broker_id)), {}) if broker_id is not None else {}
        return dict(self.configs.get((BROKER_RESOURCE, ""), {})), dict(own)

    def stray_reason(self, broker_id: int | None, topic_id: str | None, partition: int) -> str | None:
        """``LogManager.isStrayKraftReplica``: why a broker whose metadata is this image renames a partition dir
        ``<dir>.<uuid>-stray`` after loading it (Kafka's own words), or None when it keeps it: no topic id
        (``partition.metadata`` missing), a (topic id, partition) the image does not hold, or a replica
        assignment without this broker."""
        if topic_id is None:
            return "the topicId does not exist in its partition.metadata: Kafka treats it as a stray log"
        topic = self.topics.get(topic_id)
        registration = topic.partitions.get(partition) if topic is not None else None
        if registration is None:
            return f"the topicId {topic_id} does not exist in the metadata image"
        if broker_id is not None and broker_id not in registration.replicas:
            return (f"the current replica assignment [{', '.join(map(str, registration.replicas))}] does not contain "
                    f"the local brokerId {broker_id}")
        return None

    def publish(self) -> None:
        """The delta so far applied (``MetadataDelta.apply``): a config resource left without configs goes
        (``ConfigurationsDelta.apply``), and the next delta starts from what is left. ``MetadataLoader`` applies
        a delta after a snapshot, after each read of the log the raft client hands it (``handleCommit``: the
        log from where it stands to the end of that segment, at startup), and before a metadata transaction."""
        self.configs = {resource: data for resource, data in self.configs.items() if data}
        self.delta_base = frozenset(self.configs)

    # -- MetadataDelta.replay ------------------------------------------------------------------------------------

    def replay(self, record: MetadataRecord, offset: int) -> None:
        """One record applied, as ``MetadataDelta.replay`` applies it (the types segdex keeps; others pass)."""
        handler = _REPLAY.get(record.api_key)
        if handler is not None:
            handler(self, record.data)
        self.offset = offset

    def _register_broker(self, d: dict) -> None:
        self.brokers[d["brokerId"]] = BrokerRegistration(
            d["brokerId"], uuid_string(d["incarnationId"]), d["brokerEpoch"],
            [(e["name"], e["host"], e["port"]) for e in d["endPoints"]], d["rack"], d["fenced"],
            d.get("inControlledShutdown", False), [uuid_string(u) for u in d.get("logDirs", [])])

    def _unregister_broker(self, d: dict) -> None:
        self.brokers.pop(d["brokerId"], None)

    def _fence(self, d: dict, fenced: bool) -> None:
        broker = self.brokers.get(d["id"])
        if broker is not None:
            broker.fenced = fenced

    def _registration_change(self, d: dict) -> None:
        broker = self.brokers.get(d["brokerId"])
        if broker is None:
            return
        if d.get("fenced", 0):  # BrokerRegistrationFencingChange: 1 fence, -1 unfence, 0 none
            broker.fenced = d["fenced"] > 0
        if d.get("inControlledShutdown", 0):
            broker.in_controlled_shutdown = d["inControlledShutdown"] > 0
        if d.get("logDirs"):
            broker.log_dirs = [uuid_string(u) for u in d["logDirs"]]

    def _topic(self, d: dict) -> None:
        topic_id = uuid_string(d["topicId"])
        self.topics[topic_id] = TopicImage(d["name"], topic_id)
        self.removed_topics.pop(topic_id, None)

    def _partition(self, d: dict) -> None:
        topic = self.topics.get(uuid_string(d["topicId"]))
        if topic is not None:
            topic.partitions[d["partitionId"]] = PartitionImage(
                list(d["replicas"]), list(d["isr"]), d["leader"], d["leaderEpoch"], d["partitionEpoch"],
                [uuid_string(u) for u in d.get("directories", [])])

    def _partition_change(self, d: dict) -> None:
        """``PartitionRegistration.merge``: the fields the record carries; a new leader epoch when it names a
        leader, a new partition epoch always."""
        topic = self.topics.get(uuid_string(d["topicId"]))
        p = topic.partitions.get(d["partitionId"]) if topic is not None else None
        if p is None:
            return
        for name, attr in (("isr", "isr"), ("replicas", "replicas")):
            if d.get(name) is not None:
                setattr(p, attr, list(d[name]))
        if d.get("directories") is not None:
            p.directories = [uuid_string(u) for u in d["directories"]]
        if d.get("leader", NO_LEADER_CHANGE) != NO_LEADER_CHANGE:
            p.leader = d["leader"]
            p.leader_epoch += 1
        p.partition_epoch += 1

    def _remove_topic(self, d: dict) -> None:
        """The topic goes (``TopicsDelta.replay``), and its configs where the delta's image holds them
        (``ConfigurationsDelta.replay(RemoveTopicRecord)``: ``deleteAll`` on a resource of the image only).
        Configs set within the same delta as the removal stay, under the topic's name: a topic created again
        under that name has them. A real broker shows it: a topic created with ``cleanup.policy=compact``,
        deleted and created again without configs is ``compact`` after a restart (3.9.2 and 4.4.0), as its log
        replays from its last snapshot in one delta."""
        topic = self.topics.pop(uuid_string(d["topicId"]), None)
        if topic is not None:
            self.removed_topics[topic.topic_id] = topic.name
            if (TOPIC_RESOURCE, topic.name) in self.delta_base:
                self.configs.pop((TOPIC_RESOURCE, topic.name), None)

    def _config(self, d: dict) -> None:
        resource = self.configs.setdefault((d["resourceType"], d["resourceName"]), {})
        if d["value"] is None:
            resource.pop(d["name"], None)
        else:
            resource[d["name"]] = d["value"]

    def _feature(self, d: dict) -> None:
        if d["featureLevel"] == 0:
            self.features.pop(d["name"], None)
        else:
            self.features[d["name"]] = d["featureLevel"]


_REPLAY = {
    REGISTER_BROKER: MetadataImage._register_broker,
    UNREGISTER_BROKER: MetadataImage._unregister_broker,
    FENCE_BROKER: lambda image, d: image._fence(d, True),
    UNFENCE_BROKER: lambda image, d: image._fence(d, False),
    BROKER_REGISTRATION_CHANGE: MetadataImage._registration_change,
    TOPIC: MetadataImage._topic,
    PARTITION: MetadataImage._partition,
    PARTITION_CHANGE: MetadataImage._partition_change,
    REMOVE_TOPIC: MetadataImage._remove_topic,
    CONFIG: MetadataImage._config,
    FEATURE_LEVEL: MetadataImage._feature,
}


class MetadataLogException(SegdexError):
    """A metadata log that cannot be read at all (no snapshot and no segment)."""


def _log_records(path: str, start: int):
    """(offset, record) of a file of batches from offset ``start`` on, data batches only; a final (offset, str)
    names where and why reading stopped."""
    with open_log(path) as buf:
        end = 0
        try:
            for batch in batches(buf, 0):
                end = batch.position + batch.size_in_bytes
                if batch.is_control or batch.last_offset < start:
                    continue
                for r in records(buf, batch):
                    if r.offset < start:
                        continue
                    try:
                        yield r.offset, read_metadata_record(r.value)
                    except MessageFormatException as e:
                        yield r.offset, f"{os.path.basename(path)}: offset {r.offset}: {e}"
                        return
        except CorruptRecordException as e:
            yield -1, f"{os.path.basename(path)}: position {end}: {e}"
            return
        if end < len(buf):
            yield -1, f"{os.path.basename(path)}: {len(buf) - end} bytes at position {end} are no whole batch"


class _BatchLoader:
    """``MetadataBatchLoader``: records applied as they come, or held while a metadata transaction is open.

    An ``AbortTransactionRecord`` drops the transaction's records only where the read of the log ends right after
    it (``maybeFlushBatches`` publishes an empty delta for an aborted transaction); a record after the abort in
    the same read (a data record, or another ``BeginTransactionRecord``) applies them with it, as Kafka's loader
    does: its abort changes the state, not the delta (asked of Kafka 3.9.2's and 4.4.0's ``MetadataBatchLoader``).
    An end or an abort without a transaction open is a fault Kafka's loader reports and goes past: it changes
    nothing here."""

    def __init__(self, image: MetadataImage) -> None:
        self.image = image
        self.pending: list[tuple[int, MetadataRecord]] | None = None  # an open transaction's records
        self.aborted: list[tuple[int, MetadataRecord]] | None = None  # an aborted one's, this read's last so far

    def feed(self, offset: int, record: MetadataRecord) -> None:
        if record.api_key == BEGIN_TRANSACTION:
            if self.pending is None:
                self._apply_aborted()
                self.image.publish()  # what came before the transaction is applied first
                self.pending = []
        elif record.api_key in (END_TRANSACTION, ABORT_TRANSACTION):
            if self.pending is not None:
                if record.api_key == END_TRANSACTION:
                    for at, held in self.pending:
                        self.image.replay(held, at)
                else:
                    self.aborted = self.pending
                self.pending = None
            self.image.offset = offset
        elif self.pending is not None:
            self.pending.append((offset, record))
        else:
            self._apply_aborted()
            self.image.replay(record, offset)

    def _apply_aborted(self) -> None:
        for at, held in self.aborted or ():
            self.image.replay(held, at)
        self.aborted = None

    def end_of_read(self) -> None:
        """One read of the log handed over (``maybeFlushBatches``): the delta applied, unless a transaction is
        open; a transaction aborted last in the read is dropped."""
        if self.pending is None:
            self.aborted = None
            self.image.publish()


def load_metadata_image(partition_dir: str) -> MetadataImage:
    """The image of ``__cluster_metadata-0`` at ``partition_dir``: the latest snapshot, then the log after it."""
    image = MetadataImage()
    found = snapshots(partition_dir)
    start = 0
    loader = _BatchLoader(image)
    if found:
        (start, _epoch), path = found[-1]
        image.snapshot = os.path.basename(path)
        for _offset, record in _log_records(path, 0):
            if isinstance(record, str):
                raise MetadataLogException(f"snapshot {record}")
            image.replay(record, start - 1)
        image.offset = start - 1
    image.publish()
    logs = sorted((parse_segment_file_name(n).base_offset, n) for n in os.listdir(partition_dir)
                  if n.endswith(LOG_FILE_SUFFIX))
    if not found and not logs:
        raise MetadataLogException(f"{partition_dir}: no snapshot and no log segment")
    for _base, name in logs:
        for offset, record in _log_records(os.path.join(partition_dir, name), start):
            if isinstance(record, str):
                image.stopped = record
                return image
            loader.feed(offset, record)
        loader.end_of_read()
    if loader.pending is not None:
        image.stopped = "a metadata transaction still open at the end of the log (not applied)"
    return image


def _files_signature(partition_dir: str) -> tuple:
    """(name, size, mtime) of every file of the dir: what a replayed image depends on."""
    out = []
    for entry in os.scandir(partition_dir):
        if entry.is_file(follow_symlinks=False):
            st = entry.stat(follow_symlinks=False)
            out.append((entry.name, st.st_size, st.st_mtime_ns))
    return tuple(sorted(out))


@functools.lru_cache(maxsize=8)
def _cached_image(partition_dir: str, _signature: tuple) -> MetadataImage:
    return load_metadata_image(partition_dir)


def most_advanced_image(log_dirs: list[str]) -> tuple[str, MetadataImage] | None:
    """The image of the ``__cluster_metadata-0`` replica among ``log_dirs`` that reaches the furthest offset, with
    its partition dir; None where no dir holds one (a ZooKeeper-era broker). MetadataLogException when one is
    unreadable. A command asks several times (configs, strays, tables): an unchanged replica is replayed once per
    process. Callers do not change the image they get."""
    best: tuple[str, MetadataImage] | None = None
    for d in log_dirs:
        part = os.path.join(d, CLUSTER_METADATA_PARTITION)
        if os.path.isdir(part):
            image = _cached_image(part, _files_signature(part))
            if best is None or image.offset > best[1].offset:
                best = (part, image)
    return best


def stray_replicas(log_dirs: list[str]) -> dict[str, str]:
    """The partition dirs of ``log_dirs`` a broker whose metadata is their most advanced metadata log replica
    renames ``<dir>.<uuid>-stray`` after loading them, with Kafka's reason (``MetadataImage.stray_reason``, each
    log dir's broker by its ``meta.properties``); empty without a metadata log. ``-future`` and ``-delete`` dirs and
    the metadata log itself are not judged."""
    found = most_advanced_image(log_dirs)
    if found is None or not found[1].is_kraft:
        return {}
    image = found[1]
    out = {}
    for log_dir in log_dirs:
        broker = read_node_id(log_dir)
        for p in list_log_dir(log_dir).partitions:
            if p.kind or p.topic == CLUSTER_METADATA_PARTITION[:-2]:
                continue
            why = image.stray_reason(broker, read_partition_metadata(p.path), p.partition)
            if why is not None:
                out[p.path] = why
    return out
