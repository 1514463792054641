"""``segdex dump``'s view helpers (``indexcore/dump_log``) in the test process, on small segments built byte by
byte and on Kafka's fixtures: the lines Kafka's ``DumpLogSegments`` prints (``printBatchLevel``,
``printRecordMetadata``, ``printControlRecord``, ``printTrailingBytes``), the batch facts of the fixtures'
``batches.json`` (Kafka's ``FileRecords.batches()`` iteration), and the rows segdex adds where Kafka's tool stops.

Expected values come from Kafka: the fixtures' ``batches.json`` lines and their recorded ``iterationStopped``
exception, Kafka's rules written out here (``DefaultRecordBatch.incrementSequence``, ``deleteHorizonMs`` being
the base timestamp when attributes bit 6 is set, printed as Java's ``OptionalLong``, ``ControlRecordType`` ids
with ``UNKNOWN`` for the rest, ``CoordinatorRecordMessageParser``'s ``Unknown record type N at offset O,
skipping.``), and the bytes each test packs from the protocol layout (sizes, CRCs, timestamps).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import struct
import zlib
from pathlib import Path

import crc32c
import pytest

from segdex.indexcore.coordinator.records import OffsetsMessageParser
from segdex.indexcore.errors import SegdexError
from segdex.indexcore.protocol.message_format import MessageFormatException
from segdex.indexcore.record.file_records import batches
from segdex.indexcore.record.record_batch import increment_sequence
from segdex.indexcore.record.records import records
from segdex.indexcore.tools.dump_log import dump, dump_index, dump_log, record_view
from segdex.indexcore.tools.segment_writer import build_batch
from tests.support.cli import segdex_here
from tests.support.control_batches import control_batch
from tests.support.dump_compare import segdex_dump
from tests.support.fixtures import GOLDEN
from tests.support.segment_cases import V2_FIELDS

INT32_MAX = 2**31 - 1
FIELD_AT = {name: offset for name, offset, _size in V2_FIELDS}
DELETE_HORIZON_FLAG = 0x40  # v2 attributes bit 6: baseTimestamp holds the delete horizon
TS = 1_700_000_000_000
LOG_NAME = "00000000000000000000.log"


def write_log(directory: Path, *chunks: bytes, name: str = LOG_NAME) -> Path:
    path = directory / name
    path.write_bytes(b"".join(chunks))
    return path


def stored_crc(batch: bytes) -> int:
    """The v2 header's crc field (unsigned, as Kafka's ``checksum()``)."""
    return struct.unpack_from(">I", batch, FIELD_AT["crc"])[0]


def with_attributes(batch: bytes, flags: int) -> bytes:
    """``batch`` with ``flags`` or-ed into its attributes and its CRC-32C (attributes to the end) recomputed."""
    data = bytearray(batch)
    at = FIELD_AT["attributes"]
    struct.pack_into(">h", data, at, struct.unpack_from(">h", data, at)[0] | flags)
    struct.pack_into(">I", data, FIELD_AT["crc"], crc32c.crc32c(bytes(data[at:])))
    return bytes(data)


def legacy_v1_gzip_wrapper(offset: int, timestamp: int, compressed: bytes) -> bytes:
    """A magic 1 message with attributes gzip and a null key: offset, size, crc, then the CRC-32'd body."""
    body = struct.pack(">bbqi", 1, 1, timestamp, -1) + struct.pack(">i", len(compressed)) + compressed
    crc = zlib.crc32(body) & 0xFFFFFFFF
    return struct.pack(">qiI", offset, 4 + len(body), crc) + body


def segdex_lines(*args: str) -> tuple[list[str], int]:
    """``segdex dump`` in this process: its stdout lines and exit status."""
    proc = segdex_here("dump", *args)
    return proc.stdout.splitlines(), proc.returncode


def kafka_batch_facts(log: Path) -> list[dict]:
    """The ``batches.json`` Kafka's iteration wrote beside a fixture ``.log``."""
    return json.loads(log.with_name(log.name.replace(".log", ".batches.json")).read_text())


# --- DefaultRecordBatch.incrementSequence ------------------------------------------------------------------

@pytest.mark.parametrize(("sequence", "increment", "expected"), [
    (5, 3, 8),
    (INT32_MAX - 3, 3, INT32_MAX),  # reaches Integer.MAX_VALUE without wrapping
    (INT32_MAX - 1, 1, INT32_MAX),
    (INT32_MAX, 1, 0),  # one past MAX_VALUE is 0
    (INT32_MAX - 1, 3, 1),  # MAX-1, MAX, 0, 1
    (INT32_MAX, 4, 3),
])
def test_sequences_wrap_after_int_max_to_zero(sequence: int, increment: int, expected: int):
    """Kafka: ``sequence > MAX_VALUE - increment ? increment - (MAX_VALUE - sequence) - 1 : sequence + increment``."""
    assert increment_sequence(sequence, increment) == expected


def test_lines_of_a_batch_whose_sequences_wrap(tmp_path: Path):
    """``lastSequence`` and each record's ``sequence`` wrap past Integer.MAX_VALUE to 0, as Kafka prints them."""
    batch = build_batch(0, [(TS, b"k", b"v"), (TS + 1, b"k", b"v"), (TS + 2, b"k", b"v")], producer_id=11,
                        producer_epoch=2, base_sequence=INT32_MAX - 1)
    log = write_log(tmp_path, batch)
    lines, status = segdex_lines("--deep-iteration", str(log))
    assert lines == [
        f"Dumping {log}",
        "Log starting offset: 0",
        "baseOffset: 0 lastOffset: 2 count: 3 baseSequence: 2147483646 lastSequence: 0 producerId: 11 "
        "producerEpoch: 2 partitionLeaderEpoch: 0 isTransactional: false isControl: false "
        f"deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: {TS + 2} size: {len(batch)} magic: 2 "
        f"compresscodec: none crc: {stored_crc(batch)} isvalid: true",
        f"| offset: 0 CreateTime: {TS} keySize: 1 valueSize: 1 sequence: 2147483646 headerKeys: []",
        f"| offset: 1 CreateTime: {TS + 1} keySize: 1 valueSize: 1 sequence: 2147483647 headerKeys: []",
        f"| offset: 2 CreateTime: {TS + 2} keySize: 1 valueSize: 1 sequence: 0 headerKeys: []",
    ]
    assert status == 0


# --- deleteHorizonMs ---------------------------------------------------------------------------------------

def test_delete_horizon_is_the_base_timestamp_when_flagged(tmp_path: Path):
    """A batch with attributes bit 6 (a compacted tombstone's delete horizon): Kafka prints
    ``deleteHorizonMs: OptionalLong[<baseTimestamp>]``, not the max timestamp."""
    first = build_batch(39, [(TS - 7, b"k", b"v")])  # unflagged, so the flagged one is not at position 0
    batch = with_attributes(build_batch(40, [(TS, b"k", None), (TS + 50, b"k", None)]), DELETE_HORIZON_FLAG)
    log = write_log(tmp_path, first, batch)
    lines, status = segdex_lines(str(log))
    assert lines == [
        f"Dumping {log}",
        "Log starting offset: 0",
        "baseOffset: 39 lastOffset: 39 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 "
        "partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty "
        f"position: 0 CreateTime: {TS - 7} size: {len(first)} magic: 2 compresscodec: none "
        f"crc: {stored_crc(first)} isvalid: true",
        "baseOffset: 40 lastOffset: 41 count: 2 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 "
        f"partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong[{TS}] "
        f"position: {len(first)} CreateTime: {TS + 50} size: {len(batch)} magic: 2 compresscodec: none "
        f"crc: {stored_crc(batch)} isvalid: true",
    ]
    assert status == 0
    assert [row["_extras"] for row in dump_log(str(log))] == [
        {"count": 1, "lastSequence": -1, "deleteHorizonMs": None},
        {"count": 2, "lastSequence": -1, "deleteHorizonMs": TS}]


# --- control records ---------------------------------------------------------------------------------------

def test_an_unknown_control_type_prints_as_kafka_names_it(tmp_path: Path):
    """``printControlRecord``'s default branch: ``controlType: UNKNOWN(9)`` for a type id Kafka does not know,
    whatever the value (here null)."""
    batch = control_batch(struct.pack(">hh", 0, 9), None)
    log = write_log(tmp_path, batch)
    lines, status = segdex_lines("--deep-iteration", str(log))
    assert lines == [
        f"Dumping {log}",
        "Log starting offset: 0",
        "baseOffset: 5 lastOffset: 5 count: 1 baseSequence: -1 lastSequence: -1 producerId: 7 producerEpoch: 0 "
        "partitionLeaderEpoch: 0 isTransactional: true isControl: true deleteHorizonMs: OptionalLong.empty "
        f"position: 0 CreateTime: {TS} size: {len(batch)} magic: 2 compresscodec: none crc: {stored_crc(batch)} "
        "isvalid: true",
        f"| offset: 5 CreateTime: {TS} keySize: 4 valueSize: -1 sequence: -1 headerKeys: [] controlType: UNKNOWN(9)",
    ]
    assert status == 0


def control_record_row(key: bytes | None, value: bytes | None) -> dict:
    data = control_batch(key, value)
    [batch] = list(batches(data))
    [record] = list(records(data, batch))
    return record_view(batch, record)


def record_row(offset: int, key_size: int, value_size: int, **extra) -> dict:
    return {"offset": offset, "timestamp": TS, "keySize": key_size, "valueSize": value_size, "headerKeys": [],
            "sequence": -1, **extra}


@pytest.mark.parametrize(("key", "value", "shown"), [
    (struct.pack(">hh", 0, 9), struct.pack(">hi", 0, 3), {"controlType": "UNKNOWN(9)"}),  # value not read
    (struct.pack(">hh", 0, 9), None, {"controlType": "UNKNOWN(9)"}),
    (struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 12), {"endTxnMarker": "COMMIT", "coordinatorEpoch": 12}),
    (struct.pack(">hh", 0, 0), struct.pack(">hi", 0, 4) + b"tail", {"endTxnMarker": "ABORT", "coordinatorEpoch": 4}),
])
def test_control_record_rows(key: bytes, value: bytes | None, shown: dict):
    """ControlRecordType ids 0 ABORT and 1 COMMIT carry an end-transaction marker (version int16,
    coordinatorEpoch int32); an id Kafka does not know is UNKNOWN(id), its value not read."""
    assert control_record_row(key, value) == record_row(5, len(key), -1 if value is None else len(value), **shown)


def test_a_control_record_without_a_readable_key_shows_unknown():
    """No key, or a key shorter than version + type: segdex shows ``UNKNOWN(-1)`` (ControlRecordType.UNKNOWN's
    id) where Kafka's tool throws and stops."""
    assert control_record_row(None, None) == record_row(5, -1, -1, controlType="UNKNOWN(-1)")
    assert control_record_row(b"\0\0\0", None) == record_row(5, 3, -1, controlType="UNKNOWN(-1)")


# --- decoders ----------------------------------------------------------------------------------------------

def data_record(key: bytes | None, value: bytes | None, offset: int = 17):
    data = build_batch(offset, [(TS, key, value)])
    [batch] = list(batches(data))
    [record] = list(records(data, batch))
    return batch, record


def test_the_offsets_decoder_names_the_record_offset_of_an_unknown_type():
    """``CoordinatorRecordMessageParser``: ``Unknown record type N at offset O, skipping.`` as the key, no payload."""
    batch, record = data_record(struct.pack(">h", 30000) + b"\0\0", b"\0\0")
    assert record_view(batch, record, OffsetsMessageParser()) == record_row(
        17, 4, 2, key="Unknown record type 30000 at offset 17, skipping.")


class RefusingParser:
    """A decoder that refuses every record and notes the offsets it was given."""

    def __init__(self) -> None:
        self.offsets: list[int] = []

    def parse(self, offset: int, key: bytes | None, value: bytes | None):
        self.offsets.append(offset)
        raise MessageFormatException(f"cannot read record {offset}")


def test_a_decoder_refusal_is_the_key_and_marks_the_row():
    """The refusal's text stands in the ``key`` column, with ``decodeError``; there is no payload."""
    batch, record = data_record(b"k", b"value")
    parser = RefusingParser()
    assert record_view(batch, record, parser) == record_row(17, 1, 5, key="cannot read record 17", decodeError=True)
    assert parser.offsets == [17]


# --- dump_log rows -----------------------------------------------------------------------------------------

def test_without_deep_iteration_only_batches_are_listed(kafka_fixtures: Path):
    """Without ``--deep-iteration`` Kafka prints batch lines only: the rows are ``batches.json``'s, one per batch."""
    log = kafka_fixtures / "v2_txn_two_producers" / "broker" / LOG_NAME
    expected = kafka_batch_facts(log)
    assert any(b["isControl"] for b in expected)
    for rows in (list(dump_log(str(log))), list(dump(str(log)))):
        assert [r["type"] for r in rows] == ["batch"] * len(expected)
        assert [{k: v for k, v in r.items() if k not in ("type", "_extras")} for r in rows] == expected


def test_iteration_stops_where_kafkas_iterator_threw(kafka_fixtures: Path):
    """The preallocated zero tail: Kafka's iterator throws CorruptRecordException at the first zero size."""
    log = kafka_fixtures / "corrupt_preallocated_zero_tail" / "input" / LOG_NAME
    facts = kafka_batch_facts(log)
    stopped = facts[-1]["iterationStopped"]
    kafka_class, kafka_message = stopped.split(": ", 1)
    assert kafka_message.endswith(f" in file {LOG_NAME}.")
    rows = list(dump_log(str(log)))
    assert len(rows) == len(facts)
    assert rows[-1] == {"type": "error", "iterationStopped": f"{kafka_class.rsplit('.', 1)[-1]}: "
                                                             f"{kafka_message.removesuffix(f' in file {LOG_NAME}.')}"}


def test_trailing_bytes_after_the_last_whole_batch(kafka_fixtures: Path):
    """A log cut inside its last batch: Kafka's iterator stops quietly after the last whole batch and prints
    ``Found N invalid bytes at the end of <file>``."""
    log = kafka_fixtures / "corrupt_truncated_tail" / "input" / LOG_NAME
    last = kafka_batch_facts(log)[-1]
    end = last["position"] + last["sizeInBytes"]
    trailing = log.stat().st_size - end
    assert end > 0 and trailing > 0
    assert list(dump_log(str(log)))[-1] == {
        "type": "partialBatch", "position": end, "trailingBytes": trailing,
        "note": f"{trailing} trailing bytes at position {end} do not hold a whole batch: Kafka's recovery "
                f"truncates them"}
    lines, status = segdex_lines(str(log))
    assert lines[-1] == f"Found {trailing} invalid bytes at the end of {LOG_NAME}"
    assert status == 1


def test_a_log_holding_only_part_of_a_batch(tmp_path: Path):
    """No whole batch: all the file's bytes are trailing, from position 0."""
    batch = build_batch(0, [(TS, b"key", b"a value")])
    log = write_log(tmp_path, batch[:40])
    assert list(dump_log(str(log))) == [{
        "type": "partialBatch", "position": 0, "trailingBytes": 40,
        "note": "40 trailing bytes at position 0 do not hold a whole batch: Kafka's recovery truncates them"}]
    lines, _status = segdex_lines(str(log))
    assert lines == [f"Dumping {log}", "Log starting offset: 0", f"Found 40 invalid bytes at the end of {LOG_NAME}"]


def test_a_legacy_gzip_wrapper_with_no_inner_messages(tmp_path: Path):
    """``printBatchLevel`` of a magic 1 wrapper prints its own offset, timestamp, size, codec and CRC: nothing
    from the inner messages, so an empty compressed set still has its line."""
    wrapper = legacy_v1_gzip_wrapper(41, TS, gzip.compress(b""))
    log = write_log(tmp_path, wrapper)
    crc = struct.unpack_from(">I", wrapper, 12)[0]
    lines, status = segdex_lines(str(log))
    assert lines == [
        f"Dumping {log}",
        "Log starting offset: 0",
        f"offset: 41 position: 0 CreateTime: {TS} size: {len(wrapper)} magic: 1 compresscodec: gzip crc: {crc} "
        "isvalid: true",
    ]
    assert status == 0


# --- dump_index and dump ------------------------------------------------------------------------------------

def test_an_index_in_a_topic_dir_with_dots_is_checked_against_its_own_log(tmp_path: Path, kafka_fixtures: Path):
    """Topic names may hold dots: the ``.log`` beside ``<dir>/NNN.index`` is named from the file name only."""
    case = kafka_fixtures / "v2_none_1rec_default_interval"
    part = tmp_path / "orders.eu.v2-0"
    part.mkdir()
    index = part / "00000000000000000000.index"
    shutil.copyfile(case / "recovered" / index.name, index)
    shutil.copyfile(case / "broker" / LOG_NAME, part / LOG_NAME)
    raw = index.read_bytes()
    entries = [{"type": "offsetIndexEntry", "offset": rel, "position": pos}
               for rel, pos in struct.iter_unpack(">ii", raw)]
    assert entries
    assert list(dump_index(str(index))) == [
        *entries, {"type": "verification", "file": str(index), "ok": True, "problems": []}]


def test_an_index_failing_kafkas_sanity_check_is_reported(tmp_path: Path):
    """OffsetIndex.sanityCheck: a last offset below the base offset is a corrupt index (Kafka's words, the file
    named by the row)."""
    index = tmp_path / "00000000000000000100.index"
    index.write_bytes(struct.pack(">ii", -1, 0))  # relative offset -1: offset 99
    write_log(tmp_path, name="00000000000000000100.log")
    assert list(dump_index(str(index))) == [
        {"type": "offsetIndexEntry", "offset": 99, "position": 0},
        {"type": "verification", "file": str(index), "ok": False, "problems": [
            "Corrupt index found, index file has non-zero size but the last offset is 99 which is less than the "
            "base offset 100"]}]


def test_dump_refuses_other_segment_files(tmp_path: Path):
    """A producer snapshot is not a .log/.index/.timeindex/.txnindex: the refusal names the file and suffix."""
    path = str(tmp_path / "00000000000000000955.snapshot")
    with pytest.raises(SegdexError) as e:
        dump(path)
    assert str(e.value) == (f"{path}: segdex dump reads .log, .index, .timeindex and .txnindex files and metadata "
                            f"snapshots (.checkpoint), not .snapshot")


# --- raft control records and metadata snapshots, against Kafka's recorded kafka-dump-log -------------------

# a real 4.4.0 broker's __cluster_metadata-0 (KafkaBroker formatted with `kafka-storage format --standalone`, a
# topic created, a clean stop: its log and latest snapshot) and two crafted files (``crafted_raft_files``)
RAFT = GOLDEN / "raft_control_records"
RAFT_RECORDED = RAFT / "kafka_dump_log.json"
METADATA_LOG = "__cluster_metadata-0/00000000000000000000.log"
SNAPSHOT = "__cluster_metadata-0/00000000000000000032-0000000001.checkpoint"
CUT_FOOTER = "cut_footer-0/00000000000000000005.log"
LEGACY_WRAPPER = "legacy_wrapper-0/00000000000000000000.log"
RAFT_FILES = (METADATA_LOG, SNAPSHOT, CUT_FOOTER, LEGACY_WRAPPER)
RAFT_OPTIONS = ((), ("--deep-iteration",), ("--cluster-metadata-decoder",), ("--max-bytes", "1000"))


def crafted_raft_files() -> dict[str, bytes]:
    """The two files of ``RAFT`` built here rather than by a broker: a SnapshotFooter control record whose value
    is two bytes, its version alone (the message's tagged-field count is missing); a magic 1 gzip wrapper whose
    payload is not gzip."""
    return {CUT_FOOTER: control_batch(struct.pack(">hh", 0, 4), b"\x00\x00"),
            LEGACY_WRAPPER: legacy_v1_gzip_wrapper(3, TS, b"not gzip data")}


def _kafka_dump_raw(options: tuple[str, ...], name: str) -> dict:
    """Kafka 4.4.0's ``kafka-dump-log`` over one file of ``RAFT``: the lines it printed after ``Dumping``, a last
    line it left half printed when it threw, and what it threw."""
    import re
    import subprocess

    from tests.support.dump_compare import DUMP_CLASS, UTF8
    from tests.support.kafka_harness import KafkaInstall

    install = KafkaInstall("4.4.0").check()
    cmd = install.java(DUMP_CLASS[install.family], *options, "--files", str(RAFT / name))
    cmd[1:1] = UTF8
    proc = subprocess.run(cmd, capture_output=True, timeout=300)
    body = proc.stdout.decode("utf-8").split("\n", 1)[1]
    lines = body.split("\n")
    thrown = re.search(r'Exception in thread "main" ([\w.$]+(?:: .*)?)', proc.stderr.decode())
    return {"lines": lines[:-1], "partial": lines[-1] or None, "died": thrown.group(1) if thrown else None}


def test_the_recorded_raft_dumps_are_kafkas():
    """Records ``RAFT_RECORDED`` with ``SEGDEX_RECORD_GOLDEN=1`` (Kafka 4.4.0's jars, a JVM per file and option
    set); otherwise checks that the crafted files are still the bytes built by ``crafted_raft_files``."""
    for name, data in crafted_raft_files().items():
        assert (RAFT / name).read_bytes() == data, name
    if os.environ.get("SEGDEX_RECORD_GOLDEN") == "1":
        answers = {" ".join(options): {name: _kafka_dump_raw(options, name) for name in RAFT_FILES}
                   for options in RAFT_OPTIONS}
        RAFT_RECORDED.write_text(json.dumps(answers, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    assert set(json.loads(RAFT_RECORDED.read_text())) == {" ".join(o) for o in RAFT_OPTIONS}


@pytest.mark.parametrize("options", RAFT_OPTIONS, ids=lambda o: " ".join(o) or "batches")
def test_raft_control_records_and_snapshots_print_as_kafka_dump_log(options: tuple[str, ...]):
    """``segdex dump`` (in this process, through ``dump``) against Kafka 4.4.0's ``kafka-dump-log`` on the same
    files, recorded in ``RAFT_RECORDED``: a real 4.4.0 broker's metadata log and its latest snapshot (formatted
    ``--standalone``, so that its control records are all five raft ones: ``LeaderChange:``, ``KRaftVersion``,
    ``KRaftVoters``, ``SnapshotHeader``, ``SnapshotFooter``, each printed as the message's JSON), a snapshot
    dumped with ``--deep-iteration``, the decoder and ``--max-bytes`` (``dump``'s snapshot branch: each option
    reaches ``dump_log``), and the two crafted files. Where Kafka's tool throws (the footer it cannot read, the
    wrapper it cannot open), its lines are the start of segdex's and its half-printed line the start of
    segdex's next: segdex names the control type (``controlType: SNAPSHOT_FOOTER(4)``, as for a type Kafka
    does not decode) and goes on, or says what stopped it."""
    kafka = json.loads(RAFT_RECORDED.read_text())[" ".join(options)]
    ours, _status = segdex_dump([str(RAFT / name) for name in RAFT_FILES], *options)
    for name in RAFT_FILES:
        mine, theirs = ours[str(RAFT / name)], kafka[name]
        if theirs["died"] is None:
            assert theirs["partial"] is None and mine == theirs["lines"], name
            continue
        assert mine[:len(theirs["lines"])] == theirs["lines"], name
        assert mine[len(theirs["lines"])].startswith(theirs["partial"] or ""), name
    deep = options in (("--deep-iteration",), ("--cluster-metadata-decoder",))
    log_text = "\n".join(kafka[METADATA_LOG]["lines"] + kafka[SNAPSHOT]["lines"])
    for shown in ("LeaderChange: {", "KRaftVersion {", "KRaftVoters {", "SnapshotHeader {", "SnapshotFooter {"):
        assert (f"headerKeys: [] {shown}" in log_text) == deep, shown
    if deep:
        assert kafka[CUT_FOOTER]["died"] == "java.nio.BufferUnderflowException"
        assert ours[str(RAFT / CUT_FOOTER)][-1].endswith(" headerKeys: [] controlType: SNAPSHOT_FOOTER(4)")
        assert kafka[LEGACY_WRAPPER]["died"] == ("org.apache.kafka.common.KafkaException: java.util.zip.ZipException: "
                                                 "Not in GZIP format")
        assert ours[str(RAFT / LEGACY_WRAPPER)][-1] == (
            'iterationStopped: "KafkaException: java.util.zip.ZipException: Not in GZIP format"')
    if options[:1] == ("--max-bytes",):
        assert len(kafka[SNAPSHOT]["lines"]) == 2  # the snapshot's first batch only: the next ends past 1000


def test_a_legacy_wrapper_kafka_cannot_open_has_no_base_offset_or_count():
    """A magic 1 gzip wrapper whose payload is not gzip: Kafka's ``baseOffset()`` opens the inner messages and
    throws (``KafkaException: java.util.zip.ZipException: Not in GZIP format``) and its ``countOrNull()`` is null
    (asked of 4.4.0's ``FileRecords.batches()`` on this file), so the row holds no value for either (JSON null),
    while the wrapper's own fields print as ``kafka-dump-log`` prints them (``RAFT_RECORDED``)."""
    [row] = list(dump_log(str(RAFT / LEGACY_WRAPPER)))
    assert row["baseOffset"] is None and row["recordCount"] is None
    assert (row["lastOffset"], row["magic"], row["compressionType"], row["isValid"]) == (3, 1, "gzip", True)
    [line] = json.loads(RAFT_RECORDED.read_text())[""][LEGACY_WRAPPER]["lines"][1:]
    assert line.startswith("offset: 3 position: 0 CreateTime: 1700000000000 size: 47 magic: 1 compresscodec: gzip")
