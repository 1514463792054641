"""Kafka's ``UnifiedLog.deleteOldSegments``, offline: plan from segment facts, then apply crash-safely.

The rules (Kafka 4.0 ``UnifiedLog.deletableSegments`` and the three passes):

* passes in order: log start offset, then size (``retention.bytes``), then time (``retention.ms``) when
  ``cleanup.policy`` contains ``delete``; only the log-start-offset pass otherwise;
* each pass walks the segments from the oldest and stops at the first one it keeps, so only a leading run is
  ever deleted; a segment is eligible only if its upper bound (the next segment's base offset, or the log end
  offset for the last one) is <= the high watermark; an empty last segment is never deleted;
* log start offset pass: delete while the next segment's base offset is <= the log start offset;
* size pass: runs only when the log size >= retention.bytes >= 0; ``diff = size - retention.bytes`` and a
  segment goes while ``diff - segment size >= 0``;
* time pass: runs when retention.ms >= 0; a segment goes when ``now - largestTimestamp > retention.ms``, where
  largestTimestamp is the time index's last entry, or the ``.log`` mtime when there is none;
* after each pass the log start offset becomes the base offset of the first remaining segment if that is
  higher; the leader-epoch cache is truncated from the start at it (``LeaderEpochFileCache.truncateFromStart``);
* deleting every segment first rolls a new, empty segment at the log end offset.

Apply order (each step leaves a directory a broker loads correctly, and a re-run finishes the job):

1. roll: create the empty segment at the log end offset, when every segment goes;
2. ``log-start-offset-checkpoint`` (and ``recovery-point-offset-checkpoint`` raised to the log start offset),
   atomically. A broker that loads segments below the checkpointed log start offset deletes them itself;
3. ``leader-epoch-checkpoint`` truncated from the start, atomically;
4. rename each deleted segment's files to ``*.deleted``, oldest segment first, ``.log`` first, then its
   ``.snapshot``. A ``.log.deleted`` whose index files are still live is finished on the next run; the broker
   itself removes orphaned index files and everything ``*.deleted`` when it loads.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

from .atomic_file import FileAttributes, create_empty, fsync_dir, remove_temporaries, same_content, write_atomic
from .checkpoints import (
    CorruptCheckpointException,
    format_leader_epoch_checkpoint,
    mode_template,
    read_leader_epoch_checkpoint,
    write_offset_checkpoint,
)
from .errors import CorruptRecordException, InvalidLayoutException, SegdexError
from .file_access import open_regular
from .file_records import batches, open_log
from .layout import (
    DELETED_FILE_SUFFIX,
    INDEX_FILE_SUFFIX,
    LEADER_EPOCH_CHECKPOINT,
    LOG_FILE_SUFFIX,
    LOG_START_OFFSET_CHECKPOINT,
    PRODUCER_SNAPSHOT_FILE_SUFFIX,
    RECOVERY_POINT_CHECKPOINT,
    TIME_INDEX_FILE_SUFFIX,
    TXN_INDEX_FILE_SUFFIX,
    parse_segment_file_name,
    segment_file_name,
)
from .log_config import LogConfig, ResolvedConfig, TopicConfigResolver, is_cluster_metadata
from .log_dir import hold_lock, is_locked, list_log_dir, read_checkpoints
from .log_segments import segment_logs
from .offset_index import ENTRY_SIZE as OFFSET_ENTRY_SIZE
from .offset_index import parse_offset_index
from .offset_index import trimmed_entry_count as offset_entry_count
from .time_index import ENTRY_SIZE as TIME_ENTRY_SIZE
from .time_index import parse_time_index
from .time_index import trimmed_entry_count as time_entry_count

RULE_LOG_START_OFFSET = "log_start_offset"
RULE_SIZE = "retention.bytes"
RULE_TIME = "retention.ms"

ACTION_DELETE = "delete"
ACTION_BLOCKED = "blocked"  # a segment the time pass cannot delete because its largest timestamp is in the future
ACTION_SKIPPED = "skipped"  # a partition that cannot be planned (no high watermark, unreadable files, ...)

TIMESTAMP_FROM_TIME_INDEX = "time_index"
TIMESTAMP_FROM_MTIME = "mtime"

# Files renamed ``*.deleted`` with a segment, in Kafka's order (``LogSegment.changeFileSuffixes``).
SEGMENT_FILE_SUFFIXES = (LOG_FILE_SUFFIX, INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX)


class RetentionException(SegdexError):
    """A partition or log dir that retention cannot plan or apply."""


@dataclass(frozen=True, slots=True)
class SegmentFacts:
    """What retention needs to know about one live segment."""

    base_offset: int
    size_bytes: int
    largest_timestamp: int
    timestamp_source: str = TIMESTAMP_FROM_TIME_INDEX


@dataclass
class PartitionFacts:
    """A partition as retention sees it; ``high_watermark`` None means unknown (nothing is deletable)."""

    topic: str
    partition: int
    segments: list[SegmentFacts]  # live segments in base-offset order
    log_end_offset: int
    log_start_offset: int | None = None  # from log-start-offset-checkpoint; None: no entry
    high_watermark: int | None = None  # from replication-offset-checkpoint
    leader_epochs: list[tuple[int, int]] | None = None  # leader-epoch-checkpoint entries; None: no file


@dataclass(frozen=True, slots=True)
class Deletion:
    """One segment a pass deletes."""

    base_offset: int
    upper_bound_offset: int
    size_bytes: int
    largest_timestamp: int
    rule: str
    reason: str


@dataclass
class RetentionPlan:
    """What ``deleteOldSegments`` would do to one partition."""

    topic: str
    partition: int
    deletions: list[Deletion] = field(default_factory=list)
    blocked: list[tuple[SegmentFacts, str]] = field(default_factory=list)  # future timestamps
    notes: list[str] = field(default_factory=list)  # why each pass stopped, why nothing is deletable
    log_start_offset_before: int = 0
    log_start_offset_after: int = 0
    log_end_offset: int = 0
    high_watermark: int | None = None
    roll_offset: int | None = None  # every segment goes: roll an empty segment here first
    leader_epochs_before: list[tuple[int, int]] | None = None
    leader_epochs_after: list[tuple[int, int]] | None = None
    skipped: str | None = None  # why this partition could not be planned at all
    base_offsets_before: list[int] = field(default_factory=list)

    @property
    def deleted_count(self) -> int:
        """``deleteOldSegments``'s return value."""
        return len(self.deletions)

    @property
    def bytes_freed(self) -> int:
        return sum(d.size_bytes for d in self.deletions)

    @property
    def remaining_base_offsets(self) -> list[int]:
        gone = {d.base_offset for d in self.deletions}
        return [o for o in self.base_offsets_before if o not in gone] + (
            [self.roll_offset] if self.roll_offset is not None else [])


def truncate_epochs_from_start(entries: list[tuple[int, int]], start_offset: int) -> list[tuple[int, int]]:
    """``LeaderEpochFileCache.truncateFromStart``: drop the leading entries starting at or below
    ``start_offset`` and re-add the last of them as ``(its epoch, start_offset)``."""
    removed = 0
    while removed < len(entries) and entries[removed][1] <= start_offset:
        removed += 1
    if not removed:
        return list(entries)
    return [(entries[removed - 1][0], start_offset), *entries[removed:]]


def plan_retention(facts: PartitionFacts, config: LogConfig, now_ms: int) -> RetentionPlan:
    """The segments Kafka's ``deleteOldSegments()`` deletes, pass by pass; pure (touches no file)."""
    segments = sorted(facts.segments, key=lambda s: s.base_offset)
    first_base = segments[0].base_offset if segments else facts.log_end_offset
    lso = max(facts.log_start_offset if facts.log_start_offset is not None else 0, first_base)
    plan = RetentionPlan(facts.topic, facts.partition, log_start_offset_before=lso, log_start_offset_after=lso,
                         log_end_offset=facts.log_end_offset, leader_epochs_before=facts.leader_epochs,
                         leader_epochs_after=facts.leader_epochs,
                         base_offsets_before=[s.base_offset for s in segments])
    if not segments:
        plan.skipped = "no segments"
        return plan
    if lso > facts.log_end_offset:
        plan.skipped = (f"log start offset {lso} is beyond the log end offset {facts.log_end_offset}: a broker would "
                        f"delete every segment when loading this partition; not touching it")
        return plan
    for s in segments:
        if s.largest_timestamp > now_ms:
            plan.blocked.append((s, f"largest timestamp {s.largest_timestamp} ({s.timestamp_source}) is "
                                    f"{s.largest_timestamp - now_ms} ms after now ({now_ms}): retention.ms can never "
                                    f"delete this segment, nor any later one, before then"))
    if facts.high_watermark is None:
        plan.skipped = ("no high watermark known (no entry in replication-offset-checkpoint): Kafka deletes no "
                        "segment until the high watermark is initialized")
        return plan
    # Partition.createLog -> updateHighWatermark keeps the high watermark within [logStartOffset, logEndOffset].
    hw = min(max(facts.high_watermark, lso), facts.log_end_offset)
    plan.high_watermark = hw
    live = list(segments)

    def run_pass(rule: str, predicate) -> None:
        nonlocal lso
        deleted: list[Deletion] = []
        for i, seg in enumerate(live):
            nxt = live[i + 1] if i + 1 < len(live) else None
            upper = nxt.base_offset if nxt else facts.log_end_offset
            if hw < upper:
                plan.notes.append(f"{rule}: stopped at segment {seg.base_offset}: its upper bound offset {upper} is "
                                  f"above the high watermark {hw}")
                break
            why = predicate(seg, nxt)
            if not why:
                break
            if nxt is None and seg.size_bytes == 0:
                plan.notes.append(f"{rule}: kept segment {seg.base_offset}: an empty last segment is never deleted")
                break
            deleted.append(Deletion(seg.base_offset, upper, seg.size_bytes, seg.largest_timestamp, rule, why))
        if not deleted:
            return
        if len(deleted) == len(live):
            plan.roll_offset = facts.log_end_offset
            live.append(SegmentFacts(facts.log_end_offset, 0, now_ms, TIMESTAMP_FROM_MTIME))
        del live[: len(deleted)]
        plan.deletions.extend(deleted)
        lso = max(lso, live[0].base_offset)

    def log_start_breached(seg: SegmentFacts, nxt: SegmentFacts | None) -> str:
        if nxt is not None and nxt.base_offset <= lso:
            return f"next segment's base offset {nxt.base_offset} <= log start offset {lso}"
        if nxt is not None:
            plan.notes.append(f"{RULE_LOG_START_OFFSET}: kept segment {seg.base_offset}: it holds the log start "
                              f"offset {lso}")
        return ""

    run_pass(RULE_LOG_START_OFFSET, log_start_breached)
    if config.delete:
        retention_bytes = config.retention_bytes
        size = sum(s.size_bytes for s in live)
        if retention_bytes >= 0 and size >= retention_bytes:
            diff = size - retention_bytes

            def size_breached(seg: SegmentFacts, nxt: SegmentFacts | None) -> str:
                nonlocal diff
                if diff - seg.size_bytes >= 0:
                    why = (f"log size exceeds retention.bytes={retention_bytes} by {diff} bytes >= segment size "
                           f"{seg.size_bytes}")
                    diff -= seg.size_bytes
                    return why
                plan.notes.append(f"{RULE_SIZE}: kept segment {seg.base_offset}: remaining excess {diff} bytes < "
                                  f"its size {seg.size_bytes}")
                return ""

            run_pass(RULE_SIZE, size_breached)
        retention_ms = config.retention_ms
        if retention_ms >= 0:
            def time_breached(seg: SegmentFacts, nxt: SegmentFacts | None) -> str:
                age = now_ms - seg.largest_timestamp
                if age > retention_ms:
                    return (f"largest timestamp {seg.largest_timestamp} ({seg.timestamp_source}) is {age} ms old > "
                            f"retention.ms={retention_ms}")
                future = " (a future timestamp)" if age < 0 else ""
                plan.notes.append(f"{RULE_TIME}: kept segment {seg.base_offset}: largest timestamp "
                                  f"{seg.largest_timestamp}{future} is {age} ms old <= retention.ms={retention_ms}")
                return ""

            run_pass(RULE_TIME, time_breached)
    else:
        plan.notes.append(f"cleanup.policy={config.cleanup_policy}: only the log start offset pass runs")
    plan.log_start_offset_after = lso
    if facts.leader_epochs is not None and plan.deletions:
        plan.leader_epochs_after = truncate_epochs_from_start(facts.leader_epochs, lso)
    return plan


# ---------------------------------------------------------------------------------------------------------------
# Facts from disk


def _read_prefix(path: str, limit: int | None = None) -> bytes | None:
    try:
        with open_regular(path) as f:
            return f.read() if limit is None else f.read(limit)
    except FileNotFoundError:
        return None


def largest_timestamp(log_path: str) -> tuple[int, str]:
    """``LogSegment.largestTimestamp``: the time index's last entry if its timestamp is >= 0, else the ``.log``
    mtime in ms. A zero-padded (preallocated) time index counts only its entries before the first zero slot."""
    stem = log_path[: -len(LOG_FILE_SUFFIX)]
    data = _read_prefix(stem + TIME_INDEX_FILE_SUFFIX)
    if data:
        n = time_entry_count(data)
        if n:
            ts, _ = parse_time_index(data[(n - 1) * TIME_ENTRY_SIZE: n * TIME_ENTRY_SIZE], 0)[0]
            if ts >= 0:
                return ts, TIMESTAMP_FROM_TIME_INDEX
    return os.stat(log_path).st_mtime_ns // 1_000_000, TIMESTAMP_FROM_MTIME


def next_offset(log_path: str, base_offset: int) -> int:
    """``LogSegment.readNextOffset``: last batch's lastOffset + 1, scanning from the offset index's last entry;
    the base offset for an empty segment. Stops quietly at a corrupt or partial tail."""
    stem = log_path[: -len(LOG_FILE_SUFFIX)]
    data = _read_prefix(stem + INDEX_FILE_SUFFIX) or b""
    n = offset_entry_count(data)
    start = parse_offset_index(data[(n - 1) * OFFSET_ENTRY_SIZE: n * OFFSET_ENTRY_SIZE], base_offset)[0][1] if n else 0
    with open_log(log_path) as buf:
        for begin in ((start, 0) if start else (0,)):
            last = -1
            try:
                for batch in batches(buf, begin):
                    last = batch.last_offset
            except (CorruptRecordException, ValueError, IndexError):
                pass
            if last >= 0:
                return last + 1
    return base_offset


def read_segment_facts(partition_dir: str) -> tuple[list[SegmentFacts], int]:
    """Live segments of a partition directory and its log end offset (raises OSError on unreadable files)."""
    found, _misnamed = segment_logs(partition_dir)
    segments = []
    for base, path in found:
        ts, source = largest_timestamp(path)
        segments.append(SegmentFacts(base, os.stat(path).st_size, ts, source))
    leo = next_offset(found[-1][1], found[-1][0]) if found else 0
    return segments, leo


# ---------------------------------------------------------------------------------------------------------------
# Log dirs: plan and apply


@dataclass
class PartitionOutcome:
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
    partitions: list[PartitionOutcome] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why)
    stray: list[tuple[str, str]] = field(default_factory=list)  # (path, why): a broker refuses to load the dir
    error: str | None = None  # the whole log dir was refused
    configs: dict[str, ResolvedConfig] = field(default_factory=dict)  # topic -> its effective config and sources
    removed_temporaries: list[str] = field(default_factory=list)  # left by a killed run, removed under the lock

    @property
    def needs_attention(self) -> bool:
        return bool(self.error) or bool(self.stray) or any(
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


def _finish_interrupted(partition_dir: str) -> list[str]:
    """Rename the leftovers of segments whose ``.log`` is already ``.log.deleted`` (an interrupted apply)."""
    names = set(os.listdir(partition_dir))
    done = []
    for name in sorted(names):
        if not name.endswith(LOG_FILE_SUFFIX + DELETED_FILE_SUFFIX):
            continue
        try:
            base = parse_segment_file_name(name).base_offset
        except InvalidLayoutException:
            continue
        if segment_file_name(base, LOG_FILE_SUFFIX) in names:
            continue  # a live segment with that base offset: not ours to touch
        for suffix in (*SEGMENT_FILE_SUFFIXES[1:], PRODUCER_SNAPSHOT_FILE_SUFFIX):
            live = segment_file_name(base, suffix)
            if live in names:
                os.replace(os.path.join(partition_dir, live), os.path.join(partition_dir, live + DELETED_FILE_SUFFIX))
                done.append(live)
    return done


def _rename_segment(partition_dir: str, base_offset: int) -> list[str]:
    renamed = []
    for suffix in (*SEGMENT_FILE_SUFFIXES, PRODUCER_SNAPSHOT_FILE_SUFFIX):
        name = segment_file_name(base_offset, suffix)
        src = os.path.join(partition_dir, name)
        try:
            os.replace(src, src + DELETED_FILE_SUFFIX)
        except FileNotFoundError:
            continue
        renamed.append(name)
    return renamed


def _roll(partition_dir: str, offset: int, template: str | None) -> None:
    """A new empty segment at ``offset`` (0-byte ``.log``, ``.index`` and ``.timeindex``), as ``roll()`` leaves;
    owned like the partition directory, with the mode of the ``template`` segment's ``.log``."""
    attributes = FileAttributes.for_target(os.path.join(partition_dir, segment_file_name(offset, LOG_FILE_SUFFIX)),
                                           template)
    for suffix in (LOG_FILE_SUFFIX, INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX):
        create_empty(os.path.join(partition_dir, segment_file_name(offset, suffix)), attributes)
    fsync_dir(partition_dir)


def plan_partition(log_dir: str, partition_dir: str, topic: str, partition: int, config: LogConfig, now_ms: int,
                   log_start_offsets: dict, high_watermarks: dict) -> PartitionOutcome:
    """Read one partition's facts from disk and plan it; unreadable files give an outcome with ``error``."""
    key = (topic, partition)
    try:
        segments, leo = read_segment_facts(partition_dir)
        epochs_path = os.path.join(partition_dir, LEADER_EPOCH_CHECKPOINT)
        epochs = read_leader_epoch_checkpoint(epochs_path) if os.path.exists(epochs_path) else None
    except (OSError, SegdexError) as e:
        msg = f"{partition_dir}: {getattr(e, 'strerror', None) or e}" if isinstance(e, OSError) else str(e)
        plan = RetentionPlan(topic, partition, skipped=f"cannot read: {msg}")
        return PartitionOutcome(log_dir, partition_dir, plan, error=f"cannot read: {msg}")
    facts = PartitionFacts(topic, partition, segments, leo, log_start_offsets.get(key), high_watermarks.get(key),
                           epochs)
    return PartitionOutcome(log_dir, partition_dir, plan_retention(facts, config, now_ms))


def _plan_log_dir(log_dir: str, resolver: TopicConfigResolver, now_ms: int) -> tuple[LogDirOutcome, object]:
    outcome = LogDirOutcome(log_dir)
    listing = list_log_dir(log_dir)
    checkpoints = read_checkpoints(log_dir)
    outcome.skipped.extend(listing.skipped)
    outcome.stray.extend(listing.stray)
    for p in listing.partitions:
        if p.kind == "future":
            outcome.skipped.append((p.path, "-future directory (a replica being moved): retention does not run on it"))
            continue
        if is_cluster_metadata(p.topic):
            outcome.skipped.append((p.path, "the KRaft metadata log follows metadata.* settings and its own "
                                            "snapshots, never topic retention: not touched"))
            continue
        resolved = resolver.resolve(p.topic)
        outcome.configs[p.topic] = resolved
        outcome.partitions.append(plan_partition(log_dir, p.path, p.topic, p.partition, resolved.config, now_ms,
                                                 checkpoints.log_start_offsets, checkpoints.high_watermarks))
    return outcome, checkpoints


def run_log_dir(log_dir: str, config: LogConfig | TopicConfigResolver | None = None, now_ms: int | None = None,
                topic_overrides: dict[str, dict[str, str]] | None = None, apply: bool = False) -> LogDirOutcome:
    """Plan retention for every partition of a log dir; with ``apply``, carry the plan out under the dir's lock.

    ``config``: a ``TopicConfigResolver``, or a base ``LogConfig`` with ``topic_overrides``. Bad input never
    raises: a missing or locked dir, corrupt checkpoint files or unreadable segments become ``error``/``skipped``
    in the outcome.
    """
    resolver = as_resolver(config, topic_overrides)
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    log_dir = os.fspath(log_dir)
    try:
        if not apply:
            outcome, _ = _plan_log_dir(log_dir, resolver, now_ms)
            if is_locked(log_dir):
                outcome.error = (f"{log_dir}: its .lock is held by another process (a running Kafka broker?): "
                                 f"this plan is informational, --apply would be refused")
            return outcome
        if not os.path.isdir(log_dir):
            raise InvalidLayoutException(f"{log_dir}: not a directory")
        with hold_lock(log_dir):
            outcome, checkpoints = _plan_log_dir(log_dir, resolver, now_ms)
            outcome.removed_temporaries = _remove_temporaries(log_dir, outcome)
            _apply_log_dir(outcome, checkpoints)
            return outcome
    except CorruptCheckpointException as e:
        return LogDirOutcome(log_dir, error=f"corrupt checkpoint: {e}")
    except (SegdexError, OSError) as e:
        msg = f"{log_dir}: {e.strerror}" if isinstance(e, OSError) and e.strerror else str(e)
        return LogDirOutcome(log_dir, error=msg)


def _remove_temporaries(log_dir: str, outcome: LogDirOutcome) -> list[str]:
    """segdex's temporary files left by a killed run, in the log dir and the partitions retention writes to."""
    removed = remove_temporaries(log_dir)
    for p in outcome.partitions:
        removed += remove_temporaries(p.partition_dir)
    return removed


def _apply_log_dir(outcome: LogDirOutcome, checkpoints) -> None:
    log_dir = outcome.log_dir
    todo = [p for p in outcome.partitions if not p.error and not p.plan.skipped]
    leftovers = {p.partition_dir: _has_interrupted(p.partition_dir) for p in outcome.partitions if not p.error}
    acting = [p for p in todo if p.plan.deletions or leftovers.get(p.partition_dir)]
    if not acting:
        return
    # 1. roll where every segment goes
    for p in acting:
        if p.plan.roll_offset is not None:
            last = p.plan.base_offsets_before[-1] if p.plan.base_offsets_before else None
            template = (os.path.join(p.partition_dir, segment_file_name(last, LOG_FILE_SUFFIX))
                        if last is not None else None)
            _roll(p.partition_dir, p.plan.roll_offset, template)
    # 2. log start offsets and recovery points, one atomic write per file
    lso = dict(checkpoints.log_start_offsets)
    rp = dict(checkpoints.recovery_points)
    for p in acting:
        key = (p.plan.topic, p.plan.partition)
        if p.plan.deletions:
            lso[key] = max(lso.get(key, 0), p.plan.log_start_offset_after)
            if key in rp and rp[key] < p.plan.log_start_offset_after:
                rp[key] = p.plan.log_start_offset_after
    if lso != checkpoints.log_start_offsets:
        write_offset_checkpoint(os.path.join(log_dir, LOG_START_OFFSET_CHECKPOINT), lso)
    if rp != checkpoints.recovery_points:
        write_offset_checkpoint(os.path.join(log_dir, RECOVERY_POINT_CHECKPOINT), rp)
    for p in acting:
        try:
            # 3. leader epochs
            if p.plan.deletions and p.plan.leader_epochs_after is not None:
                data = format_leader_epoch_checkpoint(p.plan.leader_epochs_after)
                path = os.path.join(p.partition_dir, LEADER_EPOCH_CHECKPOINT)
                if not same_content(path, data):
                    write_atomic(path, data, template=mode_template(path))
            # 4. renames, oldest first
            p.renamed.extend(_finish_interrupted(p.partition_dir))
            for d in p.plan.deletions:
                p.renamed.extend(_rename_segment(p.partition_dir, d.base_offset))
            fsync_dir(p.partition_dir)
            p.applied = True
        except OSError as e:
            p.error = f"{p.partition_dir}: apply stopped: {e.strerror or e}; re-run to finish"


def _has_interrupted(partition_dir: str) -> bool:
    names = set(os.listdir(partition_dir))
    for name in names:
        if name.endswith(LOG_FILE_SUFFIX + DELETED_FILE_SUFFIX):
            base = name[: -len(LOG_FILE_SUFFIX + DELETED_FILE_SUFFIX)]
            if base + LOG_FILE_SUFFIX in names:
                continue
            if any(base + s in names for s in (*SEGMENT_FILE_SUFFIXES[1:], PRODUCER_SNAPSHOT_FILE_SUFFIX)):
                return True
    return False
