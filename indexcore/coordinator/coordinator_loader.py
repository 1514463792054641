"""Kafka's ``CoordinatorLoaderImpl``: how a coordinator reads its internal topic partition at load, offline.

Every segment of the partition in offset order, every batch that recovery keeps (the first invalid batch ends the
log, as Kafka's recovery cuts it there): a control batch's end-transaction marker goes to ``on_marker`` (its
producer, and whether it commits), every record of a data batch to ``on_record`` with its offset and its batch's
producer id (-1 outside a transaction). The group coordinator (``__consumer_offsets``) and the transaction
coordinator (``__transaction_state``) both load this way.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from segdex.indexcore.errors import CorruptRecordException, InvalidRecordException, RecoveryFailedException
from segdex.indexcore.log.log_segments import segment_logs
from segdex.indexcore.record.file_records import batches, open_log
from segdex.indexcore.record.record_batch import ensure_valid
from segdex.indexcore.record.records import Record, end_txn_marker, records

OnRecord = Callable[[int, Record], None]  # (batch producer id, record)
OnMarker = Callable[[int, bool], None]  # (producer id, commit)


@dataclass
class LoadSummary:
    """How far a load read: the offset after the last batch replayed, and why it stopped early (a corrupt tail)."""

    next_offset: int = 0
    stopped: str | None = None


def replay_coordinator_partition(partition_dir: str | os.PathLike, on_record: OnRecord,
                                 on_marker: OnMarker | None = None) -> LoadSummary:
    """Replay a coordinator partition directory (``CoordinatorLoaderImpl.load``)."""
    summary = LoadSummary()
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
