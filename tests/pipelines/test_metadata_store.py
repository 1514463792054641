"""segdex.pipelines.metadata_store: real Delta tables on disk, written by deltalake, read back through Spark."""

from __future__ import annotations

import multiprocessing as mp

import pyarrow as pa
import pytest
from chispa import assert_df_equality

from segdex.pipelines import metadata_store as ms

SCHEMA = pa.schema([
    pa.field("k1", pa.string(), nullable=False),
    pa.field("k2", pa.int64(), nullable=False),
    pa.field("value", pa.int64()),
    pa.field("note", pa.string()),
])
KEYS = ("k1", "k2")


def test_upsert_creates_then_merges(tmp_path, spark):
    path = str(tmp_path / "meta")
    ms.write_table(spark, path, ms.TableSpec("t", SCHEMA, KEYS), [{"k1": "a", "k2": 1, "value": 10, "note": "x"},
                                                                  {"k1": "a", "k2": 2, "value": 20, "note": None}])
    ms.write_table(spark, path, ms.TableSpec("t", SCHEMA, KEYS), [{"k1": "a", "k2": 2, "value": 21, "note": "y"},
                                                                  {"k1": "b", "k2": 1, "value": 30, "note": None}])
    got = ms.read_table(spark, path, "t").orderBy("k1", "k2")
    expected = spark.createDataFrame(
        [("a", 1, 10, "x"), ("a", 2, 21, "y"), ("b", 1, 30, None)], ms.spark_schema(SCHEMA))
    assert_df_equality(got, expected, ignore_nullable=True)


def test_update_when_changed_skips_identical_rows(tmp_path, spark):
    path = str(tmp_path / "meta")
    ms.write_table(spark, path, ms.TableSpec("t", SCHEMA, KEYS), [{"k1": "a", "k2": 1, "value": 10, "note": "run1"}])
    # same facts, different bookkeeping column: the row keeps run1
    ms.write_table(spark, path, ms.TableSpec("t", SCHEMA, KEYS, ("value",)),
                   [{"k1": "a", "k2": 1, "value": 10, "note": "run2"}])
    assert ms.rows_of(ms.read_arrow(path, "t")) == [{"k1": "a", "k2": 1, "value": 10, "note": "run1"}]
    ms.write_table(spark, path, ms.TableSpec("t", SCHEMA, KEYS, ("value",)),
                   [{"k1": "a", "k2": 1, "value": 11, "note": "run3"}])
    assert ms.rows_of(ms.read_arrow(path, "t")) == [{"k1": "a", "k2": 1, "value": 11, "note": "run3"}]


def test_delete_unmatched_only_in_scope(tmp_path):
    path = str(tmp_path / "meta")
    rows = [{"k1": k, "k2": i, "value": i, "note": None} for k in ("a", "b") for i in range(3)]
    ms.write_table(None, path, ms.TableSpec("t", SCHEMA, KEYS), rows)
    ms.write_table(None, path, ms.TableSpec("t", SCHEMA, KEYS), [rows[1]], scope=ms.Scope("k1", frozenset({"a"})))
    got = sorted((r["k1"], r["k2"]) for r in ms.rows_of(ms.read_arrow(path, "t")))
    assert got == [("a", 1), ("b", 0), ("b", 1), ("b", 2)]


def test_scope_values_are_never_sql(tmp_path):
    """A log dir path holding a quote (or SQL) is a value like any other: its stale rows go, no other row does."""
    path = str(tmp_path / "meta")
    odd = "/data/it's; DROP TABLE t; --"
    rows = [{"k1": k, "k2": i, "value": i, "note": None} for k in (odd, "b") for i in range(3)]
    ms.write_table(None, path, ms.TableSpec("t", SCHEMA, KEYS), rows)
    ms.write_table(None, path, ms.TableSpec("t", SCHEMA, KEYS), [rows[0]],
                   scope=ms.Scope("k1", frozenset({odd}), ("k1", "k2"), frozenset({(odd, 2)})))
    got = sorted((r["k1"], r["k2"]) for r in ms.rows_of(ms.read_arrow(path, "t")))
    assert got == [(odd, 0), (odd, 2), ("b", 0), ("b", 1), ("b", 2)]


def test_duplicate_source_keys_keep_last(tmp_path, spark):
    path = str(tmp_path / "meta")
    ms.write_table(spark, path, ms.TableSpec("t", SCHEMA, KEYS), [{"k1": "a", "k2": 1, "value": 1, "note": None},
                                                                  {"k1": "a", "k2": 1, "value": 2, "note": None}])
    assert [r["value"] for r in ms.rows_of(ms.read_arrow(path, "t"))] == [2]


def test_append_and_register_views(tmp_path, spark):
    path = str(tmp_path / "meta")
    ms.write_table(spark, path, ms.TableSpec("log", SCHEMA), [{"k1": "r1", "k2": 1, "value": 1, "note": None}])
    ms.write_table(spark, path, ms.TableSpec("log", SCHEMA), [{"k1": "r1", "k2": 1, "value": 1, "note": None}])
    assert ms.register_views(spark, path) == ["log"]
    assert spark.sql("SELECT count(*) AS n FROM log").collect()[0].n == 2


def _writer(path: str, worker: int, n: int) -> None:
    rows = [{"k1": f"w{worker}", "k2": i, "value": i, "note": None} for i in range(n)]
    rows.append({"k1": "shared", "k2": 0, "value": worker, "note": None})
    for chunk in range(0, len(rows), 5):
        ms.write_table(None, path, ms.TableSpec("t", SCHEMA, KEYS), rows[chunk:chunk + 5])


def test_concurrent_writers_lose_no_rows(tmp_path):
    path = str(tmp_path / "meta")
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, w, 20)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    rows = ms.rows_of(ms.read_arrow(path, "t"))
    keys = [(r["k1"], r["k2"]) for r in rows]
    assert len(keys) == len(set(keys)) == 3 * 20 + 1


SPARK_SIDE = r"""
import os, sys
os.environ["SEGDEX_DELTA_WRITER"] = "spark"
from segdex.pipelines import metadata_store as ms
from segdex.pipelines.spark_session import get_spark
import pyarrow as pa
import pytest
SCHEMA = pa.schema([pa.field("k1", pa.string(), nullable=False), pa.field("k2", pa.int64(), nullable=False),
                    pa.field("value", pa.int64()), pa.field("note", pa.string())])
KEYS = ("k1", "k2")
path = sys.argv[1]
spark = get_spark("local[2]", "segdex-delta-spark-test")
assert ms.spark_has_delta(spark)
T = ms.TableSpec("t", SCHEMA, KEYS)
T_FACTS = ms.TableSpec("t", SCHEMA, KEYS, ("value",))
ms.write_table(spark, path, T, [{"k1": "a", "k2": 1, "value": 1, "note": "run1"},
                                {"k1": "a", "k2": 2, "value": 2, "note": "run1"}])
ms.write_table(spark, path, T_FACTS, [{"k1": "a", "k2": 1, "value": 1, "note": "run2"},
                                      {"k1": "a", "k2": 2, "value": 3, "note": "run2"},
                                      {"k1": "b", "k2": 1, "value": 4, "note": "run2"}])
print("after-update", sorted(tuple(r.values()) for r in ms.rows_of(ms.read_arrow(path, "t"))))
ms.write_table(spark, path, T_FACTS, [{"k1": "a", "k2": 1, "value": 1, "note": "run3"}],
               scope=ms.Scope("k1", frozenset({"a"})))
print("after-scope", sorted(tuple(r.values()) for r in ms.rows_of(ms.read_arrow(path, "t"))))
ms.write_table(spark, path, T, [{"k1": "a", "k2": 2, "value": 3, "note": "run4"}])
os.environ["SEGDEX_DELTA_WRITER"] = "deltalake"
ms.write_table(None, path, ms.TableSpec("u", SCHEMA), [{"k1": "x", "k2": 0, "value": None, "note": None}])
os.environ["SEGDEX_DELTA_WRITER"] = "spark"
print("u-through-spark", [tuple(r) for r in ms.read_table(spark, path, "u").collect()])
print("views", sorted(ms.register_views(spark, path)))
print("sum", spark.sql("SELECT sum(value) AS s FROM t").collect()[0].s)
spark.stop()
"""


@pytest.mark.spark
def test_spark_side_delta_writer(tmp_path):
    """The Spark writer (Delta Lake on Spark: the jars the set-up fetched) writes and MERGEs, deltalake reads its
    tables, and Spark reads deltalake's. A process of its own: the suite's session has no Delta jars."""
    import subprocess
    import sys

    path = str(tmp_path / "meta")
    proc = subprocess.run([sys.executable, "-c", SPARK_SIDE, path], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if " " in line)
    # written through Spark, read by deltalake
    assert out["after-update"] == str([("a", 1, 1, "run1"), ("a", 2, 3, "run2"), ("b", 1, 4, "run2")])
    # rows of a rescanned scope without a source row are deleted
    assert out["after-scope"] == str([("a", 1, 1, "run1"), ("b", 1, 4, "run2")])
    # written by deltalake, read through Spark
    assert out["u-through-spark"] == str([("x", 0, None, None)])
    assert out["views"] == str(["t", "u"]) and out["sum"] == "8"
    assert sorted(tuple(r.values()) for r in ms.rows_of(ms.read_arrow(path, "t"))) == [
        ("a", 1, 1, "run1"), ("a", 2, 3, "run4"), ("b", 1, 4, "run2")]
