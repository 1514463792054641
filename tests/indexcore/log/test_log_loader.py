"""indexcore's LogLoader in this process, on every Kafka fixture: the index files, producer snapshots,
leader-epoch-checkpoint and offsets Kafka's own load left (the fixtures' ``recovered/`` and ``broker/`` files,
written by Kafka). tests/jobs/test_recover.py checks the same through ``segdex recover`` on Spark; this one reaches the
loader without Spark, so a mutation run (scripts/mutation.sh) sees it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from segdex.indexcore.log.log_loader import LogLoader
from segdex.indexcore.log.log_segments import segment_logs, speculate_segment
from segdex.indexcore.log.producer_snapshot import read_snapshot
from segdex.indexcore.status import SegmentStatus
from tests.support.fixtures import FIXTURES, fixture_case_names, load_case
from tests.support.recovery_cases import INDEX_SUFFIXES, TXN_CASE_NOW, case_log_config


def _stage(name: str, tmp_path: Path) -> Path:
    src = FIXTURES / name / ("input" if (FIXTURES / name / "input").is_dir() else "broker")
    part = tmp_path / "p-0"
    part.mkdir()
    for log in src.glob("*.log"):
        shutil.copy(log, part)
    return part


def _load(part: Path, case: dict, speculate: bool = False) -> tuple[LogLoader, list]:
    """The partition loaded in order; ``speculate``: from its segments recovered on their own first (as the
    tasks of a split partition do), each completed in order."""
    logs, misnamed = segment_logs(part)
    assert not misnamed
    config = case_log_config(case)
    precomputed = {base: speculate_segment(path, base, config) for base, path in logs} if speculate else None
    loader = LogLoader(str(part), config, TXN_CASE_NOW, 0, precomputed)
    segments = [loader.recover_segment(path, base) for base, path in logs]
    if speculate:
        assert loader.recovery.completed == len(logs)
    return loader, segments


@pytest.mark.parametrize("speculate", [False, True], ids=["in-order", "segments-apart"])
@pytest.mark.parametrize("name", [n for n in fixture_case_names() if not n.startswith("corrupt")])
def test_load_leaves_what_kafka_leaves(name: str, speculate: bool, tmp_path: Path):
    case = load_case(name)
    fx = FIXTURES / name
    part = _stage(name, tmp_path)
    loader, segments = _load(part, case, speculate)
    assert [s.status for s in segments] == [SegmentStatus.OK] * len(segments)
    # every index file as Kafka's recovery wrote it (recovered/), and no other
    mine = {Path(s.log_path).name[:20] + suffix: data for s in segments for suffix, data in s.files.items()
            if data is not None}
    want = {p.name: p.read_bytes() for p in (fx / "recovered").iterdir() if p.suffix in INDEX_SUFFIXES}
    assert mine == want
    loaded = loader.finish()
    assert loaded.log_end_offset == case["loader_check"]["logEndOffset"]
    assert loaded.log_start_offset == case["loader_check"]["logStartOffset"]
    # producer snapshots as the broker left them, except one at the log start offset (Kafka's load deletes it)
    lso = case["loader_check"]["logStartOffset"]
    broker_snaps = {p.name: p.read_bytes() for p in (fx / "broker").glob("*.snapshot") if int(p.name[:20]) > lso}
    files = loaded.snapshot_files()
    assert sorted(files) == sorted(broker_snaps)
    for snap, data in files.items():
        assert read_snapshot(data) == read_snapshot(broker_snaps[snap]), snap
        assert data == broker_snaps[snap], snap
    lec = fx / "broker" / "leader-epoch-checkpoint"
    if lec.exists():
        assert loaded.leader_epoch_checkpoint == lec.read_bytes()
    else:  # message.format.version 0.x: Kafka keeps no leader-epoch-checkpoint
        assert loaded.leader_epoch_checkpoint is None


def test_fixtures_cover_what_the_load_test_needs():
    """The load test above is only as good as its cases: several segments, snapshots, transactions, legacy."""
    names = [n for n in fixture_case_names() if not n.startswith("corrupt")]
    assert len(names) >= 22
    assert sum(len(list((FIXTURES / n / "broker").glob("*.log"))) > 1 for n in names) >= 1
    assert sum(len(list((FIXTURES / n / "broker").glob("*.snapshot"))) for n in names) >= 40
    assert any((FIXTURES / n / "recovered" / "00000000000000000000.txnindex").exists() for n in names)
    assert any(not (FIXTURES / n / "broker" / "leader-epoch-checkpoint").exists() for n in names)


@pytest.mark.parametrize("name", [n for n in fixture_case_names() if n.startswith("corrupt")])
def test_a_corrupt_segment_stops_where_kafka_truncates(name: str, tmp_path: Path):
    """Kafka's recovery of the corrupt input kept recovered/'s ``.log``: the loader finds the same valid bytes
    and, for that prefix, the same index files."""
    case = load_case(name)
    fx = FIXTURES / name
    part = _stage(name, tmp_path)
    _, segments = _load(part, case)
    [seg] = segments
    assert seg.status == SegmentStatus.CORRUPT_LOG_TAIL
    kept = (fx / "recovered" / "00000000000000000000.log").read_bytes()
    assert seg.result.valid_bytes == len(kept)
    assert seg.result.size_bytes == (part / "00000000000000000000.log").stat().st_size > len(kept)
    assert seg.result.stop_reason
    for suffix in (".index", ".timeindex"):
        assert seg.files[suffix] == (fx / "recovered" / ("00000000000000000000" + suffix)).read_bytes(), suffix


@pytest.mark.parametrize("name", [n for n in fixture_case_names()
                                  if (FIXTURES / n / "broker" / "leader-epoch-checkpoint").exists()
                                  and not n.startswith("corrupt")])
def test_the_brokers_leader_epoch_checkpoint_is_left_as_kafka_wrote_it(name: str, tmp_path: Path):
    """After a clean stop the broker's own leader-epoch-checkpoint is in place: a load that assigns no new epoch
    leaves Kafka's bytes (the file is rewritten only when the cache changes)."""
    case = load_case(name)
    part = _stage(name, tmp_path)
    lec = (FIXTURES / name / "broker" / "leader-epoch-checkpoint").read_bytes()
    (part / "leader-epoch-checkpoint").write_bytes(lec)
    loader, segments = _load(part, case)
    assert all(s.status == SegmentStatus.OK for s in segments)
    loaded = loader.finish()
    assert loaded.leader_epoch_checkpoint == lec
    assert loader.partition_dir == str(part) and loader.epoch_file_existed
    assert (loaded.log_start_offset, loaded.log_end_offset) == (case["loader_check"]["logStartOffset"],
                                                                case["loader_check"]["logEndOffset"])

