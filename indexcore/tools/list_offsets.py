"""``UnifiedLog.fetchOffsetByTimestamp``: what a broker's ListOffsets answers, from a partition dir alone.

The partition is read as a broker holds it after recovery: segments rebuilt in memory by ``PartitionRecovery``
(their offset and time indexes, their max timestamps, the leader epochs the batches assign), the log start offset
as ``LogLoader`` takes it (the larger of the ``log-start-offset-checkpoint`` entry and the first segment's base
offset), the log end offset after the last valid batch. Nothing is written.

Kafka's rules, target by target:

- ``EARLIEST_TIMESTAMP`` (-2): the log start offset; timestamp -1; the earliest cached epoch if it starts at or
  below the log start offset.
- ``LATEST_TIMESTAMP`` (-1): the log end offset; timestamp -1; the latest epoch.
- ``MAX_TIMESTAMP`` (-3): in the first segment holding the log's largest timestamp (by its time index), the first
  batch with that max timestamp, and in it the first record carrying it (``RecordBatch.offsetOfMaxTimestamp``);
  the batch's leader epoch.
- a timestamp T >= 0: the first segment whose largest timestamp (its time index's last entry, else the file's
  modification time) reaches T; from the time index and offset index lookups, the first batch whose max
  timestamp reaches T, and in it the first *record* with a timestamp >= T at or above the log start offset
  (``FileRecords.searchForTimestamp``); the batch's leader epoch. Kafka does not look past that segment.

No answer is offset -1, timestamp -1, leader epoch -1. A log of magic 0 batches only has no timestamps: Kafka
refuses timestamp targets there (``UnsupportedForMessageFormatException``), and so does ``list_offset``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.errors import SegdexError, UsageException
from segdex.indexcore.log.checkpoints import read_offset_checkpoint
from segdex.indexcore.log.layout import LOG_START_OFFSET_CHECKPOINT, parse_partition_dir_name
from segdex.indexcore.log.log_segments import PartitionRecovery, SegmentRecovery, segment_logs
from segdex.indexcore.log.producer_state import ProducerStateManager
from segdex.indexcore.record.file_records import batches, open_log
from segdex.indexcore.record.record_batch import NO_TIMESTAMP
from segdex.indexcore.record.records import records
from segdex.indexcore.status import SegmentStatus

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3
TARGET_NAMES = {"earliest": EARLIEST_TIMESTAMP, "latest": LATEST_TIMESTAMP, "max-timestamp": MAX_TIMESTAMP}
NO_EPOCH = -1


@dataclass(frozen=True)
class OffsetAnswer:
    """One partition's ListOffsets answer (``TimestampAndOffset``); ``error`` where Kafka refuses the request."""

    topic: str
    partition: int
    offset: int = -1
    timestamp: int = NO_TIMESTAMP
    leader_epoch: int = NO_EPOCH
    error: str | None = None

    def as_dict(self) -> dict:
        out = {"topic": self.topic, "partition": self.partition, "offset": self.offset,
               "timestamp": self.timestamp, "leader_epoch": self.leader_epoch}
        if self.error is not None:
            out["error"] = self.error
        return out


def parse_target(text: str) -> int:
    """``--time``: epoch milliseconds, or -1/latest, -2/earliest, -3/max-timestamp (kafka-get-offsets' values)."""
    value = TARGET_NAMES.get(text.strip().lower())
    if value is not None:
        return value
    try:
        value = int(text)
    except ValueError:
        raise UsageException(f"--time {text!r}: not epoch milliseconds nor one of -1/latest, -2/earliest, "
                             f"-3/max-timestamp") from None
    if value < MAX_TIMESTAMP:
        raise UsageException(f"--time {value}: below -3 (only -1 latest, -2 earliest, -3 max-timestamp are special)")
    return value


@dataclass
class RecoveredPartition:
    """A partition dir as a broker's recovery leaves it: the segments it keeps (a corrupt tail ends them), the
    log start and end offsets, the leader epochs and the producer state replayed."""

    segments: list[SegmentRecovery]
    log_start_offset: int
    log_end_offset: int
    epochs: list[tuple[int, int]]
    producer_state: ProducerStateManager

    def count_records(self, start: int, end: int) -> int:
        """The data records (control records excluded) with an offset in [start, end): what a consumer reading
        that range with ``read_uncommitted`` receives."""
        n = 0
        for seg in self.segments:
            if seg.result is None or seg.result.next_offset <= start or seg.base_offset >= end:
                continue
            with open_log(seg.log_path) as buf:
                for batch in batches(buf, 0, seg.result.valid_bytes):
                    if batch.is_control or batch.next_offset <= start or batch.base_offset >= end:
                        continue
                    if start <= batch.base_offset and batch.next_offset <= end and \
                            batch.records_count == batch.next_offset - batch.base_offset:
                        n += batch.records_count
                    else:
                        n += sum(1 for r in records(buf, batch) if start <= r.offset < end)
        return n


def recovered_partition(partition_dir: str, config: LogConfig, log_start_offset: int | None) -> RecoveredPartition:
    """Recover every segment of ``partition_dir`` in offset order (``log_start_offset``: its
    ``log-start-offset-checkpoint`` entry, None when it has none). SegdexError when a segment cannot be read."""
    logs, _ = segment_logs(partition_dir)
    recovery = PartitionRecovery(config)
    segments = []
    for base, path in logs:
        seg = recovery.recover_segment(path, base)
        if seg.result is None or seg.status == SegmentStatus.ERROR:
            cause = seg.reason.cause if seg.reason else seg.status
            raise SegdexError(f"{os.path.basename(path)}: {cause}")
        segments.append(seg)
        if seg.status == SegmentStatus.CORRUPT_LOG_TAIL:
            break  # recovery truncates here and drops the segments after it
    first = segments[0].base_offset if segments else 0
    start = max(first, log_start_offset) if log_start_offset is not None else first
    end = segments[-1].result.next_offset if segments else 0
    return RecoveredPartition(segments, start, end, list(recovery.leader_epochs), recovery.producer_state)


def _epoch(value: int) -> int:
    """MAX_TIMESTAMP's epoch (``Optional.of(partitionLeaderEpoch).filter(_ >= 0)``): a negative one is none."""
    return value if value >= 0 else NO_EPOCH


def _search(seg: SegmentRecovery, target: int, starting_offset: int) -> tuple[int, int, int] | None:
    """``LogSegment.findOffsetByTimestamp`` then ``FileRecords.searchForTimestamp``: (timestamp, offset, epoch)."""
    result = seg.result
    _, index_offset = result.time_index.lookup(target)
    _, position = result.offset_index.lookup(max(index_offset, starting_offset))
    with open_log(seg.log_path) as buf:
        for batch in batches(buf, position, result.valid_bytes):
            if batch.max_timestamp < target:
                continue
            for record in records(buf, batch):
                if record.timestamp >= target and record.offset >= starting_offset:
                    # FileRecords.maybeLeaderEpoch: only -1 means no epoch; any other value is answered as it is
                    return record.timestamp, record.offset, batch.partition_leader_epoch
    return None


def _max_timestamp(part: RecoveredPartition) -> tuple[int, int, int] | None:
    """``MAX_TIMESTAMP``: the first record of the first batch that holds the log's largest timestamp."""
    if not part.segments:
        return None
    seg = max(part.segments, key=lambda s: s.result.time_index.last_entry()[0])  # max: the first of equals
    max_ts, ts_offset = seg.result.time_index.last_entry()
    _, position = seg.result.offset_index.lookup(ts_offset)
    with open_log(seg.log_path) as buf:
        for batch in batches(buf, position, seg.result.valid_bytes):
            if batch.max_timestamp != max_ts:
                continue
            if batch.magic == 0:
                return None
            for record in records(buf, batch):
                if record.timestamp == max_ts:
                    return batch.max_timestamp, record.offset, _epoch(batch.partition_leader_epoch)
            return None
    return None


def list_offset(partition_dir: str | os.PathLike, target: int, config: LogConfig | None = None,
                log_start_offset: int | None = None) -> OffsetAnswer:
    """What ``fetchOffsetByTimestamp(target)`` answers for this partition dir.

    ``log_start_offset`` is the partition's ``log-start-offset-checkpoint`` entry (None: none; ``offsets_in_dir``
    reads it from the log dir).
    """
    partition_dir = os.fspath(partition_dir)
    name = parse_partition_dir_name(os.path.basename(partition_dir.rstrip(os.sep)))
    part = recovered_partition(partition_dir, config or LogConfig(), log_start_offset)
    answer = OffsetAnswer(name.topic, name.partition)
    if target == EARLIEST_TIMESTAMP:
        first = part.epochs[0] if part.epochs else None
        epoch = first[0] if first is not None and first[1] <= part.log_start_offset else NO_EPOCH
        return _replace(answer, part.log_start_offset, NO_TIMESTAMP, epoch)
    if target == LATEST_TIMESTAMP:
        return _replace(answer, part.log_end_offset, NO_TIMESTAMP, part.epochs[-1][0] if part.epochs else NO_EPOCH)
    magics = {m for s in part.segments for m in s.result.magics}
    if magics == {0}:
        return OffsetAnswer(name.topic, name.partition, error=(
            "Cannot search offsets based on timestamp: the log holds magic 0 batches only, which have no "
            "timestamps (Kafka: UnsupportedForMessageFormatException)"))
    if target == MAX_TIMESTAMP:
        found = _max_timestamp(part)
    else:
        seg = next((s for s in part.segments if s.segment.largest_timestamp(s.result.time_index)[0] >= target), None)
        found = _search(seg, target, part.log_start_offset) if seg is not None else None
    if found is None:
        return answer
    timestamp, offset, epoch = found
    return _replace(answer, offset, timestamp, epoch)


def _replace(answer: OffsetAnswer, offset: int, timestamp: int, epoch: int) -> OffsetAnswer:
    return OffsetAnswer(answer.topic, answer.partition, offset, timestamp, epoch)


def log_start_offsets(log_dir: str | os.PathLike) -> dict[tuple[str, int], int]:
    """The log dir's ``log-start-offset-checkpoint`` (empty when absent)."""
    path = os.path.join(os.fspath(log_dir), LOG_START_OFFSET_CHECKPOINT)
    return read_offset_checkpoint(path) if os.path.exists(path) else {}


__all__ = ["EARLIEST_TIMESTAMP", "LATEST_TIMESTAMP", "MAX_TIMESTAMP", "OffsetAnswer", "RecoveredPartition",
           "list_offset", "log_start_offsets", "parse_target", "recovered_partition"]
