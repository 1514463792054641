"""The pure-Python scan kernel (``indexcore.scan.python_kernel.scan_simple``) on its own, and recovery with it
(``native=False``), at the edges of what the kernel may run over.

The kernel advances over valid, plain magic-2 batches of the accepted leader epoch, of no producer or of the
run's single one, appending the index entries ``LogSegment.recover``'s interval rule makes, and stops before any
other batch (and before an index append Kafka would refuse) so that the reference loop handles it. Expected
values come from Kafka's format and rules, written out here:

* batches are built in this file by ``struct.pack`` from ``DefaultRecordBatch``'s layout (CRC-32C of attributes
  to the end, varint records);
* ``FileLogInputStream.nextBatch``: a batch that does not fit in the file is a partial batch (no batch);
* ``LogSegment.ensureOffsetInRange``: a relative offset from 0 to ``Integer.MAX_VALUE`` inclusive;
* ``LogSegment.recover``: an offset-index entry (and a time-index ``maybeAppend``) when the batch's position is
  more than ``index.interval.bytes`` past the last entry's; ``OffsetIndex.append`` refuses an offset not larger
  than the last one, ``TimeIndex.maybeAppend`` an offset smaller than its last entry's;
* Kafka's own recovered ``.index``/``.timeindex`` files of the fixtures (``recovered/``).
"""

from __future__ import annotations

import json
import struct
from array import array
from pathlib import Path

import crc32c
import pytest

from segdex.indexcore.log.log_segment import recover
from segdex.indexcore.log.scan.python_kernel import scan_simple
from segdex.indexcore.log.scan.state import (
    S_BATCHES,
    S_CODECS,
    S_FIRST_OFFSET,
    S_LAST_INDEX_ENTRY,
    S_LAST_OFFSET,
    S_MAGICS,
    S_MAX_TIMESTAMP,
    S_OFFSET_OF_MAX_TIMESTAMP,
    S_POSITION,
    S_RECORDS,
    S_RUN_BASE_OFFSET,
    S_RUN_BASE_SEQUENCE,
    S_RUN_LAST_OFFSET,
    S_RUN_MAX_TIMESTAMP,
    S_RUN_PRODUCER_EPOCH,
    S_RUN_PRODUCER_ID,
)
from segdex.indexcore.record.file_records import open_log
from tests.support.kafka_bytes import varint as _varint
from tests.support.scan_states import scan_state

INT32_MAX = 2**31 - 1
TS = 1_700_000_000_000
CRC_AT = 17  # baseOffset (8) + batchLength (4) + partitionLeaderEpoch (4) + magic (1)
ATTRIBUTES_AT = 21
OVERHEAD = 61  # RECORD_BATCH_OVERHEAD: the header of a batch without records


def _record(offset_delta: int, ts_delta: int, key: bytes, value: bytes) -> bytes:
    body = (b"\x00" + _varint(ts_delta) + _varint(offset_delta) + _varint(len(key)) + key + _varint(len(value))
            + value + _varint(0))
    return _varint(len(body)) + body


def batch(base_offset: int, count: int = 1, *, ts: int = TS, value_size: int = 10, epoch: int = 0,
          producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1, magic: int = 2,
          attributes: int = 0) -> bytes:
    """One uncompressed magic-2 batch of ``count`` records (offsets base_offset.., all at timestamp ``ts``)."""
    records = b"".join(_record(i, 0, b"k%d" % i, bytes([i % 251]) * value_size) for i in range(count))
    last_delta = max(count - 1, 0)
    after_length = struct.pack(">ibIhiqqqhii", epoch, magic, 0, attributes, last_delta, ts, ts, producer_id,
                               producer_epoch, base_sequence, count) + records
    data = bytearray(struct.pack(">qi", base_offset, len(after_length)) + after_length)
    struct.pack_into(">I", data, CRC_AT, crc32c.crc32c(bytes(data[ATTRIBUTES_AT:])))
    return bytes(data)



def run_kernel(buf: bytes, base: int, interval: int = 4096, epoch: int = 0, offset_max: int = 1 << 17,
               time_max: int = 1 << 17) -> tuple[array, bytes, bytes]:
    state = scan_state(len(buf), base, interval, epoch)
    offset_data, time_data = bytearray(), bytearray()
    scan_simple(state, buf, offset_data, offset_max, time_data, time_max)
    return state, bytes(offset_data), bytes(time_data)


def progress(state: array) -> tuple[int, int, int, int, int]:
    """(validBytes, batches, records, first offset, last offset) of the kernel's run."""
    return state[S_POSITION], state[S_BATCHES], state[S_RECORDS], state[S_FIRST_OFFSET], state[S_LAST_OFFSET]


def run_slots(state: array) -> tuple[int, int, int, int, int, int]:
    """(producerId, producerEpoch, baseSequence, baseOffset, lastOffset, maxTimestamp) of the run's last batch."""
    return (state[S_RUN_PRODUCER_ID], state[S_RUN_PRODUCER_EPOCH], state[S_RUN_BASE_SEQUENCE],
            state[S_RUN_BASE_OFFSET], state[S_RUN_LAST_OFFSET], state[S_RUN_MAX_TIMESTAMP])


def off_entry(rel: int, pos: int) -> bytes:
    return struct.pack(">ii", rel, pos)


def time_entry(ts: int, rel: int) -> bytes:
    return struct.pack(">qi", ts, rel)


# ---------------------------------------------------------------- which batches the kernel takes


def test_an_empty_batch_at_the_end_of_the_file_is_taken():
    """A batch without records (61 bytes, as compaction leaves one) is a whole batch, also as the file's last
    bytes: ``nextBatch`` reads it when position + 61 <= end."""
    first = batch(0, 2)
    empty = batch(2, 0, ts=TS + 5)
    assert len(empty) == OVERHEAD
    buf = first + empty
    state, offsets, times = run_kernel(buf, 0)
    assert progress(state) == (len(buf), 2, 2, 0, 2)
    assert (state[S_MAX_TIMESTAMP], state[S_OFFSET_OF_MAX_TIMESTAMP]) == (TS + 5, 2)
    assert (offsets, times) == (b"", b"")


def test_an_empty_batch_between_batches_is_taken():
    buf = batch(0, 1) + batch(1, 0) + batch(1, 3)
    state, _, _ = run_kernel(buf, 0)
    assert progress(state) == (len(buf), 3, 4, 0, 3)


def test_a_batch_running_past_the_end_is_partial_even_when_its_crc_matches_the_bytes_present():
    """``FileLogInputStream.nextBatch`` returns no batch when position + size > end, before any CRC check."""
    good = batch(0, 2)
    whole = bytearray(batch(2, 3, value_size=40))
    cut = whole[:-10]
    struct.pack_into(">I", cut, CRC_AT, crc32c.crc32c(bytes(cut[ATTRIBUTES_AT:])))  # valid for what is there
    buf = good + bytes(cut)
    state, _, _ = run_kernel(buf, 0)
    assert progress(state) == (len(good), 1, 2, 0, 1)


def test_a_batch_with_another_magic_is_left_to_the_reference_loop():
    """Only magic 2 is a plain batch; the CRC-32C does not cover the magic byte, so it still matches."""
    other = bytearray(batch(1, 1))
    other[16] = 1
    buf = batch(0, 1) + bytes(other)
    state, _, _ = run_kernel(buf, 0)
    assert progress(state) == (len(buf) - len(other), 1, 1, 0, 0)
    state, _, _ = run_kernel(bytes(other), 1)
    assert progress(state) == (0, 0, 0, -1, -1)


def test_the_largest_relative_offset_is_in_range_and_one_more_is_not():
    """``ensureOffsetInRange``: lastOffset - baseOffset may be Integer.MAX_VALUE, not more."""
    base = 1000
    top = batch(base + INT32_MAX - 1, 2)
    state, _, _ = run_kernel(top, base)
    assert progress(state) == (len(top), 1, 2, base + INT32_MAX - 1, base + INT32_MAX)
    past = batch(base + INT32_MAX, 2)
    state, _, _ = run_kernel(past, base)
    assert progress(state) == (0, 0, 0, -1, -1)


def test_a_first_idempotent_batch_starts_the_run():
    """The run keeps the last producer batch: its id, epoch, base sequence, offsets and max timestamp."""
    buf = batch(10, 3, producer_id=5, producer_epoch=2, base_sequence=7, ts=TS + 9)
    state, _, _ = run_kernel(buf, 10)
    assert progress(state) == (len(buf), 1, 3, 10, 12)
    assert run_slots(state) == (5, 2, 7, 10, 12, TS + 9)


def test_a_run_of_one_producer_keeps_its_last_batch():
    b1 = batch(0, 2, producer_id=5, producer_epoch=0, base_sequence=0, ts=TS)
    b2 = batch(2, 1, producer_id=5, producer_epoch=1, base_sequence=2, ts=TS + 3)
    state, _, _ = run_kernel(b1 + b2, 0)
    assert progress(state) == (len(b1) + len(b2), 2, 3, 0, 2)
    assert run_slots(state) == (5, 1, 2, 2, 2, TS + 3)


@pytest.mark.parametrize("first_pid, other_pid", [(5, 0), (1, 5), (0, 1), (5, 6)])
def test_another_producer_ends_the_run(first_pid: int, other_pid: int):
    """Producer ids 0 and 1 are producer ids like any other (NO_PRODUCER_ID is -1)."""
    b1 = batch(0, 2, producer_id=first_pid, producer_epoch=0, base_sequence=0, ts=TS + 1)
    b2 = batch(2, 1, producer_id=other_pid, producer_epoch=0, base_sequence=0, ts=TS + 2)
    state, _, _ = run_kernel(b1 + b2, 0)
    assert progress(state) == (len(b1), 1, 2, 0, 1)
    assert run_slots(state) == (first_pid, 0, 0, 0, 1, TS + 1)


@pytest.mark.parametrize("pid", [0, 1])
def test_producer_ids_0_and_1_start_a_run(pid: int):
    buf = batch(0, 2, producer_id=pid, producer_epoch=3, base_sequence=4) + batch(2, 1)
    state, _, _ = run_kernel(buf, 0)
    assert progress(state) == (len(buf), 2, 3, 0, 2)
    assert run_slots(state) == (pid, 3, 4, 0, 1, TS)


def test_a_batch_without_producer_does_not_end_the_run():
    b1 = batch(0, 1, producer_id=5, producer_epoch=0, base_sequence=0)
    buf = b1 + batch(1, 1) + batch(2, 1, producer_id=5, producer_epoch=0, base_sequence=1)
    state, _, _ = run_kernel(buf, 0)
    assert progress(state) == (len(buf), 3, 3, 0, 2)
    assert run_slots(state) == (5, 0, 1, 2, 2, TS)


def test_producer_id_0_is_kept_in_producer_state_by_python_recovery():
    """Recovery's producer state (what a snapshot would hold) has producer 0's last batch."""
    buf = batch(0, 2, producer_id=0, producer_epoch=1, base_sequence=0, ts=TS) + batch(
        2, 2, producer_id=0, producer_epoch=1, base_sequence=2, ts=TS + 4)
    from segdex.indexcore.log.producer_state import BatchMetadata, ProducerStateManager

    ps = ProducerStateManager()
    result = recover(buf, 0, producer_state=ps, native=False)
    assert (result.valid_bytes, result.batch_count, result.stop_reason, result.error) == (len(buf), 2, None, None)
    assert list(ps.producers) == [0]
    e = ps.producers[0]
    assert (e.producer_epoch, e.last_timestamp, e.current_txn_first_offset, e.last_batch) == (
        1, TS + 4, None, BatchMetadata(3, 3, 1, TS + 4))


# ---------------------------------------------------------------- index appends Kafka would refuse


def _three(base: int, offsets: tuple[int, int, int], sizes: tuple[int, int, int] = (10, 10, 10),
           stamps: tuple[int, int, int] = (TS, TS + 1, TS + 2)) -> tuple[bytes, list[int]]:
    parts = [batch(o, 1, value_size=s, ts=t) for o, s, t in zip(offsets, sizes, stamps, strict=True)]
    positions = [0, len(parts[0]), len(parts[0]) + len(parts[1])]
    return b"".join(parts), positions


@pytest.mark.parametrize("third", [1100, 1050], ids=["same", "smaller"])
def test_the_kernel_stops_before_an_offset_index_append_kafka_refuses(third: int):
    """``OffsetIndex.append`` throws when the offset is not larger than the last one; the kernel leaves that
    batch (indexed at interval 0) to the reference loop, with nothing appended for it."""
    base = 1000
    buf, pos = _three(base, (1000, 1100, third))
    state, offsets, times = run_kernel(buf, base, interval=0)
    assert progress(state) == (pos[2], 2, 2, 1000, 1100)
    assert offsets == off_entry(100, pos[1])
    assert times == time_entry(TS + 1, 100)
    assert state[S_LAST_INDEX_ENTRY] == pos[1]


@pytest.mark.parametrize("third", [1100, 1050], ids=["same", "smaller"])
def test_python_recovery_fails_where_kafkas_offset_index_append_throws(third: int):
    """Kafka's recover throws InvalidOffsetException (not a corruption: nothing is truncated); its message up to
    the index file's path, which an in-memory recovery does not have."""
    base = 1000
    buf, pos = _three(base, (1000, 1100, third))
    result = recover(buf, base, index_interval_bytes=0, native=False)
    assert result.error == (f"InvalidOffsetException at position {pos[2]}: Attempt to append an offset ({third}) "
                            "to position 1 no larger than the last offset appended (1100)")
    assert result.stop_reason is None
    assert bytes(result.offset_index.data) == off_entry(100, pos[1])


def _time_backwards(base: int) -> tuple[bytes, list[int]]:
    """b0 (not indexed: position 0), A indexed, B not (within the interval of A) with the largest timestamp but
    a smaller offset than A, C indexed: the time entry due at C would go back from A's offset to B's."""
    parts = [batch(base, 1, value_size=200, ts=TS), batch(base + 100, 1, ts=TS + 5),
             batch(base + 50, 1, ts=TS + 10), batch(base + 300, 1, ts=TS + 1)]
    positions = [sum(len(p) for p in parts[:i]) for i in range(4)]
    return b"".join(parts), positions


def test_the_kernel_stops_before_a_time_index_append_kafka_refuses():
    base, interval = 1000, 100
    buf, pos = _time_backwards(base)
    assert pos[1] > interval and pos[2] - pos[1] <= interval < pos[3] - pos[1]  # A and C indexed, B not
    state, offsets, times = run_kernel(buf, base, interval=interval)
    assert progress(state) == (pos[3], 3, 3, base, base + 50)
    assert offsets == off_entry(100, pos[1])
    assert times == time_entry(TS + 5, 100)
    assert (state[S_MAX_TIMESTAMP], state[S_OFFSET_OF_MAX_TIMESTAMP]) == (TS + 10, base + 50)


def test_python_recovery_fails_where_kafkas_time_index_append_throws():
    base, interval = 1000, 100
    buf, pos = _time_backwards(base)
    result = recover(buf, base, index_interval_bytes=interval, native=False)
    assert result.error == (f"InvalidOffsetException at position {pos[3]}: Attempt to append an offset (1050) to "
                            "slot 1 no larger than the last offset appended (1100)")


# ---------------------------------------------------------------- Kafka's recovered index files


KERNEL_ONLY_CASES = ["v2_varsize_interval_1", "v2_varsize_interval_100", "v2_base_offset_1000000",
                     "v2_createtime_nonmonotonic", "v2_gzip"]


@pytest.mark.parametrize("case", KERNEL_ONLY_CASES)
def test_the_kernel_alone_writes_kafkas_recovered_indexes(kafka_fixtures: Path, case: str):
    """Over a segment of plain v2 batches (one leader epoch, no producer) the kernel alone writes Kafka's
    recovered .index, and its time entries plus recover's closing ``maybeAppend`` are Kafka's .timeindex."""
    facts = json.loads((kafka_fixtures / case / "case.json").read_text())
    interval = facts["topic_config"]["index.interval.bytes"]
    (log,) = sorted((kafka_fixtures / case / "broker").glob("*.log"))
    base = int(log.name[:20])
    lines = json.loads(log.with_suffix(".batches.json").read_text())
    (epoch,) = {b["partitionLeaderEpoch"] for b in lines}
    assert {b["producerId"] for b in lines} == {-1}
    with open_log(log) as buf:
        state, offsets, times = run_kernel(buf, base, interval=interval, epoch=epoch)
        size = len(buf)
    assert progress(state) == (size, len(lines), sum(b["recordCount"] for b in lines), lines[0]["baseOffset"],
                               lines[-1]["lastOffset"])
    recovered = kafka_fixtures / case / "recovered" / log.name[:-4]
    assert offsets == Path(f"{recovered}.index").read_bytes()
    last_ts = struct.unpack_from(">q", times, len(times) - 12)[0] if times else -1
    if state[S_MAX_TIMESTAMP] > last_ts:
        times += time_entry(state[S_MAX_TIMESTAMP], state[S_OFFSET_OF_MAX_TIMESTAMP] - base)
    assert times == Path(f"{recovered}.timeindex").read_bytes()
    assert (state[S_MAGICS], state[S_CODECS]) == (1 << 2, 1 << {"none": 0, "gzip": 1}[lines[0]["compressionType"]])
