"""Several log dirs read together (``cluster_view``): the most complete replica of a partition, coordinators'
broker ids, and the data records of a recovered partition's range."""

from __future__ import annotations

from pathlib import Path

import pytest

from segdex.indexcore.tools.cluster_view import ClusterView
from segdex.indexcore.tools.consumer_groups import describe_groups
from tests.support.group_log_dirs import restored_log_dir


def test_count_records_counts_part_of_a_batch(tmp_path: Path):
    view = ClusterView([str(restored_log_dir(tmp_path))])
    assert view.count_records("orders", 0, 3, 7) == 4
    assert view.count_records("orders", 1, 0, 5) == 4
    assert view.count_records("orders", 9, 0, 5) == 0  # no log dir holds it


def test_a_clusters_log_dirs_are_read_together_and_the_fullest_replica_wins(tmp_path: Path):
    """``__consumer_offsets`` on one broker's disk, the data partitions on another's, and a stale replica of
    ``orders-0`` (an older copy, 3 records) on a third: the same description as from the one dir."""
    import shutil

    from segdex.indexcore.tools.segment_writer import build_batch, write_partition

    whole = restored_log_dir(tmp_path / "whole")
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    shutil.move(str(whole / "__consumer_offsets-0"), a / "__consumer_offsets-0")
    (a / "meta.properties").write_text("node.id=7\n")
    write_partition(b, "orders", 0, [build_batch(0, [(0, b"k", b"v")] * 3)])
    view = ClusterView([str(a), str(whole), str(b)])
    groups = describe_groups(view.group_coordinators, view.topic_names, view.log_offsets)
    rows = {(r.group, r.topic, r.partition): (r.offset, r.log_end_offset) for g in groups for r in g.offsets}
    assert rows[("app", "orders", 0)] == (5, 10) and rows[("simple", "orders", 2)] == (2, 20)
    assert {g.coordinator for g in groups} == {7}


def test_the_most_complete_replica_is_the_furthest_then_the_log_dir_given_first():
    from segdex.indexcore.tools.cluster_view import most_complete_replica

    assert most_complete_replica([(5, 2, "c"), (9, 1, "b"), (7, 0, "a")]) == "b"
    assert most_complete_replica([(9, 2, "c"), (9, 0, "a"), (9, 1, "b")]) == "a"
    assert most_complete_replica([(3, 0, "only")]) == "only"
    with pytest.raises(ValueError):
        most_complete_replica([])
