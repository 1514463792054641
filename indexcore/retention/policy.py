"""Kafka's retention rules as a pure policy (``UnifiedLog.deleteOldSegments``): which segments each pass deletes.

Each pass is a predicate over (segment, next segment) feeding one ``deletable_segments`` walk, as in Kafka:

* ``LogStartOffsetBreached`` (``deleteLogStartOffsetBreachedSegments``): the next segment's base offset is at
  or below the log start offset;
* ``RetentionSizeBreached`` (``deleteRetentionSizeBreachedSegments``): runs when the log size >= retention.bytes
  >= 0; ``diff = size - retention.bytes`` and a segment goes while ``diff - its size >= 0``;
* ``RetentionMsBreached`` (``deleteRetentionMsBreachedSegments``): runs when retention.ms >= 0; a segment goes when
  ``now - largestTimestamp > retention.ms`` (the time index's last entry, else the ``.log`` mtime).

``deletable_segments`` (``UnifiedLog.deletableSegments``) walks from the oldest segment and stops at the first one
the predicate keeps, so only a leading run goes; a segment is eligible only if its upper bound (the next segment's
base offset, or the log end offset) is <= the high watermark, and an empty last segment never goes. Passes run in
Kafka's order, the size and time passes only when ``cleanup.policy`` contains ``delete``; after each the log
start offset rises to the first remaining segment's base offset and the leader-epoch cache is truncated from the
start at it (``LeaderEpochFileCache.truncateFromStart``); deleting every segment first rolls an empty one at the
log end offset. Nothing here touches a file: ``retention_apply`` carries a plan out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.errors import SegdexError
from segdex.indexcore.log.leader_epoch_cache import truncate_epochs_from_start
from segdex.indexcore.log.log_segment import TIMESTAMP_FROM_MTIME, TIMESTAMP_FROM_TIME_INDEX

RULE_LOG_START_OFFSET = "log_start_offset"
RULE_SIZE = "retention.bytes"
RULE_TIME = "retention.ms"

ACTION_DELETE = "delete"
ACTION_BLOCKED = "blocked"  # a segment the time pass cannot delete because its largest timestamp is in the future
ACTION_SKIPPED = "skipped"  # a partition that cannot be planned (no high watermark, unreadable files, ...)


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


class LogStartOffsetBreached:
    """``deleteLogStartOffsetBreachedSegments``: delete while the next segment starts at or below the log start."""

    rule = RULE_LOG_START_OFFSET

    def __init__(self, log_start_offset: int) -> None:
        self.log_start_offset = log_start_offset
        self.note: str | None = None

    def __call__(self, seg: SegmentFacts, nxt: SegmentFacts | None) -> str:
        if nxt is not None and nxt.base_offset <= self.log_start_offset:
            return f"next segment's base offset {nxt.base_offset} <= log start offset {self.log_start_offset}"
        if nxt is not None:
            self.note = (f"{self.rule}: kept segment {seg.base_offset}: it holds the log start offset "
                         f"{self.log_start_offset}")
        return ""


class RetentionSizeBreached:
    """``deleteRetentionSizeBreachedSegments``: delete the oldest segments while the excess over retention.bytes
    covers them."""

    rule = RULE_SIZE

    def __init__(self, retention_bytes: int, log_size: int) -> None:
        self.retention_bytes = retention_bytes
        self.excess = log_size - retention_bytes
        self.note: str | None = None

    def __call__(self, seg: SegmentFacts, nxt: SegmentFacts | None) -> str:
        if self.excess - seg.size_bytes >= 0:
            why = (f"log size exceeds retention.bytes={self.retention_bytes} by {self.excess} bytes >= segment size "
                   f"{seg.size_bytes}")
            self.excess -= seg.size_bytes
            return why
        self.note = (f"{self.rule}: kept segment {seg.base_offset}: remaining excess {self.excess} bytes < its size "
                     f"{seg.size_bytes}")
        return ""


class RetentionMsBreached:
    """``deleteRetentionMsBreachedSegments``: delete segments whose largest timestamp is older than retention.ms."""

    rule = RULE_TIME

    def __init__(self, retention_ms: int, now_ms: int) -> None:
        self.retention_ms = retention_ms
        self.now_ms = now_ms
        self.note: str | None = None

    def __call__(self, seg: SegmentFacts, nxt: SegmentFacts | None) -> str:
        age = self.now_ms - seg.largest_timestamp
        if age > self.retention_ms:
            return (f"largest timestamp {seg.largest_timestamp} ({seg.timestamp_source}) is {age} ms old > "
                    f"retention.ms={self.retention_ms}")
        future = " (a future timestamp)" if age < 0 else ""
        self.note = (f"{self.rule}: kept segment {seg.base_offset}: largest timestamp {seg.largest_timestamp}"
                     f"{future} is {age} ms old <= retention.ms={self.retention_ms}")
        return ""


def deletable_segments(live: list[SegmentFacts], log_end_offset: int, high_watermark: int,
                       predicate) -> tuple[list[Deletion], str | None]:
    """``UnifiedLog.deletableSegments``: the leading run of ``live`` segments the predicate deletes, and why the
    walk stopped (None when it did not stop early or the predicate says why itself)."""
    deleted: list[Deletion] = []
    for i, seg in enumerate(live):
        nxt = live[i + 1] if i + 1 < len(live) else None
        upper = nxt.base_offset if nxt else log_end_offset
        if high_watermark < upper:
            return deleted, (f"{predicate.rule}: stopped at segment {seg.base_offset}: its upper bound offset "
                             f"{upper} is above the high watermark {high_watermark}")
        why = predicate(seg, nxt)
        if not why:
            return deleted, predicate.note
        if nxt is None and seg.size_bytes == 0:
            return deleted, f"{predicate.rule}: kept segment {seg.base_offset}: an empty last segment is never deleted"
        deleted.append(Deletion(seg.base_offset, upper, seg.size_bytes, seg.largest_timestamp, predicate.rule, why))
    return deleted, None


@dataclass
class _Log:
    """The partition as the passes change it: live segments and the log start offset."""

    live: list[SegmentFacts]
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    now_ms: int
    plan: RetentionPlan = field(repr=False, default=None)  # type: ignore[assignment]

    def run(self, predicate) -> None:
        """One pass: delete what ``deletable_segments`` gives, rolling first when every segment goes."""
        deleted, note = deletable_segments(self.live, self.log_end_offset, self.high_watermark, predicate)
        if note:
            self.plan.notes.append(note)
        if not deleted:
            return
        if len(deleted) == len(self.live):
            self.plan.roll_offset = self.log_end_offset
            self.live.append(SegmentFacts(self.log_end_offset, 0, self.now_ms, TIMESTAMP_FROM_MTIME))
        del self.live[: len(deleted)]
        self.plan.deletions.extend(deleted)
        self.log_start_offset = max(self.log_start_offset, self.live[0].base_offset)


def _blocked(segments: list[SegmentFacts], now_ms: int) -> list[tuple[SegmentFacts, str]]:
    return [(s, f"largest timestamp {s.largest_timestamp} ({s.timestamp_source}) is {s.largest_timestamp - now_ms} "
                f"ms after now ({now_ms}): retention.ms can never delete this segment, nor any later one, before then")
            for s in segments if s.largest_timestamp > now_ms]


def _unplannable(segments: list[SegmentFacts], facts: PartitionFacts, lso: int) -> str | None:
    if not segments:
        return "no segments"
    if lso > facts.log_end_offset:
        return (f"log start offset {lso} is beyond the log end offset {facts.log_end_offset}: a broker would "
                f"delete every segment when loading this partition; not touching it")
    if facts.high_watermark is None:
        return ("no high watermark known (no entry in replication-offset-checkpoint): Kafka deletes no "
                "segment until the high watermark is initialized")
    return None


def plan_retention(facts: PartitionFacts, config: LogConfig, now_ms: int) -> RetentionPlan:
    """The segments Kafka's ``deleteOldSegments()`` deletes, pass by pass; pure (touches no file)."""
    segments = sorted(facts.segments, key=lambda s: s.base_offset)
    first_base = segments[0].base_offset if segments else facts.log_end_offset
    lso = max(facts.log_start_offset if facts.log_start_offset is not None else 0, first_base)
    plan = RetentionPlan(facts.topic, facts.partition, log_start_offset_before=lso, log_start_offset_after=lso,
                         log_end_offset=facts.log_end_offset, leader_epochs_before=facts.leader_epochs,
                         leader_epochs_after=facts.leader_epochs,
                         base_offsets_before=[s.base_offset for s in segments])
    if segments and lso <= facts.log_end_offset:
        plan.blocked = _blocked(segments, now_ms)
    plan.skipped = _unplannable(segments, facts, lso)
    if plan.skipped:
        return plan
    # Partition.createLog -> updateHighWatermark keeps the high watermark within [logStartOffset, logEndOffset].
    hw = min(max(facts.high_watermark, lso), facts.log_end_offset)
    plan.high_watermark = hw
    log = _Log(list(segments), lso, facts.log_end_offset, hw, now_ms, plan)
    log.run(LogStartOffsetBreached(log.log_start_offset))
    if config.delete:
        size = sum(s.size_bytes for s in log.live)
        if 0 <= config.retention_bytes <= size:
            log.run(RetentionSizeBreached(config.retention_bytes, size))
        if config.retention_ms >= 0:
            log.run(RetentionMsBreached(config.retention_ms, now_ms))
    else:
        plan.notes.append(f"cleanup.policy={config.cleanup_policy}: only the log start offset pass runs")
    plan.log_start_offset_after = log.log_start_offset
    if facts.leader_epochs is not None and plan.deletions:
        plan.leader_epochs_after = truncate_epochs_from_start(facts.leader_epochs, log.log_start_offset)
    return plan
