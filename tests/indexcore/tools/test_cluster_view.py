"""Several log dirs read together (``cluster_view``): the most complete replica of a partition (a log dir given
twice or through a link, a replica that cannot be recovered), coordinators' broker ids, the data records of a
recovered partition's range, the log dir's checkpoints (readable or not), and what Kafka loads after the next start
from a coordinator partition loaded in part (clean-shutdown marker, recovery point, log start)."""

from __future__ import annotations

from pathlib import Path

import pytest

from segdex.indexcore.coordinator.coordinator_loader import DIFFERS, SAME
from segdex.indexcore.tools.cluster_view import ClusterView
from segdex.indexcore.tools.consumer_groups import describe_groups
from segdex.indexcore.tools.segment_writer import build_batch, write_partition
from tests.support.group_log_dirs import commit, restored_log_dir


def test_count_records_counts_part_of_a_batch(tmp_path: Path):
    view = ClusterView([str(restored_log_dir(tmp_path))])
    assert view.count_records("orders", 0, 3, 7) == 4
    assert view.count_records("orders", 1, 0, 5) == 4
    assert view.count_records("orders", 9, 0, 5) == 0  # no log dir holds it


def test_a_clusters_log_dirs_are_read_together_and_the_fullest_replica_wins(tmp_path: Path):
    """``__consumer_offsets`` on one broker's disk, the data partitions on another's, and a stale replica of
    ``orders-0`` (an older copy, 3 records) on a third: the same description as from the one dir."""
    import shutil

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


# -- a log dir's checkpoints, a replica that cannot be recovered, the metadata log ---------------------------------


def test_an_unreadable_log_start_checkpoint_is_a_problem_and_log_starts_fall_back_to_first_segments(tmp_path: Path):
    """A ``log-start-offset-checkpoint`` that does not parse (its count says 2 entries, it holds 1): the view says
    so once, naming the log dir, and every partition of that log dir starts at its first segment, as
    ``LogManager.loadLogs`` resets the log starts when it cannot read the file (the entry for ``orders-0`` it
    holds is not used)."""
    log_dir = restored_log_dir(tmp_path)
    (log_dir / "log-start-offset-checkpoint").write_text("0\n2\norders 0 4\n")
    view = ClusterView([str(log_dir)])
    assert len(view.problems) == 1
    assert view.problems[0].startswith(f"{log_dir}: log-start-offset-checkpoint unreadable (")
    assert view.problems[0].endswith("); using first segments")
    assert view.log_offsets("orders", 0) == (0, 10)
    assert view.log_offsets("orders", 2) == (10, 20)


@pytest.mark.parametrize("unreadable", ["a directory", "not UTF-8"])
def test_a_log_start_checkpoint_that_cannot_be_read_at_all_is_a_problem_not_a_crash(tmp_path: Path, unreadable: str):
    """A ``log-start-offset-checkpoint`` that is a directory, or whose bytes are not UTF-8: Kafka's read throws
    (``IOException``) and ``LogManager.loadLogs`` resets the log starts; the view says so and goes on."""
    log_dir = restored_log_dir(tmp_path)
    if unreadable == "a directory":
        (log_dir / "log-start-offset-checkpoint").unlink(missing_ok=True)
        (log_dir / "log-start-offset-checkpoint").mkdir()
    else:
        (log_dir / "log-start-offset-checkpoint").write_bytes(b"0\n1\norders 0 \xff\n")
    view = ClusterView([str(log_dir)])
    assert [p.split(" (")[0] for p in view.problems] == [f"{log_dir}: log-start-offset-checkpoint unreadable"]
    assert view.log_offsets("orders", 0) == (0, 10)


def test_a_partitions_log_start_is_its_checkpoint_entry_past_its_first_segment(tmp_path: Path):
    """``orders-0``'s first segment starts at 0 but its ``log-start-offset-checkpoint`` entry is 4 (records
    deleted below it): the recovered log starts at 4 (``LogLoader.load``: the greater of the two), and only the
    records from 4 are counted from the start."""
    log_dir = restored_log_dir(tmp_path)
    (log_dir / "log-start-offset-checkpoint").write_text("0\n2\norders 0 4\norders 2 10\n")
    view = ClusterView([str(log_dir)])
    assert view.log_offsets("orders", 0) == (4, 10)
    assert view.log_offsets("orders", 1) == (0, 5)  # no entry: its first segment
    assert view.problems == []


def test_no_log_offsets_for_a_partition_no_log_dir_holds(tmp_path: Path):
    """A partition in none of the log dirs has no offsets (not a failure: nothing to report)."""
    view = ClusterView([str(restored_log_dir(tmp_path))])
    assert view.log_offsets("orders", 9) is None
    assert view.log_offsets("payments", 0) is None
    assert view.problems == []


def test_a_replica_that_cannot_be_recovered_is_a_problem_and_the_next_replica_answers(tmp_path: Path):
    """Under the view's config (``segment.index.bytes`` 64, ``index.interval.bytes`` 0: 8 offset index entries)
    broker ``a``'s copy of ``orders-0`` (20 one-record batches) cannot be recovered: its offset index fills, which
    Kafka's ``LogSegment.recover`` does not survive either. Broker ``b``'s shorter copy (5 records) still answers,
    though it is given after; the failure is a problem naming ``a``'s partition dir. With ``a`` alone, there is no
    answer."""
    from segdex.indexcore.config.log_config import LogConfig
    from tests.support.log_segments import full_offset_index_segment, one

    a, b = tmp_path / "a", tmp_path / "b"
    write_partition(a, "orders", 0, [full_offset_index_segment()])
    write_partition(b, "orders", 0, [one(i) for i in range(5)])
    config = LogConfig(index_interval_bytes=0, segment_index_bytes=64)
    view = ClusterView([str(a), str(b)], config)
    assert view.log_offsets("orders", 0) == (0, 5)
    assert len(view.problems) == 1
    assert view.problems[0].startswith(f"{a / 'orders-0'}: 00000000000000000000.log: IndexFullException")
    alone = ClusterView([str(a)], config)
    assert alone.log_offsets("orders", 0) is None and alone.count_records("orders", 0, 0, 20) == 0
    assert len(alone.problems) == 1
    assert ClusterView([str(a), str(b)]).log_offsets("orders", 0) == (0, 20)  # the default config recovers it


def test_the_metadata_log_is_not_a_topic_partition(tmp_path: Path):
    """``__cluster_metadata-0`` sits in a KRaft broker's log dir but no client lists it."""
    log_dir = restored_log_dir(tmp_path)
    write_partition(log_dir, "__cluster_metadata", 0, [build_batch(0, [(0, b"k", b"v")])])
    assert ClusterView([str(log_dir)]).topic_partitions() == [
        ("__consumer_offsets", 0), ("orders", 0), ("orders", 1), ("orders", 2)]


def test_a_log_dir_given_twice_or_through_a_link_reads_the_spelling_given_first(tmp_path: Path):
    """Three spellings of broker ``a``'s disk (a link to it, it, the link again) around broker ``b``'s, each
    replica of ``__consumer_offsets-0`` loaded to the same offset: the view reads the log dir given first, under
    the name it was given, and its broker id."""
    dirs = {}
    for node in (1, 2):
        log_dir = tmp_path / f"broker-{node}"
        write_partition(log_dir, "__consumer_offsets", 0, [build_batch(0, [commit("app", "orders", 0, node)])])
        (log_dir / "meta.properties").write_text(f"version=1\nnode.id={node}\ncluster.id=c\n")
        dirs[node] = str(log_dir)
    link = tmp_path / "link"
    link.symlink_to(dirs[1], target_is_directory=True)
    for given in ([str(link), dirs[2], dirs[1], str(link)], [dirs[2], str(link), dirs[1]]):
        coordinator = ClusterView(given).group_coordinators[0]
        assert (coordinator.log_dir, coordinator.node_id) == (given[0], 1 if given[0] == str(link) else 2)


# -- a __consumer_offsets partition loaded in part: Kafka's load after the broker's next start ---------------------

CLEAN_MARKER = ".kafka_cleanshutdown"
RECOVERY_POINTS = "recovery-point-offset-checkpoint"
LOG_STARTS = "log-start-offset-checkpoint"


def partial_offsets_partition(log_dir: Path) -> None:
    """``__consumer_offsets-0`` in two segments, a commit of group ``app`` per offset: segment 0 holds offsets
    0-3, offset 2's batch failing its CRC (one byte of its last record flipped); segment 4 holds offset 4. Both
    segments have their (empty) offset index, as a broker leaves segments this small, so a start recovers
    them only where its recovery pass reaches."""
    batches = [build_batch(i, [commit("app", "orders", 0, 100 + i)]) for i in range(4)]
    damaged = bytearray(batches[2])
    damaged[-1] ^= 0x01
    batches[2] = bytes(damaged)
    first = b"".join(batches)
    logs = write_partition(log_dir, "__consumer_offsets", 0,
                           [(first, 0), (build_batch(4, [commit("app", "orders", 0, 104)]), 4)],
                           segment_bytes=len(first))
    assert [p.name for p in logs] == ["00000000000000000000.log", "00000000000000000004.log"]
    for log in logs:
        log.with_suffix(".index").touch()


@pytest.mark.parametrize("files, answer, log_end, why", [
    # no marker, no checkpoint: recovery from offset 0 truncates segment 0 at offset 2, deletes segment 4
    ({}, SAME, 2, "truncates it at offset 2"),
    # a clean stop: nothing re-read, the damaged batch served as it is, segment 4 kept
    ({CLEAN_MARKER: '{"version":0,"brokerEpoch":1}'}, DIFFERS, 5, "the log dir's clean-shutdown marker"),
    # recovery starts at segment 4 (the floor segment of the recovery point): segment 0 is not re-read
    ({RECOVERY_POINTS: "0\n1\n__consumer_offsets 0 4\n"}, DIFFERS, 5, "the recovery point 4 is past"),
    # another partition's entry only: recovery from offset 0
    ({RECOVERY_POINTS: "0\n1\n__consumer_offsets 1 4\n"}, SAME, 2, "truncates it at offset 2"),
    # truncated at 2, below the log start 3: LogLoader deletes every segment and starts an empty one at 3
    ({LOG_STARTS: "0\n1\n__consumer_offsets 0 3\n"}, DIFFERS, 3, "deletes every segment and starts an empty log"),
    # truncated at 2, the log start 2: the log ends where it starts, nothing deleted below it
    ({LOG_STARTS: "0\n1\n__consumer_offsets 0 2\n"}, SAME, 2, "truncates it at offset 2"),
], ids=["unclean", "clean-marker", "recovery-point", "other-partitions-recovery-point", "log-start-past-the-cut",
        "log-start-at-the-cut"])
def test_a_partial_coordinator_partition_says_what_kafka_loads_after_the_next_start(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str], answer: str, log_end: int,
        why: str):
    """The view loads ``__consumer_offsets-0`` up to offset 2 (the damaged batch) and says what Kafka's own
    coordinator loads after the broker's next start, from what the log dir holds beside the partition: its
    clean-shutdown marker, its recovery point and its log start (``LogLoader.recoverLog``, then
    ``deleteSegmentsIfLogStartGreaterThanLogEnd``). The working directory is an empty one, so that only the log
    dir's own files can answer."""
    log_dir = tmp_path / "logs"
    partial_offsets_partition(log_dir)
    for name, text in files.items():
        (log_dir / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    view = ClusterView([str(log_dir)])
    [coordinator] = view.group_coordinators
    load = coordinator.load
    assert (load.partial, load.next_offset, load.stopped_segment) == (True, 2, 0)
    committed = [(c.record_offset, c.committed_offset) for c in load.shard.offsets.offsets.values()]
    # offset 1's commit is the last one read; below a log start of 2 or 3 none is replayed (CoordinatorLoaderImpl
    # reads from log.logStartOffset)
    assert committed == ([] if LOG_STARTS in files else [(1, 101)])
    assert load.after_start is not None
    assert (load.after_start.answer, load.after_start.log_end_offset) == (answer, log_end)
    assert why in load.after_start.note
    [line] = view.partial_lines("__consumer_offsets")
    assert line.startswith("PARTIAL: __consumer_offsets-0 loaded up to offset 2 only")
    assert line.endswith(f"Kafka: {load.after_start.note}")


def test_an_unreadable_recovery_point_checkpoint_reads_as_no_recovery_point(tmp_path: Path):
    """A ``recovery-point-offset-checkpoint`` that does not parse (2 entries announced, 1 held) is not used, not
    even the entry it holds for ``__consumer_offsets-0`` (4): ``LogManager.loadLogs`` resets every recovery point
    of the log dir to 0, so the start's recovery pass re-reads segment 0 and truncates it at offset 2, deleting
    segment 4."""
    log_dir = tmp_path / "logs"
    partial_offsets_partition(log_dir)
    (log_dir / RECOVERY_POINTS).write_text("0\n2\n__consumer_offsets 0 4\n")
    [coordinator] = ClusterView([str(log_dir)]).group_coordinators
    assert coordinator.load.after_start is not None
    assert coordinator.load.after_start.log_end_offset == 2
