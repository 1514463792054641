"""Kafka's ``CoordinatorLoaderImpl``: how a coordinator reads its internal topic partition at load, offline.

Every segment of the partition in offset order, every batch that recovery keeps (the first invalid batch ends the
log, as Kafka's recovery cuts it there): a control batch's end-transaction marker goes to ``on_marker`` (its
producer, and whether it commits), every record of a data batch to ``on_record`` with its offset and its batch's
producer id (-1 outside a transaction). The group coordinator (``__consumer_offsets``) and the transaction
coordinator (``__transaction_state``) both load this way.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from segdex.indexcore.protocol.message_format import INT16, MessageFormatException
from segdex.indexcore.errors import CorruptRecordException, InvalidRecordException, RecoveryFailedException
from segdex.indexcore.log.log_segments import segment_logs
from segdex.indexcore.record.file_records import batches, open_log
from segdex.indexcore.record.record_batch import ensure_valid
from segdex.indexcore.record.records import Record, end_txn_marker, records

OnRecord = Callable[[int, Record], None]  # (batch producer id, record)
OnMarker = Callable[[int, bool], None]  # (producer id, commit)
Decode = Callable[[int, int, bytes, bytes | None], Any]  # (record offset, record type, key, value) -> decoded
Apply = Callable[[int, int, Any], None]  # (record offset, batch producer id, decoded)


@dataclass
class LoadSummary:
    """How far a load read: the offset after the last batch replayed, why it stopped early (a corrupt tail), and
    the records on which Kafka's load would fail (with why)."""

    next_offset: int = 0
    stopped: str | None = None
    undecodable: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        """What an operator must read: each record Kafka's load fails on, then where a corrupt tail ended it."""
        return self.undecodable + ([self.stopped] if self.stopped else [])


def replay_coordinator_partition(partition_dir: str | os.PathLike, on_record: OnRecord,
                                 on_marker: OnMarker | None = None, summary: LoadSummary | None = None,
                                 ) -> LoadSummary:
    """Replay a coordinator partition directory (``CoordinatorLoaderImpl.load``), filling ``summary`` (a new one
    by default)."""
    summary = summary if summary is not None else LoadSummary()
    logs, _misnamed = segment_logs(partition_dir)
    for _base, path in logs:
        with open_log(path) as buf:
            try:
                for batch in batches(buf):
                    ensure_valid(buf, batch)
                    if batch.is_control:
                        marker = end_txn_marker(buf, batch)
                        if marker is not None and on_marker is not None:
                            on_marker(batch.producer_id, marker[0] == "COMMIT")
                    else:
                        for record in records(buf, batch):
                            on_record(batch.producer_id, record)
                    summary.next_offset = batch.next_offset
            except (CorruptRecordException, InvalidRecordException, RecoveryFailedException) as e:
                summary.stopped = f"{os.path.basename(path)}: {e}"
                return summary
    return summary


def replay_coordinator_records(partition_dir: str | os.PathLike, record_types: Collection[int], decode: Decode,
                               apply: Apply, on_marker: OnMarker | None = None, summary: LoadSummary | None = None,
                               key_name: str = "coordinator key") -> LoadSummary:
    """``replay_coordinator_partition`` through a coordinator's record serde (``CoordinatorRecordSerde``): each
    record's int16 key type picks it (types not in ``record_types`` are skipped, as Kafka skips the types it does
    not know), ``decode`` reads it, ``apply`` replays it. A record without a key, or one ``decode`` cannot read
    (``MessageFormatException``), is listed in ``summary.undecodable``: Kafka's load fails at such a record."""
    summary = summary if summary is not None else LoadSummary()

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

    return replay_coordinator_partition(partition_dir, on_record, on_marker, summary)
