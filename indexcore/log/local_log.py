"""Kafka's ``LocalLog``: the read of an offset the log's constructor makes (``convert_to_offset_metadata_or_throw``)
and ``replaceSegments`` as the log cleaner uses it: a cleaned segment takes the place of the segments it was made
from, in the order Kafka's loader knows how to finish or roll back after a crash.

1. The new segment's files are written as ``<base>.log.cleaned`` (``.index``, ``.timeindex``, ``.txnindex``
   alike), each fsynced, with the modification time Kafka gives them; a crash now leaves ``.cleaned`` files, which
   Kafka's ``LogLoader`` deletes at load: the old segments are whole.
2. They are renamed ``.swap``: from the first rename on, Kafka's load completes the swap (it deletes the segments
   the swap's offsets cover and renames the swap in).
3. The old segments are renamed ``.deleted`` (Kafka's load deletes those), the ``.swap`` files renamed to their
   live names, the directory fsynced, and the snapshots of the bases that are gone renamed ``.deleted``.
4. The ``.deleted`` files are removed (Kafka removes them after ``file.delete.delay.ms``).

Nothing is lost: before step 1 every file the replacement removes is copied durably under the quarantine (unless
the caller discards them), with a ``manifest.json`` saying where each came from and how to put it back. The caller
holds the log dir's ``.lock``.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Sequence

from segdex.indexcore.errors import OffsetOutOfRangeException, OffsetReadException
from segdex.indexcore.fs.atomic_file import fsync_dir, open_temporary, write_atomic
from segdex.indexcore.index.offset_index import OffsetIndex
from segdex.indexcore.log.cleaner import CleanedSegment
from segdex.indexcore.log.layout import (
    CLEANED_FILE_SUFFIX,
    DELETED_FILE_SUFFIX,
    SEGMENT_SUFFIXES,
    SWAP_FILE_SUFFIX,
    filename_prefix_from_offset,
)
from segdex.indexcore.log.log_segment import LogSegment

CLEANED_SUFFIX = CLEANED_FILE_SUFFIX
SWAP_SUFFIX = SWAP_FILE_SUFFIX
DELETED_SUFFIX = DELETED_FILE_SUFFIX


def convert_to_offset_metadata_or_throw(segments: Sequence[tuple[int, str, OffsetIndex, int | None]], offset: int,
                                        log_end_offset: int) -> int:
    """``LocalLog.convertToOffsetMetadataOrThrow``: ``offset`` as the read from it finds it (``LocalLog.read``), in
    ``segments`` (base offset, ``.log`` path, offset index, bytes the segment holds, None: its whole file; offset
    order). The read starts at the floor segment of ``offset`` (``LogSegment.read``, then ``translate_offset``: a
    search from the index entry at or below it that asks each batch it passes for its base offset); a segment
    without a batch that reaches ``offset`` hands the read to the next. Kafka 4.4
    takes the found batch's base offset: the offset itself where a batch starts there, else the batch holding it,
    else the next batch; the log end offset where none is left.

    Raises ``OffsetReadException`` with what the read throws: a size field below 14 (``CorruptRecordException``),
    a batch whose magic byte reads below 2 that does not load as the older format (``_base_offset``), an offset
    past the log end (``OffsetOutOfRangeException``)."""
    if offset == log_end_offset:
        return offset
    if offset > log_end_offset:
        raise OffsetReadException(OffsetOutOfRangeException(
            f"offset {offset} past the log end offset {log_end_offset}"), offset, None)
    first = max(bisect.bisect_right([s[0] for s in segments], offset) - 1, 0)
    for base, log_path, index, size in segments[first:]:
        found = LogSegment(log_path, base).translate_offset(offset, index, size)
        if found is not None:
            return found.base_offset
    return log_end_offset


def _files_of(partition_dir: str, base: int, suffixes=SEGMENT_SUFFIXES) -> list[str]:
    stem = os.path.join(partition_dir, filename_prefix_from_offset(base))
    return [stem + s for s in suffixes if os.path.exists(stem + s)]


def _gone_snapshots(partition_dir: str, cleaned: CleanedSegment) -> list[str]:
    """The producer snapshots of the replaced bases other than the cleaned segment's own (Kafka deletes them)."""
    return [p for base in cleaned.replaces if base != cleaned.base_offset
            for p in _files_of(partition_dir, base, (".snapshot",))]


def replaced_files(partition_dir: str, cleaned: CleanedSegment) -> list[str]:
    """Every file the replacement removes: the old segments' files, and the snapshots of the bases that go."""
    return [p for base in cleaned.replaces for p in _files_of(partition_dir, base)] + _gone_snapshots(
        partition_dir, cleaned)


def open_cleaned_log(partition_dir: str, base_offset: int):
    """A temporary for the ``.log`` of the segment cleaned at ``base_offset`` to be streamed into (the attributes
    its ``.log.cleaned`` gets): (its path, the open file). ``replace_segments(log_written=...)`` takes it in."""
    stem = os.path.join(partition_dir, filename_prefix_from_offset(base_offset))
    return open_temporary(stem + ".log" + CLEANED_SUFFIX, template=stem + ".log")


def replace_segments(partition_dir: str, cleaned: CleanedSegment, log_written: str | None = None) -> list[str]:
    """``LocalLog.replaceSegments`` with one cleaned segment (steps 1-4 of the module doc); ``log_written``: its
    ``.log`` already streamed into this temporary (``open_cleaned_log``) and fsynced, not in ``cleaned.log``.
    Returns the files it put in place."""
    stem = os.path.join(partition_dir, filename_prefix_from_offset(cleaned.base_offset))
    template = stem + ".log"
    files = {".log": cleaned.log, ".index": cleaned.offset_index, ".timeindex": cleaned.time_index,
             ".txnindex": cleaned.txn_index}
    written = []
    for suffix, data in files.items():
        if data is None:
            continue
        path = stem + suffix + CLEANED_SUFFIX
        if suffix == ".log" and log_written is not None:
            os.replace(log_written, path)
        else:
            write_atomic(path, data, fsync_directory=False, template=template)
        if suffix != ".txnindex":  # Kafka sets the log's and the two indexes' times, not the txn index's
            os.utime(path, ns=(os.stat(path).st_atime_ns, cleaned.mtime_ms * 1_000_000))
        written.append(stem + suffix)
    fsync_dir(partition_dir)
    for live in written:  # .cleaned -> .swap: Kafka's load now completes the swap
        os.rename(live + CLEANED_SUFFIX, live + SWAP_SUFFIX)
    fsync_dir(partition_dir)
    old = [p for base in sorted(cleaned.replaces) for p in _files_of(partition_dir, base)]
    for path in old:
        os.rename(path, path + DELETED_SUFFIX)
    for live in written:
        os.rename(live + SWAP_SUFFIX, live)
    snapshots = _gone_snapshots(partition_dir, cleaned)
    for path in snapshots:
        os.rename(path, path + DELETED_SUFFIX)
    fsync_dir(partition_dir)
    for path in old + snapshots:
        os.unlink(path + DELETED_SUFFIX)
    fsync_dir(partition_dir)
    return written

