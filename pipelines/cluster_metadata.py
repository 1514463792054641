"""The ``topics`` and ``brokers`` tables: what the metadata log in a run's log dirs says (its most advanced
replica's image, ``indexcore.metadata``), recorded beside the segments so that SQL can say which broker holds
which partition. No Kafka bytes here: the image comes typed from indexcore."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime

from segdex.indexcore.metadata.metadata_image import MetadataImage

from .fleet import origin_of
from .metadata_store import Scope
from .schemas import BrokerRow, TopicRow


@dataclass
class ClusterTables:
    """A run's rows of ``topics`` and ``brokers``, and the scope each replaces: the cluster's rows (a topic the
    image removed, a broker it unregistered, lose theirs), keyed by the cluster id of the log dir read, so that one
    set of tables holds a fleet's clusters side by side."""

    topics: list[TopicRow]
    brokers: list[BrokerRow]
    topic_scope: Scope
    broker_scope: Scope


def cluster_tables(part: str, image: MetadataImage, run_id: str, at: datetime) -> ClusterTables:
    """The rows of ``image``, read from the metadata log at ``part``."""
    cluster = origin_of(os.path.dirname(part)).cluster_id
    topics = [TopicRow(cluster_id=cluster, topic=t.name, partition=pid, topic_id=t.topic_id,
                       partitions=len(t.partitions), replicas=p.replicas, isr=p.isr, leader=p.leader,
                       leader_epoch=p.leader_epoch, partition_epoch=p.partition_epoch, directories=p.directories,
                       metadata_log=part, metadata_offset=image.offset, run_id=run_id, recorded_at=at)
              for t in image.topics.values() for pid, p in sorted(t.partitions.items())]
    brokers = [BrokerRow(cluster_id=cluster, broker_id=b.broker_id, host=b.endpoints[0][1] if b.endpoints else None,
                         port=b.endpoints[0][2] if b.endpoints else None,
                         endpoints=[f"{name}://{host}:{port}" for name, host, port in b.endpoints], rack=b.rack,
                         fenced=b.fenced, in_controlled_shutdown=b.in_controlled_shutdown, log_dir_ids=b.log_dirs,
                         incarnation_id=b.incarnation_id, broker_epoch=b.epoch, metadata_log=part,
                         metadata_offset=image.offset, run_id=run_id, recorded_at=at)
               for b in sorted(image.brokers.values(), key=lambda b: b.broker_id)]
    scope = Scope("cluster_id", frozenset({cluster}))
    return ClusterTables(topics, brokers, scope, scope)
