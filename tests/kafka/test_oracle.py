"""Kafka's own recovery code (``LogSegment.recover`` from the release jars) as the judge of segdex's.

First the oracle proves itself on every fixture case (it must write exactly ``recovered/``), then Hypothesis
generates segments and damaged variants and requires segdex = Kafka on each: index bytes, valid bytes, and a
non-ok status exactly where Kafka truncated or threw. Both Kafka families run (the newest 4.x and 3.9.x).
"""

from __future__ import annotations

import os
import random
import shutil
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from segdex.indexcore.log.log_segments import PartitionRecovery, segment_logs
from segdex.indexcore.tools.segment_writer import build_batch
from tests.support.fixtures import FIXTURES, load_case
from tests.support.segment_cases import Case, Draw, _repair_crc, batch_spans, generate, judge, v2_batches

pytestmark = pytest.mark.kafka_broker

EXAMPLES = int(os.environ.get("SEGDEX_ORACLE_EXAMPLES", "250"))
SUFFIXES = (".index", ".timeindex", ".txnindex")


def test_oracle_writes_what_kafka_wrote_for_every_fixture(oracle, tmp_path):
    """The oracle is Kafka: on every fixture case it rebuilds recovered/ byte for byte and returns the
    recovery facts the fixtures recorded; segdex then agrees with it."""
    cases = sorted(p.name for p in FIXTURES.iterdir() if (p / "case.json").is_file())
    assert len(cases) >= 25
    for name in cases:
        case = load_case(name)
        part = tmp_path / name / "topic-0"
        part.mkdir(parents=True)
        for log in (FIXTURES / name / case["recovery_input_dir"]).glob("*.log"):
            shutil.copy(log, part / log.name)
        tc = case["topic_config"]
        interval = int(tc.get("index.interval.bytes", 4096))
        index_bytes = int(tc.get("segment.index.bytes", 10485760))
        answer = oracle.recover(part, interval, index_bytes)
        facts = {s["baseOffset"]: s for s in case["recovered"]["segments"]}
        for seg in answer["segments"]:
            assert seg["exception"] is None, (name, seg)
            assert seg["truncated"] == facts[seg["baseOffset"]]["recoverReturn"], name
            assert seg["validBytes"] == facts[seg["baseOffset"]]["logSizeAfter"], name
        recovered = FIXTURES / name / "recovered"
        for expected in recovered.iterdir():
            if expected.suffix in SUFFIXES:
                assert (part / expected.name).read_bytes() == expected.read_bytes(), f"{name}/{expected.name}"
        written = sorted(p.name for p in part.iterdir() if p.suffix in SUFFIXES)
        assert written == sorted(p.name for p in recovered.iterdir() if p.suffix in SUFFIXES), name


@settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_generated_segments_recover_as_kafka_recovers(oracle, tmp_path, data):
    """segdex = Kafka on generated and damaged segments: same index bytes, same valid bytes, and a non-ok
    status exactly where Kafka truncated or threw. Both scan kernels (native and Python)."""
    case = generate(Draw.from_hypothesis(data))
    for native in (True, False):
        verdict = judge(case, oracle, tmp_path / "case", native=native)
        assert not verdict.mismatches, (case.kind, native, verdict.mismatches, verdict.kafka)


def test_a_damaged_segment_that_kafka_truncates_is_not_ok(oracle, tmp_path):
    """A bit flipped in a v2 header without a repaired CRC: Kafka truncates there and so must segdex (this
    pins the comparison itself: a judge that always agreed would pass the generated test)."""
    draw = Draw.from_random(random.Random(7))
    batches = v2_batches(draw, 0)
    while len(batches) < 3:
        batches += v2_batches(draw, 0)[:1]
    data = bytearray(b"".join(batches))
    cut = len(batches[0])
    data[cut + 30] ^= 0x01  # baseTimestamp of the second batch, inside the CRC
    case = Case({0: bytes(data)}, 4096, 10485760, "v2/bitflip:baseTimestamp")
    verdict = judge(case, oracle, tmp_path / "case")
    assert verdict.kafka["segments"][0]["validBytes"] == cut
    assert not verdict.mismatches
    logs, _ = segment_logs(case.write(tmp_path / "again" / "topic-0"))
    [seg] = list(PartitionRecovery().recover_all(logs))
    assert seg.status == "corrupt_log_tail" and seg.result.valid_bytes == cut


def test_known_classes_match_kafka(oracle, tmp_path):
    """The five corpus cases of the issue, built by hand: a magic byte above 2 outside the CRC, the control
    bit on a transactional data batch, negative key/value versions in an end-txn marker, and a control batch
    with no records. Whatever Kafka does with each, segdex does the same."""
    data = build_batch(0, [(1_700_000_000_000, b"k", b"v")], producer_id=7, producer_epoch=0, base_sequence=0,
                       is_transactional=True)
    data += build_batch(1, [(1_700_000_000_001, b"k", b"v")], producer_id=7, producer_epoch=0,
                        base_sequence=1, is_transactional=True)
    data += build_batch(2, [], producer_id=7, producer_epoch=0, control=("ABORT", 0),
                        control_timestamp=1_700_000_000_002)
    data += build_batch(3, [(1_700_000_000_003, b"k", b"v")])
    spans = batch_spans(data)

    def variant(name, mutate):
        buf = bytearray(data)
        mutate(buf)
        return Case({0: bytes(buf)}, 1, 10485760, name)

    marker = spans[2][0]
    cases = [
        variant("magic 3", lambda b: b.__setitem__(spans[1][0] + 16, 3)),
        variant("magic 0x42", lambda b: b.__setitem__(spans[3][0] + 16, 0x42)),
        variant("control bit on data", lambda b: (struct.pack_into(">h", b, spans[1][0] + 21, 0x30),
                                                  _repair_crc(b, *spans[1]))),
        variant("key version -1", lambda b: (struct.pack_into(">h", b, marker + 61 + 5, -1),
                                             _repair_crc(b, *spans[2]))),
        variant("value version -1", lambda b: (struct.pack_into(">h", b, marker + 61 + 10, -1),
                                               _repair_crc(b, *spans[2]))),
        variant("zero records", lambda b: (struct.pack_into(">i", b, marker + 57, 0), _repair_crc(b, *spans[2]))),
        # magic 2 -> 0 with a repaired legacy CRC and gzip attributes: Kafka never opens the "wrapper"; found by
        # Hypothesis in CI (segdex read a key length of 1.1 GB out of the old v2 header and failed)
        variant("magic 0 wrapper", lambda b: (b.__setitem__(spans[3][0] + 16, 0), b.__setitem__(spans[3][0] + 17, 1),
                                              _repair_crc(b, *spans[3]))),
    ]
    for i, case in enumerate(cases):
        verdict = judge(case, oracle, tmp_path / f"c{i}")
        assert not verdict.mismatches, (case.kind, verdict.mismatches, verdict.kafka)


def test_an_abort_marker_twice_aborts_once(oracle, tmp_path):
    """The same ABORT marker batch twice (a duplicated batch): the second ends no open transaction, and Kafka
    completes only non-empty transactions, so its ``.txnindex`` holds one aborted transaction, not a second at
    the same offset (which ``TransactionIndex.append`` would refuse); segdex writes the same."""
    data = build_batch(0, [(1_700_000_000_000, b"k", b"v")], producer_id=7, producer_epoch=0, base_sequence=0,
                       is_transactional=True)
    marker = build_batch(1, [], producer_id=7, producer_epoch=0, control=("ABORT", 0),
                         control_timestamp=1_700_000_000_001)
    case = Case({0: data + marker + marker}, 1, 10485760, "abort marker twice")
    verdict = judge(case, oracle, tmp_path / "case")
    assert not verdict.mismatches, (verdict.mismatches, verdict.kafka)
    logs, _ = segment_logs(case.write(tmp_path / "again" / "topic-0"))
    [seg] = list(PartitionRecovery().recover_all(logs))
    assert seg.result.error is None and seg.result.valid_bytes == len(data) + 2 * len(marker)
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in seg.result.txn_index.aborted] == [(7, 0, 1)]


def test_a_first_time_entry_of_all_zeros_is_what_kafka_writes(oracle, tmp_path):
    """One record at time 0 first, later ones no newer: Kafka's recovery writes the time index (0, 0), twelve
    zero bytes, which index compaction must keep (test_index_compaction_units)."""
    data = build_batch(0, [(0, b"k", b"v")]) + build_batch(1, [(0, b"k", b"w")] * 3)
    case = Case({0: data}, 4096, 10485760, "time entry (0, 0)")
    verdict = judge(case, oracle, tmp_path / "case")
    assert not verdict.mismatches, (verdict.mismatches, verdict.kafka)
    logs, _ = segment_logs(case.write(tmp_path / "again" / "topic-0"))
    [seg] = list(PartitionRecovery().recover_all(logs))
    assert seg.result.time_index.to_bytes() == bytes(12)


def test_a_full_offset_index_fails_recovery_as_in_kafka(oracle, tmp_path):
    """The segment of test_recovery_facts' full offset index: Kafka's recovery throws at the same batch."""
    from tests.support.log_segments import full_offset_index_segment

    case = Case({0: full_offset_index_segment()}, 0, 64, "full offset index")
    verdict = judge(case, oracle, tmp_path / "case")
    assert not verdict.mismatches, (verdict.mismatches, verdict.kafka)


def test_magic_bytes_above_0x7f_and_a_short_v2_tail_recover_as_in_kafka(oracle, tmp_path):
    """The segments of test_recovery_facts: a magic byte of 0x80 or 0xFF, a 60-byte v2 batch ending the file, and
    a whole 61-byte batch (no records) ending it."""
    good = build_batch(0, [(1_700_000_000_000, b"k", b"v")])
    for i, tail in enumerate([bytes([*good[:16], 0x80, *good[17:]]), bytes([*good[:16], 0xFF, *good[17:]]),
                              struct.pack(">qiib", 1, 48, 0, 2) + bytes(60 - 17), build_batch(1, [])]):
        case = Case({0: good + tail}, 4096, 10485760, f"tail {i}")
        verdict = judge(case, oracle, tmp_path / f"c{i}")
        assert not verdict.mismatches, (case.kind, verdict.mismatches, verdict.kafka)
