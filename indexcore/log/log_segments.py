"""A partition's segments in offset order, recovered together as Kafka's ``LogLoader`` does.

Producer state (behind ``.txnindex``) and the leader-epoch cache carry over
from one segment to the next, so segments are always recovered in order.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.errors import InvalidLayoutException, InvalidTxnStateException
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
from segdex.indexcore.log.producer_state import DATA_EVENT_FIELDS, ProducerEventLog, ProducerStateManager
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


@dataclass
class SpeculativeSegment:
    """A segment recovered on its own, before the state its partition's earlier segments leave is known: the
    index entries and batch facts (which the bytes alone decide), the producer events (``ProducerEventLog``) and
    the leader epochs it starts, counted from none. ``PartitionRecovery`` completes it in order.

    Only a segment recovered whole is kept (no stop, no error): any other is recovered again in order, which
    gives what the ordered recovery gives by construction. ``size`` and ``mtime_ns`` name the file it was read
    from; a file changed since is recovered again too.
    """

    log_path: str
    base_offset: int
    size: int
    mtime_ns: int
    result: RecoveryResult
    events: list[tuple]
    epochs: list[tuple[int, int]]

    def still_current(self) -> bool:
        try:
            st = os.stat(self.log_path)
        except OSError:
            return False
        return st.st_size == self.size and st.st_mtime_ns == self.mtime_ns


def speculate_segment(log_path: str, base_offset: int, config: LogConfig | None = None,
                      native: bool | None = None) -> SpeculativeSegment | None:
    """Recover one segment with no knowledge of the earlier ones (``SpeculativeSegment``); None when it cannot
    be completed later (unreadable, a stop or an error: the ordered recovery does that segment)."""
    config = config or LogConfig()
    events, epochs = ProducerEventLog(), []
    try:
        st = os.stat(log_path)
        result = LogSegment(log_path, base_offset).recover(
            index_interval_bytes=config.index_interval_bytes, producer_state=events, leader_epochs=epochs,
            max_index_size=config.segment_index_bytes, native=native)
    except (OSError, NotRegularFileException):
        return None
    if result.stop_reason or result.error or result.valid_bytes != st.st_size:
        return None
    return SpeculativeSegment(log_path, base_offset, st.st_size, st.st_mtime_ns, result, events.events, epochs)


class PartitionRecovery:
    """Recovers a partition's segments one after another, carrying producer state and leader epochs.

    ``precomputed`` (base offset -> ``SpeculativeSegment``): segments already recovered on their own, in
    parallel; each is completed here when its turn comes (its producer events replayed into this state, giving
    its ``.txnindex``; its leader epochs taken where they are above the latest), which gives what recovering it
    here would, byte for byte. One the replay cannot take (a producer's non-transactional write inside its own
    open transaction: the ordered recovery fails there, at that batch) is recovered here after all.

    ``reader`` (log path, mapped bytes), when set, is handed each segment this recovery reads, while it is
    mapped: another reader of the same bytes (a coordinator partition's load) rides on this read of the file.
    A segment taken from ``precomputed`` is not read here and not handed over.
    """

    def __init__(self, config: LogConfig | None = None,
                 precomputed: dict[int, SpeculativeSegment] | None = None) -> None:
        self.config = config or LogConfig()
        self.producer_state = ProducerStateManager()
        self.leader_epochs: list[tuple[int, int]] = []
        self.precomputed = dict(precomputed or {})
        self.completed = 0  # segments taken from ``precomputed``
        self.reader: Callable[[str, Any], None] | None = None

    def _complete(self, spec: SpeculativeSegment) -> RecoveryResult | None:
        """The speculative segment completed with this state, or None (this state unchanged) when it cannot be."""
        if not spec.still_current():
            return None
        state = self.producer_state
        risky = state.has_ongoing_txns or any(len(e) == DATA_EVENT_FIELDS and e[6] for e in spec.events)
        replayed = state.copy() if risky else state
        try:
            aborted = replayed.replay(spec.events)
        except InvalidTxnStateException:
            return None
        self.producer_state = replayed
        result = spec.result
        for txn in aborted:
            result.txn_index.append(txn)
        for epoch, offset in spec.epochs:  # LogSegment.recover assigns an epoch above the latest only
            if not self.leader_epochs or epoch > self.leader_epochs[-1][0]:
                self.leader_epochs.append((epoch, offset))
        result.leader_epochs = self.leader_epochs
        self.completed += 1
        return result

    def recover_segment(self, log_path: str, base_offset: int, native: bool | None = None) -> SegmentRecovery:
        spec = self.precomputed.pop(base_offset, None)
        result = self._complete(spec) if spec is not None and spec.log_path == log_path else None
        try:
            if result is None:
                reader = self.reader
                result = LogSegment(log_path, base_offset).recover(
                    index_interval_bytes=self.config.index_interval_bytes, producer_state=self.producer_state,
                    leader_epochs=self.leader_epochs, max_index_size=self.config.segment_index_bytes,
                    native=native, also=None if reader is None else lambda buf: reader(log_path, buf))
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


