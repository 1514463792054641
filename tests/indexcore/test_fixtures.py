"""Every Kafka fixture case: rebuilt indexes byte-identical to Kafka's recovery, parser equal to Kafka's view."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.log.log_segments import PartitionRecovery, segment_logs
from segdex.indexcore.record.file_records import batches, open_log
from segdex.indexcore.tools.dump_log import batch_view
from segdex.indexcore.tools.index_verifier import verify_segment
from tests.support.cli import segdex_here
from tests.support.fixtures import FIXTURES, load_case

SUFFIXES = (".index", ".timeindex", ".txnindex")
KERNELS = [False, True]  # the native kernel must be built (the set-up builds it): its absence fails


def case_config(case: dict) -> LogConfig:
    tc = case["topic_config"]
    return LogConfig().with_overrides({
        "index.interval.bytes": str(tc.get("index.interval.bytes", 4096)),
        "segment.index.bytes": str(tc.get("segment.index.bytes", 10 * 1024 * 1024)),
    })


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("native", KERNELS, ids=lambda n: "native" if n else "python")
def test_recovery_matches_kafka(fixture_case, native):
    """Rebuilding from the recovery input gives exactly recovered/, and recover() returns what Kafka returned."""
    case = load_case(fixture_case)
    source = FIXTURES / fixture_case / case["recovery_input_dir"]
    recovered = FIXTURES / fixture_case / "recovered"
    logs, misnamed = segment_logs(source)
    assert not misnamed
    facts = {s["baseOffset"]: s for s in case["recovered"]["segments"]}
    assert [b for b, _ in logs] == sorted(facts)
    recovery = PartitionRecovery(case_config(case))
    for segment in recovery.recover_all(logs, native=native):
        prefix = recovered / Path(segment.log_path).name[:-4]
        for suffix in SUFFIXES:
            expected = Path(str(prefix) + suffix)
            got = segment.files[suffix]
            if expected.exists():
                assert got == expected.read_bytes(), f"{expected.name} differs"
            else:
                assert got is None, f"{expected.name}: Kafka wrote no such file"
        fact = facts[segment.base_offset]
        assert segment.result.truncated_bytes == fact["recoverReturn"]
        assert segment.result.valid_bytes == fact["logSizeAfter"]
        assert segment.result.size_bytes == fact["logSizeBefore"]
        assert segment.status == ("ok" if fact["recoverReturn"] == 0 else "corrupt_log_tail")
    assert [list(e) for e in recovery.leader_epochs] == case["recovered"]["segments"][0].get(
        "leaderEpochEntriesAfterRecovery", [list(e) for e in recovery.leader_epochs])


def test_rebuild_cli_out_dir_matches_kafka(fixture_case, tmp_path):
    """`segdex rebuild --out-dir` writes recovered/'s files, exits 1 only on a corrupt tail, and keeps .log bytes."""
    case = load_case(fixture_case)
    source = FIXTURES / fixture_case / case["recovery_input_dir"]
    before = {p.name: sha(p) for p in source.iterdir()}
    tc = case["topic_config"]
    proc = segdex_here("rebuild", "--out-dir", str(tmp_path),
                      "--config", f"index.interval.bytes={tc.get('index.interval.bytes', 4096)}",
                      "--config", f"segment.index.bytes={tc.get('segment.index.bytes', 10485760)}", str(source))
    corrupt = any(s["recoverReturn"] for s in case["recovered"]["segments"])
    assert proc.returncode == (1 if corrupt else 0), proc.stderr
    assert "Traceback" not in proc.stderr
    out = tmp_path / source.name
    expected = sorted(p.name for p in (FIXTURES / fixture_case / "recovered").iterdir()
                      if p.suffix in SUFFIXES)
    assert sorted(p.name for p in out.iterdir()) == expected
    for name in expected:
        assert (out / name).read_bytes() == (FIXTURES / fixture_case / "recovered" / name).read_bytes()
    assert {p.name: sha(p) for p in source.iterdir()} == before


def test_rebuild_in_place_on_a_copy(fixture_case, tmp_path):
    """In place: only index files change; a second run rewrites nothing."""
    case = load_case(fixture_case)
    source = FIXTURES / fixture_case / case["recovery_input_dir"]
    part = tmp_path / "topic-0"
    shutil.copytree(source, part)
    logs_before = {p.name: sha(p) for p in part.glob("*.log")}
    tc = case["topic_config"]
    args = ["rebuild", "--config", f"index.interval.bytes={tc.get('index.interval.bytes', 4096)}",
            "--config", f"segment.index.bytes={tc.get('segment.index.bytes', 10485760)}", str(part)]
    segdex_here(*args)
    for p in (FIXTURES / fixture_case / "recovered").iterdir():
        if p.suffix in SUFFIXES:
            assert (part / p.name).read_bytes() == p.read_bytes()
    assert {p.name: sha(p) for p in part.glob("*.log")} == logs_before
    mtimes = {p.name: p.stat().st_mtime_ns for p in part.iterdir()}
    second = segdex_here(*args)
    assert "written=0" in second.stdout and "written=1" not in second.stdout
    assert {p.name: p.stat().st_mtime_ns for p in part.iterdir()} == mtimes


def test_parser_view_equals_kafka_batches(fixture_case):
    """Every field of every batch in every batches.json, including where Kafka's iterator stopped."""
    for batches_json in sorted((FIXTURES / fixture_case).glob("*/*.batches.json")):
        expected = json.loads(batches_json.read_text())
        log = batches_json.with_name(batches_json.name.replace(".batches.json", ".log"))
        if not log.exists():
            log = FIXTURES / fixture_case / load_case(fixture_case)["recovery_input_dir"] / log.name
        got = []
        with open_log(log) as buf:
            try:
                for batch in batches(buf):
                    got.append(batch_view(buf, batch))
            except Exception as e:  # Kafka's iterator records the exception and stops
                got.append({"iterationStopped": f"org.apache.kafka.common.errors.{type(e).__name__}: "})
        stopped = [e for e in expected if "iterationStopped" in e]
        expected = [e for e in expected if "iterationStopped" not in e]
        got_stopped = [g for g in got if "iterationStopped" in g]
        got = [g for g in got if "iterationStopped" not in g]
        assert got == expected, f"{batches_json}"
        assert len(got_stopped) == len(stopped)
        for g, s in zip(got_stopped, stopped, strict=True):
            assert s["iterationStopped"].startswith(g["iterationStopped"])


def test_lookups_match_kafka(fixture_case):
    """Kafka's offset-index and time-index lookups on the recovered indexes."""
    case = load_case(fixture_case)
    lookups = json.loads((FIXTURES / fixture_case / "lookups.json").read_text())
    source = FIXTURES / fixture_case / case["recovery_input_dir"]
    logs, _ = segment_logs(source)
    segments = {s.base_offset: s.result for s in PartitionRecovery(case_config(case)).recover_all(logs)}
    for seg in lookups["log"]["segments"]:
        r = segments[seg["baseOffset"]]
        assert r.next_offset == seg["nextOffset"]
        assert list(r.time_index.last_entry()) == seg["maxTimestampSoFar"]
    bases = sorted(segments)
    for lk in lookups["offset_lookups"]:
        base = max([b for b in bases if b <= lk["target"]], default=bases[0])
        assert base == lk["segmentBaseOffset"]
        assert list(segments[base].offset_index.lookup(lk["target"])) == lk["offsetIndexLookup"]
    for lk in lookups["timestamp_lookups"]:
        for entry in lk["timeIndexLookups"]:
            assert list(segments[entry["segmentBaseOffset"]].time_index.lookup(lk["target"])) == entry["entry"]


def test_verify_broker_written_indexes(fixture_case):
    """Broker-written indexes verify as ok where case.json says they equal recovery's, else equivalent."""
    case = load_case(fixture_case)
    identical = {s["baseOffset"]: s["index_identical"] and s["timeindex_identical"] and s["txnindex_identical"]
                 for s in case["broker_vs_recovered"]}
    logs, _ = segment_logs(FIXTURES / fixture_case / "broker")
    for segment in PartitionRecovery(case_config(case)).recover_all(logs):
        verdict = verify_segment(segment)
        # Corruption cases list no comparison: their broker/ folder is intact, so it must verify ok.
        expected = "ok" if identical.get(segment.base_offset, True) else "equivalent"
        assert verdict.status == expected, verdict.reason


def test_every_case_is_covered():
    names = [p.name for p in FIXTURES.iterdir() if (p / "case.json").exists()] if FIXTURES.is_dir() else []
    manifest = json.loads((FIXTURES / "MANIFEST.json").read_text())["cases"] if names else []
    assert sorted(names) == sorted(c["name"] for c in manifest)
    assert len(names) >= 25 or not os.environ.get("CI")
