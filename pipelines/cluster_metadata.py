"""The ``topics`` and ``brokers`` tables: what the metadata log in a run's log dirs says (its most advanced
replica's image, ``indexcore.metadata``), recorded beside the segments so that SQL can say which broker holds
which partition. No Kafka bytes here: the image comes typed from indexcore."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from segdex.indexcore.metadata.metadata_image import MetadataImage

from .metadata_store import Scope
from .schemas import BrokerRow, TopicRow


@dataclass
class ClusterTables:
    """A run's rows of ``topics`` and ``brokers``, and the scope each replaces (every topic the image names,
    removed ones included, so a deleted topic's rows go)."""

    topics: list[TopicRow]
    brokers: list[BrokerRow]
    topic_scope: Scope
    broker_scope: Scope


def cluster_tables(part: str, image: MetadataImage, run_id: str, at: datetime) -> ClusterTables:
    """The rows of ``image``, read from the metadata log at ``part``."""
    topics = [TopicRow(topic=t.name, partition=pid, topic_id=t.topic_id, partitions=len(t.partitions),
                       replicas=p.replicas, isr=p.isr, leader=p.leader, leader_epoch=p.leader_epoch,
                       partition_epoch=p.partition_epoch, directories=p.directories, metadata_log=part,
                       metadata_offset=image.offset, run_id=run_id, recorded_at=at)
              for t in image.topics.values() for pid, p in sorted(t.partitions.items())]
    brokers = [BrokerRow(broker_id=b.broker_id, host=b.endpoints[0][1] if b.endpoints else None,
                         port=b.endpoints[0][2] if b.endpoints else None,
                         endpoints=[f"{name}://{host}:{port}" for name, host, port in b.endpoints], rack=b.rack,
                         fenced=b.fenced, in_controlled_shutdown=b.in_controlled_shutdown, log_dir_ids=b.log_dirs,
                         incarnation_id=b.incarnation_id, broker_epoch=b.epoch, metadata_log=part,
                         metadata_offset=image.offset, run_id=run_id, recorded_at=at)
               for b in sorted(image.brokers.values(), key=lambda b: b.broker_id)]
    names = {t.name for t in image.topics.values()} | set(image.removed_topics.values())
    return ClusterTables(topics, brokers, Scope("topic", frozenset(names)),
                         Scope("metadata_log", frozenset({part})))
