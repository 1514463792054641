"""Small segments and partition dirs built for the log tests: a one-record v2 batch, the segment whose 64-byte
offset index fills first, one segment written from given batches, and a partition dir of the multi-segment
fixture case's ``.log`` files.

Shared because more than one test module builds the same inputs: the recovery facts (tests/indexcore/log/
test_log_segment.py, test_log_segment_facts.py) and Kafka's recovery of the same segment (tests/kafka/
test_oracle.py); the index verifier's positive and negative checks (tests/indexcore/tools/test_index_verifier.py,
test_index_verifier_negative.py); ``rebuild`` and ``LogLoader`` over the same partition
(tests/indexcore/tools/test_rebuild.py, tests/indexcore/log/test_log_loader_rebuild.py)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from segdex.indexcore.tools.segment_writer import build_batch, write_partition
from tests.support.fixtures import FIXTURES

TS = 1_700_000_000_000
SRC = FIXTURES / "multi_segment_partition_retention"


def one(offset: int, **kw) -> bytes:
    """A one-record v2 batch at ``offset`` with timestamp ``TS``."""
    return build_batch(offset, [(TS, b"k", b"v")], **kw)


def full_offset_index_segment() -> bytes:
    """20 one-record batches at one timestamp: with index.interval.bytes 0 every batch after the first is indexed,
    and the time index keeps one entry, so a 64-byte offset index (8 entries) fills first."""
    return b"".join(build_batch(i, [(1_700_000_000_000, b"k", b"v")]) for i in range(20))


def write_segment(tmp_path: Path, batches: list[bytes]) -> tuple[Path, list[int]]:
    """Write one segment of ``batches`` at offset 0; return its .log path and each batch's start position."""
    write_partition(tmp_path, "t", 0, batches)
    positions, at = [], 0
    for b in batches:
        positions.append(at)
        at += len(b)
    return tmp_path / "t-0" / "00000000000000000000.log", positions


def partition(root: Path, name: str = "orders-0") -> Path:
    part = root / "logs" / name
    part.mkdir(parents=True)
    for log in (SRC / "broker").glob("*.log"):
        shutil.copy(log, part)
        os.chmod(part / log.name, 0o640)
    return part
