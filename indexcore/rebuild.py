"""``segdex rebuild``: regenerate index files of partition directories or single ``.log`` files.

Writes only index files, each atomically, and only where the bytes differ;
never touches a ``.log``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field

from .atomic_file import fsync_dir, same_content, write_atomic
from .errors import InvalidLayoutException
from .layout import LOG_FILE_SUFFIX, parse_segment_file_name
from .log_config import LogConfig
from .log_dir import ensure_not_locked, log_dir_of
from .log_segments import STATUS_UNREADABLE, PartitionRecovery, SegmentRecovery, segment_logs


@dataclass
class RebuildOutcome:
    segment: SegmentRecovery
    written: list[str] = field(default_factory=list)  # paths replaced or created
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


def write_index_files(segment: SegmentRecovery, target_dir: str, fsync_directory: bool = True) -> RebuildOutcome:
    """Write a recovered segment's index files into ``target_dir``, skipping files already identical."""
    outcome = RebuildOutcome(segment)
    stem = os.path.join(target_dir, os.path.basename(segment.log_path)[: -len(LOG_FILE_SUFFIX)])
    for suffix, data in segment.files.items():
        path = stem + suffix
        if data is None:
            continue  # Kafka has no such file (a .txnindex with no aborted transaction)
        if same_content(path, data):
            outcome.unchanged.append(path)
            continue
        write_atomic(path, data, fsync_directory=False)
        outcome.written.append(path)
    if outcome.written and fsync_directory:
        fsync_dir(target_dir)
    return outcome


def _targets(path: str) -> tuple[str, list[tuple[int, str]], list[str]]:
    """(partition dir, [(base offset, log path)], misnamed) for a partition directory or a single .log."""
    if os.path.isdir(path):
        logs, misnamed = segment_logs(path)
        return path, logs, [os.path.join(path, m) for m in misnamed]
    if not os.path.exists(path):
        raise FileNotFoundError(path)
    name = os.path.basename(path)
    if not name.endswith(LOG_FILE_SUFFIX):
        raise InvalidLayoutException(f"{path}: not a .log segment file nor a partition directory")
    try:
        base = parse_segment_file_name(name).base_offset
    except InvalidLayoutException:
        return os.path.dirname(os.path.abspath(path)), [], [path]
    return os.path.dirname(os.path.abspath(path)), [(base, path)], []


def rebuild(path: str, config: LogConfig, out_dir: str | None = None,
            native: bool | None = None) -> Iterator[RebuildOutcome | tuple[str, str]]:
    """Rebuild one PATH; yields an outcome per segment and ``(path, reason)`` for misnamed files."""
    partition_dir, logs, misnamed = _targets(path)
    ensure_not_locked(log_dir_of(partition_dir))
    for m in misnamed:
        yield m, "not a segment file name (expected a 20-digit base offset, e.g. 00000000000000001000.log)"
    if out_dir is None:
        target = partition_dir
    else:
        name = os.path.basename(os.path.abspath(partition_dir))
        target = os.path.join(out_dir, name)
        os.makedirs(target, exist_ok=True)
    recovery = PartitionRecovery(config)
    for base, log_path in logs:
        segment = recovery.recover_segment(log_path, base, native)
        if segment.files and segment.status != STATUS_UNREADABLE:
            yield write_index_files(segment, target)
        else:
            yield RebuildOutcome(segment)

