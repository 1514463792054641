"""Unit checks of indexcore's small modules at the edges their existing tests leave open: producer sequences and
entries, producer snapshots, checkpoint files, xerial snappy framing, statuses and reasons, broker and topic
configs, Java's HashMap order, partition directory names, file kinds, temporaries, the quarantine and the legacy
message writer.

Expected values come from Kafka's and Java's definitions, written out in each test: ``DefaultRecordBatch
.incrementSequence``, ``ProducerStateEntry`` / ``BatchMetadata``, the snapshot layout (built here with
``struct.pack`` and CRC-32C), ``CheckpointFile`` (lines read as ``BufferedReader.readLine`` reads them),
xerial's ``SnappyOutputStream`` framing (built here around raw snappy blocks), ``KafkaConfig
.logRetentionTimeMillis``, ``ConfigDef``'s error text, ``java.util.HashMap``'s bucket order and resize rules,
``Topic.validate`` (249 characters at most) and the magic 0/1 message format (built here with ``struct.pack`` and
CRC-32). Where a text is segdex's own (an operator reads it), the whole text is pinned.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import stat
import struct
import tempfile
import zlib
from pathlib import Path

import cramjam
import pytest
from kafka_bytes import legacy_message as _v1  # a magic 0/1 message laid out from the message format
from test_producer_snapshot import _reference as _snapshot  # ProducerSnapshot v1 from Kafka's schema

from segdex.indexcore.config.broker_config import load_properties, read_broker_config
from segdex.indexcore.config.log_config import ConfigException, TopicConfigResolver, parse_topic_config_args
from segdex.indexcore.errors import (
    CorruptRecordException,
    DecompressionException,
    InvalidLayoutException,
    InvalidTxnStateException,
    UsageException,
)
from segdex.indexcore.fs.file_access import _kind
from segdex.indexcore.log.checkpoints import (
    CorruptCheckpointException,
    read_leader_epoch_checkpoint,
    read_offset_checkpoint,
)
from segdex.indexcore.log.java_hash_map import hash_map_order
from segdex.indexcore.log.layout import (
    TopicPartition,
    filename_prefix_from_offset,
    parse_partition_dir_name,
    parse_segment_file_name,
)
from segdex.indexcore.log.producer_snapshot import CorruptSnapshotException, read_snapshot
from segdex.indexcore.log.producer_state import (
    BatchMetadata,
    ProducerStateEntry,
    ProducerStateManager,
)
from segdex.indexcore.log.quarantine import check_quarantine_dir, truncate_with_quarantine
from segdex.indexcore.record.compression import _xerial_snappy, decompress
from segdex.indexcore.record.record_batch import increment_sequence
from segdex.indexcore.status import Reason, SegmentStatus
from segdex.indexcore.tools.segment_writer import build_legacy, control_record, legacy_message

INT32_MAX = 2**31 - 1
TS = 1_700_000_000_000

# ---------------------------------------------------------------- producer_state


@pytest.mark.parametrize("sequence, increment", [
    (0, 5), (INT32_MAX - 5, 5), (INT32_MAX - 4, 5), (INT32_MAX, 1), (INT32_MAX - 2, 10), (INT32_MAX, 0)])
def test_sequences_wrap_from_int_max_to_zero(sequence: int, increment: int):
    """``DefaultRecordBatch.incrementSequence``: past Integer.MAX_VALUE the sequence goes on from 0."""
    total = sequence + increment
    expected = total if total <= INT32_MAX else total - (INT32_MAX + 1)
    assert increment_sequence(sequence, increment) == expected


def test_a_data_batch_is_kept_as_kafkas_batch_metadata():
    """``ProducerStateEntry.addBatch``: BatchMetadata(lastSeq, lastOffset, offsetDelta, timestamp)."""
    ps = ProducerStateManager()
    ps.append_data_batch(7, 0, 10, 100, 104, TS + 3, False)
    e = ps.producers[7]
    assert (e.producer_epoch, e.last_timestamp, e.last_batch) == (0, TS + 3, BatchMetadata(14, 104, 4, TS + 3))


def test_a_new_epoch_drops_the_batch_metadata():
    """``maybeUpdateProducerEpoch`` clears the batches kept for the old epoch."""
    e = ProducerStateEntry(7, 0, -1, TS, None, BatchMetadata(3, 10, 0, TS))
    e.maybe_update_producer_epoch(0)
    assert e.last_batch == BatchMetadata(3, 10, 0, TS)
    e.maybe_update_producer_epoch(1)
    assert e.producer_epoch == 1 and e.last_batch is None
    assert (e.last_seq, e.last_data_offset, e.last_offset_delta) == (-1, -1, 0)


def test_a_plain_write_inside_an_open_transaction_is_refused():
    ps = ProducerStateManager()
    ps.append_data_batch(7, 0, 0, 12, 13, TS, True)
    with pytest.raises(InvalidTxnStateException) as e:
        ps.append_data_batch(7, 0, 2, 14, 14, TS + 1, False)
    assert str(e.value) == "Expected transactional write from producer 7 at offset 14"
    assert (ps.ongoing_txns, ps.producers[7].last_batch) == ({12: 7}, BatchMetadata(1, 13, 1, TS))


# ---------------------------------------------------------------- producer_snapshot


def test_a_transaction_opened_at_offset_0_is_read_as_open():
    """``readSnapshot``: currentTxnFirstOffset >= 0 is an open transaction (offset 0 included), -1 none."""
    data = _snapshot([(3, 1, 4, 9, 2, TS, 5, 0), (4, 0, 0, 1, 0, TS + 1, -1, -1), (5, 0, 7, 12, 1, TS + 2, 2, 1)])
    got = read_snapshot(data)
    assert [(e.producer_id, e.current_txn_first_offset) for e in got] == [(3, 0), (4, None), (5, 1)]
    assert got[0] == ProducerStateEntry(3, 1, 5, TS, 0, BatchMetadata(4, 9, 2, TS))


def test_a_snapshot_too_short_names_the_default_name():
    with pytest.raises(CorruptSnapshotException) as e:
        read_snapshot(b"\x00\x01\x00")
    assert str(e.value) == "snapshot: 3 bytes, shorter than the 10-byte header"


# ---------------------------------------------------------------- checkpoints


def test_a_checkpoint_without_a_final_newline_keeps_its_last_entry(tmp_path: Path):
    """``CheckpointReadBuffer`` reads lines with ``readLine``: the last line needs no line end."""
    lec = tmp_path / "leader-epoch-checkpoint"
    lec.write_text("0\n2\n0 0\n3 100")
    assert read_leader_epoch_checkpoint(lec) == [(0, 0), (3, 100)]
    rp = tmp_path / "recovery-point-offset-checkpoint"
    rp.write_text("0\n2\nt 0 5\nu 1 7")
    assert read_offset_checkpoint(rp) == {("t", 0): 5, ("u", 1): 7}


@pytest.mark.parametrize("text, why", [
    ("0\n", "expected a version line and a count line"),
    ("1\n0\n", "unrecognized version '1'"),
    ("0\nx\n", "malformed entry count 'x'"),
    ("0\n2\n1 0\n", "expected 2 entries but found 1"),
    ("0\n1\n1 2 3\n", "malformed line '1 2 3'"),
    ("0\n1\na 0\n", "malformed epoch entry"),
])
def test_leader_epoch_checkpoints_segdex_refuses(tmp_path: Path, text: str, why: str):
    path = tmp_path / "leader-epoch-checkpoint"
    path.write_text(text)
    with pytest.raises(CorruptCheckpointException) as e:
        read_leader_epoch_checkpoint(path)
    assert str(e.value) == f"{path}: {why}"


@pytest.mark.parametrize("text, why", [
    ("0\n1\nt 0\n", "malformed line 't 0'"),
    ("0\n1\nt x 5\n", "malformed line t x 5"),
    ("0\n3\nt 0 1\n", "expected 3 entries but found 1"),
])
def test_offset_checkpoints_segdex_refuses(tmp_path: Path, text: str, why: str):
    path = tmp_path / "recovery-point-offset-checkpoint"
    path.write_text(text)
    with pytest.raises(CorruptCheckpointException) as e:
        read_offset_checkpoint(path)
    assert str(e.value) == f"{path}: {why}"


# ---------------------------------------------------------------- compression (xerial snappy)

XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)


def _xerial(*blocks: bytes) -> bytes:
    """SnappyOutputStream's framing: the header, then [int32 length][raw snappy block] per block."""
    out = XERIAL_HEADER
    for b in blocks:
        raw = bytes(cramjam.snappy.compress_raw(b))
        out += struct.pack(">i", len(raw)) + raw
    return out


def test_every_xerial_block_is_kept():
    parts = [b"first block " * 20, b"second " * 30, b"third"]
    assert decompress(2, _xerial(*parts)) == b"".join(parts)


def test_a_truncated_xerial_block_is_refused():
    data = _xerial(b"a" * 100, b"b" * 300)
    cut = data[:-3]
    with pytest.raises(CorruptRecordException) as e:
        _xerial_snappy(cut)
    assert str(e.value) == "Truncated xerial snappy block"
    with pytest.raises(DecompressionException) as e:
        decompress(2, cut)
    assert str(e.value) == "Truncated xerial snappy block"


# ---------------------------------------------------------------- status


def test_reasons_relative_to_the_partition_directory(tmp_path: Path):
    part = tmp_path / "logs" / "t-0"
    own = str(part / "00000000000000000000.log")
    index = str(part / "00000000000000000000.index")
    assert Reason("torn").relative_to(str(part), own) == "torn"
    assert Reason("torn", own, 5).relative_to(str(part), own) == "torn"
    assert Reason("torn", index, 5).relative_to(str(part), own) == "00000000000000000000.index: torn"
    assert Reason("torn", index).relative_to(str(part)) == "00000000000000000000.index: torn"
    assert Reason("torn", str(tmp_path / "logs" / "leader-epoch-checkpoint")).relative_to(str(part), own) == (
        "../leader-epoch-checkpoint: torn")
    assert Reason("torn", "leader-epoch-checkpoint").relative_to(str(part), own) == "leader-epoch-checkpoint: torn"


def test_the_worst_of_no_status_is_the_default():
    assert SegmentStatus.worst([]) is SegmentStatus.OK
    assert SegmentStatus.worst([], SegmentStatus.MISSING) is SegmentStatus.MISSING
    assert SegmentStatus.worst(["ok", "missing", "equivalent"], SegmentStatus.ERROR) is SegmentStatus.MISSING


# ---------------------------------------------------------------- broker_config, log_config


def _server_properties(tmp_path: Path, text: str) -> str:
    path = tmp_path / "server.properties"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("line, value, origin", [
    ("log.retention.ms=0", "0", "log.retention.ms"),
    ("log.retention.minutes=0", "0", "log.retention.minutes"),
    ("log.retention.hours=0", "0", "log.retention.hours"),
    ("log.retention.ms=1", "1", "log.retention.ms"),
    ("log.retention.ms=-5", "-1", "log.retention.ms"),
])
def test_a_retention_of_zero_stays_zero(tmp_path: Path, line: str, value: str, origin: str):
    """``logRetentionTimeMillis``: only a negative result becomes -1 (0 deletes at once)."""
    config = read_broker_config(_server_properties(tmp_path, f"log.dirs=/data/a\n{line}\n"))
    assert (config.defaults, config.origins) == ({"retention.ms": value}, {"retention.ms": origin})


@pytest.mark.parametrize("key, kind", [("log.retention.ms", "LONG"), ("log.retention.minutes", "INT"),
                                       ("log.retention.hours", "INT")])
def test_a_retention_that_is_not_a_number(tmp_path: Path, key: str, kind: str):
    """ConfigDef's text: log.retention.ms is a LONG, minutes and hours are INTs."""
    with pytest.raises(ConfigException) as e:
        read_broker_config(_server_properties(tmp_path, f"{key}=soon\n"))
    assert str(e.value) == f"Invalid value soon for configuration {key}: Not a number of type {kind}"


def test_a_broker_config_without_log_dirs_names_none(tmp_path: Path):
    config = read_broker_config(_server_properties(tmp_path, "log.segment.bytes=1048576\n"))
    assert (config.log_dirs, config.defaults) == ([], {"segment.bytes": "1048576"})


def test_a_directory_is_not_a_properties_file(tmp_path: Path):
    with pytest.raises(ConfigException) as e:
        load_properties(tmp_path, "--config-file")
    assert str(e.value) == f"--config-file {tmp_path}: a directory, not a properties file"


def test_a_topic_config_value_may_hold_colons():
    """Only the first ':' ends the topic name (topic names have no ':'; throttled-replica lists do)."""
    assert parse_topic_config_args(["orders:leader.replication.throttled.replicas=0:101,1:102",
                                    "orders:retention.ms=5"]) == {
        "orders": {"leader.replication.throttled.replicas": "0:101,1:102", "retention.ms": "5"}}


def test_an_empty_topic_name_in_topic_configs():
    with pytest.raises(ConfigException) as e:
        TopicConfigResolver(topic_configs={"": {"retention.ms": "5"}})
    assert str(e.value) == "empty topic name in --topic-config"


# ---------------------------------------------------------------- java_hash_map
# Keys below 2**16 hash to themselves (Long.hashCode of a small long is the long, and h ^ (h >>> 16) == h).


def test_eight_keys_in_one_bucket_do_not_resize_the_table():
    """A bin is treeified (at capacity < 64: the table doubled) only when a 9th node joins it."""
    keys = [5, 21, 37, 53, 69, 85, 101, 117]  # all in bucket 5 of 16
    assert hash_map_order(keys) == keys


def test_a_ninth_key_in_a_bucket_doubles_a_small_table():
    keys = [5, 21, 37, 53, 69, 85, 101, 117, 133]
    # capacity 32: bucket 5 holds 5, 37, 69, 101, 133; bucket 21 holds 21, 53, 85, 117
    assert hash_map_order(keys) == [5, 37, 69, 101, 133, 21, 53, 85, 117]


def test_bucket_counts_after_a_load_factor_resize():
    """At 13 keys the table goes from 16 to 32; bucket 5 then holds 7 keys, and an 8th keeps capacity 32."""
    keys = [0, 1, 2, 3, 4, 6, 5, 37, 69, 101, 133, 165, 197, 229]
    assert hash_map_order(keys) == [0, 1, 2, 3, 4, 5, 37, 69, 101, 133, 165, 197, 229, 6]


# The 9th key of bucket 5 (at 16) is 117, bucket 21 at 32: the table doubles to 32 with 5 keys in bucket 5 and
# 4 in bucket 21; four more keys of bucket 21 make 8 there (no resize), a fifth makes 9 (capacity 64).
_TREEIFY_KEYS = [5, 37, 69, 101, 133, 21, 53, 85, 117, 149, 181, 213, 245]


def test_bucket_counts_after_a_treeify_resize():
    assert hash_map_order(_TREEIFY_KEYS) == [5, 37, 69, 101, 133, 21, 53, 85, 117, 149, 181, 213, 245]


def test_a_ninth_key_after_a_treeify_resize_doubles_again():
    # capacity 64: bucket 5: 5, 69, 133; 21: 21, 85, 149, 213, 277; 37: 37, 101; 53: 53, 117, 181, 245
    assert hash_map_order(_TREEIFY_KEYS + [277]) == [5, 69, 133, 21, 85, 149, 213, 277, 37, 101, 53, 117, 181,
                                                     245]


# ---------------------------------------------------------------- layout, file_access, atomic_file


def test_a_topic_name_of_249_characters_is_legal():
    """``Topic.validate``: at most 249 characters."""
    assert parse_partition_dir_name("a" * 249 + "-7") == TopicPartition("a" * 249, 7, "")
    with pytest.raises(InvalidLayoutException) as e:
        parse_partition_dir_name("a" * 250 + "-7")
    assert str(e.value) == repr("a" * 250 + "-7") + " does not name a legal Kafka topic"


@pytest.mark.parametrize("topic", [".", ".."])
def test_dot_topics_are_not_legal(topic: str):
    """``Topic.validate``: "." and ".." are refused although their characters are legal; "..." is a topic."""
    with pytest.raises(InvalidLayoutException) as e:
        parse_partition_dir_name(f"{topic}-0")
    assert str(e.value) == f"'{topic}-0' does not name a legal Kafka topic"
    assert parse_partition_dir_name("...-0") == TopicPartition("...", 0, "")


def test_segment_names_refused_with_their_reason():
    """``LogFileUtils.filenamePrefixFromOffset`` zero-pads a non-negative offset to 20 digits; anything else is
    refused, as are names that are not <20 digits><suffix>."""
    assert filename_prefix_from_offset(42) == "00000000000000000042"
    with pytest.raises(InvalidLayoutException) as e:
        filename_prefix_from_offset(-1)
    assert str(e.value) == "Segment base offset must be non-negative, got -1"
    with pytest.raises(InvalidLayoutException) as e:
        parse_segment_file_name("42.log")
    assert str(e.value) == ("'42.log' is not a Kafka segment file name (20-digit base offset, then "
                            ".log/.index/.timeindex/...)")


def test_a_name_without_a_partition_number():
    with pytest.raises(InvalidLayoutException) as e:
        parse_partition_dir_name("orders")
    assert str(e.value) == "'orders' is not a partition directory name (<topic>-<partition>)"


def test_file_kinds_named_in_refusals():
    assert _kind(stat.S_IFBLK | 0o660) == "a block device"
    assert _kind(stat.S_IFCHR | 0o660) == "a character device"
    assert _kind(0) == "not a regular file"


# ---------------------------------------------------------------- quarantine


def test_an_existing_quarantine_directory_is_used(tmp_path: Path):
    q = tmp_path / "q"
    q.mkdir()
    assert check_quarantine_dir(str(q), [str(tmp_path / "logs")]) == str(q.resolve())


def test_a_quarantine_that_cannot_be_created(tmp_path: Path):
    (tmp_path / "file").write_bytes(b"")
    q = str(tmp_path / "file" / "q")
    with pytest.raises(UsageException) as e:
        check_quarantine_dir(q, [])
    assert str(e.value) == f"--quarantine {q}: cannot create it: Not a directory"


@pytest.mark.skipif(os.geteuid() != 0, reason="acting as another user needs root (CI runs as root)")
def test_a_quarantine_that_cannot_be_written():
    """A directory another user may enter but not write (root's, mode 0755) is refused for that user."""
    q = Path(tempfile.mkdtemp(prefix="segdex-q-"))  # under /tmp: the test's own tmp_path is root's, mode 0700
    try:
        q.chmod(0o755)
        os.setresuid(65534, 65534, 0)  # access(2) asks as the real user: both change, root stays the saved one
        try:
            with pytest.raises(UsageException) as e:
                check_quarantine_dir(str(q), [])
        finally:
            os.setresuid(0, 0, 0)
        assert str(e.value) == f"--quarantine {q}: not writable"
        assert check_quarantine_dir(str(q), []) == str(q.resolve())  # root may write it
    finally:
        q.rmdir()


def test_whole_files_moved_away_are_recorded_whole(tmp_path: Path):
    """A later segment over 1 MiB: its manifest entry has its whole size and hash, from offset 0."""
    part = tmp_path / "logs" / "t-0"
    part.mkdir(parents=True)
    log = part / "00000000000000000000.log"
    log.write_bytes(b"k" * 100 + b"tail")
    later = part / "00000000000000000010.log"
    data = os.urandom((1 << 20) + 4097)
    later.write_bytes(data)
    manifest = truncate_with_quarantine(str(part), str(log), 100, [str(later)], str(tmp_path / "q"), "run", "why")
    tail, whole = manifest.pieces
    assert (tail.kind, tail.size, tail.sha256, tail.offset_in_source) == (
        "tail", 4, hashlib.sha256(b"tail").hexdigest(), 100)
    assert (whole.kind, whole.source, whole.size, whole.sha256, whole.offset_in_source) == (
        "file", str(later.resolve()), len(data), hashlib.sha256(data).hexdigest(), 0)
    (written,) = (tmp_path / "q").glob("*/t-0/*.json")
    on_disk = json.loads(written.read_text())
    assert sorted(on_disk) == ["partition_dir", "pieces", "reason", "run_id"]
    assert on_disk["pieces"] == [vars(tail), vars(whole)]


# ---------------------------------------------------------------- segment_writer: legacy messages


def test_a_legacy_message_is_magic_1_unless_told():
    assert legacy_message(3, b"k", b"v", timestamp=TS) == _v1(3, 0, TS, b"k", b"v")
    assert legacy_message(3, None, b"v", magic=0) == _v1(3, 0, 0, None, b"v", magic=0)


def test_legacy_messages_with_create_time():
    recs = [(TS, b"a", b"1"), (TS + 7, None, b"2")]
    assert build_legacy(40, recs) == _v1(40, 0, TS, b"a", b"1") + _v1(41, 0, TS + 7, None, b"2")


def test_legacy_messages_with_log_append_time():
    """LogAppendTime (attribute bit 3) with the broker's time on every message of magic 1, none on magic 0."""
    recs = [(TS, b"a", b"1"), (TS + 7, None, b"2")]
    lat = TS + 500
    expected = _v1(40, 8, lat, b"a", b"1") + _v1(41, 8, lat, None, b"2")
    assert build_legacy(40, recs, log_append_time=lat) == expected
    assert build_legacy(40, recs, magic=1, timestamp_type=1, log_append_time=lat) == expected
    assert build_legacy(40, recs, magic=0, log_append_time=lat) == _v1(40, 0, 0, b"a", b"1", 0) + _v1(
        41, 0, 0, None, b"2", 0)


def test_a_compressed_legacy_wrapper_with_log_append_time():
    """The wrapper: last offset, codec | LogAppendTime bit, the broker's time; inner messages keep theirs,
    with offsets relative to the first (magic 1)."""
    recs = [(TS, b"a", b"1"), (TS + 7, None, b"2")]
    lat = TS + 500
    data = build_legacy(40, recs, compression=1, log_append_time=lat)
    offset, size, crc, magic, attributes, timestamp, key_len, value_len = struct.unpack_from(">qiIbbqii", data)
    assert (offset, size, magic, attributes, timestamp, key_len) == (41, len(data) - 12, 1, 1 | 8, lat, -1)
    assert crc == zlib.crc32(data[16:])
    inner = gzip.decompress(data[34:34 + value_len])
    assert inner == _v1(0, 0, TS, b"a", b"1") + _v1(1, 0, TS + 7, None, b"2")
    plain = build_legacy(40, recs, compression=1)
    assert struct.unpack_from(">bq", plain, 17) == (1, TS + 7)  # CreateTime: the wrapper has the max timestamp


def test_a_control_record_of_a_numeric_type():
    """A control type given by id (one Kafka does not know, say) is written as given."""
    r = control_record((5, 3), TS, 9)
    assert (r.offset, r.timestamp, r.key, r.value) == (9, TS, struct.pack(">hh", 0, 5), struct.pack(">hi", 0, 3))
    r = control_record(("COMMIT", 4), TS, 9)
    assert (r.key, r.value) == (struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 4))
