"""Kafka's ``LocalLog.replaceSegments`` as the log cleaner uses it: a cleaned segment takes the place of the
segments it was made from, in the order Kafka's loader knows how to finish or roll back after a crash.

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

import os

from segdex.indexcore.fs.atomic_file import fsync_dir, open_temporary, write_atomic
from segdex.indexcore.log.cleaner import CleanedSegment
from segdex.indexcore.log.layout import (
    CLEANED_FILE_SUFFIX,
    DELETED_FILE_SUFFIX,
    SEGMENT_SUFFIXES,
    SWAP_FILE_SUFFIX,
    filename_prefix_from_offset,
)
from segdex.indexcore.log.log_loader import complete_swaps  # noqa: F401 - Kafka's load finishes a swap (the cleaner)

CLEANED_SUFFIX = CLEANED_FILE_SUFFIX
SWAP_SUFFIX = SWAP_FILE_SUFFIX
DELETED_SUFFIX = DELETED_FILE_SUFFIX


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

