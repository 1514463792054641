"""``retention.run_log_dir`` in the test process: what a plan covers and skips in a log dir, the refusals as rows,
and temporaries of a killed run removed under the lock. (tests/jobs/test_retention_kafka_experiments.py runs the
same through the command line and against Kafka's own retention.)"""

from __future__ import annotations

import shutil
from pathlib import Path

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.fs.atomic_file import TEMP_PREFIX, TEMP_SUFFIX
from segdex.indexcore.retention.log_dirs import as_resolver, config_for, run_log_dir
from tests.support.fixtures import FIXTURES, broker_lock

NOW = 1_700_000_000_000 + 10 * 86_400_000
RETENTION = FIXTURES / "multi_segment_partition_retention" / "broker"


def _log_dir(root: Path) -> Path:
    log_dir = root / "logs"
    part = log_dir / "orders-0"
    part.mkdir(parents=True)
    for p in RETENTION.glob("*.log"):
        shutil.copy(p, part)
    for p in RETENTION.glob("*.timeindex"):
        shutil.copy(p, part)
    (log_dir / "orders-0.abc123-future").mkdir()
    (log_dir / "__cluster_metadata-0").mkdir()
    (log_dir / "replication-offset-checkpoint").write_text("0\n1\norders 0 1537\n")
    return log_dir


def test_a_plan_covers_topics_and_skips_future_and_metadata_dirs(tmp_path: Path):
    log_dir = _log_dir(tmp_path)
    outcome = run_log_dir(str(log_dir), LogConfig(), now_ms=NOW, topic_overrides={"orders": {"retention.bytes": "1"}})
    assert outcome.log_dir == str(log_dir) and outcome.error is None
    assert sorted(outcome.skipped) == [
        (str(log_dir / "__cluster_metadata-0"), "the KRaft metadata log follows metadata.* settings and its own "
                                                "snapshots, never topic retention: not touched"),
        (str(log_dir / "orders-0.abc123-future"),
         "-future directory (a replica being moved): retention does not run on it")]
    [plan] = outcome.partitions
    assert (plan.log_dir, plan.partition_dir, plan.plan.topic, plan.plan.partition) == (
        str(log_dir), str(log_dir / "orders-0"), "orders", 0)
    assert plan.plan.deletions and plan.error is None  # retention.bytes=1: everything below the active one
    assert outcome.configs["orders"].sources["retention.bytes"] == "--topic-config"
    assert list(outcome.configs) == ["orders"]


def test_refusals_are_rows(tmp_path: Path):
    log_dir = _log_dir(tmp_path)
    (log_dir / "recovery-point-offset-checkpoint").write_text("zero\n")
    outcome = run_log_dir(str(log_dir), LogConfig(), now_ms=NOW)
    assert outcome.error.startswith("corrupt checkpoint: ") and not outcome.partitions
    assert outcome.log_dir == str(log_dir)
    (log_dir / "recovery-point-offset-checkpoint").unlink()
    with broker_lock(log_dir):
        planned = run_log_dir(str(log_dir), LogConfig(), now_ms=NOW)
        assert planned.error == (f"{log_dir}: its .lock is held by another process (a running Kafka broker?): "
                                 f"this plan is informational, --apply would be refused")
        assert planned.partitions  # a plan still, to read
        refused = run_log_dir(str(log_dir), LogConfig(), now_ms=NOW, apply=True)
        assert refused.error and "lock" in refused.error and not refused.partitions
    missing = run_log_dir(str(tmp_path / "nope"), LogConfig(), now_ms=NOW, apply=True)
    assert missing.error == f"{tmp_path / 'nope'}: not a directory" and missing.log_dir == str(tmp_path / "nope")
    missing = run_log_dir(str(tmp_path / "nope"), LogConfig(), now_ms=NOW)
    assert missing.error == f"{tmp_path / 'nope'}: not a directory"  # the listing says so too
    unreadable = log_dir / "orders-0" / "00000000000000001455.log"  # the last: its next offset is read
    unreadable.unlink()
    unreadable.mkdir()
    [p] = run_log_dir(str(log_dir), LogConfig(), now_ms=NOW).partitions
    assert p.error == p.plan.skipped and p.error.startswith("cannot read: ")
    assert (p.plan.topic, p.plan.partition, p.log_dir) == ("orders", 0, str(log_dir))


def test_apply_removes_a_killed_runs_temporaries(tmp_path: Path):
    log_dir = _log_dir(tmp_path)
    left = [log_dir / f"{TEMP_PREFIX}1-ab{TEMP_SUFFIX}", log_dir / "orders-0" / f"{TEMP_PREFIX}2-cd{TEMP_SUFFIX}"]
    for p in left:
        p.write_bytes(b"partial")
    outcome = run_log_dir(str(log_dir), LogConfig(), now_ms=NOW, apply=True)
    assert sorted(outcome.removed_temporaries) == sorted(str(p) for p in left)
    assert not any(p.exists() for p in left)


def test_resolvers_from_a_base_config():
    base = LogConfig(retention_ms=5, segment_bytes=1 << 30)
    resolver = as_resolver(base, {"t": {"retention.bytes": "9"}})
    assert resolver.resolve("t").sources == {"retention.ms": "--config", "retention.bytes": "--topic-config"}
    assert as_resolver(resolver) is resolver
    assert as_resolver(None).resolve("t").sources == {}
    assert config_for("t", base, {"t": {"retention.bytes": "9"}}) == LogConfig(retention_ms=5, retention_bytes=9)
