"""Carrying out a retention plan on disk, crash-safely (the file side of ``UnifiedLog.deleteOldSegments``).

Apply order; each step leaves a directory a broker loads correctly, and a re-run finishes the job:

1. roll: create the empty segment at the log end offset, when every segment goes;
2. ``log-start-offset-checkpoint`` (and ``recovery-point-offset-checkpoint`` raised to the log start offset),
   atomically. A broker that loads segments below the checkpointed log start offset deletes them itself;
3. ``leader-epoch-checkpoint`` truncated from the start, atomically;
4. rename each deleted segment's files to ``*.deleted``, oldest segment first, ``.log`` first, then its
   ``.snapshot`` (``LogSegment.changeFileSuffixes``). A ``.log.deleted`` whose other files are still live is
   finished on the next run; the broker itself removes orphaned index files and everything ``*.deleted`` when
   it loads.

The caller holds the log dir's ``.lock`` (``indexcore.log_dir.hold_lock``) throughout.
"""

from __future__ import annotations

import os
from typing import Protocol

from segdex.indexcore.errors import InvalidLayoutException
from segdex.indexcore.fs.atomic_file import FileAttributes, create_empty, fsync_dir, same_content, write_atomic
from segdex.indexcore.log.checkpoints import format_leader_epoch_checkpoint, mode_template, write_offset_checkpoint
from segdex.indexcore.log.layout import (
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
from segdex.indexcore.retention.policy import RetentionPlan

# Files renamed ``*.deleted`` with a segment, in Kafka's order (``LogSegment.changeFileSuffixes``), then the
# producer snapshot named after it.
SEGMENT_FILE_SUFFIXES = (LOG_FILE_SUFFIX, INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX)
RENAMED_SUFFIXES = (*SEGMENT_FILE_SUFFIXES, PRODUCER_SNAPSHOT_FILE_SUFFIX)


class PlannedPartition(Protocol):
    """What apply needs of a partition's outcome (``retention.PartitionRetention``)."""

    partition_dir: str
    plan: RetentionPlan
    renamed: list[str]
    applied: bool
    error: str | None


def interrupted_leftovers(partition_dir: str) -> list[str]:
    """The live files of segments whose ``.log`` is already ``.log.deleted`` (an apply that was interrupted),
    in rename order: both how a run detects leftovers and what it renames to finish them."""
    names = set(os.listdir(partition_dir))
    leftovers = []
    for name in sorted(names):
        if not name.endswith(LOG_FILE_SUFFIX + DELETED_FILE_SUFFIX):
            continue
        try:
            base = parse_segment_file_name(name).base_offset
        except InvalidLayoutException:
            continue
        if segment_file_name(base, LOG_FILE_SUFFIX) in names:
            continue  # a live segment with that base offset: not ours to touch
        leftovers += [segment_file_name(base, s) for s in RENAMED_SUFFIXES[1:]
                      if segment_file_name(base, s) in names]
    return leftovers


def finish_interrupted(partition_dir: str) -> list[str]:
    """Rename the leftovers ``interrupted_leftovers`` finds; returns their names."""
    done = interrupted_leftovers(partition_dir)
    for name in done:
        os.replace(os.path.join(partition_dir, name), os.path.join(partition_dir, name + DELETED_FILE_SUFFIX))
    return done


def rename_segment(partition_dir: str, base_offset: int) -> list[str]:
    """Rename one segment's files ``*.deleted`` in Kafka's order; returns the names renamed."""
    renamed = []
    for suffix in RENAMED_SUFFIXES:
        name = segment_file_name(base_offset, suffix)
        src = os.path.join(partition_dir, name)
        try:
            os.replace(src, src + DELETED_FILE_SUFFIX)
        except FileNotFoundError:
            continue
        renamed.append(name)
    return renamed


def roll(partition_dir: str, offset: int, template: str | None) -> None:
    """A new empty segment at ``offset`` (0-byte ``.log``, ``.index`` and ``.timeindex``), as ``roll()`` leaves;
    owned like the partition directory, with the mode of the ``template`` segment's ``.log``."""
    attributes = FileAttributes.for_target(os.path.join(partition_dir, segment_file_name(offset, LOG_FILE_SUFFIX)),
                                           template)
    for suffix in (LOG_FILE_SUFFIX, INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX):
        create_empty(os.path.join(partition_dir, segment_file_name(offset, suffix)), attributes)
    fsync_dir(partition_dir)


def _roll_where_everything_goes(acting: list[PlannedPartition]) -> None:
    for p in acting:
        if p.plan.roll_offset is not None:
            last = p.plan.base_offsets_before[-1] if p.plan.base_offsets_before else None
            template = (os.path.join(p.partition_dir, segment_file_name(last, LOG_FILE_SUFFIX))
                        if last is not None else None)
            roll(p.partition_dir, p.plan.roll_offset, template)


def _write_checkpoints(log_dir: str, acting: list[PlannedPartition], checkpoints) -> None:
    """The new log start offsets (and recovery points raised to them), one atomic write per file.

    As ``LogManager.checkpointLogStartOffsetsInDir``: a partition has an entry only while its log start offset
    lies above its first segment's base offset (deleteRecords inside a segment); where retention leaves the
    log start offset at the first remaining segment, the broker writes no entry, and neither does segdex.
    """
    lso = dict(checkpoints.log_start_offsets)
    rp = dict(checkpoints.recovery_points)
    for p in acting:
        key = (p.plan.topic, p.plan.partition)
        if p.plan.deletions:
            start = max(lso.get(key, 0), p.plan.log_start_offset_after)
            remaining = p.plan.remaining_base_offsets
            if remaining and start <= remaining[0]:
                lso.pop(key, None)
            else:
                lso[key] = start
            if key in rp and rp[key] < p.plan.log_start_offset_after:
                rp[key] = p.plan.log_start_offset_after
    if lso != checkpoints.log_start_offsets:
        write_offset_checkpoint(os.path.join(log_dir, LOG_START_OFFSET_CHECKPOINT), lso)
    if rp != checkpoints.recovery_points:
        write_offset_checkpoint(os.path.join(log_dir, RECOVERY_POINT_CHECKPOINT), rp)


def _apply_partition(p: PlannedPartition) -> None:
    """Leader epochs, then the renames (oldest first) and the directory fsync; an error stops this partition."""
    try:
        if p.plan.deletions and p.plan.leader_epochs_after is not None:
            data = format_leader_epoch_checkpoint(p.plan.leader_epochs_after)
            path = os.path.join(p.partition_dir, LEADER_EPOCH_CHECKPOINT)
            if not same_content(path, data):
                write_atomic(path, data, template=mode_template(path))
        p.renamed.extend(finish_interrupted(p.partition_dir))
        for d in p.plan.deletions:
            p.renamed.extend(rename_segment(p.partition_dir, d.base_offset))
        fsync_dir(p.partition_dir)
        p.applied = True
    except OSError as e:
        p.error = f"{p.partition_dir}: apply stopped: {e.strerror or e}; re-run to finish"


def apply_plans(log_dir: str, partitions: list[PlannedPartition], checkpoints) -> None:
    """Carry out the plans of a log dir's partitions (and finish interrupted applies), in the order above."""
    acting = [p for p in partitions if not p.error and not p.plan.skipped
              and (p.plan.deletions or interrupted_leftovers(p.partition_dir))]
    if not acting:
        return
    _roll_where_everything_goes(acting)
    _write_checkpoints(log_dir, acting, checkpoints)
    for p in acting:
        _apply_partition(p)
