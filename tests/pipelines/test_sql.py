"""``pipelines/sql.py``'s time travel for the delta-rs reader: Spark's ``VERSION|TIMESTAMP AS OF`` clauses become
views registered at those points. The queries run through the CLI and Spark in ``tests/jobs/test_cli_quiet.py``."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from segdex.pipelines.sql import QueryError, rewrite_time_travel

NAMES = ["segments", "runs"]


def test_a_table_read_at_one_point_keeps_its_name():
    assert rewrite_time_travel("SELECT segments.size_bytes FROM segments VERSION AS OF 3", NAMES) == (
        "SELECT segments.size_bytes FROM segments", {"segments": ("segments", 3)})


@pytest.mark.parametrize("query, rewritten", [
    # no alias: each view answers to the table's name, so a column qualified by it resolves in its subquery
    ("SELECT (SELECT max(segments.run_id) FROM segments VERSION AS OF 0), "
     "(SELECT max(segments.run_id) FROM segments FOR SYSTEM_TIME AS OF '2100-01-01')",
     "SELECT (SELECT max(segments.run_id) FROM __segments_v0 AS segments), "
     "(SELECT max(segments.run_id) FROM __segments_t1 AS segments)"),
    # an alias of its own, bare or after AS, is kept
    ("SELECT a.status FROM segments a JOIN segments VERSION AS OF 0 b USING (topic) WHERE a.status <> b.status",
     "SELECT a.status FROM segments a JOIN __segments_v0 b USING (topic) WHERE a.status <> b.status"),
    ("SELECT x.topic FROM segments VERSION AS OF 1 AS x, segments VERSION AS OF 2 `y`",
     "SELECT x.topic FROM __segments_v0 AS x, __segments_v1 `y`"),
    # the next clause's keyword is no alias
    ("SELECT * FROM segments VERSION AS OF 1 JOIN segments VERSION AS OF 2 y ON true WHERE 1 = 1",
     "SELECT * FROM __segments_v0 AS segments JOIN __segments_v1 y ON true WHERE 1 = 1"),
    ("SELECT * FROM segments, segments VERSION AS OF 2\nwhere true",
     "SELECT * FROM segments, __segments_v0 AS segments\nwhere true"),
    # Spark takes an alias only after a TABLESAMPLE clause
    ("SELECT * FROM segments VERSION AS OF 1 TABLESAMPLE (50 PERCENT), segments VERSION AS OF 2",
     "SELECT * FROM __segments_v0 TABLESAMPLE (50 PERCENT), __segments_v1 AS segments"),
])
def test_a_table_read_at_several_points_gets_a_view_per_point(query, rewritten):
    out, views = rewrite_time_travel(query, NAMES)
    assert out == rewritten
    assert set(views) == {w.strip("`") for w in out.split() if w.startswith("__segments_")}
    assert all(table == "segments" for table, _ in views.values())


def test_points_are_read_as_spark_reads_them():
    _, views = rewrite_time_travel("SELECT * FROM runs TIMESTAMP AS OF '2026-11-25 10:00:00', runs VERSION AS OF "
                                   "'4'", NAMES)
    assert views == {"__runs_t0": ("runs", datetime(2026, 11, 25, 10, tzinfo=UTC)), "__runs_v1": ("runs", 4)}
    with pytest.raises(QueryError, match="runs TIMESTAMP AS OF 'soon': not a timestamp"):
        rewrite_time_travel("SELECT * FROM runs TIMESTAMP AS OF 'soon'", NAMES)
    with pytest.raises(QueryError, match="a version is a whole number"):
        rewrite_time_travel("SELECT * FROM runs VERSION AS OF '1.5'", NAMES)
