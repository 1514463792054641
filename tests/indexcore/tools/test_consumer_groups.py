"""``kafka-consumer-groups --describe`` offline and the restore check, on a log dir written here
(``tests.support.group_log_dirs``): rows in Kafka's order and columns, and each out-of-range commit with the
records a consumer re-reads or skips."""

from __future__ import annotations

from pathlib import Path

from segdex.indexcore.tools.cluster_view import ClusterView
from segdex.indexcore.tools.consumer_groups import (
    AHEAD_OF_END,
    BEFORE_START,
    DEAD,
    OK,
    describe_groups,
    format_offsets,
    restore_check,
)
from tests.support.group_log_dirs import restored_log_dir


def _describe(tmp_path: Path, group_ids=None):
    view = ClusterView([str(restored_log_dir(tmp_path))])
    return view, describe_groups(view.group_coordinators, view.topic_names, view.log_offsets, group_ids)


def test_describe_prints_kafkas_rows_members_first_then_unassigned(tmp_path: Path):
    _view, groups = _describe(tmp_path)
    assert [(g.group, g.type, g.state, g.coordinator, len(g.members)) for g in groups] == [
        ("app", "classic", "Stable", 3, 2), ("simple", "classic", "Empty", 3, 0)]
    out, err = format_offsets(groups)
    assert out == (
        "\nGROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID     "
        "HOST            CLIENT-ID"
        "\napp             orders          0          5               10              5               m-a             "
        "/127.0.0.1      client-m-a"
        "\napp             orders          1          40              5               -35             m-a             "
        "/127.0.0.1      client-m-a\n"
        "\nGROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID     "
        "HOST            CLIENT-ID"
        "\nsimple          orders          2          2               20              18              -               "
        "-               -\n")
    assert err == "\nConsumer group 'simple' has no active members.\n"


def test_a_group_asked_for_that_no_coordinator_holds_does_not_exist(tmp_path: Path):
    _view, groups = _describe(tmp_path, ["nope"])
    assert [(g.group, g.state, g.offsets) for g in groups] == [("nope", DEAD, ())]
    assert format_offsets(groups) == ("", "\nError: Consumer group 'nope' does not exist.\n")


def test_restore_check_counts_records_a_reset_rereads_or_skips(tmp_path: Path):
    view, groups = _describe(tmp_path)
    checks = {(c.group, c.partition): c for c in restore_check(groups, view.count_records)}
    assert checks[("app", 0)].status == OK
    ahead = checks[("app", 1)]  # 4 records and a COMMIT marker: earliest re-reads the 4 records
    assert (ahead.status, ahead.log_start_offset, ahead.log_end_offset, ahead.reread_if_earliest,
            ahead.skipped_if_latest) == (AHEAD_OF_END, 0, 5, 4, 0)
    before = checks[("simple", 2)]
    assert (before.status, before.lost_offsets, before.skipped_if_latest, before.reread_if_earliest) == (
        BEFORE_START, 8, 10, 0)
    assert "past the log end offset 5: auto.offset.reset=earliest re-reads 4 records" in ahead.describe()
    assert "before the log start offset 10 (8 offsets gone): auto.offset.reset=latest skips 10 records" in \
        before.describe()



def test_share_groups_are_not_consumer_groups_but_are_recorded(tmp_path: Path):
    from segdex.indexcore.tools.consumer_groups import ALL_GROUP_TYPES
    from segdex.indexcore.tools.segment_writer import build_batch, write_partition
    from tests.support.kafka_bytes import i16, i32, s16

    log_dir = restored_log_dir(tmp_path)
    write_partition(log_dir, "__consumer_offsets", 1, [build_batch(0, [(0, i16(11) + s16("sg"), i16(0) + i32(2))])])
    view = ClusterView([str(log_dir)])
    listed = describe_groups(view.group_coordinators, view.topic_names, view.log_offsets)
    everything = describe_groups(view.group_coordinators, view.topic_names, view.log_offsets, types=ALL_GROUP_TYPES)
    assert "sg" not in {g.group for g in listed}
    assert [(g.type, g.state, g.epoch, g.coordinator_partition) for g in everything if g.group == "sg"] == [
        ("share", "Empty", 2, 1)]



def test_descriptions_field_by_field(tmp_path: Path):
    """Every field of what ``describe_groups`` answers: a classic group's members as its ``GroupMetadataValue``
    holds them (``tests.support.group_log_dirs``: client id ``client-<member>``, host ``/127.0.0.1``, no instance
    id; the assignment as (topic, partition), sorted, topic ids named); a group no coordinator holds, ``Dead`` and
    empty, and, where a ``__consumer_offsets`` partition is in no log dir given, partial with why."""
    from segdex.indexcore.tools.consumer_groups import GroupDescription, MemberDescription

    view, groups = _describe(tmp_path, ["app", "nope"])
    app, nope = groups
    assert app.members == (MemberDescription("m-a", None, "client-m-a", "/127.0.0.1", (("orders", 0), ("orders", 1))),
                           MemberDescription("m-b", None, "client-m-b", "/127.0.0.1", ()))
    assert nope == GroupDescription("nope", "unknown", "", DEAD, "", -1, None, -1, (), ())
    (missing,) = describe_groups(view.group_coordinators, view.topic_names, view.log_offsets, ["nope"], missing=[7])
    assert missing == GroupDescription(
        "nope", "unknown", "", DEAD, "", -1, None, -1, (), (), True, None, None,
        "not in the coordinator partitions loaded, but __consumer_offsets-7 in none of the log dirs given: not known")
