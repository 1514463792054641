"""What retention reads from disk (``LogSegment.largestTimestamp`` and ``readNextOffset``), in the test process,
on every partition Kafka wrote in the fixtures: each segment's largest timestamp and the log end offset are the
ones Kafka's own batch listing (``*.batches.json``) gives."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from segdex.indexcore.log.log_segment import TIMESTAMP_FROM_MTIME, TIMESTAMP_FROM_TIME_INDEX, LogSegment
from segdex.indexcore.record.record_batch import NO_TIMESTAMP
from segdex.indexcore.retention.log_dirs import read_segment_facts
from tests.support.fixtures import FIXTURES, fixture_case_names

CASES = [n for n in fixture_case_names() if not n.startswith("corrupt")]


def _kafka_batches(log: Path) -> list[dict]:
    return json.loads(log.with_name(log.name.replace(".log", ".batches.json")).read_text())


def _mtime_ms(path: Path) -> int:
    return os.stat(path).st_mtime_ns // 1_000_000


@pytest.mark.parametrize("name", CASES)
def test_facts_are_kafkas(name: str, tmp_path: Path):
    part = tmp_path / "t-0"
    shutil.copytree(FIXTURES / name / "broker", part)
    segments, leo = read_segment_facts(str(part))
    logs = sorted(part.glob("*.log"))
    assert [s.base_offset for s in segments] == [int(p.name[:20]) for p in logs]
    for facts, log in zip(segments, logs, strict=True):
        kafka = _kafka_batches(log)
        assert facts.size_bytes == log.stat().st_size == sum(b["sizeInBytes"] for b in kafka)
        largest = max((b["maxTimestamp"] for b in kafka), default=NO_TIMESTAMP)
        if largest >= 0:
            assert (facts.largest_timestamp, facts.timestamp_source) == (largest, TIMESTAMP_FROM_TIME_INDEX), log
        else:  # no timestamps (v0, an empty segment): the .log's modification time, as Kafka falls back to
            assert (facts.largest_timestamp, facts.timestamp_source) == (_mtime_ms(log), TIMESTAMP_FROM_MTIME), log
    last = _kafka_batches(logs[-1])
    assert leo == (last[-1]["lastOffset"] + 1 if last else int(logs[-1].name[:20]))


def test_next_offset_without_an_index_and_past_a_corrupt_tail(tmp_path: Path):
    src = FIXTURES / "multi_segment_partition_retention" / "broker"
    log = tmp_path / "00000000000000001240.log"
    shutil.copy(src / log.name, log)
    want = _kafka_batches(src / log.name)[-1]["lastOffset"] + 1
    assert LogSegment(str(log), 1240).read_next_offset(tolerate_damage=True) == want  # no .index: a scan from the start
    shutil.copy(src / "00000000000000001240.index", tmp_path)
    assert LogSegment(str(log), 1240).read_next_offset(tolerate_damage=True) == want  # from the index's last entry
    with open(log, "ab") as f:
        f.write(b"\7" * 40)  # a torn tail: the last whole batch still ends the log
    assert LogSegment(str(log), 1240).read_next_offset(tolerate_damage=True) == want
    empty = tmp_path / "00000000000000005000.log"
    empty.write_bytes(b"")
    assert LogSegment(str(empty), 5000).read_next_offset(tolerate_damage=True) == 5000


def test_largest_timestamp_of_a_preallocated_time_index(tmp_path: Path):
    """A zero-padded time index counts its entries before the first zero slot; none at all: the mtime."""
    src = FIXTURES / "multi_segment_partition_retention" / "broker"
    log = tmp_path / "00000000000000000208.log"
    shutil.copy(src / log.name, log)
    data = (src / "00000000000000000208.timeindex").read_bytes()
    want = max(b["maxTimestamp"] for b in _kafka_batches(src / log.name))
    (tmp_path / "00000000000000000208.timeindex").write_bytes(data + bytes(12 * 50))
    assert LogSegment(str(log), 0).largest_timestamp() == (want, TIMESTAMP_FROM_TIME_INDEX)
    (tmp_path / "00000000000000000208.timeindex").write_bytes(bytes(12 * 50))
    os.utime(log, ns=(1_600_000_000_123_456_789, 1_600_000_000_123_456_789))
    assert LogSegment(str(log), 0).largest_timestamp() == (1_600_000_000_123, TIMESTAMP_FROM_MTIME)
