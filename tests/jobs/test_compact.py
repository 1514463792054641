"""segdex compact: preallocated or densified index files of non-active segments are trimmed to exactly Kafka's
trimmed file; the active segment, corrupt files and locked dirs are left alone; Delta tables are maintained."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
from chispa import assert_df_equality

from segdex.indexcore.tools.index_trim import STATUS_CORRUPT, STATUS_OK, STATUS_TRIMMED, trim_log_dir
from segdex.jobs.cli import main
from segdex.jobs.report import human_bytes
from segdex.pipelines import maintain
from segdex.pipelines import metadata_store as ms
from tests.support.cli import segdex
from tests.support.fixtures import FIXTURES, REPO_ROOT, broker_lock, load_case

REPO = REPO_ROOT
CASES = ["multi_segment_partition_retention", "index_full_tiny_segment_index_bytes"]


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def preallocated_sizes(case: dict) -> tuple[int, int]:
    """The active segment's index file lengths while the broker ran (liveSegmentsBeforeClose)."""
    active = case["broker"]["liveSegmentsBeforeClose"][-1]
    return active["indexFileLength"], active["timeindexFileLength"]


def stage_padded(root: Path, name: str, sparse: bool = False) -> tuple[Path, dict, list[str]]:
    """The case's broker/ partition with every non-active index file zero-padded to the preallocated size, as
    a crash of the broker while each segment was active leaves it (``sparse``: holes instead of zeros)."""
    case = load_case(name)
    part = root / "logdir" / "t-0"
    part.mkdir(parents=True)
    for f in (FIXTURES / name / "broker").iterdir():
        if not f.name.endswith(".batches.json"):
            shutil.copyfile(f, part / f.name)
    index_len, time_len = preallocated_sizes(case)
    bases = sorted(s["baseOffset"] for s in case["broker"]["segments"])
    padded = []
    for base in bases[:-1]:
        for suffix, length in ((".index", index_len), (".timeindex", time_len)):
            p = part / f"{base:020d}{suffix}"
            if sparse:
                os.truncate(p, length)
            else:
                with open(p, "ab") as f:
                    f.write(bytes(length - p.stat().st_size))
            padded.append(p.name)
    return root / "logdir", case, padded


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("sparse", [False, True])
def test_trimmed_index_is_kafkas_file(tmp_path, name, sparse, capsys):
    if not (FIXTURES / name).is_dir():
        pytest.skip(f"Kafka fixtures not found at {FIXTURES}")
    log_dir, case, padded = stage_padded(tmp_path, name, sparse)
    part = log_dir / "t-0"
    index_len, time_len = preallocated_sizes(case)
    assert index_len == case["topic_config"]["segment.index.bytes"] // 8 * 8
    assert time_len == case["topic_config"]["segment.index.bytes"] // 12 * 12
    expected_reclaim = sum((part / n).stat().st_size - (FIXTURES / name / "broker" / n).stat().st_size
                           for n in padded)
    before = snapshot(log_dir)
    assert main(["compact", str(log_dir)]) == 0
    assert f": {human_bytes(expected_reclaim)} reclaimable" in capsys.readouterr().out
    assert snapshot(log_dir) == before  # report mode writes nothing
    assert main(["compact", "--apply", str(log_dir)]) == 0
    assert f": {human_bytes(expected_reclaim)} reclaimed ({len(padded)} trimmed)" in capsys.readouterr().out
    sizes = {s["baseOffset"]: s for s in case["broker"]["liveSegmentsBeforeClose"]}
    for n in padded:
        assert (part / n).read_bytes() == (FIXTURES / name / "broker" / n).read_bytes()
        live = sizes[int(n[:20])]
        assert (part / n).stat().st_size == live["indexFileLength" if n.endswith(".index") else "timeindexFileLength"]
    # the rest of the directory is untouched, and a second run finds nothing
    assert {k: v for k, v in snapshot(log_dir).items() if k != ".lock"} == {
        k: (hashlib.sha256((FIXTURES / name / "broker" / k[4:]).read_bytes()).hexdigest() if k[4:] in padded else v)
        for k, v in before.items()}
    assert trim_log_dir(str(log_dir)).reclaimable_bytes == 0


def test_active_segment_is_left_preallocated(tmp_path):
    name = CASES[0]
    if not (FIXTURES / name).is_dir():
        pytest.skip(f"Kafka fixtures not found at {FIXTURES}")
    log_dir, case, _ = stage_padded(tmp_path, name)
    active = log_dir / "t-0" / "00000000000000001455.index"
    with open(active, "ab") as f:
        f.write(bytes(10485760 - active.stat().st_size))
    out = trim_log_dir(str(log_dir), apply=True)
    assert active.stat().st_size == 10485760
    assert all(c.base_offset != 1455 for c in out.checks)
    assert {c.status for c in out.checks} == {STATUS_TRIMMED}


def test_corrupt_tail_is_reported_not_trimmed(tmp_path):
    name = CASES[0]
    if not (FIXTURES / name).is_dir():
        pytest.skip(f"Kafka fixtures not found at {FIXTURES}")
    log_dir, _, _ = stage_padded(tmp_path, name)
    bad = log_dir / "t-0" / "00000000000000000208.index"
    data = bytearray(bad.read_bytes())
    data[4096] = 7  # garbage after the entries
    bad.write_bytes(bytes(data))
    proc = segdex("compact", "--apply", str(log_dir))
    assert "Traceback" not in proc.stderr
    assert proc.returncode == 1
    assert "corrupt: " in proc.stderr and "non-zero bytes after the 25 entries" in proc.stderr
    assert bad.read_bytes() == bytes(data)
    out = trim_log_dir(str(log_dir))
    assert [c.status for c in out.checks if c.path == str(bad)] == [STATUS_CORRUPT]
    assert {c.status for c in out.checks if c.path != str(bad)} == {STATUS_OK}  # the others were trimmed


def test_locked_and_bad_dirs(tmp_path):
    name = CASES[0]
    if not (FIXTURES / name).is_dir():
        pytest.skip(f"Kafka fixtures not found at {FIXTURES}")
    log_dir, _, _ = stage_padded(tmp_path, name)
    (log_dir / ".lock").touch()
    before = snapshot(log_dir)
    with broker_lock(log_dir):
        proc = segdex("compact", "--apply", str(log_dir))
        assert proc.returncode == 1 and "refused" in proc.stderr and ".lock is held" in proc.stderr
        assert "Traceback" not in proc.stderr
        assert snapshot(log_dir) == before
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["compact", str(empty)]) == 0
    assert main(["compact", str(tmp_path / "nope")]) == 2
    assert main(["compact"]) == 2
    unreadable = tmp_path / "u" / "t-0"
    unreadable.mkdir(parents=True)
    for base in (0, 10):
        (unreadable / f"{base:020d}.log").write_bytes(b"")
    (unreadable / "00000000000000000000.index").mkdir()
    assert main(["compact", str(tmp_path / "u")]) == 1


def small_appends(spark, path: str, n: int = 6) -> None:
    import pyarrow as pa

    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.string())])
    for i in range(n):
        ms.write_table(spark, path, ms.TableSpec("t", schema), [{"k": i, "v": json.dumps(i)}])


def test_metadata_maintenance_compacts_and_vacuums_safely(tmp_path, spark):
    path = str(tmp_path / "meta")
    small_appends(spark, path)
    before = ms.read_table(spark, path, "t").orderBy("k")
    expected = spark.createDataFrame(before.collect(), before.schema)
    res = maintain.maintain_tables(spark, path)
    assert res == [{"table": "t", "files_before": 6, "files_after": 1, "vacuumed": 0, "version": 6}]
    assert_df_equality(ms.read_table(spark, path, "t").orderBy("k"), expected)
    from deltalake import DeltaTable

    assert DeltaTable(ms.table_path(path, "t"), version=0).to_pyarrow_table().num_rows == 1  # old versions kept
    with pytest.raises(maintain.MaintenanceError, match="below the safe 168 h"):
        maintain.maintain_table(spark, path, "t", retention_hours=0)
    res = maintain.maintain_table(spark, path, "t", retention_hours=0, allow_unsafe=True)
    assert res["vacuumed"] == 6 and res["files_after"] == 1
    assert_df_equality(ms.read_table(spark, path, "t").orderBy("k"), expected)


def test_compact_cli_maintains_metadata(tmp_path, spark, capsys):
    path = str(tmp_path / "meta")
    small_appends(spark, path, 3)
    assert main(["compact", "--metadata", path, "--vacuum-hours", "1"]) == 2
    assert "below the safe 168" in capsys.readouterr().err
    assert main(["compact", "--metadata", path]) == 0
    assert f"{path}/t: files 3 -> 1, vacuumed 0 (retention 168 h)" in capsys.readouterr().out
    assert main(["compact", "--metadata", str(tmp_path / "none")]) == 1


def test_byte_counts_read_as_a_person_reads_them():
    assert human_bytes(848) == "848 bytes"
    assert human_bytes(386_970) == "387.0 KB (386,970 bytes)"
    assert human_bytes(4_300_000_000) == "4.3 GB (4,300,000,000 bytes)"
