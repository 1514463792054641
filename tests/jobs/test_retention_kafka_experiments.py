"""Retention offline: Kafka's deleteOldSegments experiments reproduced by --apply, plan mode touches nothing,
crash at every step leaves a loadable dir that a re-run finishes, bad input is a message and an exit code."""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

import pytest

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.log.checkpoints import read_leader_epoch_checkpoint
from segdex.indexcore.retention import log_dirs as ret
from segdex.indexcore.retention import policy
from segdex.jobs.cli import main
from tests.support import cli
from tests.support.fixtures import FIXTURES, REPO_ROOT, broker_lock, load_case, log_start_offset
from tests.support.retention_cases import CASE, TOPIC, assert_broker_loadable, check_kafka_state, exp_args, stage

REPO = REPO_ROOT


def experiments() -> list:
    if not (FIXTURES / CASE).is_dir():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"Kafka fixtures not found at {FIXTURES}"))]
    exps = load_case(CASE)["retention"]["experiments"]
    return [pytest.param(e, id=f"{e['experiment']}-{i}") for i, e in enumerate(exps)]


def snapshot(root: Path) -> dict[str, tuple[str, int]]:
    out = {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            p = Path(dirpath) / name
            out[str(p.relative_to(root))] = (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
    return out


segdex = functools.partial(cli.segdex, no_traceback=True)


@pytest.mark.parametrize("exp", experiments())
def test_apply_reproduces_kafka_experiment(tmp_path, exp, capsys):
    log_dir = stage(tmp_path, exp.get("new_log_start_offset", 0), exp["high_watermark"])
    rc = main(["retention", *exp_args(exp), "--no-record", "--apply", str(log_dir)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert f"{exp['deleteOldSegments_return']} segments" in out  # deleteOldSegments' return value
    check_kafka_state(log_dir, exp)
    # a second run finds nothing more to do and changes nothing
    before = snapshot(log_dir)
    assert main(["retention", *exp_args(exp), "--no-record", "--apply", str(log_dir)]) == 0
    assert snapshot(log_dir) == before


@pytest.mark.parametrize("exp", experiments())
def test_plan_changes_no_byte(tmp_path, exp, capsys):
    log_dir = stage(tmp_path, exp.get("new_log_start_offset", 0), exp["high_watermark"])
    before = snapshot(tmp_path)
    assert main(["retention", *exp_args(exp), "--no-record", str(log_dir)]) == 0
    out = capsys.readouterr().out
    assert snapshot(tmp_path) == before
    assert not (log_dir / ".lock").exists()
    deleted = [line.split()[2] for line in out.splitlines() if " delete 0" in line]
    gone = sorted({n[:20] for n in exp["files_in_dir_after_before_async_delete"] if n.endswith(".log.deleted")})
    assert deleted == gone


def test_plan_pure_function_matches_segments_before():
    """plan_retention from the case's segments_before facts alone (no files): same deletions as Kafka."""
    if not (FIXTURES / CASE).is_dir():
        pytest.skip(f"Kafka fixtures not found at {FIXTURES}")
    r = load_case(CASE)["retention"]
    segs = [policy.SegmentFacts(s["baseOffset"], s["sizeInBytes"], s["largestTimestamp"]) for s in r["segments_before"]]
    for e in r["experiments"]:
        tc = e["topic_config"]
        facts = policy.PartitionFacts(TOPIC, 0, segs, r["logEndOffset"], e.get("new_log_start_offset", 0),
                                   e["high_watermark"], [(0, 0), (1, 381), (2, 761), (3, 1146)])
        plan = policy.plan_retention(facts, LogConfig(retention_ms=tc["retention.ms"],
                                                   retention_bytes=tc["retention.bytes"]), e["now_ms"])
        assert plan.deleted_count == e["deleteOldSegments_return"]
        assert plan.remaining_base_offsets == e["remaining_segment_base_offsets"]
        assert plan.log_start_offset_after == e["logStartOffset_after"]
        assert [list(x) for x in plan.leader_epochs_after] == e["leader_epoch_entries_after"]


def seg(base: int, size: int = 100, ts: int = 1000) -> policy.SegmentFacts:
    return policy.SegmentFacts(base, size, ts)


def test_rules_high_watermark_empty_last_and_policy():
    facts = policy.PartitionFacts("t", 0, [seg(0), seg(10), seg(20), seg(30, 0)], 30, 0, 20)
    plan = policy.plan_retention(facts, LogConfig(retention_ms=0), now_ms=5000)
    assert [d.base_offset for d in plan.deletions] == [0, 10]  # 20's upper bound 30 > hw 20
    assert any("above the high watermark 20" in n for n in plan.notes)
    facts.high_watermark = 30
    plan = policy.plan_retention(facts, LogConfig(retention_ms=0), now_ms=5000)
    assert [d.base_offset for d in plan.deletions] == [0, 10, 20]  # the empty last segment stays
    assert plan.roll_offset is None and plan.log_start_offset_after == 30
    plan = policy.plan_retention(facts, LogConfig(retention_ms=0, cleanup_policy="compact"), now_ms=5000)
    assert plan.deletions == []
    # time pass is strict: age == retention.ms keeps the segment
    plan = policy.plan_retention(policy.PartitionFacts("t", 0, [seg(0, ts=1000), seg(10)], 20, 0, 20),
                              LogConfig(retention_ms=4000), now_ms=5000)
    assert plan.deletions == []
    # -1 disables both passes; retention.bytes == size deletes nothing (diff 0 < first size)
    plan = policy.plan_retention(policy.PartitionFacts("t", 0, [seg(0), seg(10)], 20, 0, 20),
                              LogConfig(retention_ms=-1, retention_bytes=200), now_ms=5000)
    assert plan.deletions == []


def test_no_high_watermark_means_nothing_deletable(tmp_path):
    log_dir = stage(tmp_path, high_watermark=None)
    before = snapshot(tmp_path)
    proc = segdex("retention", "--now", "1800000000000", "--config", "retention.ms=1", "--no-record", "--apply",
                  str(log_dir))
    assert proc.returncode == 1
    assert "nothing deletable: no high watermark known" in proc.stdout
    assert {k: v for k, v in snapshot(tmp_path).items() if k != "logdir/.lock"} == before


def test_future_timestamps_are_reported(tmp_path, capsys):
    log_dir = stage(tmp_path)
    rc = main(["retention", "--now", "1700000090000", "--config", "retention.ms=1000", "--no-record", str(log_dir)])
    out = capsys.readouterr().out
    assert rc == 1
    blocked = [line.split()[2].rstrip(":") for line in out.splitlines() if " blocked " in line]
    assert blocked == ["00000000000000000410", "00000000000000000615", "00000000000000000828",
                       "00000000000000001034", "00000000000000001240", "00000000000000001455"]
    assert "can never delete this segment" in out
    deleted = [line.split()[2] for line in out.splitlines() if " delete 0" in line]
    assert deleted == ["00000000000000000000"]  # 208's largest timestamp 1700000089916 is only 84 ms old


def test_deleting_every_segment_rolls_first(tmp_path, capsys):
    log_dir = stage(tmp_path)
    rc = main(["retention", "--now", "1800000000000", "--config", "retention.ms=1", "--no-record", "--apply",
               str(log_dir)])
    assert rc == 0
    part = log_dir / f"{TOPIC}-0"
    live = sorted(n for n in os.listdir(part) if not n.endswith(".deleted"))
    assert live == ["00000000000000001537.index", "00000000000000001537.log", "00000000000000001537.snapshot",
                    "00000000000000001537.timeindex", "leader-epoch-checkpoint"]
    assert all((part / n).stat().st_size == 0 for n in live if n.startswith("00000000000000001537.") and
               not n.endswith(".snapshot"))
    assert log_start_offset(log_dir, TOPIC) == 1537
    assert read_leader_epoch_checkpoint(part / "leader-epoch-checkpoint") == [(3, 1537)]
    assert "roll" in capsys.readouterr().out


class Crash(BaseException):
    """The process dies here."""


@pytest.mark.parametrize("exp_index", [1, 4])
def test_crash_at_every_step_then_rerun_finishes(tmp_path, monkeypatch, exp_index):
    if not (FIXTURES / CASE).is_dir():
        pytest.skip(f"Kafka fixtures not found at {FIXTURES}")
    e = load_case(CASE)["retention"]["experiments"][exp_index]
    tc = e["topic_config"]
    config = LogConfig(retention_ms=tc["retention.ms"], retention_bytes=tc["retention.bytes"])
    real_replace = os.replace
    crash_point = 0
    while True:
        root = tmp_path / f"crash{crash_point}"
        log_dir = stage(root, e.get("new_log_start_offset", 0), e["high_watermark"])
        calls = [0]

        def replace(src, dst, _calls=calls, _at=crash_point):
            if _calls[0] == _at:
                raise Crash()
            _calls[0] += 1
            return real_replace(src, dst)

        monkeypatch.setattr(os, "replace", replace)
        try:
            ret.run_log_dir(str(log_dir), config, e["now_ms"], apply=True)
            crashed = False
        except Crash:
            crashed = True
        finally:
            monkeypatch.setattr(os, "replace", real_replace)
        if crashed:
            assert_broker_loadable(log_dir, e)
        # the re-run finishes the job: Kafka's exact end state
        out = ret.run_log_dir(str(log_dir), config, e["now_ms"], apply=True)
        assert not out.error and not out.partitions[0].error
        check_kafka_state(log_dir, e)
        if not crashed:
            break
        crash_point += 1
    assert crash_point >= 10  # checkpoints plus every rename were interrupted once


def test_locked_log_dir_is_refused(tmp_path):
    log_dir = stage(tmp_path)
    (log_dir / ".lock").touch()
    before = snapshot(tmp_path)
    with broker_lock(log_dir):
        proc = segdex("retention", "--now", "1800000000000", "--config", "retention.ms=1", "--no-record",
                      "--apply", str(log_dir))
        assert proc.returncode == 1
        assert "refused" in proc.stderr and ".lock is held by another process" in proc.stderr
        assert snapshot(tmp_path) == before
        proc = segdex("retention", "--now", "1800000000000", "--config", "retention.ms=1", "--no-record",
                      str(log_dir))
        assert proc.returncode == 1 and "--apply would be refused" in proc.stderr


def test_corrupt_checkpoint(tmp_path):
    log_dir = stage(tmp_path)
    (log_dir / "replication-offset-checkpoint").write_text("0\n3\nevents 0 1537\n")
    before = snapshot(tmp_path)
    proc = segdex("retention", "--no-record", "--apply", str(log_dir))
    assert proc.returncode == 1
    assert "corrupt checkpoint" in proc.stderr and "expected 3 entries but found 1" in proc.stderr
    assert {k: v for k, v in snapshot(tmp_path).items() if k != "logdir/.lock"} == before


def test_corrupt_leader_epoch_checkpoint_and_unreadable_files(tmp_path):
    log_dir = stage(tmp_path)
    part = log_dir / f"{TOPIC}-0"
    (part / "leader-epoch-checkpoint").write_text("0\n4\n0 0\nzz\n")
    other = log_dir / "other-1"
    other.mkdir()
    (other / "00000000000000000000.log").mkdir()  # unreadable as a file, even for root
    proc = segdex("retention", "--now", "1700000098534", "--config", "retention.ms=5513", "--no-record", "--apply",
                  str(log_dir))
    assert proc.returncode == 1
    assert "events-0: error: cannot read" in proc.stderr and "leader-epoch-checkpoint" in proc.stderr
    assert "other-1: error: cannot read" in proc.stderr
    assert not any(n.endswith(".deleted") for n in os.listdir(part))


def test_empty_and_missing_dirs_and_usage(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = segdex("retention", "--no-record", str(empty))
    assert proc.returncode == 0 and "0 partitions" in proc.stdout
    assert segdex("retention", "--no-record", str(tmp_path / "nope")).returncode == 2
    proc = segdex("retention", "--config", "retention.ms=abc", str(empty))
    assert proc.returncode == 2 and "Not a number of type LONG" in proc.stderr
    proc = segdex("retention", "--topic-config", "retention.ms=5", str(empty))
    assert proc.returncode == 2 and "TOPIC:KEY=VALUE" in proc.stderr
    assert segdex("retention").returncode == 2


def test_topic_config_overrides_per_topic(tmp_path, capsys):
    log_dir = stage(tmp_path)
    rc = main(["retention", "--now", "1700000098534", "--topic-config", f"{TOPIC}:retention.bytes=240984",
               "--topic-config", "other:retention.bytes=1", "--no-record", str(log_dir)])
    assert rc == 0
    out = capsys.readouterr().out
    assert out.count(" delete 0") == 3 and "[retention.bytes]" in out
