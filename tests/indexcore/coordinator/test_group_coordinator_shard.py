"""``GroupCoordinatorShard.replay``'s dispatch: offset commits create simple groups that group records replace,
and share and streams group records go where their keys say."""

from __future__ import annotations

from pathlib import Path

from segdex.indexcore.coordinator.group_coordinator_shard import load_group_coordinator
from segdex.indexcore.coordinator.group_metadata_manager import EMPTY, STABLE, ClassicGroup, ConsumerGroup
from segdex.indexcore.tools.segment_writer import build_batch, write_partition
from tests.support.group_log_dirs import T, cg_epoch, cg_key
from tests.support.kafka_bytes import i16, i32, i64, s16


def _load(tmp_path: Path, records: list[tuple[bytes, bytes | None]]):
    write_partition(tmp_path, "__consumer_offsets", 3,
                    [build_batch(i, [(T, k, v)]) for i, (k, v) in enumerate(records)])
    return load_group_coordinator(tmp_path / "__consumer_offsets-3")


def test_offsets_without_a_group_make_a_simple_group_that_group_records_replace(tmp_path: Path):
    commit = i16(3) + i64(5) + i32(0) + s16("") + i64(T)
    load = _load(tmp_path, [
        (i16(1) + s16("simple") + s16("t") + i32(0), commit),
        (i16(1) + s16("later") + s16("t") + i32(0), commit),
        (cg_key(3, "later"), cg_epoch(3, 1)),
    ])
    simple, later = load.shard.groups.groups["simple"], load.shard.groups.groups["later"]
    assert isinstance(simple, ClassicGroup) and simple.is_simple_group() and simple.state == EMPTY
    assert isinstance(later, ConsumerGroup) and later.group_epoch == 1


def test_share_and_streams_groups_are_kept_as_far_as_their_keys_and_epochs_say(tmp_path: Path):
    """Share (10-15) and streams (17-23) group records: the metadata record's epoch (an int32 first in the value),
    members from their metadata records, the group gone with its metadata tombstone. Values are not decoded."""
    from segdex.indexcore.coordinator.group_metadata_manager import UNKNOWN, RecordedGroup

    load = _load(tmp_path, [
        (cg_key(11, "share-g"), i16(0) + i32(4) + b"\x00" * 9),
        (cg_key(10, "share-g", "s1"), i16(0) + b"\x01"),  # a short member value: not read
        (cg_key(13, "share-g", "s1"), i16(0) + b"\x00"),
        (cg_key(17, "streams-g"), i16(0) + i32(9) + b"\x00" * 9),
        (cg_key(19, "streams-g", "a"), i16(0) + b"\x00" * 20), (cg_key(19, "streams-g", "b"), i16(0) + b"\x00" * 20),
        (cg_key(19, "streams-g", "b"), None),
        (cg_key(11, "gone"), i16(0) + i32(1) + b"\x00"), (cg_key(11, "gone"), None),
        (cg_key(17, "short"), i16(0) + b"\x00"),  # a metadata value without its epoch: Kafka cannot read it
    ])
    groups = load.shard.groups.groups
    assert set(groups) == {"share-g", "streams-g"}
    share, streams = groups["share-g"], groups["streams-g"]
    assert isinstance(share, RecordedGroup) and (share.type, share.epoch, share.state, list(share.members)) == (
        "share", 4, STABLE, ["s1"])
    assert (streams.type, streams.epoch, streams.state, list(streams.members)) == ("streams", 9, UNKNOWN, ["a"])
    assert load.undecodable == ["offset 9: record value too short for its epoch (3 bytes)"]
