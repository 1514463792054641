"""segdex.pipelines.scan (one Spark task's work, no Spark): rows, statuses and bad input as rows."""

from __future__ import annotations

import os
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from segdex.indexcore.config.log_config import LogConfig
from segdex.pipelines.run_context import MODE_REINDEX, MODE_VERIFY, RunContext
from segdex.pipelines.sample_logdir import generate_sample
from segdex.pipelines.scan import PartitionTask, partition_size, scan_partition

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _task(path, future=False) -> PartitionTask:
    size, count = partition_size(str(path))
    name = os.path.basename(str(path))
    topic, _, part = name.split(".")[0].rpartition("-")
    return PartitionTask(str(path.parent), str(path), topic, int(part), future, LogConfig(), size, count)


def test_reindex_then_verify_rows(tmp_path):
    generate_sample(tmp_path, batches_per_partition=120, segment_bytes=16 * 1024,
                    topics={"payments": (1, "txn", 0)})
    part = tmp_path / "payments-0"
    before = scan_partition(_task(part), RunContext(MODE_VERIFY, "r1", NOW))
    assert set(before.found) == {"missing"} and before.attention and before.files_written == 0
    assert not list(part.glob("*.index"))
    out = scan_partition(_task(part), RunContext(MODE_REINDEX, "r2", NOW))
    assert out.files_written >= 2 * len(out.segments)
    assert {r.status for r in out.segments} == {"ok"} and not out.attention
    assert sum(r.txn_index_entries for r in out.segments) > 0
    # offsets chain: each segment's next offset is the next segment's base offset
    rows = out.segments
    assert all(a.next_offset == b.base_offset for a, b in zip(rows, rows[1:], strict=False))
    assert out.partition.log_end_offset == rows[-1].next_offset
    assert out.partition.segment_count == len(rows) > 1
    again = scan_partition(_task(part), RunContext(MODE_REINDEX, "r3", NOW))
    assert again.files_written == 0
    assert [replace(r, run_id="") for r in again.segments] == [replace(r, run_id="") for r in rows]


def test_bad_input_becomes_rows(tmp_path):
    part = tmp_path / "t-0"
    part.mkdir()
    (part / "00000000000000000000.log").mkdir()  # cannot be read as a file
    (part / "00000000000000000005.log").write_bytes(b"\x00" * 30)
    (part / "5.log").write_bytes(b"x")
    out = scan_partition(_task(part, future=True), RunContext(MODE_REINDEX, "r", NOW))
    statuses = {r.base_offset: r.status for r in out.segments}
    assert statuses == {0: "unreadable", 5: "corrupt_log_tail"}
    assert out.attention
    assert any("misnamed" in m and "5.log" in m for m in out.messages)
    assert all(r.future and "-future" in r.reason for r in out.segments)
    assert out.partition.status == "unreadable"
    assert not (part / "00000000000000000000.index").exists()


def test_verify_gives_a_compacted_partitions_cleaner_view(tmp_path):
    """Three segments of a compacted topic (the last active), the cleaner's checkpoint at the second: Kafka's next
    cleaning would start there and stop at the active segment, over the second segment's bytes of the first two's;
    the oldest dirty data is the second segment's first batch. A topic that only deletes gets no view."""
    from segdex.indexcore.tools.segment_writer import SegmentWriter, build_batch

    t = int(NOW.timestamp() * 1000) - 10_000
    with SegmentWriter(tmp_path, "compacted", 0) as w:
        for offset in range(3):
            w.append(build_batch(offset, [(t + offset, b"k", b"v" * 50)]))
        w.roll(3)
        for offset in range(3, 5):
            w.append(build_batch(offset, [(t + 1000 * offset, b"k", b"w" * 50)]))
        w.roll(5)
        w.append(build_batch(5, [(t + 9000, b"k", b"x")]))
    part = tmp_path / "compacted-0"
    sizes = [os.path.getsize(part / f"{b:020d}.log") for b in (0, 3, 5)]
    task = replace(_task(part), config=LogConfig(cleanup_policy="compact"), cleaner_checkpoint=3)
    row = scan_partition(task, RunContext(MODE_VERIFY, "r", NOW)).partition
    assert (row.cleaner_checkpoint, row.cleaner_first_dirty_offset, row.cleaner_first_uncleanable_offset) == (3, 3, 5)
    assert row.cleaner_dirty_ratio == sizes[1] / (sizes[0] + sizes[1])
    assert row.cleaner_would_clean is (sizes[1] / (sizes[0] + sizes[1]) > 0.5)
    assert row.cleaner_oldest_dirty_age_ms == int(NOW.timestamp() * 1000) - (t + 3000)
    fresh = scan_partition(replace(task, cleaner_checkpoint=None), RunContext(MODE_VERIFY, "r", NOW)).partition
    assert (fresh.cleaner_first_dirty_offset, fresh.cleaner_dirty_ratio, fresh.cleaner_would_clean) == (0, 1.0, True)
    past = scan_partition(replace(task, cleaner_checkpoint=99), RunContext(MODE_VERIFY, "r", NOW)).partition
    assert past.cleaner_first_dirty_offset == 0  # a checkpoint past the log end: Kafka starts over
    deleting = scan_partition(_task(part), RunContext(MODE_VERIFY, "r", NOW)).partition
    assert deleting.cleaner_first_dirty_offset is None and deleting.cleaner_would_clean is None


@pytest.mark.parametrize("name", ["marker above the high watermark", "marker below the high watermark",
                                  "open transaction, no snapshot", "unclean start, from segment 2"])
def test_verify_bounds_the_cleaner_view_by_the_transactions_kafkas_load_leaves(tmp_path, name: str):
    """The cleaner view's last stable offset comes from the producer state the broker's load leaves: a clean start
    that replays from an older snapshot keeps the transaction that replay completes while its marker is at or
    above the high watermark, one without any snapshot holds none open. The partitions of
    ``test_log_cleaner_recorded``'s clean starts, against Kafka 4.4's views there (recorded)."""
    from tests.indexcore.log.test_log_cleaner_recorded import HW_CASES, HW_RECORDED, _clean_start
    from tests.support.cleaner_cases import recorded

    ours, leo, hw, kafka, _ = _clean_start(recorded(name, HW_RECORDED), name, tmp_path)
    unclean = HW_CASES[name][4:]
    task = replace(_task(ours), config=LogConfig(cleanup_policy="compact"), clean_shutdown=not unclean,
                   recovery_point=unclean[0] if unclean else leo, high_watermark=hw)
    row = scan_partition(task, RunContext(MODE_VERIFY, "r", NOW)).partition
    assert (row.cleaner_first_dirty_offset, row.cleaner_first_uncleanable_offset) == (
        kafka["firstDirtyOffset"], kafka["firstUncleanableOffset"])


def test_verify_previews_a_start_with_the_topics_index_interval(tmp_path):
    """A segment whose offsets go back (5 then 3) recovered from recovery point 1 under the topic's
    ``index.interval.bytes`` of 1 MiB: no index entry is appended, nothing throws, and Kafka 4.4's start keeps the
    log to its end (recorded: ``test_log_cleaner_recorded``'s gap starts); under the default 4,096 the rebuilt
    index would refuse 3 after 5 and the start cut the segment. The preview reads the topic's config."""
    from tests.indexcore.log.test_log_cleaner_recorded import GAP_CASES, GAPS_RECORDED, _gap_start
    from tests.support.cleaner_cases import recorded

    name = "recovery point 1, a snapshot at 1 the log does not hold, offsets going back"
    ours, leo, kafka = _gap_start(recorded(name, GAPS_RECORDED), name, tmp_path)
    config = LogConfig(cleanup_policy="compact").with_overrides(GAP_CASES[name][3])
    task = replace(_task(ours), config=config, recovery_point=1)
    row = scan_partition(task, RunContext(MODE_VERIFY, "r", NOW)).partition
    assert (row.startup_action, row.startup_log_end_offset) == ("recover", kafka["logEndOffset"]) and leo == 8
    assert row.cleaner_first_uncleanable_offset == kafka["firstUncleanableOffset"]


def _coordinator_partition(root, name: str) -> list:
    """``<name>`` with the same bytes whatever its topic: a group, commits of two groups, a transactional commit
    whose marker lies two segments later, a segment a batch."""
    from segdex.indexcore.tools.segment_writer import build_batch, write_partition
    from tests.support.group_log_dirs import T, commit, group_value
    from tests.support.kafka_bytes import i16, s16

    txn = {"producer_id": 9, "producer_epoch": 0}
    topic, _, part = name.rpartition("-")
    return write_partition(root, topic, int(part), [
        build_batch(0, [(T, i16(2) + s16("app"), group_value([("m-a", {"orders": [0, 1]})]))]),
        build_batch(1, [commit("app", "orders", 0, 5), commit("app", "orders", 1, 40)]),
        build_batch(3, [commit("tx", "orders", 0, 7)], base_sequence=0, is_transactional=True, **txn),
        build_batch(4, [commit("simple", "orders", 2, 2)]),
        build_batch(5, [], control=("COMMIT", 0), control_timestamp=T, **txn),
        build_batch(6, [commit("app", "orders", 0, 6)]),
    ], segment_bytes=1)  # a segment a batch


def test_a_coordinator_partitions_scan_and_load_read_each_log_once(tmp_path):
    """The coordinator's load replays what the scan maps: the ``.log`` files of a ``__consumer_offsets`` partition
    are opened as often as those of the same bytes in an ordinary topic (the kernel's count, inotify), in every
    command, and the load is the one a load of its own over the files gives."""
    from segdex.indexcore.coordinator.group_coordinator_shard import load_group_coordinator
    from segdex.pipelines.run_context import MODE_RECOVER
    from tests.support.file_opens import opens_in

    for mode in (MODE_VERIFY, MODE_REINDEX, MODE_RECOVER):
        root = tmp_path / mode
        logs = _coordinator_partition(root, "__consumer_offsets-0")
        assert len(logs) == 6
        _coordinator_partition(root, "plain-0")
        with opens_in(root / "__consumer_offsets-0") as coordinator:
            out = scan_partition(_task(root / "__consumer_offsets-0"), RunContext(mode, "r", NOW))
        with opens_in(root / "plain-0") as plain:
            scan_partition(_task(root / "plain-0"), RunContext(mode, "r", NOW))
        assert {n: c for n, c in coordinator.items() if n.endswith(".log")} == \
            {n: c for n, c in plain.items() if n.endswith(".log")}, mode
        assert all(coordinator[os.path.basename(p)] >= 1 for p in logs)
        load = out.coordination.load
        assert load == load_group_coordinator(root / "__consumer_offsets-0") and not load.partial
        assert load.next_offset == 7 and ("tx", "orders", 0) in load.shard.offsets.offsets


def test_recover_truncate_loads_the_coordinator_partition_as_it_leaves_it(tmp_path):
    """recover --truncate cuts a corrupt tail under the load the scan was feeding: the load reads the partition
    again as the run leaves it (whole, not partial), not the bytes the scan saw before the cut."""
    from segdex.indexcore.coordinator.group_coordinator_shard import load_group_coordinator
    from segdex.pipelines.run_context import MODE_RECOVER

    logs = _coordinator_partition(tmp_path, "__consumer_offsets-0")
    data = bytearray(logs[1].read_bytes())
    data[-2] ^= 0x01  # the second segment's last batch no longer matches its CRC
    logs[1].write_bytes(bytes(data))
    part = tmp_path / "__consumer_offsets-0"
    assert load_group_coordinator(part).partial
    task = replace(_task(part), quarantine=str(tmp_path / "quarantine"), run_id="r")
    out = scan_partition(task, RunContext(MODE_RECOVER, "r", NOW))
    assert any(n.startswith("truncated: ") for n in out.notes)
    load = out.coordination.load
    assert not load.partial and load == load_group_coordinator(part)
