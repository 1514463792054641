"""Kafka's ``CoordinatorLoaderImpl``: how a coordinator reads its internal topic partition at load, offline.

Every segment of the partition in offset order, every batch that recovery keeps (the first invalid batch ends the
log, as Kafka's recovery cuts it there): a control batch's end-transaction marker goes to ``on_marker`` (its
producer, and whether it commits), every record of a data batch to ``on_record`` with its offset and its batch's
producer id (-1 outside a transaction). The group coordinator (``__consumer_offsets``) and the transaction
coordinator (``__transaction_state``) both load this way.

A load that stops before the end of the partition's files (a batch that fails its CRC or size checks, a segment
cut inside a batch) is *partial*: the records after it (commits, group and transaction states) are not in it, so
what it holds may be stale. ``after_broker_start`` says what Kafka's own coordinator loads from the same partition
after the broker's next start: its recovery pass (``LogLoader.recoverLog``) truncates a segment at its first
invalid batch and deletes every later segment, so where that pass reaches the damage, Kafka's coordinator loads
exactly the records this load replayed (``SAME``). Otherwise Kafka loads other records (``DIFFERS``, not predicted
here): a broker that does not re-read the damaged segment (a clean-shutdown marker, a recovery point past it)
serves it as it is; one that recovers it when opening it (its offset index missing) cuts that segment only and
keeps the later ones (an offset gap). A load that throws (the broker does not start) leaves no coordinator
loading it (``OFFLINE``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.errors import (
    BufferBoundsException,
    CorruptRecordException,
    InvalidRecordException,
    JavaException,
    KafkaReadException,
    RecoveryFailedException,
)
from segdex.indexcore.log.layout import INDEX_FILE_SUFFIX, index_paths
from segdex.indexcore.log.log_loader import ACTION_FAIL, ACTION_TRUNCATE, SegmentOnDisk, preview_start
from segdex.indexcore.log.log_segments import PartitionRecovery, segment_logs
from segdex.indexcore.protocol.message_format import INT16, MessageFormatException
from segdex.indexcore.record.file_records import batches, open_log
from segdex.indexcore.record.record_batch import ensure_valid
from segdex.indexcore.record.records import Record, end_txn_marker, records

OnRecord = Callable[[int, Record], None]  # (batch producer id, record)
OnMarker = Callable[[int, bool], None]  # (producer id, commit)
Decode = Callable[[int, int, bytes, bytes | None], Any]  # (record offset, record type, key, value) -> decoded
Apply = Callable[[int, int, Any], None]  # (record offset, batch producer id, decoded)

# what Kafka's coordinator loads from a partial partition after the broker's next start (``AfterStart.answer``)
SAME = "same"  # its recovery truncates where this load stopped: it loads these very records (Kafka's answer)
DIFFERS = "differs"  # the start keeps the damaged bytes or the later segments: Kafka loads other records
OFFLINE = "offline"  # the start's load of the partition throws (the broker does not start): no coordinator loads it
UNKNOWN = "unknown"  # a segment could not be read here: no prediction
ANSWERS = {  # each answer in the words printed beside a partial row
    SAME: "a broker's start truncates the log there and Kafka's coordinator loads these same records: Kafka's answer",
    DIFFERS: "a broker's start keeps the damaged bytes or the later segments: Kafka's coordinator loads other "
             "records: not Kafka's answer",
    OFFLINE: "a broker's start fails on this partition: no coordinator loads it",
    UNKNOWN: "what Kafka's coordinator loads here is not predicted",
}


@dataclass(frozen=True)
class AfterStart:
    """What Kafka's coordinator loads from a partial partition after the broker's next start: ``answer`` (SAME,
    DIFFERS, OFFLINE, UNKNOWN), the log end offset the start leaves (None: not known), and why, in a sentence."""

    answer: str
    log_end_offset: int | None
    note: str


@dataclass
class LoadSummary:
    """How far a load read: the offset after the last batch replayed, why it stopped early (a corrupt batch, a
    segment cut inside a batch), where (``stopped_segment``: its base offset), how many ``.log`` bytes it left
    unread (the rest of that segment and every later one), and the records on which Kafka's load would fail
    (with why). ``after_start``: Kafka's own load after the broker's next start, where it was asked
    (``after_broker_start``)."""

    next_offset: int = 0
    stopped: str | None = None
    undecodable: list[str] = field(default_factory=list)
    stopped_segment: int | None = None
    unread_bytes: int = 0
    after_start: AfterStart | None = None

    @property
    def partial(self) -> bool:
        """The load stopped before the end of the partition's files: what it holds may be stale."""
        return self.stopped is not None

    def problems(self) -> list[str]:
        """What an operator must read: each record Kafka's load fails on, then where a corrupt tail ended it."""
        return self.undecodable + ([self.stopped] if self.stopped else [])

    def partial_line(self, where: str) -> str:
        """The one line that says a view of ``where`` (``__consumer_offsets-3``) is partial, and Kafka's answer."""
        line = (f"PARTIAL: {where} loaded up to offset {self.next_offset} only ({self.stopped}); "
                f"{self.unread_bytes} bytes after it not read: its rows may be stale, records after it are missing")
        return line if self.after_start is None else f"{line}. Kafka: {self.after_start.note}"

    def partial_reason(self, where: str) -> str:
        """What a row of ``where`` loaded in part says (the ``partial_reason`` column)."""
        answer = ANSWERS[self.after_start.answer] if self.after_start is not None else ANSWERS[UNKNOWN]
        return f"{where} loaded up to offset {self.next_offset} only: the rows may be stale; {answer}"


def _stop(summary: LoadSummary, logs: list[tuple[int, str]], i: int, position: int, size: int, why: str) -> None:
    base, path = logs[i]
    summary.stopped = f"{os.path.basename(path)}: {why}"
    summary.stopped_segment = base
    summary.unread_bytes = size - position + sum(_size(p) for _, p in logs[i + 1:])


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


class PartitionReplay:
    """A coordinator partition's replay (``replay_coordinator_partition``) taken one segment at a time, in offset
    order, from bytes another reader mapped already: the scan hands each segment it recovers (``feed``), so the
    partition is read once for both. A segment nobody handed over is read here (``read_here`` counts them), before
    the next one handed over and at ``finish``. ``logs``: the partition's segments as ``segment_logs`` lists
    them. ``log_start_offset`` (the partition's ``log-start-offset-checkpoint`` entry; None: none): where
    ``CoordinatorLoaderImpl.load`` begins its reads (``log.logStartOffset``): the records and markers of batches
    that end below it are not replayed (the batch holding it is, whole). Those batches are still checked: a
    damaged one ends the load here, the view then partial, as a broker's recovery would meet it."""

    def __init__(self, logs: list[tuple[int, str]], on_record: OnRecord, on_marker: OnMarker | None = None,
                 summary: LoadSummary | None = None, log_start_offset: int | None = None) -> None:
        self.logs, self.on_record, self.on_marker = logs, on_record, on_marker
        self.log_start_offset = log_start_offset or 0
        self.summary = summary if summary is not None else LoadSummary()
        self.next = 0  # the index in ``logs`` of the next segment to replay
        self.fed = 0  # segments replayed from bytes handed over
        self.read_here = 0  # segments replayed from a mapping of their own

    def feed(self, log_path: str, buf) -> None:
        """One segment's bytes, mapped by the caller; ignored once the load stopped, or for a path it does not
        expect (not a segment of ``logs`` after the last one replayed)."""
        i = next((j for j in range(self.next, len(self.logs)) if self.logs[j][1] == log_path), None)
        if i is None:
            return
        while self.next < i and not self.summary.partial:
            self._read(self.next)
        if not self.summary.partial:
            self.fed += 1
            self._replay(i, buf)

    def finish(self) -> LoadSummary:
        """The segments not replayed yet read here, up to the end or the stop; the summary."""
        while self.next < len(self.logs) and not self.summary.partial:
            self._read(self.next)
        return self.summary

    def _read(self, i: int) -> None:
        self.read_here += 1
        with open_log(self.logs[i][1]) as buf:
            self._replay(i, buf)

    def _replay(self, i: int, buf) -> None:
        """One segment's batches, up to its first invalid batch (which ends the load), those from the log start
        replayed."""
        self.next = i + 1
        summary, end = self.summary, 0  # the end of the last batch replayed
        try:
            for batch in batches(buf):
                ensure_valid(buf, batch)
                if batch.next_offset <= self.log_start_offset:  # before the load's first read
                    pass
                elif batch.is_control:
                    marker = end_txn_marker(buf, batch)
                    if marker is not None and self.on_marker is not None:
                        self.on_marker(batch.producer_id, marker[0] == "COMMIT")
                else:
                    for record in records(buf, batch):
                        self.on_record(batch.producer_id, record)
                summary.next_offset = batch.next_offset
                end = batch.position + batch.size_in_bytes
        except (CorruptRecordException, InvalidRecordException, RecoveryFailedException, BufferBoundsException,
                KafkaReadException, JavaException) as e:
            _stop(summary, self.logs, i, end, len(buf), f"{e} (position {end})")
            return
        if end < len(buf):  # a batch cut short: recovery truncates here and deletes the later segments
            _stop(summary, self.logs, i, end, len(buf), f"{len(buf) - end} bytes at position {end} are not a whole "
                                                        f"batch (the segment is cut inside a batch)")


def replay_coordinator_partition(partition_dir: str | os.PathLike, on_record: OnRecord,
                                 on_marker: OnMarker | None = None, summary: LoadSummary | None = None,
                                 ) -> LoadSummary:
    """Replay a coordinator partition directory (``CoordinatorLoaderImpl.load``), filling ``summary`` (a new one
    by default)."""
    return PartitionReplay(segment_logs(partition_dir)[0], on_record, on_marker, summary).finish()


def after_broker_start(partition_dir: str | os.PathLike, summary: LoadSummary, clean_shutdown: bool,
                       recovery_point: int | None, log_start_offset: int | None) -> AfterStart:
    """What Kafka's coordinator loads from a partition whose load stopped early (``summary.partial``), after the
    broker's next start: ``LogLoader.load`` (the startup preview, from the log dir's clean-shutdown marker and the
    partition's checkpoint entries) then ``CoordinatorLoaderImpl.load`` over what it leaves."""
    on_disk = []
    recovery = PartitionRecovery(LogConfig())
    for base, path in segment_logs(partition_dir)[0]:
        seg = recovery.recover_segment(path, base)
        if seg.result is None:
            return AfterStart(UNKNOWN, None, f"{os.path.basename(path)} cannot be read: no prediction")
        on_disk.append(SegmentOnDisk(base, path, seg.result, os.path.exists(index_paths(path)[INDEX_FILE_SUFFIX])))
    preview = preview_start(on_disk, clean_shutdown, recovery_point, log_start_offset)
    if preview.action == ACTION_FAIL:
        return AfterStart(OFFLINE, None, f"{'; '.join(preview.notes)}: no coordinator loads this partition")
    if preview.action == ACTION_TRUNCATE and preview.log_end_offset == summary.next_offset:
        return AfterStart(SAME, preview.log_end_offset,
                          f"a broker's start truncates it at offset {preview.log_end_offset} ({preview.lost_bytes} "
                          f"bytes deleted) and its coordinator loads these same records: this is Kafka's answer "
                          f"after its start")
    if (log_start_offset or 0) > (summary.next_offset or 0) and preview.log_end_offset == log_start_offset:
        return AfterStart(DIFFERS, preview.log_end_offset,
                          f"a broker's start truncates it below its log start {log_start_offset}, deletes every "
                          f"segment and starts an empty log at offset {log_start_offset} "
                          f"(deleteSegmentsIfLogStartGreaterThanLogEnd); its coordinator loads nothing: not Kafka's "
                          f"answer")
    if summary.stopped_segment in preview.recovered:  # recovered when opened (LogLoader.recovered_when_opened)
        return AfterStart(DIFFERS, preview.log_end_offset,
                          f"a broker's start recovers segment {summary.stopped_segment} as it opens it (its offset "
                          f"index missing, or its transaction index failing the load's check) and cuts it there, but "
                          f"keeps the later segments, up to offset {preview.log_end_offset} (an offset gap); its "
                          f"coordinator loads their records too: not Kafka's answer")
    if preview.action == ACTION_TRUNCATE and preview.log_end_offset < (summary.next_offset or 0):
        # the start re-reads a segment below the damaged one and cuts the log there: fewer records than this load's
        return AfterStart(DIFFERS, preview.log_end_offset,
                          f"a broker's start truncates it at offset {preview.log_end_offset} ({preview.lost_bytes} "
                          f"bytes deleted), below where this load stopped (offset {summary.next_offset}); its "
                          f"coordinator loads only the records below offset {preview.log_end_offset}: not Kafka's "
                          f"answer")
    why = ("the log dir's clean-shutdown marker" if clean_shutdown else
           f"the recovery point {recovery_point or 0} is past the damaged segment")
    return AfterStart(DIFFERS, preview.log_end_offset,
                      f"a broker's start does not re-read the damaged segment ({why}) and serves it as it is; its "
                      f"coordinator reads the damaged bytes: not predicted here, not Kafka's answer")


def record_serde(record_types: Collection[int], decode: Decode, apply: Apply, summary: LoadSummary,
                 key_name: str = "coordinator key") -> OnRecord:
    """A coordinator's record serde (``CoordinatorRecordSerde``) as an ``OnRecord``: each record's int16 key type
    picks it (types not in ``record_types`` are skipped, as Kafka skips the types it does not know), ``decode``
    reads it, ``apply`` replays it. A record without a key, or one ``decode`` cannot read
    (``MessageFormatException``), is listed in ``summary.undecodable``: Kafka's load fails at such a record."""

    def on_record(producer_id: int, record: Record) -> None:
        if record.key is None or len(record.key) < INT16.size:
            summary.undecodable.append(f"offset {record.offset}: a record without a {key_name}")
            return
        record_type = INT16.unpack_from(record.key)[0]
        if record_type not in record_types:
            return
        try:
            decoded = decode(record.offset, record_type, record.key, record.value)
        except MessageFormatException as e:
            summary.undecodable.append(f"offset {record.offset}: {e}")
            return
        apply(record.offset, producer_id, decoded)

    return on_record


def replay_coordinator_records(partition_dir: str | os.PathLike, record_types: Collection[int], decode: Decode,
                               apply: Apply, on_marker: OnMarker | None = None, summary: LoadSummary | None = None,
                               key_name: str = "coordinator key") -> LoadSummary:
    """``replay_coordinator_partition`` through a coordinator's record serde (``record_serde``)."""
    summary = summary if summary is not None else LoadSummary()
    return replay_coordinator_partition(partition_dir, record_serde(record_types, decode, apply, summary, key_name),
                                        on_marker, summary)
