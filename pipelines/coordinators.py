"""Consumer groups and transactions from a run's scan: the ``group_offsets``, ``groups``, ``transactions`` and
``open_transactions`` tables, and the restore check.

Each partition's scan task already replays the partition's producer state; it also keeps the partition's open
transactions and, for a coordinator partition, loads it as the coordinator does (``coordination``, in the task).
The driver joins them (``build``): every group's committed offsets against the partitions' log start and end
offsets (verify: the end after the broker's next start, from the startup preview), the open transactions against
the coordinators' transactions (``find-hanging``'s rules at the run's time). When a partition is held by several
log dirs, the replica read is ``cluster_view.most_complete_replica``'s, as ``segdex groups`` reads it.

A coordinator partition whose load stopped before the end of its files (a damaged or cut segment) marks every row
it gives (``partial``, ``loaded_to_offset``, ``kafka_after_start``: what Kafka's coordinator loads there after the
broker's next start, predicted in the task from the log dir's marker and checkpoints), and the run names it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.coordinator.coordinator_loader import LoadSummary, PartitionReplay, after_broker_start
from segdex.indexcore.coordinator.group_coordinator_shard import GroupCoordinatorLoad, group_coordinator_replay
from segdex.indexcore.coordinator.transaction_state_manager import TransactionsLoad, transactions_replay
from segdex.indexcore.errors import SegdexError
from segdex.indexcore.log.log_dir import read_node_id
from segdex.indexcore.log.log_segments import segment_logs
from segdex.indexcore.log.producer_state import ProducerStateManager
from segdex.indexcore.tools.cluster_view import (
    CONSUMER_OFFSETS,
    TRANSACTION_STATE,
    CoordinatorPartition,
    most_complete_replica,
    read_topic_id,
)
from segdex.indexcore.tools.consumer_groups import ALL_GROUP_TYPES, OK, RestoreCheck, describe_groups, restore_check
from segdex.indexcore.tools.find_hanging import OpenTransaction, find_hanging, open_transactions
from segdex.indexcore.tools.list_offsets import recovered_partition
from segdex.indexcore.tools.transactions import CoordinatedTransaction

from .run_context import RunContext
from .schemas import GroupOffsetRow, GroupRow, OpenTransactionRow, TransactionRow

COORDINATOR_TOPICS = (CONSUMER_OFFSETS, TRANSACTION_STATE)  # the partitions a coordinator loads


@dataclass
class PartitionCoordination:
    """What one partition's task keeps for the coordinator tables (plain data, picklable)."""

    topic_id: str | None = None
    open_transactions: list[OpenTransaction] = field(default_factory=list)
    load: GroupCoordinatorLoad | TransactionsLoad | None = None
    problem: str | None = None


class ScannedPartition(Protocol):
    """What ``coordination`` reads of a scan task (``scan.PartitionTask`` is one): the partition, where it is,
    and what the broker's next start reads of its log dir (the clean-shutdown marker, its checkpoint entries)."""

    @property
    def path(self) -> str: ...
    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def clean_shutdown(self) -> bool: ...
    @property
    def recovery_point(self) -> int | None: ...
    @property
    def log_start_offset(self) -> int | None: ...


class CoordinatorLoad:
    """A ``__consumer_offsets`` or ``__transaction_state`` partition's coordinator load, fed by its scan task:
    ``feed`` is the scan's ``PartitionRecovery.reader``, so each segment the scan reads is replayed from the
    same mapping and the partition is read once (``replay.read_here``: the segments the load read itself, those
    the scan did not read: taken from ``scan_span`` tasks, or unreadable). A load that fails (a segment it cannot
    read) keeps why in ``problem`` and takes nothing more."""

    def __init__(self, task: ScannedPartition, logs: list[tuple[int, str]]) -> None:
        self.path = task.path
        self.problem: str | None = None
        self.replay: PartitionReplay | None = None
        if task.topic == CONSUMER_OFFSETS:
            self.replay = group_coordinator_replay(logs, task.log_start_offset)
        elif task.topic == TRANSACTION_STATE:
            self.replay = transactions_replay(logs, task.log_start_offset)

    def feed(self, log_path: str, buf: Any) -> None:
        if self.replay is not None:
            self._guarded(self.replay.feed, log_path, buf)

    def finish(self) -> GroupCoordinatorLoad | TransactionsLoad | None:
        """The load, every segment replayed (None: not a coordinator partition, or the load failed)."""
        if self.replay is None or not self._guarded(self.replay.finish):
            return None
        return self.replay.summary  # type: ignore[return-value]  # the summary its constructor gave

    def _guarded(self, step: Callable[..., Any], *args: Any) -> bool:
        try:
            step(*args)
            return True
        except (OSError, SegdexError) as e:
            self.problem = f"{self.path}: cannot load as the coordinator does: {getattr(e, 'strerror', None) or e}"
            self.replay = None
            return False


def coordination(task: ScannedPartition, producers: ProducerStateManager | None,
                 load: CoordinatorLoad | None = None) -> PartitionCoordination:
    """In the scan task, after the partition's segments: its topic id, open transactions, and its coordinator
    load when it is a ``__consumer_offsets`` or ``__transaction_state`` partition (``load``, fed by the scan;
    None: a load of its own over the partition's files); a load that stopped early gets Kafka's own load after
    the broker's next start (``after_broker_start``, from the log dir's clean-shutdown marker and the
    partition's checkpoint entries)."""
    path = task.path
    out = PartitionCoordination(read_topic_id(path))
    if producers is not None:
        out.open_transactions = open_transactions(task.topic, task.partition, producers)
    try:
        if load is None and task.topic in COORDINATOR_TOPICS:
            load = CoordinatorLoad(task, segment_logs(path)[0])
    except OSError as e:
        out.problem = f"{path}: cannot load as the coordinator does: {e.strerror or e}"
        return out
    if load is not None:
        out.load = load.finish()
        out.problem = load.problem
    try:
        if out.load is not None and out.load.partial:
            out.load.after_start = after_broker_start(path, out.load, task.clean_shutdown, task.recovery_point,
                                                      task.log_start_offset)
    except (OSError, SegdexError) as e:
        out.problem = f"{path}: cannot load as the coordinator does: {getattr(e, 'strerror', None) or e}"
    return out


def _marks(load: LoadSummary) -> dict[str, Any]:
    """The partial columns of every row a coordinator partition's load gives."""
    if not load.partial:
        return {"partial": False, "loaded_to_offset": None, "kafka_after_start": None}
    after = load.after_start
    return {"partial": True, "loaded_to_offset": load.next_offset,
            "kafka_after_start": after.answer if after is not None else None}


@dataclass
class CoordinatorTables:
    """The four tables' rows and the restore check of one run."""

    group_offsets: list[GroupOffsetRow] = field(default_factory=list)
    groups: list[GroupRow] = field(default_factory=list)
    transactions: list[TransactionRow] = field(default_factory=list)
    open_transactions: list[OpenTransactionRow] = field(default_factory=list)
    restore_checks: list[RestoreCheck] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def restore_problems(self) -> list[RestoreCheck]:
        return [c for c in self.restore_checks if c.status != OK]


@dataclass
class _Collected:
    """The scan's facts gathered on the driver: topic names, log bounds and coordinator loads by partition."""

    topic_names: dict[str, str] = field(default_factory=dict)
    bounds: dict[tuple[str, int], tuple[int, int, str]] = field(default_factory=dict)  # (start, end, log dir)
    coordinators: dict[tuple[str, int], CoordinatorPartition] = field(default_factory=dict)
    opened: list[tuple[str, OpenTransaction]] = field(default_factory=list)

    def log_offsets(self, topic: str, partition: int) -> tuple[int, int] | None:
        found = self.bounds.get((topic, partition))
        return None if found is None else found[:2]

    def count(self, topic: str, partition: int, start: int, end: int) -> int:
        """Records in [start, end) of the partition, read here (-1: unreadable from the driver)."""
        path = os.path.join(self.bounds[(topic, partition)][2], f"{topic}-{partition}")
        try:
            return recovered_partition(path, LogConfig(), start).count_records(start, end)
        except (OSError, SegdexError):
            return -1


def _collect(outcomes: list[Any], problems: list[str], log_dirs: list[str]) -> _Collected:
    """The facts of the outcomes; of a partition several log dirs hold, its most complete replica's
    (``most_complete_replica``, ranked by ``log_dirs``, the log dirs in the order the run was given them)."""
    out = _Collected()
    node_ids: dict[str, int | None] = {}
    ranks = {os.path.realpath(d): i for i, d in reversed(list(enumerate(log_dirs)))}
    bounds: dict[tuple[str, int], list[tuple[int, int, tuple[int, int, str]]]] = {}
    coordinators: dict[tuple[str, int], list[tuple[int, int, CoordinatorPartition]]] = {}
    for o in outcomes:
        p, c = o.partition, getattr(o, "coordination", None)
        if p is None or c is None or p.future:
            continue
        if c.problem:
            problems.append(c.problem)
        if c.topic_id:
            out.topic_names[c.topic_id] = p.topic
        out.opened += [(p.log_dir, t) for t in c.open_transactions]
        rank = ranks.get(os.path.realpath(p.log_dir), len(ranks))
        end = p.startup_log_end_offset if p.startup_log_end_offset is not None else p.log_end_offset
        if end is not None:
            start = p.log_start_offset if p.log_start_offset is not None else 0
            bounds.setdefault((p.topic, p.partition), []).append((end, rank, (start, end, p.log_dir)))
        if c.load is not None:
            if p.log_dir not in node_ids:
                node_ids[p.log_dir] = read_node_id(p.log_dir)
            replica = CoordinatorPartition(p.topic, p.partition, p.log_dir, node_ids[p.log_dir], c.load)
            coordinators.setdefault((p.topic, p.partition), []).append((c.load.next_offset, rank, replica))
    out.bounds = {k: most_complete_replica(v) for k, v in bounds.items()}
    out.coordinators = {k: most_complete_replica(v) for k, v in coordinators.items()}
    return out


def _group_rows(tables: CoordinatorTables, loads: list[CoordinatorPartition], facts: _Collected,
                ctx: RunContext) -> None:
    groups = describe_groups(loads, facts.topic_names, facts.log_offsets, types=ALL_GROUP_TYPES)
    tables.restore_checks = restore_check(groups, facts.count)
    checks = {(c.group, c.topic, c.partition): c for c in tables.restore_checks}
    dirs = {c.partition: c.log_dir for c in loads}
    marks = {c.partition: _marks(c.load) for c in loads}
    for g in groups:
        log_dir = dirs.get(g.coordinator_partition)
        mark = marks.get(g.coordinator_partition, _marks(LoadSummary()))
        tables.groups.append(GroupRow(
            group=g.group, log_dir=log_dir, coordinator=g.coordinator, coordinator_partition=g.coordinator_partition,
            type=g.type, protocol_type=g.protocol_type, protocol=g.assignment_strategy, epoch=g.epoch,
            state=g.state, members=len(g.members), run_id=ctx.run_id, recorded_at=ctx.scanned_at, **mark))
        for r in g.offsets:
            if r.offset is None:
                continue  # an assigned partition without a commit: nothing committed to record
            check = checks.get((g.group, r.topic, r.partition))
            tables.group_offsets.append(GroupOffsetRow(
                group=g.group, topic=r.topic, partition=r.partition, log_dir=log_dir,
                coordinator_partition=g.coordinator_partition, record_offset=r.record_offset,
                committed_offset=r.offset, leader_epoch=r.leader_epoch, metadata=r.metadata,
                commit_timestamp_ms=r.commit_timestamp_ms, expire_timestamp_ms=r.expire_timestamp_ms,
                consumer_id=r.consumer_id, log_start_offset=r.log_start_offset, log_end_offset=r.log_end_offset,
                lag=r.lag, restore_status=check.status if check else None,
                reread_if_earliest=check.reread_if_earliest if check else None,
                skipped_if_latest=check.skipped_if_latest if check else None,
                lost_offsets=check.lost_offsets if check else None, run_id=ctx.run_id, recorded_at=ctx.scanned_at,
                **mark))


def _transaction_rows(tables: CoordinatorTables, loads: list[CoordinatorPartition], facts: _Collected,
                      ctx: RunContext) -> None:
    now_ms = int(ctx.scanned_at.timestamp() * 1000)
    transactions: dict[str, CoordinatedTransaction] = {}
    for c in loads:
        mark = _marks(c.load)
        for tid, m in c.load.transactions.items():
            transactions[tid] = CoordinatedTransaction(m, c.node_id, c.partition)
            tables.transactions.append(TransactionRow(
                transactional_id=tid, log_dir=c.log_dir, coordinator=c.node_id, coordinator_partition=c.partition,
                producer_id=m.producer_id, producer_epoch=m.producer_epoch, state=m.state,
                partitions=",".join(f"{t}-{p}" for t, p in sorted(m.partitions)),
                transaction_timeout_ms=m.transaction_timeout_ms, start_timestamp_ms=m.start_timestamp_ms,
                last_update_timestamp_ms=m.last_update_timestamp_ms, run_id=ctx.run_id, recorded_at=ctx.scanned_at,
                **mark))
    hanging = set(find_hanging([t for _, t in facts.opened], {k: v.metadata for k, v in transactions.items()},
                               now_ms))
    for log_dir, t in facts.opened:
        tables.open_transactions.append(OpenTransactionRow(
            log_dir=log_dir, topic=t.topic, partition=t.partition, producer_id=t.producer_id,
            producer_epoch=t.producer_epoch, coordinator_epoch=t.coordinator_epoch, start_offset=t.start_offset,
            last_timestamp=t.last_timestamp, age_ms=now_ms - t.last_timestamp, hanging=t in hanging,
            run_id=ctx.run_id, recorded_at=ctx.scanned_at))


def build(outcomes: list[Any], ctx: RunContext, log_dirs: list[str] | None = None) -> CoordinatorTables:
    """The tables from the scan's outcomes (``PartitionOutcome`` with ``partition`` and ``coordination``);
    ``log_dirs``: the run's log dirs in the order given, which decides between replicas equally far."""
    tables = CoordinatorTables()
    facts = _collect(outcomes, tables.problems, log_dirs or [])
    chosen = sorted(facts.coordinators.values(), key=lambda c: (c.topic, c.partition))
    tables.problems += [f"{c.topic}-{c.partition}: {why}" for c in chosen for why in c.load.undecodable]
    tables.problems += [c.load.partial_line(f"{c.topic}-{c.partition}") for c in chosen if c.load.partial]
    _group_rows(tables, [c for c in chosen if c.topic == CONSUMER_OFFSETS], facts, ctx)
    _transaction_rows(tables, [c for c in chosen if c.topic == TRANSACTION_STATE], facts, ctx)
    return tables
