"""``segdex sql``: views over the Delta tables, table/csv/json output, bad queries as usage errors."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime

from segdex.jobs.cli import main as cli
from segdex.jobs.report import print_rows as format_rows
from segdex.pipelines import metadata_store, schemas


def _seed(path: str) -> None:
    rows = [{"log_dir": "/d", "topic": t, "partition": p, "base_offset": b, "next_offset": b + 10,
             "max_timestamp": 1_700_000_000_000 + b, "size_bytes": 100 * (b + 1), "status": s, "reason": r,
             "scanned_at": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)}
            for t, p, b, s, r in [("orders", 0, 0, "ok", ""), ("orders", 0, 10, "corrupt_log_tail", "cut, here"),
                                  ("clicks", 1, 0, "missing", "no .index file")]]
    metadata_store.write_table(None, path, schemas.SEGMENTS_TABLE, rows)


def test_sql_formats(tmp_path, spark, capsys):
    meta = str(tmp_path / "meta")
    _seed(meta)
    q = "SELECT topic, base_offset, size_bytes, reason, scanned_at FROM segments ORDER BY topic, base_offset"
    capsys.readouterr()
    assert cli(["sql", "--metadata", meta, "--format", "json", q]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(x) for x in lines] == [
        {"topic": "clicks", "base_offset": 0, "size_bytes": 100, "reason": "no .index file",
         "scanned_at": "2026-01-02T03:04:05"},
        {"topic": "orders", "base_offset": 0, "size_bytes": 100, "reason": "", "scanned_at": "2026-01-02T03:04:05"},
        {"topic": "orders", "base_offset": 10, "size_bytes": 1100, "reason": "cut, here",
         "scanned_at": "2026-01-02T03:04:05"}]
    assert cli(["sql", "--metadata", meta, "--format", "csv", q]) == 0
    parsed = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert parsed[0] == ["topic", "base_offset", "size_bytes", "reason", "scanned_at"]
    assert parsed[3][:4] == ["orders", "10", "1100", "cut, here"]
    assert cli(["sql", "--metadata", meta, "SELECT status, count(*) AS n FROM segments GROUP BY status "
                                           "ORDER BY status"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["status", "|", "n"]
    assert out[2].split() == ["corrupt_log_tail", "|", "1"]
    assert out[-1] == "(3 rows)"


def test_sql_errors_are_usage_errors(tmp_path, spark, capsys):
    meta = str(tmp_path / "meta")
    assert cli(["sql", "--metadata", meta, "SELECT 1"]) == 2
    assert "no metadata tables" in capsys.readouterr().err
    _seed(meta)
    assert cli(["sql", "--metadata", meta, "SELECT nope FROM segments"]) == 2
    err = capsys.readouterr().err
    assert "nope" in err and "Traceback" not in err
    assert cli(["sql", "--metadata", meta, "SELEC 1"]) == 2


def test_format_rows_table_alignment():
    buf = io.StringIO()
    format_rows(["a", "bb"], [(1, None), (100, "x")], "table", buf)
    assert buf.getvalue().splitlines() == ["  a | bb", "----+-----", "  1 | NULL", "100 | x", "(2 rows)"]
