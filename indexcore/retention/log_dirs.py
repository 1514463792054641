"""Retention of whole log dirs, offline: read each partition's facts from disk, plan it with Kafka's rules
(``retention_policy``), and with ``apply`` carry the plans out under the log dir's ``.lock``
(``retention_apply``). Bad input never raises: it becomes an ``error`` or ``skipped`` in the outcome.

"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from segdex.indexcore.config.log_config import LogConfig, ResolvedConfig, TopicConfigResolver, is_cluster_metadata
from segdex.indexcore.errors import InvalidLayoutException, SegdexError
from segdex.indexcore.fs.atomic_file import remove_temporaries
from segdex.indexcore.log.checkpoints import CorruptCheckpointException, read_leader_epoch_checkpoint
from segdex.indexcore.log.layout import (
    LEADER_EPOCH_CHECKPOINT,
)
from segdex.indexcore.log.log_dir import hold_lock, is_locked, list_log_dir
from segdex.indexcore.log.log_manager import read_checkpoints
from segdex.indexcore.log.log_segment import LogSegment
from segdex.indexcore.log.log_segments import segment_logs
from segdex.indexcore.log.unloadable import Unloadable, unloadable_refusal
from segdex.indexcore.retention.apply import SEGMENT_FILE_SUFFIXES, apply_plans
from segdex.indexcore.retention.policy import (
    PartitionFacts,
    RetentionPlan,
    SegmentFacts,
    plan_retention,
)

__all__ = ["SEGMENT_FILE_SUFFIXES", "run_log_dir", "plan_partition", "read_segment_facts", "PartitionRetention",
           "LogDirOutcome", "as_resolver", "config_for"]


# ---------------------------------------------------------------------------------------------------------------
# Facts from disk


def read_segment_facts(partition_dir: str) -> tuple[list[SegmentFacts], int]:
    """Live segments of a partition directory and its log end offset (raises OSError on unreadable files)."""
    found, _misnamed = segment_logs(partition_dir)
    segments = []
    for base, path in found:
        ts, source = LogSegment(path, base).largest_timestamp()
        segments.append(SegmentFacts(base, os.stat(path).st_size, ts, source))
    leo = LogSegment(found[-1][1], found[-1][0]).read_next_offset(tolerate_damage=True) if found else 0
    return segments, leo


# ---------------------------------------------------------------------------------------------------------------
# Log dirs: plan and apply


@dataclass
class PartitionRetention:
    """A partition's plan and, with apply, what was done."""

    log_dir: str
    partition_dir: str
    plan: RetentionPlan
    applied: bool = False
    renamed: list[str] = field(default_factory=list)  # file names renamed to *.deleted
    error: str | None = None


@dataclass
class LogDirOutcome:
    log_dir: str
    partitions: list[PartitionRetention] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why)
    unloadable: list[Unloadable] = field(default_factory=list)  # what a broker's start trips on (log_dir.unloadable)
    error: str | None = None  # the whole log dir was refused
    configs: dict[str, ResolvedConfig] = field(default_factory=dict)  # topic -> its effective config and sources
    removed_temporaries: list[str] = field(default_factory=list)  # left by a killed run, removed under the lock

    @property
    def needs_attention(self) -> bool:
        return bool(self.error) or bool(self.unloadable) or any(
            p.error or p.plan.skipped or p.plan.blocked for p in self.partitions)


def as_resolver(config: LogConfig | TopicConfigResolver | None,
                topic_overrides: dict[str, dict[str, str]] | None = None) -> TopicConfigResolver:
    """A ``TopicConfigResolver`` from one, or from a base ``LogConfig`` (its values that differ from Kafka's
    defaults count as given with ``--config``) plus per-topic overrides."""
    if isinstance(config, TopicConfigResolver):
        return config
    given: dict[str, str] = {}
    if config is not None:
        kafka = LogConfig()
        for name in config.__dataclass_fields__:
            if getattr(config, name) != getattr(kafka, name):
                given[name.replace("_", ".")] = str(getattr(config, name))
    return TopicConfigResolver(given, topic_overrides)


def config_for(topic: str, base: LogConfig, topic_overrides: dict[str, dict[str, str]] | None) -> LogConfig:
    """The effective config of a topic: ``base`` (as ``--config``), Kafka's internal-topic configs, then that
    topic's overrides."""
    return as_resolver(base, topic_overrides)(topic)


def plan_partition(log_dir: str, partition_dir: str, topic: str, partition: int, config: LogConfig, now_ms: int,
                   log_start_offsets: dict, high_watermarks: dict) -> PartitionRetention:
    """Read one partition's facts from disk and plan it; unreadable files give an outcome with ``error``."""
    key = (topic, partition)
    try:
        segments, leo = read_segment_facts(partition_dir)
        epochs_path = os.path.join(partition_dir, LEADER_EPOCH_CHECKPOINT)
        epochs = read_leader_epoch_checkpoint(epochs_path) if os.path.exists(epochs_path) else None
    except (OSError, SegdexError) as e:
        msg = f"{partition_dir}: {getattr(e, 'strerror', None) or e}" if isinstance(e, OSError) else str(e)
        plan = RetentionPlan(topic, partition, skipped=f"cannot read: {msg}")
        return PartitionRetention(log_dir, partition_dir, plan, error=f"cannot read: {msg}")
    facts = PartitionFacts(topic, partition, segments, leo, log_start_offsets.get(key), high_watermarks.get(key),
                           epochs)
    return PartitionRetention(log_dir, partition_dir, plan_retention(facts, config, now_ms))


def _plan_log_dir(log_dir: str, resolver: TopicConfigResolver, now_ms: int,
                  strays: Mapping[str, str] | None = None) -> tuple[LogDirOutcome, object]:
    outcome = LogDirOutcome(log_dir)
    strays = strays or {}
    listing = list_log_dir(log_dir)
    checkpoints = read_checkpoints(log_dir)
    outcome.skipped.extend(listing.skipped)
    outcome.unloadable.extend(listing.unloadable)
    for p in listing.partitions:
        if p.kind == "future":
            outcome.skipped.append((p.path, "-future directory (a replica being moved): retention does not run on it"))
            continue
        if is_cluster_metadata(p.topic):
            outcome.skipped.append((p.path, "the KRaft metadata log follows metadata.* settings and its own "
                                            "snapshots, never topic retention: not touched"))
            continue
        if p.path in strays:
            outcome.skipped.append((p.path, f"a stray replica: its broker renames it -stray at its start "
                                            f"({strays[p.path]}); retention leaves it alone"))
            continue
        resolved = resolver.resolve(p.topic)
        outcome.configs[p.topic] = resolved
        outcome.partitions.append(plan_partition(log_dir, p.path, p.topic, p.partition, resolved.config, now_ms,
                                                 checkpoints.log_start_offsets, checkpoints.high_watermarks))
    return outcome, checkpoints


def run_log_dir(log_dir: str, config: LogConfig | TopicConfigResolver | None = None, now_ms: int | None = None,
                topic_overrides: dict[str, dict[str, str]] | None = None, apply: bool = False,
                allow_unloadable: bool = False, strays: Mapping[str, str] | None = None) -> LogDirOutcome:
    """Plan retention for every partition of a log dir; with ``apply``, carry the plan out under the dir's lock.

    ``config``: a ``TopicConfigResolver``, or a base ``LogConfig`` with ``topic_overrides``. Bad input never
    raises: a missing or locked dir, corrupt checkpoint files or unreadable segments become ``error``/``skipped``
    in the outcome. A log dir a broker's start trips on (``outcome.unloadable``) is planned but never applied
    (``error`` says why) unless ``allow_unloadable``: the operator fixes the dir first. ``strays``: partition
    dirs its broker renames ``-stray`` at its start (the metadata log's verdict, with why): skipped, never applied.
    """
    resolver = as_resolver(config, topic_overrides)
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    log_dir = os.fspath(log_dir)
    try:
        # a dir a broker's start trips on is planned only, its .lock not even taken (taking it may create one)
        refuse = apply and not allow_unloadable and bool(list_log_dir(log_dir).unloadable)
        if not apply or refuse:
            outcome, _ = _plan_log_dir(log_dir, resolver, now_ms, strays)
            if refuse:
                outcome.error = unloadable_refusal(log_dir, outcome.unloadable)
            elif is_locked(log_dir):
                outcome.error = (f"{log_dir}: its .lock is held by another process (a running Kafka broker?): "
                                 f"this plan is informational, --apply would be refused")
            return outcome
        if not os.path.isdir(log_dir):
            raise InvalidLayoutException(f"{log_dir}: not a directory")
        with hold_lock(log_dir):
            outcome, checkpoints = _plan_log_dir(log_dir, resolver, now_ms, strays)
            if outcome.unloadable and not allow_unloadable:  # appeared since the check above
                outcome.error = unloadable_refusal(log_dir, outcome.unloadable)
                return outcome
            outcome.removed_temporaries = _remove_partition_temporaries(log_dir, outcome)
            apply_plans(log_dir, outcome.partitions, checkpoints)
            return outcome
    except CorruptCheckpointException as e:
        return LogDirOutcome(log_dir, error=f"corrupt checkpoint: {e}")
    except (SegdexError, OSError) as e:
        msg = f"{log_dir}: {e.strerror}" if isinstance(e, OSError) and e.strerror else str(e)
        return LogDirOutcome(log_dir, error=msg)


def _remove_partition_temporaries(log_dir: str, outcome: LogDirOutcome) -> list[str]:
    """segdex's temporary files left by a killed run, in the log dir and the partitions retention writes to."""
    removed = remove_temporaries(log_dir)
    for p in outcome.partitions:
        removed += remove_temporaries(p.partition_dir)
    return removed


