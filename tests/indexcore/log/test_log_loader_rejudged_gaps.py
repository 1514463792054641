"""``LogLoader``'s dry run where a recovered segment is judged from the load's producer state, not the scan's
(``_recovered_from_the_loads_state``, ``_replays_as_scanned``), where a replay is taken up (``_replayed``), and the
transactions a start leaves (``producer_state_after_start``): directed partitions, each judged by Kafka 4.4's own
``LogLoader``, as ``test_log_loader_dry_run``'s ``DIRECTED_LOADS`` groups are.

Each case is built twice and loaded by Kafka once each: a start and clean stop (``load``: whether it throws,
else the segments it recovered and its log end offset, ``_producer_state_cases``), and the cleaner's view of the log
it opens (``cleanable``, the high watermark at the log end: its last stable offset, which the transactions the load
leaves bound, as ``test_the_transactions_a_start_leaves_give_kafkas_last_stable_offset`` compares them).
``SEGDEX_RECORD_GOLDEN=1`` records Kafka's answers in ``tests/kafka/golden/startup_preview_rejudged_gaps.json``; the
test process compares with them without a JVM (what the mutation run checks these rules with)."""

from __future__ import annotations

import struct
from pathlib import Path

import crc32c

from segdex.indexcore.log.layout import index_paths
from segdex.indexcore.log.log_loader import producer_state_after_start
from segdex.indexcore.log.producer_snapshot import producer_snapshot_file_name, snapshot_bytes
from segdex.indexcore.tools.segment_writer import build_batch
from tests.indexcore.log.test_log_loader_dry_run import (
    T,
    _batch,
    _flipped,
    _producer_state_cases,
    _put,
    _snapshot7,
    _txn7,
    _txn8,
)
from tests.support.cleaner_cases import RecordingOracle, keep_recording, recorded
from tests.support.fixtures import GOLDEN
from tests.support.preview_cases import on_disk

REJUDGED = GOLDEN / "startup_preview_rejudged_gaps.json"  # Kafka's loads and views of these cases


def _txn9_with_unreadable_marker(offset: int) -> bytes:
    """Producer 9's transactional batch at ``offset``, then its COMMIT marker whose control type is 100 (CRC
    repaired): the scan's recovery, as Kafka's ``EndTransactionMarker``, throws there (IllegalArgumentException,
    which ``LogSegment.recover`` does not catch): a recovery of this segment fails the load."""
    txn = dict(producer_id=9, producer_epoch=0, is_transactional=True)
    data = build_batch(offset, [(T + offset, b"w", b"v")], base_sequence=0, **txn)
    marker = bytearray(build_batch(offset + 1, [], control=("COMMIT", 3), control_timestamp=T + offset + 1, **txn))
    struct.pack_into(">h", marker, 61 + 5 + 2, 100)  # header 61, 5 single-byte fields, key version int16, type
    struct.pack_into(">I", marker, 17, crc32c.crc32c(bytes(marker[21:])))
    return data + bytes(marker)


def _later_segment_meets_the_transaction_a_rejudged_one_opens(part: Path) -> tuple[bool, int]:
    """Recovery point 10. Segment 0 (served, whole) leaves producer 7's transaction open at 0; the snapshot at 10
    holds producer 7 with none open. The scan finds producer 7's plain batch at 10 inside the open transaction
    (``InvalidTxnStateException``) and stops there; the load's recovery of segment 10 from the snapshot passes it
    and opens producer 8's transaction at 11, which the scan never saw, and its recovery of segment 20 (from the
    snapshot at 12 it took) meets producer 8's plain batch at 20 inside it: the start fails
    (``InvalidTxnStateException``). Segment 10, judged again, is not read as the scan read it: taking it so keeps
    segment 20's result from the scan, and the start would serve the partition."""
    _put(part, 0, _txn7(0) + _batch(1))
    _put(part, 10, _txn7(10, transactional=False, sequence=1) + _txn8(11))
    _put(part, 20, _txn8(20, transactional=False, sequence=1))
    _snapshot7(part, 10, None, 0)
    return False, 10


def _served_tail_past_the_scans_valid_part_opens_a_transaction(part: Path) -> tuple[bool, int]:
    """Recovery point 10, no snapshot. Segment 0 (served, no index entry) ends with producer 7's transactional batch
    at 1, its CRC bad: the scan stops before it; the recovery of segment 10 replays segment 0 from the log start
    by batch size (no CRC check), opens the transaction and meets producer 7's plain batch at 10 inside it: the
    start fails there (``InvalidTxnStateException``). Segment 20, whose marker no recovery reads, is never
    reached; taking segment 0 as read as the scan read it (past its valid part) keeps segment 10's result from the
    scan, and the start would fail at segment 20 instead (``IllegalArgumentException``)."""
    damaged = bytearray(_txn7(1))
    damaged[-1] ^= 1
    _put(part, 0, _batch(0) + bytes(damaged))
    _put(part, 10, _txn7(10, transactional=False, sequence=1))
    log = _put(part, 20, _txn9_with_unreadable_marker(20), index=False)
    Path(index_paths(str(log))[".index"]).write_bytes(b"")  # an index in place: no recovery at open
    return False, 10


def _replay_taken_up_past_three_segments(part: Path) -> tuple[bool, int]:
    """Marker, the snapshot at 10 without producers. Segment 0 has a bad CRC in its last batch (served: the first
    unstable offset is read, the load's state computed); the last rebuild replays segments 10 and 20 whole, then
    segment 30 (the floor segment of the log end): producer 8's plain batch at 20, then its transaction opened at
    21, open at the end. The start serves the partition and its last stable offset is 21. The dry run asks for
    the state at the log end twice (the first unstable offset's read, then ``producer_state_after_start``): the
    second takes the first's replay up after segment 20; taking it up after segment 10 only would replay segment
    20 again, producer 8's plain batch inside its own open transaction."""
    _put(part, 0, _batch(0) + _flipped(1))
    _put(part, 10, _batch(10))
    _put(part, 20, _txn8(20, transactional=False) + _txn8(21, sequence=1))
    _put(part, 30, _batch(30))
    (part / producer_snapshot_file_name(10)).write_bytes(snapshot_bytes([]))
    return True, 31


def _every_segment_deleted(part: Path) -> tuple[bool, int, int]:
    """Marker, the log start offset checkpointed at 50, above the log end (3): every segment is deleted
    (``deleteSegmentsIfLogStartGreaterThanLogEnd``) and an empty one made at 50; the log holds no transaction (its
    last stable offset is 50), though segment 0 left producer 7's open."""
    _put(part, 0, _batch(0) + _txn7(1) + _batch(2))
    return True, 3, 50


def _every_segment_deleted_after_an_unclean_stop(part: Path) -> tuple[bool, int, int]:
    """As ``_every_segment_deleted`` without the marker and no recovery point: a replay of segment 0 from the
    checkpoint's log start taken as 0 would open producer 7's transaction at 1 (last stable offset 1); Kafka's
    deletes the segment and empties the state (``truncateFullyAndStartAt``): 50."""
    _put(part, 0, _batch(0) + _txn7(1) + _batch(2))
    return False, 0, 50


CASES = {  # name -> (builder, whether Kafka's start fails)
    "later segment meets the transaction a rejudged one opens": (
        _later_segment_meets_the_transaction_a_rejudged_one_opens, True),
    "served tail past the scan's valid part opens a transaction": (
        _served_tail_past_the_scans_valid_part_opens_a_transaction, True),
    "replay taken up past three segments": (_replay_taken_up_past_three_segments, False),
    "every segment deleted": (_every_segment_deleted, False),
    "every segment deleted after an unclean stop": (_every_segment_deleted_after_an_unclean_stop, False),
}


def _transactions_left(oracle, tmp_path: Path, cases: dict = CASES) -> None:
    """Each case's ``producer_state_after_start`` against Kafka's log after the same start (``cleanable``, the high
    watermark at the log end): None where Kafka's start throws; else the first unstable offset of the transactions
    it leaves, those its last replay completed passed by that high watermark, bounds the last stable offset as
    Kafka's does (a load that deletes every segment leaves an empty state: ``truncateFullyAndStartAt``)."""
    for name, (build, _) in cases.items():
        part = tmp_path / name.replace(" ", "_").replace("'", "") / "t-0"
        part.parent.mkdir(parents=True)
        clean, recovery_point, *log_start = build(part)
        start = log_start[0] if log_start else None
        state = producer_state_after_start(on_disk(part), clean, recovery_point, start)
        answer = oracle.cleanable(part, T + 200, log_start_offset=start or 0, recovery_point=recovery_point,
                                  clean=clean)
        if "exception" in answer:
            assert state is None, (name, answer)
            continue
        assert state is not None, (name, answer)
        leo = answer["logEndOffset"]
        state = state.copy()
        state.remove_unreplicated_transactions(leo)
        first = state.first_unstable_offset(0)
        assert (leo if first is None else min(first, leo)) == answer["lastStableOffset"], (name, answer)


def _rejudged_gaps(oracle, tmp_path: Path) -> None:
    """``CASES`` through ``_producer_state_cases`` (Kafka's load), then ``_transactions_left`` (Kafka's view)."""
    (tmp_path / "loads").mkdir()
    _producer_state_cases(oracle, tmp_path / "loads", CASES)
    _transactions_left(oracle, tmp_path / "transactions", CASES)


def test_the_rejudged_gaps_say_what_kafkas_start_does(kafka44, tmp_path: Path):
    """``_rejudged_gaps`` against Kafka 4.4's own loads and views; its answers equal the recorded ones
    (``SEGDEX_RECORD_GOLDEN=1`` records them)."""
    recording = RecordingOracle(kafka44)
    _rejudged_gaps(recording, tmp_path)
    keep_recording("rejudged gaps", recording, REJUDGED)


def test_the_rejudged_gaps_equal_kafkas_recorded_loads(tmp_path: Path):
    """``_rejudged_gaps`` against Kafka's recorded answers, in the test process (what the mutation run checks
    these rules with); every recorded answer is asked for."""
    kafka = recorded("rejudged gaps", REJUDGED)
    _rejudged_gaps(kafka, tmp_path)
    assert not kafka.recorded
