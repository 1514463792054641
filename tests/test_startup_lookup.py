"""The offset-index lookup the startup preview makes as Kafka's load does (``AbstractIndex.largestLowerBoundSlotFor``
with its warm section, then ``LogSegment.readNextOffset``), in the test process: against the plain definition
on sorted indexes of every size around the warm section's, and against Kafka's batch listing of every fixture."""

from __future__ import annotations

import json
import random
import shutil
import struct
from pathlib import Path

import pytest
from conftest import FIXTURES, fixture_case_names

from segdex.indexcore.index.abstract_index import WARM_INDEX_BYTES
from segdex.indexcore.index.offset_index import OffsetIndex
from segdex.indexcore.log.log_segment import LogSegment

WARM_ENTRIES = WARM_INDEX_BYTES // 8



def _slot(idx: bytes, entries: int, target: int) -> int:
    """``AbstractIndex.largestLowerBoundSlotFor`` over an offset index file's bytes (base offset 0)."""
    index = OffsetIndex.from_bytes(idx, 0)
    assert len(index) == entries
    return index.largest_lower_bound_slot(target)


def _definition(keys: list[int], target: int) -> int:
    """The largest slot whose key is at most ``target``, -1 when there is none (sorted keys)."""
    below = [i for i, k in enumerate(keys) if k <= target]
    return below[-1] if below else -1


@pytest.mark.parametrize("entries", [0, 1, 2, 3, WARM_ENTRIES - 1, WARM_ENTRIES, WARM_ENTRIES + 1,
                                     WARM_ENTRIES + 2, 3 * WARM_ENTRIES + 7])
def test_lookup_is_the_largest_lower_bound(entries: int):
    rng = random.Random(entries)
    keys = sorted(rng.sample(range(1, 10 * entries + 10), entries))
    idx = b"".join(struct.pack(">ii", k, 4 * k) for k in keys)
    probes = {0, keys[0] - 1 if keys else 5, 10 * entries + 20} | set(keys) | {k + 1 for k in keys[::7]} \
        | {k - 1 for k in keys[::5]} | {rng.randrange(0, 10 * entries + 20) for _ in range(200)}
    for target in sorted(probes):
        assert _slot(idx, entries, target) == _definition(keys, target), (entries, target)


CASES = [n for n in fixture_case_names() if not n.startswith("corrupt")]


@pytest.mark.parametrize("name", CASES)
def test_next_offset_is_kafkas(name: str, tmp_path: Path):
    for log in sorted((FIXTURES / name / "broker").glob("*.log")):
        kafka = json.loads(log.with_name(log.name.replace(".log", ".batches.json")).read_text())
        base = int(log.name[:20])
        want = kafka[-1]["lastOffset"] + 1 if kafka else base
        shutil.copy(log, tmp_path / log.name)
        index = log.with_suffix(".index")
        if index.exists():
            shutil.copy(index, tmp_path / index.name)
        assert LogSegment(str(tmp_path / log.name), base).read_next_offset() == want, log
        (tmp_path / index.name).unlink(missing_ok=True)  # no index: a scan from the first batch
        assert LogSegment(str(tmp_path / log.name), base).read_next_offset() == want, log


def test_next_offset_from_an_index_with_more_entries_than_the_warm_section(tmp_path: Path):
    """3,000 one-record batches indexed at interval 1: the last entry lies far past the warm section's start."""
    from segdex.indexcore.config.log_config import LogConfig
    from segdex.indexcore.log.log_segments import PartitionRecovery
    from segdex.indexcore.tools.segment_writer import build_batch

    log = tmp_path / "00000000000000000500.log"
    log.write_bytes(b"".join(build_batch(500 + 2 * i, [(1, b"k", b"v"), (2, b"k", b"w")]) for i in range(3000)))
    seg = PartitionRecovery(LogConfig(index_interval_bytes=1)).recover_segment(str(log), 500)
    log.with_suffix(".index").write_bytes(seg.files[".index"])
    assert len(seg.files[".index"]) // 8 > 2 * WARM_ENTRIES
    assert LogSegment(str(log), 500).read_next_offset() == 500 + 6000
    # an index whose last entry was lost: the scan goes on from the entry before it
    log.with_suffix(".index").write_bytes(seg.files[".index"][:-8])
    assert LogSegment(str(log), 500).read_next_offset() == 500 + 6000


def test_next_offset_reads_only_from_the_last_index_entry(tmp_path: Path):
    """Kafka reads the next offset from the batch the offset index's last entry points at: a batch broken before
    that position is never read (it is, by a segment recovery, which is another matter)."""
    from segdex.indexcore.config.log_config import LogConfig
    from segdex.indexcore.log.log_segments import PartitionRecovery
    from segdex.indexcore.tools.segment_writer import build_batch

    log = tmp_path / "00000000000000000000.log"
    batches = [build_batch(i, [(1, b"k", b"v" * 20)]) for i in range(400)]
    log.write_bytes(b"".join(batches))
    seg = PartitionRecovery(LogConfig(index_interval_bytes=4096)).recover_segment(str(log), 0)
    index = seg.files[".index"]
    log.with_suffix(".index").write_bytes(index)
    last_position = struct.unpack(">ii", index[-8:])[1]
    assert last_position > 10 * len(batches[0])
    data = bytearray(log.read_bytes())
    struct.pack_into(">i", data, len(batches[0]) * 3 + 8, 5)  # batch 3's size: below any batch's
    log.write_bytes(bytes(data))
    assert LogSegment(str(log), 0).read_next_offset() == 400
    log.with_suffix(".index").unlink()  # no index: the read starts at 0 and meets the broken batch
    from segdex.indexcore.errors import CorruptRecordException
    with pytest.raises(CorruptRecordException):
        LogSegment(str(log), 0).read_next_offset()
