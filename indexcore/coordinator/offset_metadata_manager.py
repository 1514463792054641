"""The committed offsets a group coordinator holds after loading a ``__consumer_offsets`` partition, offline.

Kafka 4.x's group coordinator loads a partition by replaying every record of it in offset order
(``CoordinatorLoaderImpl.load`` into ``GroupCoordinatorShard.replay``). Offset commits (record types 0, the legacy
``OffsetCommit`` key, and 1) go to ``OffsetMetadataManager.replay``, end-transaction markers to
``OffsetMetadataManager.replayEndTransactionMarker``:

- a commit outside a transaction (the batch's producer id is -1) replaces the group's offset of that partition;
- a commit inside a transaction (``TxnOffsetCommit``: the batch carries the producer's id) waits, per producer, for
  that producer's marker: COMMIT applies each pending offset unless a later record (a higher record offset) already
  set that partition's offset, ABORT drops them;
- a tombstone (null value) removes the offset and every pending transactional offset of that partition;
- records of other types (the groups themselves) are not offsets; records of types the coordinator does not know
  are skipped, as its loader skips them;
- a record Kafka cannot deserialize (no key, a value too short for its schema) fails Kafka's load of the whole
  partition: its groups stay unavailable. segdex goes on and lists each such record in ``undecodable``, so that
  one run names every one of them.

Deleting a group or expiring its offsets writes tombstones, so the replay alone yields what the coordinator serves;
a corrupt tail ends the replay where Kafka's recovery would cut the log.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from segdex.indexcore.coordinator.group_metadata_manager import GroupMetadataManager
from segdex.indexcore.coordinator.records import GROUP_RECORD_TYPES, read_record_key, read_record_value
from segdex.indexcore.record.record_batch import NO_PRODUCER_ID

OFFSET_COMMIT_TYPES = (0, 1)  # LegacyOffsetCommit, OffsetCommit (CoordinatorRecordType)
NO_LEADER_EPOCH = -1
NO_EXPIRE_TIMESTAMP = -1

TopicPartitionKey = tuple[str, str, int]  # (group, topic, partition)


@dataclass(frozen=True)
class OffsetAndMetadata:
    """Kafka's ``OffsetAndMetadata.fromRecord``: a committed offset and where its record sits in the partition."""

    record_offset: int  # the commit record's offset in __consumer_offsets: the later record wins
    committed_offset: int
    leader_epoch: int  # -1: none (OffsetCommitValue below version 3)
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int  # -1: none (only OffsetCommitValue version 1 has one)


@dataclass
class OffsetMetadataManager:
    """``OffsetMetadataManager``'s state as replay leaves it: the offsets, and the transactional offsets still
    waiting for their producer's marker (per producer id)."""

    group_metadata_manager: GroupMetadataManager = field(default_factory=GroupMetadataManager)
    offsets: dict[TopicPartitionKey, OffsetAndMetadata] = field(default_factory=dict)
    pending_transactional_offsets: dict[int, dict[TopicPartitionKey, OffsetAndMetadata]] = field(default_factory=dict)
    open_transactions: dict[TopicPartitionKey, set[int]] = field(default_factory=dict)

    def replay(self, record_offset: int, producer_id: int, key: TopicPartitionKey,
               value: OffsetAndMetadata | None) -> None:
        """``OffsetMetadataManager.replay`` of one offset commit record (``value`` None: a tombstone). A commit
        by a group no record describes creates its simple group."""
        if value is not None:
            self.group_metadata_manager.get_or_maybe_create_classic_group(key[0])
            if producer_id == NO_PRODUCER_ID:
                self.offsets[key] = value
            else:
                self.pending_transactional_offsets.setdefault(producer_id, {})[key] = value
                self.open_transactions.setdefault(key, set()).add(producer_id)
            return
        self.offsets.pop(key, None)
        for open_producer in self.open_transactions.pop(key, set()):
            self.pending_transactional_offsets.get(open_producer, {}).pop(key, None)

    def replay_end_transaction_marker(self, producer_id: int, commit: bool) -> None:
        """``OffsetMetadataManager.replayEndTransactionMarker``: COMMIT materialises the producer's pending offsets
        (each unless the partition's current offset has a higher record offset), ABORT drops them."""
        pending = self.pending_transactional_offsets.pop(producer_id, None)
        if pending is None:
            return
        for key in pending:
            producers = self.open_transactions.get(key)
            if producers is not None:
                producers.discard(producer_id)
                if not producers:
                    del self.open_transactions[key]
        if not commit:
            return
        for key, offset in pending.items():
            existing = self.offsets.get(key)
            if existing is None or offset.record_offset > existing.record_offset:
                self.offsets[key] = offset


def offset_commit(record_offset: int, record_type: int, key: bytes,
                  value: bytes | None) -> tuple[TopicPartitionKey, OffsetAndMetadata | None]:
    """An offset commit record decoded (``CoordinatorRecordSerde``): its (group, topic, partition) and value."""
    _, key_schema, value_schema = GROUP_RECORD_TYPES[record_type]
    k = read_record_key(key_schema, key)
    where = (k["group"], k["topic"], k["partition"])
    if value is None:
        return where, None
    v = read_record_value(value_schema, value)
    return where, OffsetAndMetadata(record_offset, v["offset"], v.get("leaderEpoch", NO_LEADER_EPOCH), v["metadata"],
                                    v["commitTimestamp"], v.get("expireTimestamp", NO_EXPIRE_TIMESTAMP))
