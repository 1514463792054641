"""The groups a group coordinator holds after loading a ``__consumer_offsets`` partition, offline.

Kafka 4.x's ``GroupMetadataManager.replay`` rebuilds each group from its records, in offset order:

- a classic group (record type 2, ``GroupMetadataValue``) is replaced whole by each record: protocol type,
  generation, protocol, leader and members (their subscription and assignment bytes: for protocol type
  ``consumer``, the clients' ``ConsumerProtocol``). Loaded with members it is ``Stable``, without ``Empty``; a
  tombstone removes it (the group was deleted, or expired with its offsets);
- a consumer-protocol group (KIP-848, types 3-8) is built record by record: the group epoch (3), subscription
  metadata (4), each member's metadata (5) and current assignment (8), the target assignment's epoch (6) and each
  member's target (7); its members in the order, and with the slot count, of Kafka's ``members``
  ``TimelineHashMap`` after the same puts and removals (``ConsumerGroup.put_member``). Its state is Kafka's
  ``ConsumerGroup.maybeUpdateGroupState``: ``Empty`` without members, ``Assigning`` while the group epoch is
  ahead of the target assignment epoch, ``Reconciling`` while a member is not ``STABLE`` at the target epoch, else
  ``Stable``. Tombstones must come in Kafka's order (a member's current assignment and target before its
  metadata; the target epoch before the group): a tombstone out of that order fails Kafka's load
  (``IllegalStateException``), and is reported here as ``GroupLoadException``;
- offsets committed by a group no record describes create a *simple* group: a classic group without a protocol
  type, ``Empty`` (``getOrMaybeCreateClassicGroup``), which a later consumer-protocol record replaces.

Share and streams groups (types 10-15, 17-23) are kept as far as their keys and the epoch at the head of their
metadata value say (``RecordedGroup``): the group id, its epoch, its members' ids; the metadata record's tombstone
removes the group, a member metadata tombstone the member.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from segdex.indexcore.coordinator.records import CONSUMER_PROTOCOL_ASSIGNMENT, CONSUMER_PROTOCOL_SUBSCRIPTION
from segdex.indexcore.errors import SegdexError
from segdex.indexcore.log.java_hash_map import timeline_capacity
from segdex.indexcore.protocol.message_format import (
    INT16,
    Message,
    MessageFormatException,
    read_message,
    uuid_string,
)

EMPTY, STABLE, ASSIGNING, RECONCILING = "Empty", "Stable", "Assigning", "Reconciling"
CLASSIC, CONSUMER, SHARE, STREAMS = "classic", "consumer", "share", "streams"
UNKNOWN = "Unknown"
LEAVE_GROUP_MEMBER_EPOCH = -1
MEMBER_STATE_STABLE = 0  # MemberState.STABLE; 1 UNREVOKED_PARTITIONS, 2 UNRELEASED_PARTITIONS
DEFAULT_SERVER_ASSIGNOR = "uniform"  # the first of group.consumer.assignors' defaults (uniform, range)

TopicPartition = tuple[str, int]


class GroupLoadException(SegdexError):
    """A record Kafka's ``GroupMetadataManager.replay`` refuses (``IllegalStateException``): the coordinator's
    load of the whole partition fails there."""


def read_consumer_protocol(message: Message, raw: bytes | None) -> dict | None:
    """A classic member's subscription or assignment bytes read as the clients' ``ConsumerProtocol`` (an int16
    version, then the message); None when they are not."""
    if raw is None or len(raw) < INT16.size:
        return None
    try:
        return read_message(message, raw[INT16.size:], INT16.unpack_from(raw)[0])
    except MessageFormatException:
        return None


@dataclass(frozen=True)
class ClassicGroupMember:
    """A member of a classic group as ``GroupMetadataValue.MemberMetadata`` records it."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    assignment: tuple[TopicPartition, ...] | None  # None: not the consumer protocol (Connect, streams, ...)
    subscription: tuple[str, ...] | None


@dataclass
class ClassicGroup:
    """Kafka's ``ClassicGroup`` as a ``GroupMetadataValue`` loads it (or a simple group: no protocol type)."""

    group_id: str
    record_offset: int  # -1: a simple group, created by an offset commit
    protocol_type: str | None = None
    generation: int = 0
    protocol: str | None = None
    leader: str | None = None
    current_state_timestamp_ms: int | None = None
    members: dict[str, ClassicGroupMember] = field(default_factory=dict)

    type = CLASSIC

    @property
    def state(self) -> str:
        return STABLE if self.members else EMPTY

    def is_simple_group(self) -> bool:
        """``ClassicGroup.isSimpleGroup``: no protocol type and no members."""
        return not self.protocol_type and not self.members

    @property
    def epoch(self) -> int:
        return self.generation

    @property
    def assignment_strategy(self) -> str:
        return self.protocol or ""


@dataclass
class ConsumerGroupMember:
    """Kafka's ``ConsumerGroupMember`` as records 5 (metadata) and 8 (current assignment) build it; partitions
    by topic id (Kafka's ``Uuid.toString``)."""

    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: int = MEMBER_STATE_STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    uses_classic_protocol: bool = False
    assigned_partitions: dict[str, tuple[int, ...]] = field(default_factory=dict)
    partitions_pending_revocation: dict[str, tuple[int, ...]] = field(default_factory=dict)

    def is_reconciled_to(self, target_assignment_epoch: int) -> bool:
        """``ModernGroupMember.isReconciledTo``."""
        return self.state == MEMBER_STATE_STABLE and self.member_epoch == target_assignment_epoch


@dataclass
class ConsumerGroup:
    """Kafka's ``ConsumerGroup`` (KIP-848) as its records build it."""

    group_id: str
    group_epoch: int = 0
    target_assignment_epoch: int = 0
    members: dict[str, ConsumerGroupMember] = field(default_factory=dict)
    target_assignment: dict[str, dict[str, tuple[int, ...]]] = field(default_factory=dict)
    subscription_metadata: dict[str, str] = field(default_factory=dict)  # topic name -> topic id
    # the slot count of Kafka's ``members`` ``TimelineHashMap`` (``new TimelineHashMap<>(registry, 0)``: 2), grown by
    # every put of the replay (``put_member``), never shrunk: a group that once held more members has more slots
    member_slots: int = 2

    type = CONSUMER
    protocol_type = "consumer"

    def put_member(self, member_id: str) -> ConsumerGroupMember:
        """The member, created when absent: ``ConsumerGroup.updateMember``'s ``members.put``, which every record 5
        and 8 of the member makes (its value, and a current assignment's tombstone of a member it holds).
        ``BaseHashTable.baseAddOrReplace`` doubles the slots before any put, a replacing one too, while ``(size +
        1) * 0.75`` exceeds them; a new member joins its slot's end (``members``' order: a replaced one keeps its
        place, ``remove_member`` then a put moves it to the end), as ``describe_order`` reads it."""
        self.member_slots = timeline_capacity(len(self.members), self.member_slots)
        return self.members.setdefault(member_id, ConsumerGroupMember(member_id))

    def remove_member(self, member_id: str) -> None:
        """``ConsumerGroup.removeMember``'s ``members.remove``: the slot count stays."""
        del self.members[member_id]

    @property
    def state(self) -> str:
        """``ConsumerGroup.maybeUpdateGroupState`` over the loaded group."""
        if not self.members:
            return EMPTY
        if self.group_epoch > self.target_assignment_epoch:
            return ASSIGNING
        if any(not m.is_reconciled_to(self.target_assignment_epoch) for m in self.members.values()):
            return RECONCILING
        return STABLE

    @property
    def epoch(self) -> int:
        return self.group_epoch

    @property
    def assignment_strategy(self) -> str:
        """The server assignor most members prefer (the broker's default without one)."""
        named = Counter(m.server_assignor for m in self.members.values() if m.server_assignor)
        return named.most_common(1)[0][0] if named else DEFAULT_SERVER_ASSIGNOR


@dataclass
class RecordedGroup:
    """A share or streams group as far as its records' keys say (segdex does not decode their values): the
    epoch of its metadata record and its members' ids. A share group is ``Empty`` without members and ``Stable``
    with them (``ShareGroup``); a streams group with members is ``Unknown`` here (its state needs its topology)."""

    group_id: str
    type: str  # share | streams
    group_epoch: int = 0
    members: dict[str, None] = field(default_factory=dict)
    protocol_type = ""
    assignment_strategy = ""

    @property
    def state(self) -> str:
        if not self.members:
            return EMPTY
        return STABLE if self.type == SHARE else UNKNOWN

    @property
    def epoch(self) -> int:
        return self.group_epoch


Group = ClassicGroup | ConsumerGroup | RecordedGroup


def _assignment(topics: list[dict] | None) -> dict[str, tuple[int, ...]]:
    """``Utils.assignmentFromTopicPartitions``: topic id -> its partitions (topics without partitions dropped)."""
    return {uuid_string(t["topicId"]): tuple(t["partitions"]) for t in topics or [] if t["partitions"]}


@dataclass
class GroupMetadataManager:
    """``GroupMetadataManager``'s groups as replay leaves them, by group id."""

    groups: dict[str, Group] = field(default_factory=dict)

    def get_or_maybe_create_classic_group(self, group_id: str) -> Group:
        """``getOrMaybeCreateClassicGroup(groupId, true)`` as an offset commit's replay calls it: the group, or a
        new simple group."""
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = ClassicGroup(group_id, -1)
        return group

    def _consumer_group(self, group_id: str, create: bool) -> ConsumerGroup | None:
        """``getOrMaybeCreatePersistedConsumerGroup``: None when absent and not created (Kafka's
        ``GroupIdNotFoundException``, which replay ignores); a simple classic group is replaced."""
        group = self.groups.get(group_id)
        if group is None or (isinstance(group, ClassicGroup) and group.is_simple_group()):
            if not create:
                return None
            group = self.groups[group_id] = ConsumerGroup(group_id)
        if not isinstance(group, ConsumerGroup):
            raise GroupLoadException(f"Group {group_id} is not a consumer group")
        return group

    def replay_group_metadata(self, record_offset: int, group_id: str, value: dict | None) -> None:
        """``GroupMetadataManager.replay(GroupMetadataKey, GroupMetadataValue)``: the classic group replaced
        whole, or removed by a tombstone."""
        if value is None:
            self.groups.pop(group_id, None)
            return
        consumer = value["protocolType"] == "consumer"
        members = {}
        for m in value["members"]:
            assignment = read_consumer_protocol(CONSUMER_PROTOCOL_ASSIGNMENT, m["assignment"]) if consumer else None
            subscription = read_consumer_protocol(CONSUMER_PROTOCOL_SUBSCRIPTION, m["subscription"]) \
                if consumer else None
            rebalance_timeout = m.get("rebalanceTimeout", -1)
            members[m["memberId"]] = ClassicGroupMember(
                m["memberId"], m.get("groupInstanceId"), m["clientId"], m["clientHost"],
                m["sessionTimeout"] if rebalance_timeout == -1 else rebalance_timeout, m["sessionTimeout"],
                None if assignment is None else tuple(sorted(
                    (t["topic"], p) for t in assignment["assignedPartitions"] or [] for p in t["partitions"] or [])),
                None if subscription is None else tuple(subscription["topics"] or ()))
        stamp = value.get("currentStateTimestamp", -1)
        self.groups[group_id] = ClassicGroup(group_id, record_offset, value["protocolType"] or None,
                                             value["generation"], value["protocol"], value["leader"],
                                             None if stamp == -1 else stamp, members)

    def replay_consumer_group_metadata(self, group_id: str, value: dict | None) -> None:
        """``replay(ConsumerGroupMetadataKey, ConsumerGroupMetadataValue)``: the group epoch, or the group
        removed (only once it has no members, no target assignment and no target epoch)."""
        group = self._consumer_group(group_id, value is not None)
        if group is None:
            return
        if value is not None:
            group.group_epoch = value["epoch"]
            return
        if group.members:
            raise GroupLoadException(f"Received a tombstone record to delete group {group_id} but the group still "
                                     f"has {len(group.members)} members.")
        if group.target_assignment:
            raise GroupLoadException(f"Received a tombstone record to delete group {group_id} but the target "
                                     f"assignment still has {len(group.target_assignment)} members.")
        if group.target_assignment_epoch != -1:
            raise GroupLoadException(f"Received a tombstone record to delete group {group_id} but did not receive "
                                     f"ConsumerGroupTargetAssignmentMetadataValue tombstone.")
        del self.groups[group_id]

    def replay_partition_metadata(self, group_id: str, value: dict | None) -> None:
        """``replay(ConsumerGroupPartitionMetadataKey, ...)``: the subscribed topics' metadata (names, ids)."""
        group = self._consumer_group(group_id, value is not None)
        if group is not None:
            group.subscription_metadata = {} if value is None else {
                t["topicName"]: uuid_string(t["topicId"]) for t in value["topics"]}

    def replay_member_metadata(self, group_id: str, member_id: str, value: dict | None) -> None:
        """``replay(ConsumerGroupMemberMetadataKey, ...)``: a member's metadata, or the member removed (only
        after its current assignment's tombstone and without a target assignment)."""
        group = self._consumer_group(group_id, value is not None)
        if group is None:
            return
        if value is not None:
            m = group.put_member(member_id)
            m.instance_id, m.rack_id = value["instanceId"], value["rackId"]
            m.client_id, m.client_host = value["clientId"], value["clientHost"]
            m.subscribed_topic_names = tuple(value["subscribedTopicNames"] or ())
            m.subscribed_topic_regex = value["subscribedTopicRegex"]
            m.rebalance_timeout_ms, m.server_assignor = value["rebalanceTimeoutMs"], value["serverAssignor"]
            m.uses_classic_protocol = value["classicMemberMetadata"] is not None
            return
        member = group.members.get(member_id)
        if member is None:
            return
        if member.member_epoch != LEAVE_GROUP_MEMBER_EPOCH:
            raise GroupLoadException(f"Received a tombstone record to delete member {member_id} but did not "
                                     f"receive ConsumerGroupCurrentMemberAssignmentValue tombstone.")
        if member_id in group.target_assignment:
            raise GroupLoadException(f"Received a tombstone record to delete member {member_id} but did not "
                                     f"receive ConsumerGroupTargetAssignmentMetadataValue tombstone.")
        group.remove_member(member_id)

    def replay_target_assignment_member(self, group_id: str, member_id: str, value: dict | None) -> None:
        """``replay(ConsumerGroupTargetAssignmentMemberKey, ...)``: a member's target assignment set or
        removed."""
        group = self._consumer_group(group_id, value is not None)
        if group is None:
            return
        if value is None:
            group.target_assignment.pop(member_id, None)
        else:
            group.target_assignment[member_id] = _assignment(value["topicPartitions"])

    def replay_target_assignment_metadata(self, group_id: str, value: dict | None) -> None:
        """``replay(ConsumerGroupTargetAssignmentMetadataKey, ...)``: the target assignment's epoch, reset to -1
        by a tombstone once no member has a target."""
        group = self._consumer_group(group_id, value is not None)
        if group is None:
            return
        if value is not None:
            group.target_assignment_epoch = value["assignmentEpoch"]
            return
        if group.target_assignment:
            raise GroupLoadException(f"Received a tombstone record to delete target assignment of {group_id} but "
                                     f"the assignment still has {len(group.target_assignment)} members.")
        group.target_assignment_epoch = -1

    def replay_current_member_assignment(self, group_id: str, member_id: str, value: dict | None) -> None:
        """``replay(ConsumerGroupCurrentMemberAssignmentKey, ...)``: a member's epochs, state and partitions; a
        tombstone leaves the member at epoch -1 without partitions (its metadata's tombstone removes it)."""
        group = self._consumer_group(group_id, value is not None)
        if group is None:
            return
        if value is not None:
            m = group.put_member(member_id)
            m.member_epoch, m.previous_member_epoch = value["memberEpoch"], value["previousMemberEpoch"]
            m.state = value["state"]
            m.assigned_partitions = _assignment(value["assignedPartitions"])
            m.partitions_pending_revocation = _assignment(value["partitionsPendingRevocation"])
            return
        if member_id in group.members:  # the member replaced (updateMember): a put, its slots may grow
            m = group.put_member(member_id)
            m.member_epoch = m.previous_member_epoch = LEAVE_GROUP_MEMBER_EPOCH
            m.assigned_partitions, m.partitions_pending_revocation = {}, {}

    def replay_recorded_group(self, group_type: str, group_id: str, member_id: str | None, is_metadata: bool,
                              epoch: int | None) -> None:
        """A share or streams group record: its metadata record (``is_metadata``) sets the epoch or, as a tombstone
        (``epoch`` None), removes the group; a member metadata record adds or removes the member."""
        group = self.groups.get(group_id)
        if is_metadata and epoch is None:
            if isinstance(group, RecordedGroup):
                del self.groups[group_id]
            return
        if group is None or (isinstance(group, ClassicGroup) and group.is_simple_group()):
            group = self.groups[group_id] = RecordedGroup(group_id, group_type)
        if not isinstance(group, RecordedGroup) or group.type != group_type:
            raise GroupLoadException(f"Group {group_id} is not a {group_type} group")
        if is_metadata:
            group.group_epoch = epoch  # type: ignore[assignment]
        elif member_id is not None:
            if epoch is None:
                group.members.pop(member_id, None)
            else:
                group.members[member_id] = None
