"""What kafka-dump-log shows for segment files, as dicts with Kafka's field names (``DumpLogSegments``)."""

from __future__ import annotations

import os
from collections.abc import Iterator

from .errors import CorruptRecordException, SegdexError
from .file_access import open_regular
from .file_records import batches, open_log
from .index_verifier import check_offset_entries, check_time_entries
from .layout import (
    INDEX_FILE_SUFFIX,
    LOG_FILE_SUFFIX,
    TIME_INDEX_FILE_SUFFIX,
    TXN_INDEX_FILE_SUFFIX,
    parse_segment_file_name,
)
from .log_segment import recover
from .offset_index import parse_offset_index
from .offset_index import sanity_check as offset_sanity_check
from .record_batch import RecordBatch, compute_checksum
from .records import control_record, records
from .time_index import parse_time_index
from .time_index import sanity_check as time_sanity_check
from .transaction_index import parse_transaction_index


def batch_view(buf, batch: RecordBatch) -> dict:
    """A batch as the fixtures' ``batches.json`` names its fields (legacy wrappers are opened for counts)."""
    base_offset, count = batch.base_offset, batch.records_count
    if batch.magic < 2:
        if batch.compression_type == 0:
            count = 1
        else:
            inner = list(records(buf, batch))
            count = len(inner)
            base_offset = inner[0].offset if inner else batch.last_offset
    view = {
        "position": batch.position, "sizeInBytes": batch.size_in_bytes, "magic": batch.magic,
        "isValid": compute_checksum(buf, batch) == batch.crc, "crc": batch.crc, "baseOffset": base_offset,
        "lastOffset": batch.last_offset, "compressionType": batch.compression,
        "timestampType": batch.timestamp_type, "maxTimestamp": batch.max_timestamp,
        "isTransactional": batch.is_transactional, "isControl": batch.is_control,
        "producerId": batch.producer_id, "producerEpoch": batch.producer_epoch,
        "baseSequence": batch.base_sequence, "partitionLeaderEpoch": batch.partition_leader_epoch,
        "recordCount": count,
    }
    if batch.is_control:
        marker = control_record(buf, batch)
        if marker:
            view["controlType"], view["coordinatorEpoch"] = marker
    return view


def dump_log(path: str, deep: bool = False) -> Iterator[dict]:
    """One dict per batch (and per record with ``deep``); a final ``{"iterationStopped": ...}`` on bad bytes."""
    with open_log(path) as buf:
        end = 0
        try:
            for batch in batches(buf):
                end = batch.position + batch.size_in_bytes
                view = batch_view(buf, batch)
                yield {"type": "batch", **view}
                if deep:
                    for r in records(buf, batch):
                        yield {"type": "record", "offset": r.offset, "timestamp": r.timestamp,
                               "keySize": -1 if r.key is None else len(r.key),
                               "valueSize": -1 if r.value is None else len(r.value),
                               "headerKeys": [k for k, _ in r.headers]}
        except CorruptRecordException as e:
            yield {"type": "error", "iterationStopped": f"CorruptRecordException: {e}"}
            return
        if end < len(buf):  # Kafka's iterator stops here without an error; its recovery truncates these bytes
            yield {"type": "partialBatch", "position": end, "trailingBytes": len(buf) - end,
                   "note": f"{len(buf) - end} trailing bytes at position {end} do not hold a whole batch: Kafka's "
                           f"recovery truncates them"}


def _log_beside(path: str) -> str:
    return path[: path.rindex(".")] + LOG_FILE_SUFFIX


def dump_index(path: str) -> Iterator[dict]:
    """Entries of an .index/.timeindex/.txnindex, then a verification row against the .log beside it."""
    name = os.path.basename(path)
    parsed = parse_segment_file_name(name)
    base = parsed.base_offset
    with open_regular(path) as f:
        data = f.read()
    if parsed.suffix == TXN_INDEX_FILE_SUFFIX:
        for t in parse_transaction_index(data):
            yield {"type": "abortedTxn", "version": t.version, "producerId": t.producer_id,
                   "firstOffset": t.first_offset, "lastOffset": t.last_offset,
                   "lastStableOffset": t.last_stable_offset}
        return
    is_offset = parsed.suffix == INDEX_FILE_SUFFIX
    entries = parse_offset_index(data, base) if is_offset else parse_time_index(data, base)
    for a, b in entries:
        yield ({"type": "offsetIndexEntry", "offset": a, "position": b} if is_offset
               else {"type": "timeIndexEntry", "timestamp": a, "offset": b})
    problems = []
    try:
        (offset_sanity_check if is_offset else time_sanity_check)(data, base)
    except SegdexError as e:
        problems.append(str(e))
    log = _log_beside(path)
    if not problems and os.path.exists(log):
        with open_log(log) as buf:
            result = recover(buf, base)
            problem = (check_offset_entries if is_offset else check_time_entries)(buf, entries, result)
            if problem:
                problems.append(problem)
    elif not os.path.exists(log):
        problems.append(f"no {os.path.basename(log)} beside it: entries not checked against the log")
    yield {"type": "verification", "file": path, "ok": not problems, "problems": problems}


def dump(path: str, deep: bool = False) -> Iterator[dict]:
    suffix = parse_segment_file_name(os.path.basename(path)).suffix
    if suffix == LOG_FILE_SUFFIX:
        return dump_log(path, deep)
    if suffix in (INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX):
        return dump_index(path)
    raise SegdexError(f"{path}: segdex dump reads .log, .index, .timeindex and .txnindex files, not {suffix}")
