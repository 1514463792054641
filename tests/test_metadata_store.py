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
KEYS = ["k1", "k2"]


def test_upsert_creates_then_merges(tmp_path, spark):
    path = str(tmp_path / "meta")
    ms.write_table(spark, path, "t", [{"k1": "a", "k2": 1, "value": 10, "note": "x"},
                                       {"k1": "a", "k2": 2, "value": 20, "note": None}], SCHEMA, KEYS)
    ms.write_table(spark, path, "t", [{"k1": "a", "k2": 2, "value": 21, "note": "y"},
                                       {"k1": "b", "k2": 1, "value": 30, "note": None}], SCHEMA, KEYS)
    got = ms.read_table(spark, path, "t").orderBy("k1", "k2")
    expected = spark.createDataFrame(
        [("a", 1, 10, "x"), ("a", 2, 21, "y"), ("b", 1, 30, None)], ms.spark_schema(SCHEMA))
    assert_df_equality(got, expected, ignore_nullable=True)


def test_update_when_changed_skips_identical_rows(tmp_path, spark):
    path = str(tmp_path / "meta")
    ms.write_table(spark, path, "t", [{"k1": "a", "k2": 1, "value": 10, "note": "run1"}], SCHEMA, KEYS)
    # same facts, different bookkeeping column: the row keeps run1
    ms.write_table(spark, path, "t", [{"k1": "a", "k2": 1, "value": 10, "note": "run2"}], SCHEMA, KEYS,
                   update_when_changed=["value"])
    assert ms.rows_of(ms.read_arrow(path, "t")) == [{"k1": "a", "k2": 1, "value": 10, "note": "run1"}]
    ms.write_table(spark, path, "t", [{"k1": "a", "k2": 1, "value": 11, "note": "run3"}], SCHEMA, KEYS,
                   update_when_changed=["value"])
    assert ms.rows_of(ms.read_arrow(path, "t")) == [{"k1": "a", "k2": 1, "value": 11, "note": "run3"}]


def test_delete_unmatched_only_in_scope(tmp_path):
    path = str(tmp_path / "meta")
    rows = [{"k1": k, "k2": i, "value": i, "note": None} for k in ("a", "b") for i in range(3)]
    ms.write_table(None, path, "t", rows, SCHEMA, KEYS)
    ms.write_table(None, path, "t", [rows[1]], SCHEMA, KEYS, scope=ms.Scope("k1", frozenset({"a"})))
    got = sorted((r["k1"], r["k2"]) for r in ms.rows_of(ms.read_arrow(path, "t")))
    assert got == [("a", 1), ("b", 0), ("b", 1), ("b", 2)]


def test_scope_values_are_never_sql(tmp_path):
    """A log dir path holding a quote (or SQL) is a value like any other: its stale rows go, no other row does."""
    path = str(tmp_path / "meta")
    odd = "/data/it's; DROP TABLE t; --"
    rows = [{"k1": k, "k2": i, "value": i, "note": None} for k in (odd, "b") for i in range(3)]
    ms.write_table(None, path, "t", rows, SCHEMA, KEYS)
    ms.write_table(None, path, "t", [rows[0]], SCHEMA, KEYS,
                   scope=ms.Scope("k1", frozenset({odd}), ("k1", "k2"), frozenset({(odd, 2)})))
    got = sorted((r["k1"], r["k2"]) for r in ms.rows_of(ms.read_arrow(path, "t")))
    assert got == [(odd, 0), (odd, 2), ("b", 0), ("b", 1), ("b", 2)]


def test_duplicate_source_keys_keep_last(tmp_path, spark):
    path = str(tmp_path / "meta")
    ms.write_table(spark, path, "t", [{"k1": "a", "k2": 1, "value": 1, "note": None},
                                       {"k1": "a", "k2": 1, "value": 2, "note": None}], SCHEMA, KEYS)
    assert [r["value"] for r in ms.rows_of(ms.read_arrow(path, "t"))] == [2]


def test_append_and_register_views(tmp_path, spark):
    path = str(tmp_path / "meta")
    ms.write_table(spark, path, "log", [{"k1": "r1", "k2": 1, "value": 1, "note": None}], SCHEMA)
    ms.write_table(spark, path, "log", [{"k1": "r1", "k2": 1, "value": 1, "note": None}], SCHEMA)
    assert ms.register_views(spark, path) == ["log"]
    assert spark.sql("SELECT count(*) AS n FROM log").collect()[0].n == 2


def _writer(path: str, worker: int, n: int) -> None:
    rows = [{"k1": f"w{worker}", "k2": i, "value": i, "note": None} for i in range(n)]
    rows.append({"k1": "shared", "k2": 0, "value": worker, "note": None})
    for chunk in range(0, len(rows), 5):
        ms.write_table(None, path, "t", rows[chunk:chunk + 5], SCHEMA, KEYS)


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


def test_spark_side_delta_with_pysail(tmp_path, monkeypatch):
    """The Spark writer (DataFrame write, MERGE INTO) against a Spark Connect server with native Delta.

    Runs only where the optional ``pysail`` package (and pyspark's connect extras) are installed.
    """
    pytest.importorskip("pysail")
    pytest.importorskip("grpc")
    from pysail.spark import SparkConnectServer
    from pyspark.sql import SparkSession

    server = SparkConnectServer(ip="127.0.0.1", port=0)
    server.start(background=True)
    try:
        _, port = server.listening_address
        remote = SparkSession.builder.remote(f"sc://127.0.0.1:{port}").getOrCreate()
        monkeypatch.setenv(ms.WRITER_ENV, "spark")
        path = str(tmp_path / "meta")
        ms.write_table(remote, path, "t", [{"k1": "a", "k2": 1, "value": 1, "note": "run1"},
                                           {"k1": "a", "k2": 2, "value": 2, "note": "run1"}], SCHEMA, KEYS)
        ms.write_table(remote, path, "t", [{"k1": "a", "k2": 1, "value": 1, "note": "run2"},
                                           {"k1": "a", "k2": 2, "value": 3, "note": "run2"},
                                           {"k1": "b", "k2": 1, "value": 4, "note": "run2"}], SCHEMA, KEYS,
                       update_when_changed=["value"])
        # written through Spark, read by deltalake
        assert sorted(tuple(r.values()) for r in ms.rows_of(ms.read_arrow(path, "t"))) == [
            ("a", 1, 1, "run1"), ("a", 2, 3, "run2"), ("b", 1, 4, "run2")]
        # rows of a rescanned scope without a source row are deleted (MERGE ... WHEN NOT MATCHED BY SOURCE)
        ms.write_table(remote, path, "t", [{"k1": "a", "k2": 1, "value": 1, "note": "run3"}], SCHEMA, KEYS,
                       update_when_changed=["value"], scope=ms.Scope("k1", frozenset({"a"})))
        assert sorted(tuple(r.values()) for r in ms.rows_of(ms.read_arrow(path, "t"))) == [
            ("a", 1, 1, "run1"), ("b", 1, 4, "run2")]
        ms.write_table(remote, path, "t", [{"k1": "a", "k2": 2, "value": 3, "note": "run4"}], SCHEMA, KEYS)
        # written by deltalake, read through Spark
        monkeypatch.setenv(ms.WRITER_ENV, "deltalake")
        ms.write_table(None, path, "u", [{"k1": "x", "k2": 0, "value": None, "note": None}], SCHEMA)
        monkeypatch.setenv(ms.WRITER_ENV, "spark")
        assert [tuple(r) for r in ms.read_table(remote, path, "u").collect()] == [("x", 0, None, None)]
        assert sorted(ms.register_views(remote, path)) == ["t", "u"]
        assert remote.sql("SELECT sum(value) AS s FROM t").collect()[0].s == 8
        remote.stop()
    finally:
        server.stop()
