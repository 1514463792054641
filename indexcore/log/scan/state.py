"""The scan state: one flat ``array('q')`` shared by the Python reference kernel and the native kernel.

``LogSegment.recover`` keeps its loop variables here so that either kernel can advance them. The slot numbers
are defined once, below; ``_layout.h`` (generated from this module by ``gen_layout.py``) gives them to C.
"""

from __future__ import annotations

# (name, meaning) in slot order: the slot number of each name is its position.
SLOTS: tuple[tuple[str, str], ...] = (
    ("S_POSITION", "== validBytes: batches are contiguous from position 0"),
    ("S_END", "the end of the bytes to scan (the file size)"),
    ("S_BASE_OFFSET", "the segment's base offset"),
    ("S_INDEX_INTERVAL", "index.interval.bytes"),
    ("S_LAST_INDEX_ENTRY", "the position of the last offset-index entry (LogSegment's lastIndexEntry)"),
    ("S_MAX_TIMESTAMP", "the largest batch max timestamp so far"),
    ("S_OFFSET_OF_MAX_TIMESTAMP", "the last offset of the batch that set it"),
    ("S_LAST_OFFSET", "lastOffset of the last valid batch, -1 before any"),
    ("S_BATCHES", "valid batches so far"),
    ("S_RECORDS", "records so far"),
    ("S_LEADER_EPOCH", "the only partitionLeaderEpoch the fast path accepts (no epoch assignment needed)"),
    ("S_CODECS", "bitmask of 1 << compression codec"),
    ("S_MAGICS", "bitmask of 1 << magic"),
    ("S_FIRST_OFFSET", "baseOffset of the first batch, -1 before any"),
    ("S_RUN_PRODUCER_ID", "producerId of the run's idempotent batches, -1 before any: the fast path stops at another"),
    ("S_RUN_PRODUCER_EPOCH", "producerEpoch of the run's last batch with a producer id"),
    ("S_RUN_BASE_SEQUENCE", "baseSequence of that batch"),
    ("S_RUN_BASE_OFFSET", "baseOffset of that batch"),
    ("S_RUN_LAST_OFFSET", "lastOffset of that batch"),
    ("S_RUN_MAX_TIMESTAMP", "maxTimestamp of that batch"),
)

S_POSITION = 0
S_END = 1
S_BASE_OFFSET = 2
S_INDEX_INTERVAL = 3
S_LAST_INDEX_ENTRY = 4
S_MAX_TIMESTAMP = 5
S_OFFSET_OF_MAX_TIMESTAMP = 6
S_LAST_OFFSET = 7
S_BATCHES = 8
S_RECORDS = 9
S_LEADER_EPOCH = 10
S_CODECS = 11
S_MAGICS = 12
S_FIRST_OFFSET = 13
S_RUN_PRODUCER_ID = 14
S_RUN_PRODUCER_EPOCH = 15
S_RUN_BASE_SEQUENCE = 16
S_RUN_BASE_OFFSET = 17
S_RUN_LAST_OFFSET = 18
S_RUN_MAX_TIMESTAMP = 19
N_SLOTS = len(SLOTS)

assert all(globals()[name] == i for i, (name, _) in enumerate(SLOTS)), "slot constants out of step with SLOTS"
