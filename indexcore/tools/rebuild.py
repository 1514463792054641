"""``segdex rebuild``: regenerate index files of partition directories or single ``.log`` files.

Writes only index files, each atomically, and only where the bytes differ;
never touches a ``.log``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field

from segdex.indexcore.config.log_config import LogConfig, is_cluster_metadata
from segdex.indexcore.errors import InvalidLayoutException, UsageException
from segdex.indexcore.fs.atomic_file import fsync_dir, remove_temporaries, same_content, write_atomic
from segdex.indexcore.log.layout import LOG_FILE_SUFFIX, parse_partition_dir_name, parse_segment_file_name
from segdex.indexcore.log.log_dir import describe_dir, ensure_not_locked, hold_lock, log_dir_of
from segdex.indexcore.log.log_segments import PartitionRecovery, SegmentRecovery, segment_logs
from segdex.indexcore.status import SegmentStatus


@dataclass
class RebuildOutcome:
    segment: SegmentRecovery
    written: list[str] = field(default_factory=list)  # paths replaced or created
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class RebuildNotice:
    """Something about a path that is not a segment's outcome: a misnamed ``.log`` (needs attention), or a
    temporary file of an interrupted run that was removed (information)."""

    path: str
    message: str
    kind: str  # "misnamed" or "removed"

    @property
    def needs_attention(self) -> bool:
        return self.kind == "misnamed"


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
        write_atomic(path, data, fsync_directory=False, template=_beside(segment.log_path, target_dir))
        outcome.written.append(path)
    if outcome.written and fsync_directory:
        fsync_dir(target_dir)
    return outcome


def _beside(log_path: str, target_dir: str) -> str | None:
    """The ``.log`` whose mode new index files take: the one beside them, else the source segment."""
    here = os.path.join(target_dir, os.path.basename(log_path))
    return here if os.path.exists(here) else log_path


def _targets(path: str) -> tuple[str, list[tuple[int, str]], list[str]]:
    """(partition dir, [(base offset, log path)], misnamed) for a partition directory or a single .log."""
    if os.path.isdir(path):
        if describe_dir(path) == "log_dir":
            raise UsageException(
                f"{path}: a log dir, not a partition directory: give one of its partition directories "
                f"(e.g. {os.path.join(path, '<topic>-<partition>')}), or run `segdex reindex {path}`")
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
            native: bool | None = None) -> Iterator[RebuildOutcome | RebuildNotice]:
    """Rebuild one PATH; yields an outcome per segment and a ``RebuildNotice`` for other findings.

    In place, the partition's log dir ``.lock`` is held from before the first write to after the last (refused
    when a broker holds it), segdex temporaries a killed run left in the partition are removed, and the KRaft
    metadata log is refused. With ``out_dir`` the source is only read (still refused while a broker holds it).
    """
    partition_dir, logs, misnamed = _targets(path)
    log_dir = log_dir_of(partition_dir)
    if out_dir is not None:
        ensure_not_locked(log_dir)
        yield from _rebuild(partition_dir, logs, misnamed, config, out_dir, native)
        return
    try:
        topic = parse_partition_dir_name(os.path.basename(os.path.abspath(partition_dir))).topic
    except InvalidLayoutException:
        topic = ""
    if is_cluster_metadata(topic):
        raise UsageException(f"{partition_dir}: the KRaft metadata log (__cluster_metadata) is never rewritten in "
                             f"place; use --out-dir to look at its rebuilt indexes")
    with hold_lock(log_dir):
        for tmp in remove_temporaries(partition_dir):
            yield RebuildNotice(tmp, "temporary file left by an interrupted segdex run", "removed")
        yield from _rebuild(partition_dir, logs, misnamed, config, None, native)


def _rebuild(partition_dir: str, logs: list[tuple[int, str]], misnamed: list[str], config: LogConfig,
             out_dir: str | None, native: bool | None) -> Iterator[RebuildOutcome | RebuildNotice]:
    for m in misnamed:
        yield RebuildNotice(m, "not a segment file name (expected a 20-digit base offset, e.g. "
                               "00000000000000001000.log)", "misnamed")
    if out_dir is None:
        target = partition_dir
    else:
        name = os.path.basename(os.path.abspath(partition_dir))
        target = os.path.join(out_dir, name)
        os.makedirs(target, exist_ok=True)
    recovery = PartitionRecovery(config)
    for base, log_path in logs:
        segment = recovery.recover_segment(log_path, base, native)
        if segment.files and segment.status != SegmentStatus.UNREADABLE:
            yield write_index_files(segment, target)
        else:
            yield RebuildOutcome(segment)
