"""What kafka-dump-log shows for segment files, as dicts with Kafka's field names (``DumpLogSegments``)."""

from __future__ import annotations

import os
from collections.abc import Iterator

from segdex.indexcore.errors import (
    CORRUPT_RECORD,
    BufferBoundsException,
    CorruptRecordException,
    InvalidRecordException,
    JavaException,
    KafkaReadException,
    SegdexError,
)
from segdex.indexcore.fs.file_access import open_regular
from segdex.indexcore.index.offset_index import parse_offset_index
from segdex.indexcore.index.offset_index import sanity_check as offset_sanity_check
from segdex.indexcore.index.time_index import parse_time_index
from segdex.indexcore.index.time_index import sanity_check as time_sanity_check
from segdex.indexcore.index.transaction_index import parse_transaction_index
from segdex.indexcore.log.layout import (
    INDEX_FILE_SUFFIX,
    LOG_FILE_SUFFIX,
    TIME_INDEX_FILE_SUFFIX,
    TXN_INDEX_FILE_SUFFIX,
    parse_segment_file_name,
)
from segdex.indexcore.log.log_segment import recover
from segdex.indexcore.metadata.records import control_record_text
from segdex.indexcore.metadata.snapshots import snapshot_id
from segdex.indexcore.protocol.message_format import MessageFormatException
from segdex.indexcore.record.batch_header import DELETE_HORIZON_FLAG_MASK
from segdex.indexcore.record.file_records import batches, load_batch_header, open_log
from segdex.indexcore.record.record_batch import (
    RECORD_BATCH_V2,
    RecordBatch,
    compute_checksum,
    last_sequence,
)
from segdex.indexcore.record.records import CONTROL_KEY, END_TXN_MARKER_VALUE, Record, control_record, records
from segdex.indexcore.tools.index_verifier import check_offset_entries, check_time_entries


def batch_view(buf, batch: RecordBatch) -> dict:
    """A batch as the fixtures' ``batches.json`` names its fields (legacy wrappers are opened for counts)."""
    base_offset, count = batch.base_offset, batch.records_count
    if batch.magic < 2:
        if batch.compression_type == 0:
            count = 1
        else:
            try:
                inner = list(records(buf, batch))
                count, base_offset = len(inner), inner[0].offset
            except SegdexError:  # a wrapper Kafka cannot open: its baseOffset and count throw (the deep read says why)
                count = base_offset = None
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


# ControlRecordType ids (the key's int16 type) and the names Kafka prints for them
CONTROL_RECORD_TYPES = {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER", 4: "SNAPSHOT_FOOTER",
                        5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"}


def batch_extras(buf, batch: RecordBatch) -> dict:
    """What kafka-dump-log prints beside the batch facts: count, lastSequence and deleteHorizonMs (v2 only)."""
    if batch.magic < 2:
        return {}
    last_seq = last_sequence(batch.base_sequence, batch.last_offset - batch.base_offset)
    horizon = None
    if batch.attributes & DELETE_HORIZON_FLAG_MASK:
        horizon = RECORD_BATCH_V2.unpack_from(buf, batch.position)[7]
    return {"count": batch.records_count, "lastSequence": last_seq, "deleteHorizonMs": horizon}


def _control_view(record: Record) -> dict:
    """``DumpLogSegments``' view of a control record: the end-transaction marker, the raft layer's record decoded
    (Kafka 4.x: ``LeaderChange: {...}``, ``SnapshotHeader {...}``, ...), or the control type."""
    if record.key is None or len(record.key) < CONTROL_KEY.size:
        return {"controlType": "UNKNOWN(-1)"}
    _version, type_id = CONTROL_KEY.unpack_from(record.key)
    name = CONTROL_RECORD_TYPES.get(type_id, "UNKNOWN")
    if name in ("ABORT", "COMMIT") and record.value is not None and len(record.value) >= END_TXN_MARKER_VALUE.size:
        return {"endTxnMarker": name, "coordinatorEpoch": END_TXN_MARKER_VALUE.unpack_from(record.value)[1]}
    try:
        text = control_record_text(type_id, record.value)
    except MessageFormatException:
        text = None
    return {"control": text} if text is not None else {"controlType": f"{name}({type_id})"}


def record_view(batch: RecordBatch, record: Record, parser=None) -> dict:
    """One record as kafka-dump-log's deep iteration shows it; with a ``parser`` (``--print-data-log`` or a
    decoder) also its key and payload as text (``key``/``payload`` absent for a null key or value; a decoder's
    refusal in ``key``, with ``decodeError``)."""
    row = {"offset": record.offset, "timestamp": record.timestamp,
           "keySize": -1 if record.key is None else len(record.key),
           "valueSize": -1 if record.value is None else len(record.value),
           "headerKeys": [k for k, _ in record.headers]}
    if batch.magic >= 2:
        row["sequence"] = last_sequence(batch.base_sequence, record.offset - batch.base_offset)
    else:
        row["isValid"], row["crc"] = record.valid, record.crc
    if batch.is_control:
        row.update(_control_view(record))
    elif parser is not None:
        try:
            key, payload = parser.parse(record.offset, record.key, record.value)
        except MessageFormatException as e:
            key, payload = str(e), None
            row["decodeError"] = True
        if key is not None:
            row["key"] = key
        if payload is not None:
            row["payload"] = payload
    return row


def dump_log(path: str, deep: bool = False, parser=None, max_bytes: int | None = None) -> Iterator[dict]:
    """One dict per batch (and per record with ``deep``, or with a ``parser``: see ``record_view``); a final
    ``{"iterationStopped": ...}`` on bad bytes. ``max_bytes`` reads only the batches wholly inside the first
    ``max_bytes`` bytes (kafka-dump-log's ``--max-bytes``: ``FileRecords.slice(0, maxBytes)``)."""
    deep = deep or parser is not None
    with open_log(path) as buf:
        limit = len(buf) if max_bytes is None else min(len(buf), max_bytes)
        end = 0
        try:
            for batch in batches(buf, 0, limit):
                end = batch.position + batch.size_in_bytes
                if max_bytes is None:  # printing its fields loads its header
                    load_batch_header(buf, batch, path)
                view = batch_view(buf, batch)
                yield {"type": "batch", **view, "_extras": batch_extras(buf, batch)}
                if deep:
                    for r in records(buf, batch):
                        yield {"type": "record", **record_view(batch, r, parser)}
        except (CorruptRecordException, InvalidRecordException, KafkaReadException, BufferBoundsException,
                JavaException) as e:
            yield {"type": "error", "iterationStopped": _thrown(e)}
            return
        if end < limit and max_bytes is None:  # Kafka's iterator stops here quietly; its recovery truncates
            yield {"type": "partialBatch", "position": end, "trailingBytes": len(buf) - end,
                   "note": f"{len(buf) - end} trailing bytes at position {end} do not hold a whole batch: Kafka's "
                           f"recovery truncates them"}


def _thrown(e: SegdexError) -> str:
    """What stopped Kafka's tool, as ``Throwable.toString`` prints it: the class's simple name, then the message
    where it has one."""
    name = (e.kafka_class or CORRUPT_RECORD).rsplit(".", 1)[1]
    silent = isinstance(e, (BufferBoundsException, JavaException)) and e.java_message is None
    return name if silent else f"{name}: {e}"


def kafka_batch_line(row: dict) -> str:
    """A batch row (with its ``_extras``) as kafka-dump-log prints it (``printBatchLevel``)."""
    extras = row["_extras"]
    if row["magic"] >= 2:
        horizon = extras["deleteHorizonMs"]
        head = (f"baseOffset: {row['baseOffset']} lastOffset: {row['lastOffset']} count: {extras['count']} "
                f"baseSequence: {row['baseSequence']} lastSequence: {extras['lastSequence']} "
                f"producerId: {row['producerId']} producerEpoch: {row['producerEpoch']} "
                f"partitionLeaderEpoch: {row['partitionLeaderEpoch']} "
                f"isTransactional: {_jbool(row['isTransactional'])} isControl: {_jbool(row['isControl'])} "
                f"deleteHorizonMs: {'OptionalLong.empty' if horizon is None else f'OptionalLong[{horizon}]'}")
    else:
        head = f"offset: {row['lastOffset']}"
    return (f"{head} position: {row['position']} {row['timestampType']}: {row['maxTimestamp']} "
            f"size: {row['sizeInBytes']} magic: {row['magic']} compresscodec: {row['compressionType']} "
            f"crc: {row['crc']} isvalid: {_jbool(row['isValid'])}")


def kafka_record_line(row: dict, batch_row: dict) -> str:
    """A record row as kafka-dump-log prints it under its batch (``dumpLog``'s deep iteration)."""
    line = (f"| offset: {row['offset']} {batch_row['timestampType']}: {row['timestamp']} "
            f"keySize: {row['keySize']} valueSize: {row['valueSize']}")
    if batch_row["magic"] >= 2:
        line += f" sequence: {row['sequence']} headerKeys: [{','.join(row['headerKeys'])}]"
    else:
        line += f" isValid: {_jbool(row['isValid'])} crc: {row['crc']}"  # Kafka 3.x printed a stray "}" here
    if "endTxnMarker" in row:
        line += f" endTxnMarker: {row['endTxnMarker']} coordinatorEpoch: {row['coordinatorEpoch']}"
    elif "controlType" in row:
        line += f" controlType: {row['controlType']}"
    elif "control" in row:
        line += f" {row['control']}"
    if "key" in row:
        line += f" key: {row['key']}"
    if "payload" in row:
        line += f" payload: {row['payload']}"
    return line


def _jbool(value: bool) -> str:
    return "true" if value else "false"


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


def dump(path: str, deep: bool = False, parser=None, max_bytes: int | None = None) -> Iterator[dict]:
    """Rows for one segment file: ``dump_log`` for a ``.log`` or a metadata snapshot (``.checkpoint``: record
    batches too), ``dump_index`` for an index file."""
    if snapshot_id(path) is not None:
        return dump_log(path, deep, parser, max_bytes)
    suffix = parse_segment_file_name(os.path.basename(path)).suffix
    if suffix == LOG_FILE_SUFFIX:
        return dump_log(path, deep, parser, max_bytes)
    if suffix in (INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX):
        return dump_index(path)
    raise SegdexError(f"{path}: segdex dump reads .log, .index, .timeindex and .txnindex files and metadata "
                      f"snapshots (.checkpoint), not {suffix}")
