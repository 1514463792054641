"""Checks existing index files against the ``.log`` they describe.

``ok``: byte-identical to what Kafka's recovery writes. ``equivalent``: other
bytes, but every entry is one Kafka's read path answers correctly with (as the
broker's append path writes for multi-batch appends, or older brokers), or a
valid prefix followed by preallocated zeros. ``missing``: an index file is
absent. ``corrupt_index``: anything else.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from segdex.indexcore.errors import CorruptRecordException, SegdexError
from segdex.indexcore.fs.file_access import NotRegularFileException, read_regular
from segdex.indexcore.index.offset_index import ENTRY_SIZE as OFFSET_ENTRY_SIZE
from segdex.indexcore.index.offset_index import parse_offset_index
from segdex.indexcore.index.offset_index import trimmed_entry_count as offset_trimmed_count
from segdex.indexcore.index.time_index import ENTRY_SIZE as TIME_ENTRY_SIZE
from segdex.indexcore.index.time_index import parse_time_index
from segdex.indexcore.index.time_index import trimmed_entry_count as time_trimmed_count
from segdex.indexcore.log.layout import INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX, index_paths
from segdex.indexcore.log.log_segment import RecoveryResult
from segdex.indexcore.log.log_segments import SegmentRecovery
from segdex.indexcore.record.file_records import batches, open_log
from segdex.indexcore.record.record_batch import NO_TIMESTAMP
from segdex.indexcore.status import Reason, SegmentStatus


@dataclass
class Verdict:
    status: str
    reason: Reason | None = None


def check_offset_entries(buf, entries: list[tuple[int, int]], result: RecoveryResult) -> str | None:
    """Why these offset-index entries would mislead Kafka's lookups, or None if every entry is sound.

    An entry (o, p) is sound when p starts a valid batch, every batch before p ends below o, and o is an
    offset of the segment; lookups then land at or before the batch holding any target >= o.
    """
    for (o1, p1), (o2, p2) in zip(entries, entries[1:], strict=False):
        if o2 <= o1 or p2 <= p1:
            return f"offset index entries out of order: ({o1}, {p1}) then ({o2}, {p2})"
    i = 0
    prev_last = result.base_offset - 1
    try:
        for batch in batches(buf, 0, result.valid_bytes):
            while i < len(entries) and entries[i][1] <= batch.position:
                offset, position = entries[i]
                if position != batch.position:
                    return f"offset index entry ({offset}, {position}) does not point at a batch start"
                if not prev_last < offset <= result.last_offset:
                    return (f"offset index entry ({offset}, {position}): offset outside "
                            f"({prev_last}, {result.last_offset}] for the batch at that position")
                i += 1
            prev_last = batch.last_offset
    except CorruptRecordException:
        pass  # beyond valid bytes; not reached since we stop there
    if i < len(entries):
        return f"offset index entry {entries[i]} lies beyond the valid bytes ({result.valid_bytes})"
    return None


def check_time_entries(buf, entries: list[tuple[int, int]], result: RecoveryResult,
                       final_entry_required: bool = True) -> str | None:
    """Why these time-index entries are unsound, or None.

    An entry (t, o) is sound when o is the last offset of the first batch whose max timestamp reached t
    (strictly above all earlier batches), and entries grow; the last one must be the segment's largest
    timestamp, which Kafka reads back as the segment's max timestamp (``LogSegment.close`` appends it), unless
    ``final_entry_required`` is False: a segment Kafka never closes (the KRaft metadata log's active one).
    """
    for (t1, o1), (t2, o2) in zip(entries, entries[1:], strict=False):
        if t2 <= t1 or o2 < o1:
            return f"time index entries out of order: ({t1}, {o1}) then ({t2}, {o2})"
    j = 0
    running = NO_TIMESTAMP
    for batch in batches(buf, 0, result.valid_bytes):
        raised = batch.max_timestamp > running
        if raised:
            running = batch.max_timestamp
        while j < len(entries) and entries[j][1] <= batch.last_offset:
            ts, offset = entries[j]
            if offset != batch.last_offset or not raised or ts != running:
                return (f"time index entry ({ts}, {offset}) is not (max timestamp, last offset) of a batch "
                        f"that raised the segment's running max timestamp")
            j += 1
    if j < len(entries):
        return f"time index entry {entries[j]} lies beyond the valid bytes"
    if final_entry_required and result.max_timestamp > NO_TIMESTAMP and (
            not entries or entries[-1][0] != result.max_timestamp):
        return (f"time index does not end with the segment's largest timestamp {result.max_timestamp} "
                f"(Kafka reads the last entry as the segment's max timestamp)")
    return None


# (suffix, trimmed entry count, entry size, parser, entry checker) of the two sparse indexes
_SPARSE_INDEXES = (
    (INDEX_FILE_SUFFIX, offset_trimmed_count, OFFSET_ENTRY_SIZE, parse_offset_index, check_offset_entries),
    (TIME_INDEX_FILE_SUFFIX, time_trimmed_count, TIME_ENTRY_SIZE, parse_time_index, check_time_entries),
)


def _read_existing(segment: SegmentRecovery) -> dict[str, bytes | None] | Verdict:
    """The index files beside the segment (None where absent), or the verdict when they cannot be read."""
    try:
        return {suffix: read_regular(path) for suffix, path in index_paths(segment.log_path).items()}
    except OSError as e:
        return Verdict(SegmentStatus.UNREADABLE, Reason(f"cannot read index files: {e.strerror or e}",
                                                        getattr(e, "filename", None) or segment.log_path))
    except NotRegularFileException as e:  # a directory or FIFO where an index file belongs: Kafka cannot use it
        return Verdict(SegmentStatus.CORRUPT_INDEX, Reason(e.cause, e.path))


def _check_sparse_index(buf, suffix: str, data: bytes, path: str, result: RecoveryResult,
                        never_closed: bool = False) -> Verdict | str:
    """One ``.index``/``.timeindex`` that differs from the rebuild: ``corrupt_index`` when Kafka would trip on
    it, else a note saying why it is valid anyway. ``never_closed``: a preallocated time index need not end
    with the segment's largest timestamp (see ``verify_segment``)."""
    _, count_fn, size, parse, check = next(k for k in _SPARSE_INDEXES if k[0] == suffix)
    count = count_fn(data)
    if any(data[count * size:]):
        return Verdict(SegmentStatus.CORRUPT_INDEX, Reason(
            f"{len(data)} bytes do not hold whole entries followed by zero padding", path))
    entries = parse(data[:count * size], result.base_offset)
    if check is check_time_entries:
        problem = check(buf, entries, result, final_entry_required=not (never_closed and len(data) > count * size))
    else:
        problem = check(buf, entries, result)
    if problem:
        return Verdict(SegmentStatus.CORRUPT_INDEX, Reason(problem, path))
    if len(data) > count * size:
        return f"{os.path.basename(path)} has {len(data) - count * size} bytes of preallocated zeros"
    return f"{os.path.basename(path)} entries differ from a rebuild but are valid"


def _compare_entries(segment: SegmentRecovery, existing: dict[str, bytes | None],
                     never_closed: bool = False) -> Verdict:
    """Index files present but not byte-identical: ``corrupt_index`` or ``equivalent``."""
    result, want, paths = segment.result, segment.files, index_paths(segment.log_path)
    if (existing[TXN_INDEX_FILE_SUFFIX] or b"") != (want[TXN_INDEX_FILE_SUFFIX] or b""):
        return Verdict(SegmentStatus.CORRUPT_INDEX, Reason("aborted transactions differ from the ones the log's "
                                                           "control batches record", paths[TXN_INDEX_FILE_SUFFIX]))
    notes = []
    try:
        with open_log(segment.log_path) as buf:
            for suffix, *_ in _SPARSE_INDEXES:
                if existing[suffix] == want[suffix]:
                    continue
                checked = _check_sparse_index(buf, suffix, existing[suffix], paths[suffix], result, never_closed)
                if isinstance(checked, Verdict):
                    return checked
                notes.append(checked)
    except OSError as e:
        return Verdict(SegmentStatus.UNREADABLE, Reason(str(e.strerror or e), segment.log_path))
    except SegdexError as e:
        return Verdict(SegmentStatus.CORRUPT_INDEX, Reason(str(e), segment.log_path))
    return Verdict(SegmentStatus.EQUIVALENT, Reason("; ".join(notes), segment.log_path))


def verify_segment(segment: SegmentRecovery, never_closed: bool = False) -> Verdict:
    """Classify the index files beside ``segment.log_path`` against its rebuild (nothing is written).

    ``never_closed``: the segment is one Kafka keeps open with preallocated indexes even across a clean stop
    (the KRaft metadata log's active segment: the raft layer never closes it, so its time index lacks the
    final entry ``LogSegment.close`` would append); that state is then ``equivalent``, not ``corrupt_index``.
    """
    if segment.status in (SegmentStatus.UNREADABLE, SegmentStatus.ERROR):
        return Verdict(segment.status, segment.reason)
    assert segment.result is not None
    existing = _read_existing(segment)
    if isinstance(existing, Verdict):
        return existing
    if segment.status == SegmentStatus.CORRUPT_LOG_TAIL:
        return Verdict(SegmentStatus.CORRUPT_LOG_TAIL, segment.reason)
    absent = [s for s in (INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX) if existing[s] is None]
    if len(segment.result.txn_index) and existing[TXN_INDEX_FILE_SUFFIX] is None:
        absent.append(TXN_INDEX_FILE_SUFFIX)
    if absent:
        return Verdict(SegmentStatus.MISSING, Reason(f"no {', '.join(absent)} file", segment.log_path))
    want = segment.files
    if all(existing[s] == want[s] or (want[s] is None and not existing[s]) for s in want):
        return Verdict(SegmentStatus.OK)
    return _compare_entries(segment, existing, never_closed)


__all__ = ["Verdict", "verify_segment", "check_offset_entries", "check_time_entries"]
