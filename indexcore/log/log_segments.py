"""A partition's segments in offset order, recovered together as Kafka's ``LogLoader`` does.

Producer state (behind ``.txnindex``) and the leader-epoch cache carry over
from one segment to the next, so segments are always recovered in order.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.errors import InvalidLayoutException
from segdex.indexcore.fs.file_access import NotRegularFileException
from segdex.indexcore.log.layout import (
    INDEX_FILE_SUFFIX,
    LOG_FILE_SUFFIX,
    TIME_INDEX_FILE_SUFFIX,
    TXN_INDEX_FILE_SUFFIX,
    index_paths,
    parse_segment_file_name,
)
from segdex.indexcore.log.log_segment import LogSegment, RecoveryResult
from segdex.indexcore.log.producer_state import ProducerStateManager
from segdex.indexcore.status import Reason, SegmentStatus


@dataclass
class SegmentRecovery:
    """One segment's rebuild: the files Kafka's recovery would write, and what it found."""

    log_path: str
    base_offset: int
    status: SegmentStatus
    reason: Reason | None = None
    result: RecoveryResult | None = None
    files: dict[str, bytes | None] = field(default_factory=dict)  # suffix -> bytes; None: no such file

    @property
    def segment(self) -> LogSegment:
        return LogSegment(self.log_path, self.base_offset)


def segment_logs(partition_dir: str | os.PathLike) -> tuple[list[tuple[int, str]], list[str]]:
    """(base offset, path) of every live ``.log`` in offset order, and the names of misnamed ``*.log`` files."""
    logs, misnamed = [], []
    for name in os.listdir(partition_dir):
        if not name.endswith(LOG_FILE_SUFFIX):
            continue
        try:
            parsed = parse_segment_file_name(name)
        except InvalidLayoutException:
            misnamed.append(name)
            continue
        logs.append((parsed.base_offset, os.path.join(os.fspath(partition_dir), name)))
    logs.sort()
    return logs, sorted(misnamed)


def index_files(result: RecoveryResult, txn_index_exists: bool = False) -> dict[str, bytes | None]:
    """The index files of a recovered, closed segment: trimmed, and a ``.txnindex`` only where Kafka has one.

    Kafka's recovery truncates an existing ``.txnindex`` to empty rather than deleting it.
    """
    txn = result.txn_index.to_bytes() if len(result.txn_index) or txn_index_exists else None
    return {
        INDEX_FILE_SUFFIX: result.offset_index.to_bytes(),
        TIME_INDEX_FILE_SUFFIX: result.time_index.to_bytes(),
        TXN_INDEX_FILE_SUFFIX: txn,
    }


class PartitionRecovery:
    """Recovers a partition's segments one after another, carrying producer state and leader epochs."""

    def __init__(self, config: LogConfig | None = None) -> None:
        self.config = config or LogConfig()
        self.producer_state = ProducerStateManager()
        self.leader_epochs: list[tuple[int, int]] = []

    def recover_segment(self, log_path: str, base_offset: int, native: bool | None = None) -> SegmentRecovery:
        try:
            result = LogSegment(log_path, base_offset).recover(
                index_interval_bytes=self.config.index_interval_bytes, producer_state=self.producer_state,
                leader_epochs=self.leader_epochs, max_index_size=self.config.segment_index_bytes, native=native)
        except OSError as e:
            return SegmentRecovery(log_path, base_offset, SegmentStatus.UNREADABLE,
                                   Reason(f"cannot read: {e.strerror or e}", log_path))
        except NotRegularFileException as e:
            return SegmentRecovery(log_path, base_offset, SegmentStatus.UNREADABLE, Reason(e.cause, e.path))
        if result.error:
            return SegmentRecovery(log_path, base_offset, SegmentStatus.ERROR, Reason(result.error, log_path), result)
        txn_exists = os.path.exists(index_paths(log_path)[TXN_INDEX_FILE_SUFFIX])
        files = index_files(result, txn_exists)
        if result.stop_reason and result.valid_bytes == result.size_bytes:
            # Kafka stopped at the last batch (its producer state could not take it) but truncates nothing:
            # recover() returns 0 and the broker only logs a warning. Same status here, the cause kept.
            return SegmentRecovery(log_path, base_offset, SegmentStatus.OK,
                                   Reason(f"warning: {result.stop_reason}", log_path, result.valid_bytes),
                                   result, files)
        if result.stop_reason:
            return SegmentRecovery(
                log_path, base_offset, SegmentStatus.CORRUPT_LOG_TAIL,
                Reason(f"{result.stop_reason}; {result.valid_bytes} valid bytes of {result.size_bytes}", log_path,
                       result.valid_bytes),
                result, files)
        return SegmentRecovery(log_path, base_offset, SegmentStatus.OK, None, result, files)

    def recover_all(self, logs: list[tuple[int, str]], native: bool | None = None) -> Iterator[SegmentRecovery]:
        for base_offset, path in logs:
            yield self.recover_segment(path, base_offset, native)


def recover_partition(partition_dir: str | os.PathLike, config: LogConfig | None = None,
                      native: bool | None = None) -> tuple[list[SegmentRecovery], list[str]]:
    """Recover every segment of a partition directory in offset order; also return misnamed ``.log`` names."""
    logs, misnamed = segment_logs(partition_dir)
    return list(PartitionRecovery(config).recover_all(logs, native)), misnamed


