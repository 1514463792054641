"""Kafka's ``LeaderEpochFileCache``: the (epoch, start offset) entries of ``leader-epoch-checkpoint``, cut as the
log is cut.

Entries are in offset order, each epoch's start offset strictly above the previous one's. Kafka truncates the cache
from the end when the log is truncated (recovery, a follower's truncation) and from the start when the log start
offset moves (retention, ``DeleteRecords``); the file itself is ``checkpoints.read_leader_epoch_checkpoint``'s.
"""

from __future__ import annotations


def truncate_epochs_from_start(entries: list[tuple[int, int]], start_offset: int) -> list[tuple[int, int]]:
    """``LeaderEpochFileCache.truncateFromStart``: drop the leading entries starting at or below
    ``start_offset`` and re-add the last of them as ``(its epoch, start_offset)``."""
    removed = 0
    while removed < len(entries) and entries[removed][1] <= start_offset:
        removed += 1
    if not removed:
        return list(entries)
    return [(entries[removed - 1][0], start_offset), *entries[removed:]]


def truncate_epochs_from_end(entries: list[tuple[int, int]], end_offset: int) -> list[tuple[int, int]]:
    """``LeaderEpochFileCache.truncateFromEnd``: drop entries starting at or after ``end_offset``."""
    if end_offset < 0 or not entries or entries[-1][1] < end_offset:
        return list(entries)
    return [(e, o) for e, o in entries if o < end_offset]
