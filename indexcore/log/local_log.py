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
from segdex.indexcore.log.layout import filename_prefix_from_offset, parse_segment_file_name
from segdex.indexcore.log.log_segment import last_batch
from segdex.indexcore.record.file_records import open_log

CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
DELETED_SUFFIX = ".deleted"
KRAFT_SNAPSHOT_DELETED_SUFFIX = ".checkpoint.deleted"  # LogLoader leaves these to KafkaMetadataLog
SEGMENT_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex")


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


def complete_swaps(partition_dir: str) -> list[str]:
    """What Kafka's ``LogLoader.load`` does with an interrupted cleaning's files before it loads a partition
    (``removeTempFilesAndCollectSwapFiles``, then its second and third passes), so that a later run starts where a
    broker's start would: ``.deleted`` files removed (a KRaft snapshot's aside); ``.swap`` files at or above the
    lowest ``.cleaned`` base offset removed (their operation never finished), then the ``.cleaned`` files; every
    file of a live segment in the offsets the ``.log.swap`` segments cover (from the lowest base to the highest
    next offset) removed; then every ``.swap`` file renamed in, an index's too when its ``.log`` was already
    swapped. Returns what it did, a line each (empty: nothing was left over). Files a replacement removes were kept
    in the quarantine before the first ``.cleaned`` file was written."""
    done: list[str] = []
    swaps = _remove_temp_files_and_collect_swap_files(partition_dir, done)
    covered = []  # (base, next offset) of each .log.swap segment
    for name in [n for n in swaps if n.endswith(".log" + SWAP_SUFFIX)]:
        base = parse_segment_file_name(name[: -len(SWAP_SUFFIX)]).base_offset
        with open_log(os.path.join(partition_dir, name)) as buf:
            last = last_batch(buf, 0, quiet=False)  # LogSegment.readNextOffset of the swapped segment
        covered.append((base, last.next_offset if last is not None else base))
    if covered:
        low, high = min(b for b, _ in covered), max(n for _, n in covered)
        for name in sorted(os.listdir(partition_dir)):
            offset = _offset_from_file(name)
            if not name.endswith(SWAP_SUFFIX) and offset is not None and low <= offset < high:
                os.unlink(os.path.join(partition_dir, name))
                done.append(f"removed {name} (replaced by the swap)")
    for name in swaps:
        os.rename(os.path.join(partition_dir, name), os.path.join(partition_dir, name[: -len(SWAP_SUFFIX)]))
        done.append(f"renamed {name} in")
    if done:
        fsync_dir(partition_dir)
    return done


def _remove_temp_files_and_collect_swap_files(partition_dir: str, done: list[str]) -> list[str]:
    """``LogLoader.removeTempFilesAndCollectSwapFiles``: the ``.deleted`` files removed, the ``.swap`` files at or
    above the lowest ``.cleaned`` base offset removed, then the ``.cleaned`` files; the ``.swap`` files left."""
    cleaned: list[str] = []
    swaps: list[str] = []
    for name in sorted(os.listdir(partition_dir)):
        if name.endswith(DELETED_SUFFIX) and not name.endswith(KRAFT_SNAPSHOT_DELETED_SUFFIX):
            os.unlink(os.path.join(partition_dir, name))
            done.append(f"removed {name}")
        elif name.endswith(CLEANED_SUFFIX):
            cleaned.append(name)
        elif name.endswith(SWAP_SUFFIX):
            swaps.append(name)
    min_cleaned = min((_offset_from_file(n) for n in cleaned), default=None)
    for name in [n for n in swaps if min_cleaned is not None and _offset_from_file(n) >= min_cleaned]:
        os.unlink(os.path.join(partition_dir, name))
        done.append(f"removed {name} (its cleaning never finished)")
        swaps.remove(name)
    for name in cleaned:
        os.unlink(os.path.join(partition_dir, name))
        done.append(f"removed {name}")
    return swaps


def _offset_from_file(name: str) -> int | None:
    """``LogFileUtils.offsetFromFile``: the number before the name's first dot; None when there is none."""
    try:
        return int(name[: name.index(".")])
    except ValueError:
        return None
