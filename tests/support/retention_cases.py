"""The retention fixture case (``multi_segment_partition_retention``) staged as a broker's log dir, and Kafka's
end state after each of its ``deleteOldSegments`` experiments.

Shared because three test modules drive the same experiments: tests/jobs/test_retention_kafka_experiments.py in the
test process, tests/jobs/test_retention.py through Spark and Delta, and tests/jobs/test_crash_points.py with real
crashes under ``strace``. Each stages the case with ``stage``, runs retention with ``exp_args``, and judges the
result with ``check_kafka_state`` (after a finished run) or ``assert_broker_loadable`` (after a crash)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from segdex.indexcore.log.checkpoints import (
    read_leader_epoch_checkpoint,
    read_offset_checkpoint,
    write_offset_checkpoint,
)
from tests.support.fixtures import FIXTURES, log_start_offset

CASE = "multi_segment_partition_retention"
TOPIC = "events"


def stage(root: Path, log_start_offset: int = 0, high_watermark: int | None = 1537) -> Path:
    """A log dir holding the case's broker/ partition as <topic>-0 and the three offset checkpoint files."""
    log_dir = root / "logdir"
    part = log_dir / f"{TOPIC}-0"
    part.mkdir(parents=True)
    for f in sorted((FIXTURES / CASE / "broker").iterdir()):
        if not f.name.endswith(".batches.json"):
            shutil.copyfile(f, part / f.name)
    write_offset_checkpoint(log_dir / "log-start-offset-checkpoint", {(TOPIC, 0): log_start_offset})
    write_offset_checkpoint(log_dir / "recovery-point-offset-checkpoint", {(TOPIC, 0): 1537})
    if high_watermark is not None:
        write_offset_checkpoint(log_dir / "replication-offset-checkpoint", {(TOPIC, 0): high_watermark})
    return log_dir


def exp_args(e: dict) -> list[str]:
    tc = e["topic_config"]
    return ["--now", str(e["now_ms"]), "--config", f"retention.ms={tc['retention.ms']}",
            "--config", f"retention.bytes={tc['retention.bytes']}"]


def check_kafka_state(log_dir: Path, e: dict) -> None:
    part = log_dir / f"{TOPIC}-0"
    assert sorted(os.listdir(part)) == e["files_in_dir_after_before_async_delete"]
    live = sorted(int(n[:20]) for n in os.listdir(part) if n.endswith(".log"))
    assert live == e["remaining_segment_base_offsets"]
    # Kafka checkpoints a log start offset only while it lies above the first segment's base offset
    # (LogManager.checkpointLogStartOffsetsInDir; the real broker test checks the same rule)
    checkpointed = read_offset_checkpoint(log_dir / "log-start-offset-checkpoint").get((TOPIC, 0))
    if e["logStartOffset_after"] > live[0]:
        assert checkpointed == e["logStartOffset_after"]
    else:
        assert checkpointed is None and live[0] == e["logStartOffset_after"]
    assert [list(x) for x in read_leader_epoch_checkpoint(part / "leader-epoch-checkpoint")] == \
        e["leader_epoch_entries_after"]
    # renamed, not rewritten: every *.deleted file holds the broker's bytes
    for name in os.listdir(part):
        if name.endswith(".deleted"):
            assert (part / name).read_bytes() == (FIXTURES / CASE / "broker" / name[:-8]).read_bytes()


def assert_broker_loadable(log_dir: Path, e: dict) -> None:
    """What LogLoader needs: live segments are a suffix of the original ones, each with its indexes; the log
    start offset checkpoint lies within the log; checkpoints parse."""
    part = log_dir / f"{TOPIC}-0"
    original = sorted(int(n[:20]) for n in os.listdir(FIXTURES / CASE / "broker") if n.endswith(".log"))
    live = sorted(int(n[:20]) for n in os.listdir(part) if n.endswith(".log"))
    assert live == original[len(original) - len(live):]
    for base in live:
        assert (part / f"{base:020d}.index").exists() and (part / f"{base:020d}.timeindex").exists()
    lso = log_start_offset(log_dir, TOPIC)
    assert lso <= e["logStartOffset_after"] <= 1537  # never beyond what Kafka reaches, never past the end
    epochs = read_leader_epoch_checkpoint(part / "leader-epoch-checkpoint")
    assert epochs and epochs[-1] == (3, 1146)
