"""Kafka's ``GroupCoordinatorShard``: one ``__consumer_offsets`` partition as the group coordinator loads it.

``CoordinatorLoaderImpl.load`` (``coordinator_loader``) reads the partition; ``GroupCoordinatorShard.replay``
sends each record by its type: offset commits (0, 1) to ``OffsetMetadataManager``, group records (2-8) to
``GroupMetadataManager`` (share and streams groups as far as their keys and epochs say);
``replayEndTransactionMarker`` sends a marker to ``OffsetMetadataManager``. Record types the shard does not
rebuild (the consumer group's regular expressions, unknown types) are skipped. A record Kafka's load fails on
(undecodable, or a tombstone out of Kafka's order) is listed in ``undecodable`` and the replay goes on, so that
one run names every such record.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from segdex.indexcore.coordinator import coordinator_loader
from segdex.indexcore.coordinator.coordinator_loader import LoadSummary
from segdex.indexcore.coordinator.group_metadata_manager import (
    SHARE,
    STREAMS,
    GroupLoadException,
    GroupMetadataManager,
)
from segdex.indexcore.coordinator.offset_metadata_manager import (
    OFFSET_COMMIT_TYPES,
    OffsetMetadataManager,
    offset_commit,
)
from segdex.indexcore.coordinator.records import GROUP_RECORD_TYPES, read_record_key, read_record_value
from segdex.indexcore.log.log_segments import segment_logs
from segdex.indexcore.protocol.message_format import (
    INT16,
    INT32,
    Field,
    Message,
    MessageFormatException,
    Struct,
    read_message,
)

GROUP_METADATA = 2
CONSUMER_GROUP_TYPES = (3, 4, 5, 6, 7, 8)
# share (10-15) and streams (17-23) group records: (group type, is the group's metadata record, is a member's
# metadata record, key holds a member id)
RECORDED_GROUP_TYPES = {
    10: (SHARE, False, True, True), 11: (SHARE, True, False, False), 12: (SHARE, False, False, False),
    13: (SHARE, False, False, True), 14: (SHARE, False, False, True), 15: (SHARE, False, False, False),
    17: (STREAMS, True, False, False), 19: (STREAMS, False, True, True), 20: (STREAMS, False, False, False),
    21: (STREAMS, False, False, True), 22: (STREAMS, False, False, True), 23: (STREAMS, False, False, False),
}
REPLAYED_TYPES = OFFSET_COMMIT_TYPES + (GROUP_METADATA,) + CONSUMER_GROUP_TYPES + tuple(RECORDED_GROUP_TYPES)


RECORDED_GROUP_KEY = Message("GroupIdKey", Struct((Field("groupId", "string"),)))
RECORDED_MEMBER_KEY = Message("GroupMemberKey", Struct((Field("groupId", "string"), Field("memberId", "string"))))


@dataclass
class GroupCoordinatorShard:
    """The shard's two managers; ``groups`` is the one ``offsets`` creates simple groups in."""

    offsets: OffsetMetadataManager = field(default_factory=OffsetMetadataManager)

    @property
    def groups(self) -> GroupMetadataManager:
        return self.offsets.group_metadata_manager

    def replay(self, record_offset: int, producer_id: int, record_type: int, key: Any, value: Any) -> None:
        """``GroupCoordinatorShard.replay``: one decoded record to the manager of its type."""
        if record_type in OFFSET_COMMIT_TYPES:
            self.offsets.replay(record_offset, producer_id, key, value)
            return
        groups = self.groups
        if record_type in RECORDED_GROUP_TYPES:
            group_type, is_metadata, is_member, _ = RECORDED_GROUP_TYPES[record_type]
            if is_metadata or is_member:
                groups.replay_recorded_group(group_type, key["groupId"], key.get("memberId"), is_metadata, value)
            return
        if record_type == GROUP_METADATA:
            groups.replay_group_metadata(record_offset, key["group"], value)
        elif record_type == 3:
            groups.replay_consumer_group_metadata(key["groupId"], value)
        elif record_type == 4:
            groups.replay_partition_metadata(key["groupId"], value)
        elif record_type == 5:
            groups.replay_member_metadata(key["groupId"], key["memberId"], value)
        elif record_type == 6:
            groups.replay_target_assignment_metadata(key["groupId"], value)
        elif record_type == 7:
            groups.replay_target_assignment_member(key["groupId"], key["memberId"], value)
        elif record_type == 8:
            groups.replay_current_member_assignment(key["groupId"], key["memberId"], value)

    def replay_end_transaction_marker(self, producer_id: int, commit: bool) -> None:
        """``GroupCoordinatorShard.replayEndTransactionMarker``."""
        self.offsets.replay_end_transaction_marker(producer_id, commit)


@dataclass
class GroupCoordinatorLoad(LoadSummary):
    """A ``__consumer_offsets`` partition loaded: the shard, and how the load went (``LoadSummary``)."""

    shard: GroupCoordinatorShard = field(default_factory=GroupCoordinatorShard)


def _decode(record_offset: int, record_type: int, key: bytes, value: bytes | None) -> tuple[int, Any, Any]:
    """A group coordinator record decoded: offset commits as ``OffsetAndMetadata``, group records as their
    key and value fields."""
    if record_type in OFFSET_COMMIT_TYPES:
        return record_type, *offset_commit(record_offset, record_type, key, value)
    if record_type in RECORDED_GROUP_TYPES:
        with_member = RECORDED_GROUP_TYPES[record_type][3]
        fields = read_message(RECORDED_MEMBER_KEY if with_member else RECORDED_GROUP_KEY, key[INT16.size:], 0)
        epoch = None
        if value is not None and not RECORDED_GROUP_TYPES[record_type][1]:
            epoch = 0  # a member's record: present (its value is not read)
        elif value is not None:  # a group's metadata: an int32 epoch first, at every version (fixed-size)
            if len(value) < INT16.size + INT32.size:
                raise MessageFormatException(f"record value too short for its epoch ({len(value)} bytes)")
            epoch = INT32.unpack_from(value, INT16.size)[0]
        return record_type, fields, epoch
    _, key_schema, value_schema = GROUP_RECORD_TYPES[record_type]
    return (record_type, read_record_key(key_schema, key),
            None if value is None else read_record_value(value_schema, value))


def group_coordinator_replay(logs: list[tuple[int, str]],
                             log_start_offset: int | None = None) -> coordinator_loader.PartitionReplay:
    """The group coordinator's load of a ``__consumer_offsets`` partition whose segments are ``logs``, from
    ``log_start_offset``, to be fed segment by segment (``PartitionReplay``); its ``summary`` is the
    ``GroupCoordinatorLoad``."""
    out = GroupCoordinatorLoad()

    def apply(record_offset: int, producer_id: int, decoded: tuple[int, Any, Any]) -> None:
        try:
            out.shard.replay(record_offset, producer_id, *decoded)
        except GroupLoadException as e:
            out.undecodable.append(f"offset {record_offset}: {e}")

    on_record = coordinator_loader.record_serde(REPLAYED_TYPES, _decode, apply, out)
    return coordinator_loader.PartitionReplay(logs, on_record, out.shard.replay_end_transaction_marker, out,
                                              log_start_offset)


def load_group_coordinator(partition_dir: str | os.PathLike,
                           log_start_offset: int | None = None) -> GroupCoordinatorLoad:
    """Replay a ``__consumer_offsets`` partition directory as the group coordinator loads it, from
    ``log_start_offset`` (its ``log-start-offset-checkpoint`` entry; None: none)."""
    replay = group_coordinator_replay(segment_logs(partition_dir)[0], log_start_offset)
    replay.finish()
    return replay.summary
