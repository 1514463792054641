"""Trim over-long index files of non-active segments, as Kafka's ``AbstractIndex.trimToValidSize`` leaves them.

A closed segment's ``.index``/``.timeindex`` hold exactly ``entries x entry size`` bytes. Longer files come from
a crash while the segment was active (preallocated to ``segment.index.bytes`` and zero-filled) or from a copy that
turned sparse files dense. Their valid size is the entries before the first all-zero slot; everything after it
must be zeros, or the file is reported as corrupt and left alone (``segdex rebuild`` regenerates it). The active
segment (the highest base offset of a partition) is skipped: Kafka keeps its indexes preallocated.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from enum import StrEnum

from segdex.indexcore.config.log_config import is_cluster_metadata
from segdex.indexcore.errors import CorruptIndexException, InvalidLayoutException, SegdexError
from segdex.indexcore.fs.atomic_file import remove_temporaries, write_atomic
from segdex.indexcore.fs.file_access import NotRegularFileException, open_regular
from segdex.indexcore.index.abstract_index import round_down
from segdex.indexcore.index.offset_index import ENTRY_SIZE as OFFSET_ENTRY_SIZE
from segdex.indexcore.index.offset_index import sanity_check as offset_sanity_check
from segdex.indexcore.index.offset_index import trimmed_entry_count as offset_entry_count
from segdex.indexcore.index.time_index import ENTRY_SIZE as TIME_ENTRY_SIZE
from segdex.indexcore.index.time_index import sanity_check as time_sanity_check
from segdex.indexcore.index.time_index import trimmed_entry_count as time_entry_count
from segdex.indexcore.log.layout import (
    INDEX_FILE_SUFFIX,
    LOG_FILE_SUFFIX,
    TIME_INDEX_FILE_SUFFIX,
    filename_prefix_from_offset,
    parse_segment_file_name,
)
from segdex.indexcore.log.log_dir import hold_lock, is_locked, list_log_dir
from segdex.indexcore.log.unloadable import Unloadable, unloadable_refusal
from segdex.indexcore.record.file_records import batches, open_log


class IndexFileState(StrEnum):
    """What trimming finds in one index file (a file-level vocabulary, not a segment's ``SegmentStatus``)."""

    OK = "ok"  # already trimmed
    OVERLONG = "overlong"  # zero tail: trim to valid_bytes
    TRIMMED = "trimmed"
    CORRUPT = "corrupt"  # non-zero bytes after the entries, or entries out of order: not touched
    UNREADABLE = "unreadable"

    @property
    def needs_attention(self) -> bool:
        return self in (IndexFileState.CORRUPT, IndexFileState.UNREADABLE)


STATUS_OK, STATUS_OVERLONG, STATUS_TRIMMED, STATUS_CORRUPT, STATUS_UNREADABLE = IndexFileState

_KINDS = {
    INDEX_FILE_SUFFIX: (OFFSET_ENTRY_SIZE, offset_entry_count, offset_sanity_check),
    TIME_INDEX_FILE_SUFFIX: (TIME_ENTRY_SIZE, time_entry_count, time_sanity_check),
}


@dataclass
class IndexFileCheck:
    """One index file of a non-active segment and what trimming finds or did."""

    path: str
    base_offset: int
    suffix: str
    size_bytes: int
    valid_bytes: int
    entries: int
    status: str
    reason: str = ""

    @property
    def reclaimable_bytes(self) -> int:
        return self.size_bytes - self.valid_bytes if self.status in (STATUS_OVERLONG, STATUS_TRIMMED) else 0


def valid_index_bytes(data: bytes, suffix: str, base_offset: int, zero_first_entry: bool = False
                      ) -> tuple[int, int]:
    """(entries, valid bytes) of an index file that may carry a zero tail; CorruptIndexException when bytes
    after the entries are not all zero or the entries fail Kafka's sanity check. ``zero_first_entry``: a time
    index whose first slot may be the real entry (0, 0) (``first_time_entry_may_be_zero``)."""
    entry_size, count, sanity = _KINDS[suffix]
    entries = time_entry_count(data, zero_first_entry) if suffix == TIME_INDEX_FILE_SUFFIX else count(data)
    valid = entries * entry_size
    if data.count(0, valid) != len(data) - valid:
        raise CorruptIndexException(
            f"non-zero bytes after the {entries} entries ({valid} bytes): not a zero-padded index")
    sanity(bytes(data[:valid]), base_offset)
    return entries, valid


def first_time_entry_may_be_zero(log_path: str, base_offset: int) -> bool:
    """Whether twelve zero bytes, the entry (timestamp 0, relative offset 0), can open this segment's time index:
    its first batch is the one offset ``base_offset`` with largest timestamp 0 (Kafka indexes a batch's largest
    timestamp at the batch's last offset). When the ``.log`` cannot be read it may be, so nothing is trimmed."""
    try:
        with open_log(log_path) as buf:
            first = next(batches(buf, 0, len(buf)), None)
    except (OSError, SegdexError):
        return True
    return first is not None and first.max_timestamp == 0 and first.last_offset == base_offset


def check_index_file(path: str, suffix: str, base_offset: int) -> IndexFileCheck:
    """Inspect one ``.index``/``.timeindex`` file (reads only its last slot when it is already trimmed)."""
    entry_size = _KINDS[suffix][0]
    try:
        size = os.path.getsize(path)
        with open_regular(path) as f:
            usable = round_down(size, entry_size)
            if size == usable and size:
                f.seek(size - entry_size)
                if f.read(entry_size).strip(b"\0"):
                    return IndexFileCheck(path, base_offset, suffix, size, size, size // entry_size, STATUS_OK)
                f.seek(0)
            data = f.read()
    except OSError as e:
        return IndexFileCheck(path, base_offset, suffix, 0, 0, 0, STATUS_UNREADABLE, f"{path}: {e.strerror or e}")
    except NotRegularFileException as e:
        return IndexFileCheck(path, base_offset, suffix, 0, 0, 0, STATUS_UNREADABLE, str(e))
    zero_first = (suffix == TIME_INDEX_FILE_SUFFIX and data[:TIME_ENTRY_SIZE] == bytes(TIME_ENTRY_SIZE)
                  and first_time_entry_may_be_zero(path[:-len(suffix)] + LOG_FILE_SUFFIX, base_offset))
    try:
        entries, valid = valid_index_bytes(data, suffix, base_offset, zero_first)
    except CorruptIndexException as e:
        return IndexFileCheck(path, base_offset, suffix, size, size, 0, STATUS_CORRUPT,
                              f"{path}: {e}; run `segdex rebuild` on its partition")
    status = STATUS_OK if valid == size else STATUS_OVERLONG
    reason = f"{size - valid} bytes after its {entries} entries are zeros" if status == STATUS_OVERLONG else ""
    return IndexFileCheck(path, base_offset, suffix, size, valid, entries, status, reason)


def check_partition(partition_dir: str) -> list[IndexFileCheck]:
    """Index files of the non-active segments of a partition directory (segments that have a live ``.log``)."""
    logs = []
    for name in os.listdir(partition_dir):
        if name.endswith(LOG_FILE_SUFFIX):
            try:
                logs.append(parse_segment_file_name(name).base_offset)
            except InvalidLayoutException:
                continue
    logs.sort()
    checks = []
    for base in logs[:-1]:  # the last one is the active segment
        stem = os.path.join(partition_dir, filename_prefix_from_offset(base))
        for suffix in _KINDS:
            if os.path.exists(stem + suffix):
                checks.append(check_index_file(stem + suffix, suffix, base))
    return checks


def trim(check: IndexFileCheck) -> IndexFileCheck:
    """Atomically replace an over-long index file by its valid prefix (mtime kept); re-checks the file first."""
    fresh = check_index_file(check.path, check.suffix, check.base_offset)
    if fresh.status != STATUS_OVERLONG:
        return fresh
    st = os.stat(check.path)
    with open_regular(check.path) as f:
        data = f.read(fresh.valid_bytes)
    write_atomic(check.path, data)
    os.utime(check.path, ns=(st.st_atime_ns, st.st_mtime_ns))
    fresh.status = STATUS_TRIMMED
    return fresh


@dataclass
class TrimOutcome:
    log_dir: str
    checks: list[IndexFileCheck] = field(default_factory=list)
    error: str | None = None
    applied: bool = False
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why)
    unloadable: list[Unloadable] = field(default_factory=list)  # what a broker's start trips on (log_dir.unloadable)
    removed_temporaries: list[str] = field(default_factory=list)

    @property
    def reclaimable_bytes(self) -> int:
        return sum(c.reclaimable_bytes for c in self.checks)

    @property
    def needs_attention(self) -> bool:
        return bool(self.error) or bool(self.unloadable) or any(
            c.status in (STATUS_CORRUPT, STATUS_UNREADABLE) for c in self.checks)


def trim_log_dir(log_dir: str, apply: bool = False, allow_unloadable: bool = False) -> TrimOutcome:
    """Find (and with ``apply`` trim) over-long index files in every partition of a log dir; never raises on
    bad input. Apply holds the dir's ``.lock`` and refuses a dir a broker holds, and one a broker's start trips on
    (``outcome.unloadable``) unless ``allow_unloadable``."""
    log_dir = os.fspath(log_dir)
    outcome = TrimOutcome(log_dir)
    try:
        listing = list_log_dir(log_dir)
        outcome.unloadable = listing.unloadable
        for p in listing.partitions:
            if is_cluster_metadata(p.topic):
                outcome.skipped.append((p.path, "the KRaft metadata log: never touched"))
                continue
            try:
                outcome.checks.extend(check_partition(p.path))
            except OSError as e:
                outcome.checks.append(IndexFileCheck(p.path, -1, "", 0, 0, 0, STATUS_UNREADABLE,
                                                     f"{p.path}: {e.strerror or e}"))
        if not apply:
            if is_locked(log_dir):
                outcome.error = (f"{log_dir}: its .lock is held by another process (a running Kafka broker?): "
                                 f"--apply would be refused")
            return outcome
        if outcome.unloadable and not allow_unloadable:
            outcome.error = unloadable_refusal(log_dir, outcome.unloadable)
            return outcome
        with hold_lock(log_dir):
            outcome.removed_temporaries = remove_temporaries(log_dir)
            for p in listing.partitions:
                if not is_cluster_metadata(p.topic):
                    outcome.removed_temporaries += remove_temporaries(p.path)
            outcome.checks = [trim(c) if c.status == STATUS_OVERLONG else c for c in outcome.checks]
            outcome.applied = True
    except (SegdexError, OSError) as e:
        outcome.error = f"{log_dir}: {e.strerror}" if isinstance(e, OSError) and e.strerror else str(e)
    return outcome
