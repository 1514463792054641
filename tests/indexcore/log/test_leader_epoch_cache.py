"""Kafka's ``LeaderEpochFileCache`` truncations (``indexcore.log.leader_epoch_cache``): the entries left when the log
start offset moves (retention, the load's checkpointed log start offset) and when the log end is cut."""

from __future__ import annotations

from segdex.indexcore.log.leader_epoch_cache import truncate_epochs_from_end, truncate_epochs_from_start


def test_truncate_epochs_from_start():
    """``truncateFromStart``: entries starting at or below the offset go, the last of them re-added at it."""
    entries = [(0, 0), (1, 381), (2, 761), (3, 1146)]
    assert truncate_epochs_from_start(entries, 0) == entries
    assert truncate_epochs_from_start(entries, 381) == [(1, 381), (2, 761), (3, 1146)]
    assert truncate_epochs_from_start(entries, 831) == [(2, 831), (3, 1146)]
    assert truncate_epochs_from_start(entries, 5000) == [(3, 5000)]
    assert truncate_epochs_from_start([(4, 100)], 50) == [(4, 100)]
    assert truncate_epochs_from_start([], 50) == []


def test_truncate_epochs_from_end():
    """``LeaderEpochFileCache.truncateFromEnd``: entries with a start offset at or past the end are removed."""
    entries = [(0, 0), (1, 10), (2, 20)]
    assert truncate_epochs_from_end(entries, 20) == [(0, 0), (1, 10)]
    assert truncate_epochs_from_end(entries, 21) == entries
    assert truncate_epochs_from_end(entries, 10) == [(0, 0)]
    assert truncate_epochs_from_end(entries, 0) == []
