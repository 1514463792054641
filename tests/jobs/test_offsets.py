"""``segdex offsets`` / ``list_offset`` against Kafka's own ``fetchOffsetByTimestamp`` answers: every
``lookups.json`` of the fixtures (timestamp lookups and the special targets), then the command line."""

from __future__ import annotations

import functools
import json
import shutil

import pytest

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.errors import UsageException
from segdex.indexcore.tools.list_offsets import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    list_offset,
    parse_target,
)
from tests.support import cli
from tests.support.fixtures import FIXTURES, load_case

SPECIALS = {"EARLIEST_TIMESTAMP": EARLIEST_TIMESTAMP, "LATEST_TIMESTAMP": LATEST_TIMESTAMP,
            "MAX_TIMESTAMP": MAX_TIMESTAMP}


def _partition(tmp_path, fixture_case):
    """The case's recovery input as a partition dir named <case>-0 (list_offset reads topic and partition)."""
    case = load_case(fixture_case)
    part = tmp_path / f"{fixture_case}-0"
    part.mkdir()
    for log in (FIXTURES / fixture_case / case["recovery_input_dir"]).glob("*.log"):
        shutil.copy2(log, part / log.name)
    tc = case["topic_config"]
    config = LogConfig(index_interval_bytes=int(tc.get("index.interval.bytes", 4096)),
                       segment_index_bytes=int(tc.get("segment.index.bytes", 10485760)))
    return part, config


def _expected(answer: dict | None, v0: bool) -> tuple:
    if answer is None:
        return ("error",) if v0 else (-1, -1, -1)
    epoch = answer["leaderEpoch"]
    return answer["offset"], answer["timestamp"], -1 if epoch is None else epoch


def _got(a) -> tuple:
    return ("error",) if a.error else (a.offset, a.timestamp, a.leader_epoch)


def test_fetch_offset_by_timestamp_matches_kafka(fixture_case, tmp_path):
    lookups = json.loads((FIXTURES / fixture_case / "lookups.json").read_text())
    part, config = _partition(tmp_path, fixture_case)
    start = lookups["log"]["logStartOffset"]
    v0 = fixture_case.startswith("v0_")
    checked = 0
    for lk in lookups["timestamp_lookups"]:
        got = list_offset(part, lk["target"], config, start)
        assert _got(got) == _expected(lk["fetchOffsetByTimestamp"], v0), (lk["kind"], lk["target"])
        checked += 1
    for name, target in SPECIALS.items():
        expected = lookups["specials"][name]["fetchOffsetByTimestamp"]
        got = list_offset(part, target, config, start)
        if expected is None and target in (EARLIEST_TIMESTAMP, LATEST_TIMESTAMP):
            continue
        assert _got(got) == _expected(expected, v0), name
        checked += 1
    assert checked >= 8


def test_parse_target():
    assert [parse_target(t) for t in ("latest", "-1", "earliest", "-2", "max-timestamp", "-3", "0", "17")] == [
        -1, -1, -2, -2, -3, -3, 0, 17]
    for bad in ("-4", "yesterday", "1.5", ""):
        with pytest.raises(UsageException):
            parse_target(bad)


segdex = functools.partial(cli.segdex, "offsets", timeout=120, no_traceback=True)  # `segdex offsets ARGS`


def test_offsets_command_on_a_log_dir(tmp_path):
    """A log dir: every partition, as kafka-get-offsets prints them, as JSON, and as reset-csv lines."""
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    for case in ("v2_logappendtime", "multi_segment_partition_retention", "v0_none"):
        shutil.copytree(FIXTURES / case / "broker", log_dir / f"{case}-0",
                        ignore=shutil.ignore_patterns("*.json"))
    proc = segdex("--time", "-1", str(log_dir))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["multi_segment_partition_retention:0:1537", "v0_none:0:568",
                                        "v2_logappendtime:0:839"]
    proc = segdex("--time", "max-timestamp", "--json", str(log_dir))
    assert proc.returncode == 1  # v0 has no timestamps: an error row and exit 1
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert rows[0] == {"topic": "multi_segment_partition_retention", "partition": 0, "offset": 1535,
                       "timestamp": 1700000098532, "leader_epoch": 3}
    assert "error" in rows[1] and rows[1]["offset"] == -1
    assert "magic 0" in proc.stderr
    part = log_dir / "multi_segment_partition_retention-0"
    proc = segdex("--time", "1700000090000", "--format", "reset-csv", str(part))
    assert proc.returncode == 0
    [line] = proc.stdout.splitlines()
    topic, partition, offset = line.split(",")
    assert (topic, partition) == ("multi_segment_partition_retention", "0") and 0 < int(offset) < 1537


def test_offsets_command_bad_input(tmp_path):
    assert segdex("--time", "soon", str(tmp_path)).returncode == 2
    assert segdex("--time", "-1", str(tmp_path / "missing")).returncode == 2
    (tmp_path / "notes.txt").write_text("x")
    proc = segdex("--time", "-1", str(tmp_path / "notes.txt"))
    assert proc.returncode == 2 and "partition dir or a log dir" in proc.stderr


@pytest.mark.spark
def test_offsets_on_spark_equal_in_process(tmp_path):
    """--master: one Spark task per partition, the same answers as the in-process loop; a partition that
    cannot be read is an error row (exit 1), the others are still answered."""
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    for case in ("v2_gzip", "v2_zstd", "v2_base_offset_1000000", "multi_segment_partition_retention"):
        shutil.copytree(FIXTURES / case / "broker", log_dir / f"{case}-0", ignore=shutil.ignore_patterns("*.json"))
    (log_dir / "broken-0").mkdir()
    (log_dir / "broken-0" / "00000000000000000000.log").mkdir()  # a directory where a segment belongs
    local = segdex("--time", "1700000090000", "--json", str(log_dir))
    on_spark = segdex("--time", "1700000090000", "--json", "--master", "local[2]", str(log_dir))
    assert local.returncode == on_spark.returncode == 1
    assert on_spark.stdout == local.stdout
    rows = [json.loads(line) for line in local.stdout.splitlines()]
    assert [r["topic"] for r in rows] == ["broken", "multi_segment_partition_retention", "v2_base_offset_1000000",
                                          "v2_gzip", "v2_zstd"]
    assert "error" in rows[0] and all("error" not in r for r in rows[1:])
