"""What recovery counts for each segment (``RecoveryResult``: batches, records, first and last offset, codecs,
magics, max timestamp), with both scan kernels, against Kafka's own listing of the same segments
(``*.batches.json``, ``FileRecords.batches()`` on the broker's files) for every fixture case Kafka left whole.

These are the facts segdex records per segment in its Delta tables; the legacy (v0/v1), transactional and
control batches take the slow path (``_recover_batch``), the rest the kernel's."""

from __future__ import annotations

import json
import struct
import zlib

import pytest

from segdex.indexcore.log.log_segment import recover
from tests.support.fixtures import FIXTURES, fixture_case_names
from tests.support.log_segments import full_offset_index_segment, one

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}  # Kafka's CompressionType ids
CASES = [c for c in fixture_case_names() if not c.startswith("corrupt_")]


def test_every_whole_case_is_here():
    assert len(CASES) >= 22


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
def test_recovery_counts_what_kafka_lists(case: str, native: bool):
    listings = sorted((FIXTURES / case / "broker").glob("*.batches.json"))
    assert listings, case
    for listing in listings:
        batches = json.loads(listing.read_text())
        log = listing.with_name(listing.name.replace(".batches.json", ".log"))
        base = int(log.name[:20])
        result = recover(log.read_bytes(), base, native=native)
        got = (result.batch_count, result.record_count, result.first_offset, result.last_offset,
               result.codecs, result.magics, result.valid_bytes)
        want = (len(batches), sum(b["recordCount"] for b in batches),
                batches[0]["baseOffset"] if batches else -1, batches[-1]["lastOffset"] if batches else -1,
                sorted({b["compressionType"] for b in batches}, key=CODECS.__getitem__),
                sorted({b["magic"] for b in batches}),
                sum(b["sizeInBytes"] for b in batches))
        assert got == want, (case, log.name)
        if batches:
            assert result.max_timestamp == max(b["maxTimestamp"] for b in batches), (case, log.name)


def _txn(offset: int) -> bytes:
    """A transactional batch: recovery takes it on the slow path (producer state), not in the kernel."""
    from segdex.indexcore.tools.segment_writer import build_batch

    return build_batch(offset, [(1_700_000_000_000, b"k", b"v")], producer_id=5, producer_epoch=0,
                       base_sequence=offset % 1000, is_transactional=True)


@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
def test_relative_offsets_up_to_int32_max_on_the_slow_path(native: bool):
    """``AbstractIndex.relativeOffset``: offset - base must lie in [0, Integer.MAX_VALUE]. A batch at exactly
    base + Integer.MAX_VALUE is recovered; one past it stops recovery (Kafka splits such a segment on load)."""
    int32_max = 2**31 - 1
    fits = _txn(10) + _txn(10 + int32_max)
    result = recover(fits, 10, native=native)
    assert (result.error, result.valid_bytes, result.last_offset) == (None, len(fits), 10 + int32_max)
    past = _txn(10) + _txn(11 + int32_max)
    result = recover(past, 10, native=native)
    assert result.valid_bytes == len(_txn(10)) and result.error == (
        f"IndexOffsetOverflowException at position {len(_txn(10))}: offset {11 + int32_max} at position "
        f"{len(_txn(10))} does not fit the segment's relative offset range (base offset 10); Kafka would split "
        f"this segment on load")


@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
def test_a_full_tiny_index_stops_where_kafkas_did(native: bool):
    """``segment.index.bytes`` 64 (5 time entries, 8 offset entries): every segment's indexes are the bytes
    Kafka's recovery wrote with that limit (``recovered/``), none longer."""
    case = FIXTURES / "index_full_tiny_segment_index_bytes"
    config = json.loads((case / "case.json").read_text())["topic_config"]
    logs = sorted((case / "broker").glob("*.log"))
    assert len(logs) == 21
    for log in logs:
        result = recover(log.read_bytes(), int(log.name[:20]), config["index.interval.bytes"],
                         max_index_size=config["segment.index.bytes"], native=native)
        stem = case / "recovered" / log.name[:20]
        assert result.offset_index.to_bytes() == stem.with_suffix(".index").read_bytes(), log.name
        assert result.time_index.to_bytes() == stem.with_suffix(".timeindex").read_bytes(), log.name


def _kafka_epochs(batches: list[dict]) -> list[tuple[int, int]]:
    """``LeaderEpochFileCache.assign`` as recovery calls it: a v2 batch whose partitionLeaderEpoch is above the
    latest one starts a new epoch at its base offset."""
    out: list[tuple[int, int]] = []
    for b in batches:
        epoch = b["partitionLeaderEpoch"]
        if b["magic"] >= 2 and epoch >= 0 and (not out or epoch > out[-1][0]):
            out.append((epoch, b["baseOffset"]))
    return out


@pytest.mark.parametrize("case", CASES)
def test_leader_epochs_recovery_finds(case: str):
    for listing in sorted((FIXTURES / case / "broker").glob("*.batches.json")):
        log = listing.with_name(listing.name.replace(".batches.json", ".log"))
        result = recover(log.read_bytes(), int(log.name[:20]))
        assert result.leader_epochs == _kafka_epochs(json.loads(listing.read_text())), (case, log.name)


@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
def test_recovery_stops_at_a_full_offset_index(native: bool):
    """``OffsetIndex.append`` on a full index throws (``IllegalArgumentException``, escaping recovery): the ninth
    entry cannot be written. Kafka's recovery of the same segment does the same (test_kafka_oracle)."""
    buf = full_offset_index_segment()
    result = recover(buf, 0, 0, max_index_size=64, native=native)
    assert result.error == "IndexFullException at position 630: Attempt to append to a full index (size = 8)."
    assert len(result.offset_index.to_bytes()) == 64 and result.valid_bytes == 630


@pytest.mark.parametrize("magic", [0x80, 0xFF])
@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
def test_a_magic_byte_above_0x7f_is_a_legacy_message_to_kafka(magic: int, native: bool):
    """Kafka reads the magic as a Java byte: 0x80..0xFF are negative, below v2, so the batch is checked as a
    legacy message: its CRC-32 from the magic byte on against the int at bytes 12..16 (here the v2 leader
    epoch, 0). Kafka's recovery of the same bytes agrees (test_kafka_oracle)."""
    good = one(0)
    bad = bytearray(good)
    bad[16] = magic
    result = recover(good + bytes(bad), 0, native=native)
    crc = zlib.crc32(bytes(bad[16:]))
    assert result.stop_reason == (f"CorruptRecordException at position {len(good)}: Record is corrupt (stored crc = 0, "
                                  f"computed crc = {crc})")
    assert result.valid_bytes == len(good)


@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
def test_a_v2_batch_shorter_than_its_header_at_the_end_of_the_file(native: bool):
    """The last 60 bytes claim a v2 batch (length 48): too short for the 61-byte header, which
    ``DefaultRecordBatch.ensureValid`` refuses by its size before reading anything else."""
    good = one(0)
    short = struct.pack(">qiib", 1, 48, 0, 2) + bytes(60 - 17)
    result = recover(good + short, 0, native=native)
    assert result.stop_reason == (f"CorruptRecordException at position {len(good)}: Record batch is corrupt (the "
                                  f"size 60 is smaller than the minimum allowed overhead 61)")


@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
def test_a_whole_61_byte_batch_ending_the_file_is_kept(native: bool):
    """A v2 batch of no records is exactly its 61-byte header; ending the file, it is read and kept whole
    (Kafka's recovery keeps it too: test_kafka_oracle)."""
    from segdex.indexcore.tools.segment_writer import build_batch

    buf = one(0) + build_batch(1, [])
    result = recover(buf, 0, native=native)
    assert (result.valid_bytes, result.batch_count, result.stop_reason, result.error) == (len(buf), 2, None, None)


def test_a_whole_61_byte_batch_ending_the_file_is_read_whole():
    """``FileLogInputStream``: a batch of exactly the 61-byte header ending the file is a whole v2 batch; its
    header fields are read (the CRC stored at byte 17, its attributes), not those of a batch too short to hold
    them."""
    from segdex.indexcore.record.file_records import batches
    from segdex.indexcore.tools.segment_writer import build_batch

    empty = build_batch(1, [], producer_id=9, producer_epoch=0, base_sequence=0, is_transactional=True)
    buf = one(0) + empty
    last = list(batches(buf))[-1]
    assert (last.position, last.size_in_bytes, last.crc) == (len(one(0)), 61, struct.unpack_from(">I", empty, 17)[0])
    assert last.producer_id == 9
