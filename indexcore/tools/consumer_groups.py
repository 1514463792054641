"""``kafka-consumer-groups --describe`` offline (``ConsumerGroupCommand.ConsumerGroupService``), and the restore
check: what each group's committed offsets mean for the partitions the log dirs hold.

Kafka's tool describes each group (``describeConsumerGroups``: state, members and their assignment), lists its
committed offsets (``listConsumerGroupOffsets``) and the partitions' log end offsets (``ListOffsets`` latest), and
prints one row per partition: first those assigned to a member (members with the most partitions first, a stable
sort of the members in the order the coordinator's describe lists them: ``describe_order``), then the committed
partitions no member holds, with ``-`` for the consumer; a member's rows, and those of no member, by topic
(``String.compareTo``) then partition (4.x's ``describePartitions``; 3.9's tool printed them in the order of a
``HashMap``). Groups by group id (a ``TreeMap``). Here the groups and offsets come from the loaded
``__consumer_offsets`` partitions and the log end offsets from the data partitions as a broker's recovery leaves
them (``cluster_view``). The groups are those ``--all-groups`` lists: every group the coordinator holds, simple
groups (offsets only) included.

The restore check compares each committed offset with its partition's log start and end offsets. A committed
offset past the log end (a partition restored from an older copy, or truncated by recovery) is out of range: the
consumer resets by ``auto.offset.reset``, ``earliest`` re-reading every record the partition holds (all of them
consumed before), ``latest`` skipping nothing that is in the log now but every record produced between the
broker's start and the consumer's first fetch. A committed offset before the log start lost the records in
between; ``earliest`` then reads from the log start, ``latest`` skips every record the partition holds.

A group whose ``__consumer_offsets`` partition loaded only in part (a damaged or cut segment: ``LoadSummary``) is
marked ``partial``, with the offset the load reached and what Kafka's coordinator loads there after the broker's
next start (``kafka_after_start``: ``same`` when it is these very offsets); so is a group asked for and found
nowhere while some coordinator partition is partial or missing (it may be there). ``format_offsets`` prints the
mark above the group's rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass

from segdex.indexcore.coordinator.group_metadata_manager import (
    CLASSIC,
    CONSUMER,
    SHARE,
    STREAMS,
    ClassicGroup,
    Group,
    RecordedGroup,
)
from segdex.indexcore.coordinator.offset_metadata_manager import OffsetAndMetadata
from segdex.indexcore.log.java_hash_map import java_string_hash, timeline_hash_order
from segdex.indexcore.tools.cluster_view import CoordinatorPartition

LogOffsets = Callable[[str, int], "tuple[int, int] | None"]  # (topic, partition) -> (log start, log end)
CountRecords = Callable[[str, int, int, int], int]  # (topic, partition, start, end) -> data records in [start, end)
MISSING_COLUMN_VALUE = "-"
CONSUMER_GROUP_TYPES = (CLASSIC, CONSUMER)
ALL_GROUP_TYPES = (CLASSIC, CONSUMER, SHARE, STREAMS)
DEAD = "Dead"
OK, AHEAD_OF_END, BEFORE_START, NOT_FOUND = "ok", "ahead_of_end", "before_start", "partition_not_found"


@dataclass(frozen=True)
class MemberDescription:
    """A member as ``describeConsumerGroups`` shows it; ``assignment``: (topic, partition) pairs, sorted by
    ``row_order``."""

    consumer_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class PartitionAssignmentState:
    """One row of ``--describe`` (``PartitionAssignmentState``), with where the commit came from."""

    group: str
    topic: str
    partition: int
    offset: int | None  # committed offset; None: the member holds the partition without a commit
    log_end_offset: int | None  # None: no log dir holds the partition
    lag: int | None
    consumer_id: str
    host: str
    client_id: str
    log_start_offset: int | None
    leader_epoch: int | None
    metadata: str | None
    commit_timestamp_ms: int | None
    expire_timestamp_ms: int | None
    record_offset: int | None  # where the commit record sits in __consumer_offsets


@dataclass(frozen=True)
class GroupDescription:
    """A group as loaded, with its rows."""

    group: str
    type: str  # classic, consumer
    protocol_type: str  # "consumer" for consumer clients, "" for a simple group, "connect", ...
    state: str
    assignment_strategy: str
    epoch: int  # generation (classic) or group epoch (consumer protocol)
    coordinator: int | None  # the broker id holding its __consumer_offsets partition
    coordinator_partition: int
    members: tuple[MemberDescription, ...]
    offsets: tuple[PartitionAssignmentState, ...]
    partial: bool = False  # its coordinator partition loaded only in part (or, not found: one may hold it)
    loaded_to_offset: int | None = None  # partial: the offset the load of its coordinator partition reached
    kafka_after_start: str | None = None  # partial: Kafka's coordinator after the broker's next start (SAME, ...)
    partial_reason: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)

    def partial_line(self) -> str:
        """The line printed above a partial group's rows."""
        return f"PARTIAL: group {self.group}: {self.partial_reason}"


def java_string_order(text: str) -> bytes:
    """A sort key ordering strings as ``String.compareTo`` does (by UTF-16 code unit; Python's ``str`` order differs
    for characters past the Basic Multilingual Plane against those from U+E000)."""
    return text.encode("utf-16-be", "surrogatepass")


def row_order(tp: tuple[str, int]) -> tuple[bytes, int]:
    """The order of a member's rows, and of the rows of no member: ``describePartitions`` (4.x) sorts them with
    ``Comparator.comparing(topic, String::compareTo).thenComparingInt(partition)``."""
    return java_string_order(tp[0]), tp[1]


def describe_order(group: Group) -> list[str]:
    """The member ids in the order the coordinator's describe lists them, which ``collectGroupsOffsets``'s stable
    sort by assignment size keeps among members holding as many partitions. A classic group:
    ``ClassicGroup.allMembers()``, its ``HashMap``'s order, which is the order its last ``GroupMetadataValue`` lists
    them in (written by iterating that same map; the describe of a group whose membership changed since is not
    that of a ``Stable`` group). A consumer-protocol group: its ``members`` ``TimelineHashMap`` (``asDescribedGroup``
    iterates it): the members in the order their records added them (a member's first record, or its first since
    its metadata's tombstone removed it), the table's slots those the replay's puts grew it to
    (``ConsumerGroup.member_slots``: a group that once held more members than now keeps the slots it had then). That
    is the table of a coordinator that loaded the partition; one that has held the group since before the log
    cleaner removed records of members long gone may have grown it more."""
    if isinstance(group, ClassicGroup):
        return list(group.members)
    if isinstance(group, RecordedGroup):
        return list(group.members)
    return timeline_hash_order(group.members, java_string_hash, group.member_slots)


def _members(group: Group, topic_names: dict[str, str]) -> tuple[MemberDescription, ...]:
    out = []
    if isinstance(group, RecordedGroup):
        return tuple(MemberDescription(m, None, "", "", ()) for m in describe_order(group))
    if isinstance(group, ClassicGroup):
        for member_id in describe_order(group):
            m = group.members[member_id]
            out.append(MemberDescription(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                         tuple(sorted(m.assignment or (), key=row_order))))
    else:
        for member_id in describe_order(group):
            m = group.members[member_id]
            assigned = tuple(sorted(((topic_names.get(tid, tid), p) for tid, ps in m.assigned_partitions.items()
                                     for p in ps), key=row_order))
            out.append(MemberDescription(m.member_id, m.instance_id, m.client_id, m.client_host, assigned))
    return tuple(out)


def _row(log_offsets: LogOffsets, group: str, tp: tuple[str, int], commit: OffsetAndMetadata | None,
         member: MemberDescription | None) -> PartitionAssignmentState:
    bounds = log_offsets(*tp)
    start, end = bounds if bounds is not None else (None, None)
    offset = commit.committed_offset if commit is not None else None
    lag = end - offset if offset is not None and offset != -1 and end is not None else None
    return PartitionAssignmentState(
        group, tp[0], tp[1], offset, end, lag,
        member.consumer_id if member else MISSING_COLUMN_VALUE, member.host if member else MISSING_COLUMN_VALUE,
        member.client_id if member else MISSING_COLUMN_VALUE, start,
        commit.leader_epoch if commit else None, commit.metadata if commit else None,
        commit.commit_timestamp_ms if commit else None, commit.expire_timestamp_ms if commit else None,
        commit.record_offset if commit else None)


def _partial(coordinator: CoordinatorPartition) -> dict:
    """The partial mark of the groups of a coordinator partition loaded in part ({} when it loaded whole)."""
    load = coordinator.load
    if not load.partial:
        return {}
    after = load.after_start
    return {"partial": True, "loaded_to_offset": load.next_offset,
            "kafka_after_start": after.answer if after is not None else None,
            "partial_reason": load.partial_reason(f"{coordinator.topic}-{coordinator.partition}")}


def _not_found(group_id: str, coordinators: list[CoordinatorPartition], missing: Sequence[int]) -> GroupDescription:
    """A group asked for that no loaded coordinator holds: ``Dead``, or partial when some coordinator partition
    loaded in part or is missing (Kafka may hold it there)."""
    where = [f"{c.topic}-{c.partition} loaded up to offset {c.load.next_offset} only" for c in coordinators
             if c.load.partial] + [f"__consumer_offsets-{p} in none of the log dirs given" for p in missing]
    if not where:
        return GroupDescription(group_id, "unknown", "", DEAD, "", -1, None, -1, (), ())
    return GroupDescription(group_id, "unknown", "", DEAD, "", -1, None, -1, (), (), True, None, None,
                            f"not in the coordinator partitions loaded, but {'; '.join(where)}: not known")


def describe_groups(coordinators: Iterable[CoordinatorPartition], topic_names: dict[str, str],
                    log_offsets: LogOffsets, group_ids: Iterable[str] | None = None,
                    types: Iterable[str] = CONSUMER_GROUP_TYPES, missing: Sequence[int] = ()) -> list[GroupDescription]:
    """``collectGroupsOffsets`` over the loaded ``__consumer_offsets`` partitions, by group id: ``topic_names``
    maps topic ids to names, ``log_offsets`` gives a partition's log start and end offsets (None: no log dir holds
    it). ``group_ids`` None: every group (``--all-groups``); a group asked for that no coordinator holds is
    described ``Dead``, without rows. ``types``: the group types described (``kafka-consumer-groups``: classic and
    consumer; share and streams groups have tools of their own). ``missing``: the ``__consumer_offsets``
    partitions no log dir holds. Groups of a partition loaded in part are marked partial (``_partial``)."""
    types = set(types)
    found: dict[str, GroupDescription] = {}
    group_ids = None if group_ids is None else list(group_ids)
    coordinators = list(coordinators)
    for coordinator in coordinators:
        shard = coordinator.load.shard
        mark = _partial(coordinator)
        committed: dict[str, dict[tuple[str, int], OffsetAndMetadata]] = {}
        for (group, topic, partition), commit in shard.offsets.offsets.items():
            committed.setdefault(group, {})[(topic, partition)] = commit
        for group_id, group in shard.groups.groups.items():
            if group_ids is not None and group_id not in group_ids:
                continue
            if group.type not in types:
                continue
            commits = committed.get(group_id, {})
            if group_ids is None and isinstance(group, ClassicGroup) and group.is_simple_group() and not commits:
                # a simple group whose only offsets were transactional and aborted: Kafka 3.9's coordinator never
                # creates it, 4.x's deletes it at its first expiration check
                continue
            members = _members(group, topic_names)
            rows, assigned = [], set()
            # collectGroupsOffsets: a stable sort of the described members by assignment size, descending
            for member in sorted((m for m in members if m.assignment), key=lambda m: -len(m.assignment)):
                for tp in sorted(member.assignment, key=row_order):
                    assigned.add(tp)
                    rows.append(_row(log_offsets, group_id, tp, commits.get(tp), member))
            for tp in sorted((tp for tp in commits if tp not in assigned), key=row_order):
                rows.append(_row(log_offsets, group_id, tp, commits[tp], None))
            found[group_id] = GroupDescription(
                group_id, group.type, group.protocol_type or "", group.state, group.assignment_strategy,
                group.epoch, coordinator.node_id, coordinator.partition, members, tuple(rows), **mark)
    for group_id in group_ids or ():
        if group_id not in found:
            found[group_id] = _not_found(group_id, coordinators, missing)
    return [found[g] for g in sorted(found, key=java_string_order)]  # describeGroups' TreeMap


def _format(values: list[str], widths: list[int | None]) -> str:
    """Java's ``%-Ns`` per column (no width: ``%s``), joined by one space."""
    return " ".join(v if w is None else v.ljust(w) for v, w in zip(values, widths, strict=True))


def _text(value: object) -> str:
    return MISSING_COLUMN_VALUE if value is None else str(value)


def format_offsets(groups: list[GroupDescription]) -> tuple[str, str]:
    """``printOffsets``: (stdout, stderr) as ``kafka-consumer-groups --describe`` prints them; a partial group's
    mark first (``GroupDescription.partial_line``), on stdout."""
    out, err = [], []
    for g in groups:
        if g.partial:  # above the group's rows, where no one reads its offsets without it
            out.append(f"\n{g.partial_line()}\n")
        if g.state == DEAD:
            if not g.partial:  # printError: on stdout
                out.append(f"\nError: Consumer group '{g.group}' does not exist.\n")
            continue
        if g.state == "Empty":
            err.append(f"\nConsumer group '{g.group}' has no active members.\n")
        elif g.state not in ("Stable",):
            err.append(f"\nWarning: Consumer group '{g.group}' is rebalancing.\n")
        if not g.offsets:
            continue
        widths = [max([15, len(g.group)]), max([15] + [len(r.topic) for r in g.offsets]), 10, 15, 15, 15,
                  max([15] + [len(r.consumer_id) for r in g.offsets]), max([15] + [len(r.host) for r in g.offsets]),
                  None]
        out.append("\n" + _format(["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                                   "CONSUMER-ID", "HOST", "CLIENT-ID"], widths))
        for r in g.offsets:
            out.append("\n" + _format([r.group, r.topic, str(r.partition), _text(r.offset), _text(r.log_end_offset),
                                       _text(r.lag), r.consumer_id, r.host, r.client_id], widths))
        out.append("\n")
    return "".join(out), "".join(err)


@dataclass(frozen=True)
class RestoreCheck:
    """One committed offset against its partition: ``status`` ok, ahead_of_end, before_start or
    partition_not_found; the records a consumer re-reads or skips under each ``auto.offset.reset``
    (read_uncommitted: aborted transactions' records counted), and the offsets lost before the log start."""

    group: str
    topic: str
    partition: int
    committed_offset: int
    log_start_offset: int | None
    log_end_offset: int | None
    status: str
    reread_if_earliest: int
    skipped_if_latest: int
    lost_offsets: int

    def describe(self) -> str:
        """The problem line ``verify`` prints."""
        where = f"group {self.group}: {self.topic}-{self.partition}"
        if self.status == NOT_FOUND:
            return f"{where}: committed offset {self.committed_offset} for a partition no log dir holds"
        if self.status == AHEAD_OF_END:
            return (f"{where}: committed offset {self.committed_offset} is past the log end offset "
                    f"{self.log_end_offset}: auto.offset.reset=earliest re-reads {self.reread_if_earliest} records, "
                    f"latest skips the records produced before the consumer's first fetch")
        return (f"{where}: committed offset {self.committed_offset} is before the log start offset "
                f"{self.log_start_offset} ({self.lost_offsets} offsets gone): auto.offset.reset=latest skips "
                f"{self.skipped_if_latest} records, earliest reads them")


def restore_check(groups: list[GroupDescription], count: CountRecords) -> list[RestoreCheck]:
    """Every committed offset of ``groups`` against its partition's log start and end offsets (those of the
    rows); ``count`` gives the data records of a partition's range, asked for out-of-range commits only."""
    out = []
    for g in groups:
        for r in g.offsets:
            if r.offset is None or r.offset < 0:
                continue
            start, end = r.log_start_offset, r.log_end_offset
            if start is None or end is None:
                out.append(RestoreCheck(g.group, r.topic, r.partition, r.offset, None, None, NOT_FOUND, 0, 0, 0))
            elif r.offset > end:
                out.append(RestoreCheck(g.group, r.topic, r.partition, r.offset, start, end, AHEAD_OF_END,
                                        count(r.topic, r.partition, start, end), 0, 0))
            elif r.offset < start:
                out.append(RestoreCheck(g.group, r.topic, r.partition, r.offset, start, end, BEFORE_START,
                                        0, count(r.topic, r.partition, start, end), start - r.offset))
            else:
                out.append(RestoreCheck(g.group, r.topic, r.partition, r.offset, start, end, OK, 0, 0, 0))
    return out
