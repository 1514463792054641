"""What a cluster's log dirs say, read together offline: the coordinators' loads and the data partitions.

``kafka-consumer-groups`` and ``kafka-transactions`` ask a live cluster; segdex answers from the disks of its
brokers (one log dir or many: a whole cluster's disks). The same partition may sit on several of them (replicas);
segdex reads the most complete replica (``most_complete_replica``: the highest end offset, a tie to the log dir
given first), the same rule the scan's tables follow (``pipelines.coordinators``).

- ``__consumer_offsets`` partitions load as the group coordinator loads them (``group_coordinator_shard``);
- ``__transaction_state`` partitions as the transaction coordinator does (``transaction_state_manager``);
- a data partition recovers as a broker's start recovers it (``list_offsets.recovered_partition``): log start and
  end offsets, and its producer state (the open transactions);
- topic ids (which consumer-protocol groups and offset commits v4 carry) map to names by the partition dirs'
  ``partition.metadata``; the coordinator's broker id is the ``node.id`` (or ``broker.id``) of the
  ``meta.properties`` of the log dir holding the coordinator partition.

A view can be partial: a coordinator partition whose load stopped before the end of its files (a damaged or cut
segment: ``LoadSummary.partial``, with what Kafka's own coordinator loads after the broker's next start), or a
coordinator partition none of the log dirs holds (``missing_partitions``: a gap in the partition numbers seen).
``partial_lines`` says so in one line each, for the commands to print above their tables.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TypeVar

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.coordinator.coordinator_loader import after_broker_start
from segdex.indexcore.coordinator.group_coordinator_shard import GroupCoordinatorLoad, load_group_coordinator
from segdex.indexcore.coordinator.transaction_state_manager import TransactionsLoad, load_transactions
from segdex.indexcore.errors import SegdexError
from segdex.indexcore.log.checkpoints import read_offset_checkpoint
from segdex.indexcore.log.layout import CLEAN_SHUTDOWN_FILE, RECOVERY_POINT_CHECKPOINT
from segdex.indexcore.log.log_dir import PartitionDir, list_log_dir, read_node_id
from segdex.indexcore.tools.list_offsets import RecoveredPartition, log_start_offsets, recovered_partition

CONSUMER_OFFSETS = "__consumer_offsets"
TRANSACTION_STATE = "__transaction_state"
PARTITION_METADATA = "partition.metadata"
CLUSTER_METADATA = "__cluster_metadata"

TopicPartition = tuple[str, int]
V = TypeVar("V")


def most_complete_replica(candidates: Iterable[tuple[int, int, V]]) -> V:
    """The replica to read of a partition several log dirs hold: of ``candidates`` (end offset, rank of the
    replica's log dir in the order the log dirs were given, value), the one with the highest end offset; on a
    tie, the one whose log dir was given first. ``ValueError`` when there is none.

    Why this rule: the highest end offset is the copy that holds the most of what the partition's producers wrote
    (for a coordinator partition, the most group or transaction state), the one an operator restoring a cluster
    from its disks wants read. Replicas equally far have no better one; the operator's own order decides, as a
    partition's replica list decides which replica Kafka prefers as leader (the first). Never the order a scan's
    tasks came back in, nor a path's spelling: the same log dirs given in the same order pick the same replica in
    ``segdex groups`` and ``transactions`` (``ClusterView``) and in a run's ``groups`` tables."""
    best: tuple[int, int, V] | None = None
    for c in candidates:
        if best is None or c[0] > best[0] or (c[0] == best[0] and c[1] < best[1]):
            best = c
    if best is None:
        raise ValueError("no replica")
    return best[2]


def read_topic_id(partition_dir: str | os.PathLike) -> str | None:
    """The ``topic_id`` of a partition dir's ``partition.metadata`` (``version: 0`` / ``topic_id: <id>``)."""
    try:
        with open(os.path.join(partition_dir, PARTITION_METADATA), encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "topic_id":
                    return value.strip()
    except (OSError, UnicodeDecodeError):
        return None
    return None


@dataclass
class CoordinatorPartition:
    """A coordinator partition as loaded from its most complete replica."""

    topic: str
    partition: int
    log_dir: str  # the log dir of the replica read
    node_id: int | None
    load: GroupCoordinatorLoad | TransactionsLoad


@dataclass
class ClusterView:
    """The log dirs given, listed once; loads and recoveries made on first use and kept."""

    log_dirs: list[str]
    config: LogConfig = field(default_factory=LogConfig)
    replicas: dict[TopicPartition, list[PartitionDir]] = field(default_factory=dict)
    node_ids: dict[str, int | None] = field(default_factory=dict)
    log_starts: dict[str, dict[TopicPartition, int]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    _recovered: dict[TopicPartition, RecoveredPartition | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for log_dir in self.log_dirs:
            listing = list_log_dir(log_dir)
            self.node_ids[log_dir] = read_node_id(log_dir)
            try:
                self.log_starts[log_dir] = log_start_offsets(log_dir)
            except (OSError, SegdexError) as e:  # Kafka's LogManager: any exception, the checkpoint reset
                self.problems.append(f"{log_dir}: log-start-offset-checkpoint unreadable ({e}); using first "
                                     f"segments")
                self.log_starts[log_dir] = {}
            for p in listing.partitions:
                if not p.topic_partition.kind:  # -future dirs serve nothing
                    self.replicas.setdefault((p.topic, p.partition), []).append(p)

    @cached_property
    def topic_names(self) -> dict[str, str]:
        """Topic id -> topic name, from every partition dir's ``partition.metadata``."""
        out = {}
        for (topic, _), replicas in self.replicas.items():
            for p in replicas:
                topic_id = read_topic_id(p.path)
                if topic_id:
                    out[topic_id] = topic
        return out

    def _rank(self, replica: PartitionDir) -> int:
        """The position of the replica's log dir among those given (the first place it is given, by its real
        path: one dir given twice or through a link ranks once, as verify's tables rank it)."""
        real = [os.path.realpath(d) for d in self.log_dirs]
        where = os.path.realpath(replica.log_dir)
        return real.index(where) if where in real else len(real)

    def recovered(self, topic: str, partition: int) -> RecoveredPartition | None:
        """The partition as a broker's recovery leaves it, from its most complete replica; None when no log dir
        holds it or none can be read (the reason is in ``problems``)."""
        key = (topic, partition)
        if key not in self._recovered:
            candidates = []
            for p in self.replicas.get(key, []):
                try:
                    part = recovered_partition(p.path, self.config, self.log_starts[p.log_dir].get(key))
                except (SegdexError, OSError) as e:
                    self.problems.append(f"{p.path}: {e}")
                    continue
                candidates.append((part.log_end_offset, self._rank(p), part))
            self._recovered[key] = most_complete_replica(candidates) if candidates else None
        return self._recovered[key]  # type: ignore[return-value]

    def _recovery_point(self, replica: PartitionDir) -> int | None:
        path = os.path.join(replica.log_dir, RECOVERY_POINT_CHECKPOINT)
        try:
            points = read_offset_checkpoint(path) if os.path.exists(path) else {}
        except (OSError, SegdexError):  # not a regular file, not Kafka's format: reset, as LogManager does
            points = {}
        return points.get((replica.topic, replica.partition))

    def _coordinator_partitions(self, topic: str, load) -> list[CoordinatorPartition]:
        out = []
        for (t, partition), replicas in sorted(self.replicas.items()):
            if t != topic:
                continue
            candidates = [(loaded.next_offset, self._rank(p), (p, loaded)) for p in replicas
                          for loaded in (load(p.path, self.log_starts[p.log_dir].get((t, partition))),)]
            replica, loaded = most_complete_replica(candidates)
            if loaded.partial:
                clean = os.path.exists(os.path.join(replica.log_dir, CLEAN_SHUTDOWN_FILE))
                loaded.after_start = after_broker_start(replica.path, loaded, clean, self._recovery_point(replica),
                                                        self.log_starts[replica.log_dir].get((t, partition)))
            node_id = self.node_ids.get(replica.log_dir)
            out.append(CoordinatorPartition(topic, partition, replica.log_dir, node_id, loaded))
        return out

    def missing_partitions(self, topic: str) -> list[int]:
        """The partitions of ``topic`` below the highest one held that no log dir holds (a replica not given, a
        disk lost): the groups or transactional ids Kafka hashes there are missing from any view of these dirs.
        Partitions above the highest held cannot be told from here."""
        held = {p for t, p in self.replicas if t == topic}
        return [p for p in range(max(held) + 1) if p not in held] if held else []

    def partial_lines(self, topic: str) -> list[str]:
        """One line per coordinator partition of ``topic`` whose view is partial: loaded only up to an offset
        (with Kafka's own load after the broker's next start), or held by none of the log dirs."""
        loads = self.group_coordinators if topic == CONSUMER_OFFSETS else self.transaction_coordinators
        lines = [c.load.partial_line(f"{c.topic}-{c.partition}") for c in loads if c.load.partial]
        missing = self.missing_partitions(topic)
        if missing:
            lines.append(f"PARTIAL: {', '.join(f'{topic}-{p}' for p in missing)} in none of the log dirs given: "
                         f"what Kafka holds there is missing from this view")
        return lines

    @cached_property
    def group_coordinators(self) -> list[CoordinatorPartition]:
        """Every ``__consumer_offsets`` partition of the log dirs, loaded."""
        return self._coordinator_partitions(CONSUMER_OFFSETS, load_group_coordinator)

    @cached_property
    def transaction_coordinators(self) -> list[CoordinatorPartition]:
        """Every ``__transaction_state`` partition of the log dirs, loaded."""
        return self._coordinator_partitions(TRANSACTION_STATE, load_transactions)

    def topic_partitions(self) -> list[TopicPartition]:
        """Every partition a client sees (``listTopics`` with internal ones: all but ``__cluster_metadata``),
        sorted."""
        return sorted(k for k in self.replicas if k[0] != CLUSTER_METADATA)

    def log_offsets(self, topic: str, partition: int) -> tuple[int, int] | None:
        """The partition's log start and end offsets after recovery; None when no log dir holds it."""
        part = self.recovered(topic, partition)
        return None if part is None else (part.log_start_offset, part.log_end_offset)

    def count_records(self, topic: str, partition: int, start: int, end: int) -> int:
        """The data records (control records excluded) of the partition with an offset in [start, end)."""
        part = self.recovered(topic, partition)
        return 0 if part is None else part.count_records(start, end)
