"""``LogLoader``'s dry run (the startup preview): the stretches ``rebuildProducerState`` reads, where the bytes a
segment holds after the load cut it are not its whole file (``_read_window``, ``_replay_segment``), where each
stretch of a segment served as it is is read for itself (``_read_as_is``), and which segments a replay searches
(``_read_replayed``): directed partitions judged by Kafka 4.4's own ``LogLoader``.

As ``test_log_loader_dry_run``'s ``DIRECTED_LOADS``: each case's builder writes the partition and returns whether the
start is clean and the recovery point; Kafka's answers are recorded (``SEGDEX_RECORD_GOLDEN=1``) in
tests/kafka/golden/startup_preview_window_gaps.json, and the test process compares the dry run with them (what the
mutation run checks these rules with). The transactions the start leaves (``producer_state_after_start``) are
judged by the last stable offset of Kafka's loaded log, as ``test_the_transactions_a_start_leaves_*`` judge
them."""

from __future__ import annotations

from pathlib import Path

import pytest

from segdex.indexcore.log.log_loader import producer_state_after_start
from segdex.indexcore.tools.segment_writer import build_legacy, segment_name
from tests.indexcore.log.test_log_loader_dry_run import (
    MESSAGE,
    ZEROS,
    T,
    _batch,
    _batches,
    _flipped,
    _index_bytes,
    _producer_state_cases,
    _put,
    _snapshot,
    _txn7,
)
from tests.support.cleaner_cases import RecordingOracle, keep_recording, recorded
from tests.support.fixtures import GOLDEN
from tests.support.preview_cases import on_disk

WINDOW_GAPS = GOLDEN / "startup_preview_window_gaps.json"  # Kafka's answers to the cases of this module
LOADS, TRANSACTIONS = "window gaps, loads", "window gaps, transactions"  # its groups there


def _v1(offset: int) -> bytes:
    """A message of the format before 0.11 (magic 1, uncompressed) at ``offset``: its own batch to Kafka."""
    return build_legacy(offset, [(T + offset, b"k", b"v")], magic=1)


def _legacy_last_segment_cut_by_the_recovery_pass(part: Path) -> tuple[bool, int]:
    """Recovery point 10: segment 0 (plain batches) is served; segment 10 holds two messages of the format before
    0.11, then a zero-filled tail, which ``recoverLog`` cuts (Kafka's file is truncated): log end offset 12. The
    recovery took its snapshot at 10 only (its batches do not move the producer state's map end), so the load's
    last rebuild replays segment 10 from 10, searched for 12 (the read's end) in the bytes it holds: no batch
    reaches 12 and the start serves the partition. The search through the whole file would meet the zero-filled
    tail and throw."""
    _put(part, 0, _batches(0, 2))
    _put(part, 10, _v1(10) + _v1(11) + ZEROS)
    return False, 10


def _mixed_segment_cut_when_opened_below_the_snapshot_at_its_end(part: Path) -> tuple[bool, int]:
    """Marker; segments 0 and 10 have no ``.index`` and are recovered as they are opened. Segment 0 holds a message
    of the format before 0.11 at 0, a batch at 1, then a zero-filled tail its recovery cuts (that segment alone);
    its batch at 1 moves the map end, so that recovery takes its snapshot at 2. The recovery of segment 10 replays
    from that snapshot: segment 0, the floor segment of 2 and of 10, is searched for 10 and for 2 in the bytes it
    holds; no batch reaches either, nothing is read, and the start serves the partition (log end 11). A search
    through the whole file would meet the tail Kafka cut and throw."""
    _put(part, 0, _v1(0) + _batch(1) + ZEROS, index=False)
    _put(part, 10, _batch(10), index=False)
    return True, 11


def _legacy_segment_whose_index_on_disk_is_bad_below_the_replay(part: Path) -> tuple[bool, int]:
    """No marker, recovery point 0: segment 0 holds three messages of the format before 0.11 and a ``.index``
    whose one entry (offset 0) points 8 bytes before the second message: a search from there reads that message's
    offset's high bytes as a size field of 0. ``recoverLog`` recovers segment 0 (its index rebuilt, no entry),
    then segment 10, whose replay from the log start searches segment 0 for 0 through the rebuilt index (a
    segment holding such messages is searched even when recovered): the start recovers both and serves the
    partition. A search through the ``.index`` on disk would throw."""
    _put(part, 0, _v1(0) + _v1(1) + _v1(2))
    (part / segment_name(0)).with_suffix(".index").write_bytes(_index_bytes([(0, len(_v1(0)) - 8)]))
    _put(part, 10, _batch(10))
    return False, 0


def _later_stretch_unreadable_after_a_readable_one(part: Path) -> tuple[bool, int]:
    """Marker, a snapshot at 0: nothing is recovered and the load's last rebuild replays every segment, each served
    as it is. Segment 0's last batch has a bad CRC, which the replay (by batch size) reads through; segment 10 ends
    in a zero-filled tail, where the replay's read throws (``CorruptRecordException``) and fails the start. Segment
    20, the last, reads whole (the log end offset, 21). A verdict of segment 0's stretch taken for segment 10's
    would serve the partition."""
    _put(part, 0, _batch(0) + _flipped(1))
    _put(part, 10, _batch(10) + ZEROS)
    _put(part, 20, _batch(20))
    _snapshot(part, 0)
    return True, 21


def _zero_filled_start_of_the_segment_being_recovered(part: Path) -> tuple[bool, int]:
    """No marker, recovery point 0: segment 10 begins with 20 zero bytes (a size field of 0 at its start), then
    batches. ``recoverLog`` recovers segment 0, then segment 10, whose replay reads the segments below 10 only
    (``LogSegments.values(2, 10)``: segment 0), not segment 10 itself: its recovery empties it (the first size field
    is invalid) and segment 20 is deleted; the log end offset is 10. A search of segment 10 through its ``.index``
    on disk, from its start, would throw."""
    _put(part, 0, _batches(0, 2))
    _put(part, 10, ZEROS + _batches(10, 2))
    _put(part, 20, _batch(20))
    return False, 0


LOAD_CASES = {  # name -> (builder, whether Kafka's start fails)
    "legacy last segment cut by the recovery pass": (_legacy_last_segment_cut_by_the_recovery_pass, False),
    "mixed segment cut when opened, below the snapshot at its end": (
        _mixed_segment_cut_when_opened_below_the_snapshot_at_its_end, False),
    "legacy segment whose index on disk is bad below the replay": (
        _legacy_segment_whose_index_on_disk_is_bad_below_the_replay, False),
    "later stretch unreadable after a readable one": (_later_stretch_unreadable_after_a_readable_one, MESSAGE),
    "zero-filled start of the segment being recovered": (_zero_filled_start_of_the_segment_being_recovered, False),
}


def _open_transaction_before_a_zero_filled_tail(part: Path) -> tuple[bool, int]:
    """No marker, recovery point 0: segment 10 holds producer 7's transaction opened at 11, then a zero-filled tail,
    which ``recoverLog`` cuts: the log end offset is 12 and the transaction stays open (last stable offset 11). The
    state is read from the bytes segment 10 holds after the cut; its whole file does not read."""
    _put(part, 0, _batches(0, 2))
    _put(part, 10, _batch(10) + _txn7(11) + ZEROS)
    return False, 0


def _flipped_txn7(offset: int) -> bytes:
    """Producer 7's transactional batch at ``offset`` with a bit flipped in its last (CRC-covered) byte."""
    data = bytearray(_txn7(offset))
    data[-1] ^= 1
    return bytes(data)


def _transaction_in_a_bad_batch_cut_when_opened(part: Path) -> tuple[bool, int]:
    """Marker; segment 0 has no ``.index`` and is recovered as it is opened: its last batch, producer 7's
    transactional write at 2, has a bad CRC and is cut (that segment alone); segment 10 is served. No transaction is
    open: the last stable offset is the log end offset, 11. Read to the end of its file, segment 0 would open one at
    2."""
    _put(part, 0, _batches(0, 2) + _flipped_txn7(2), index=False)
    _put(part, 10, _batch(10))
    return True, 11


TRANSACTION_CASES = {  # name -> builder: the transactions the start leaves
    "open transaction before a zero-filled tail": _open_transaction_before_a_zero_filled_tail,
    "transaction in a bad batch cut when opened": _transaction_in_a_bad_batch_cut_when_opened,
}


def _transaction_cases(oracle, tmp_path: Path) -> None:
    """Each case of ``TRANSACTION_CASES``: the transactions ``producer_state_after_start`` predicts, then Kafka's
    log loaded as that start loads it, its high watermark set at the log end: the first unstable offset of those
    transactions, the ones completed below that high watermark dropped, is Kafka's last stable offset."""
    for name, build in TRANSACTION_CASES.items():
        part = tmp_path / name.replace(" ", "_") / "t-0"
        part.parent.mkdir()
        clean, recovery_point = build(part)
        state = producer_state_after_start(on_disk(part), clean, recovery_point, None)
        answer = oracle.cleanable(part, T + 200, 0, -1, None, 0, config={"cleanup.policy": "compact"},
                                  recovery_point=recovery_point, clean=clean)
        assert state is not None, (name, answer)
        leo = answer["logEndOffset"]
        state = state.copy()
        state.remove_unreplicated_transactions(leo)
        first = state.first_unstable_offset(0)
        assert (leo if first is None else min(first, leo)) == answer["lastStableOffset"], (name, answer)


def test_the_window_gap_loads_say_what_kafkas_start_does(kafka44, tmp_path: Path):
    """``LOAD_CASES`` and ``TRANSACTION_CASES`` against Kafka 4.4's own loads: the dry run's answers are Kafka's, and
    Kafka's answers equal the recorded ones (``SEGDEX_RECORD_GOLDEN=1`` records them)."""
    loads, transactions = RecordingOracle(kafka44), RecordingOracle(kafka44)
    (tmp_path / "loads").mkdir()
    _producer_state_cases(loads, tmp_path / "loads", LOAD_CASES)
    _transaction_cases(transactions, tmp_path)
    keep_recording(LOADS, loads, WINDOW_GAPS)
    keep_recording(TRANSACTIONS, transactions, WINDOW_GAPS)


@pytest.mark.parametrize("group", [LOADS, TRANSACTIONS])
def test_the_window_gap_loads_equal_kafkas_recorded_loads(group: str, tmp_path: Path):
    """The same cases against Kafka's recorded answers, in the test process (what the mutation run checks
    ``_read_window``, ``_read_as_is``, ``_read_replayed`` and ``_replay_segment`` with); every recorded answer is
    asked for."""
    kafka = recorded(group, WINDOW_GAPS)
    if group == LOADS:
        _producer_state_cases(kafka, tmp_path, LOAD_CASES)
    else:
        _transaction_cases(kafka, tmp_path)
    assert not kafka.recorded
