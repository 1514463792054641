"""Delta tables under a metadata directory: upsert (MERGE) or append, read back, register as SQL views.

Two writers, same tables:

* embedded (default): the ``deltalake`` package (delta-rs), no JVM jars needed;
* Spark: when the session has Delta Lake loaded (delta-spark with its jars, or a Spark Connect server with
  native Delta such as ``pysail``), tables are written with DataFrame writes and ``MERGE INTO``.

``SEGDEX_DELTA_WRITER=deltalake|spark`` forces one. Each table lives in ``<metadata path>/<name>``; a table
written one way reads the other way. Delta commit conflicts (two runs at once) are retried; on a local
filesystem the embedded writer also serializes writers of one table with a lock file, so no MERGE is lost.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa

WRITER_ENV = "SEGDEX_DELTA_WRITER"
DEFAULT_RETRIES = 20
_LOCK_NAME = "_segdex_writer.lock"
_THREAD_LOCKS: dict[str, threading.Lock] = {}
_THREAD_LOCKS_GUARD = threading.Lock()


class MetadataStoreError(Exception):
    """A metadata table could not be written or read."""


def table_path(path: str, name: str) -> str:
    """Location of table ``name`` under the metadata directory ``path`` (a local path or URI)."""
    return path.rstrip("/") + "/" + name


def _is_local(path: str) -> bool:
    return "://" not in path or path.startswith("file://")


def _local(path: str) -> str:
    return path[len("file://"):] if path.startswith("file://") else path


def spark_has_delta(spark: Any) -> bool:
    """Whether this session can read and write Delta through Spark (delta-spark loaded, or forced by env)."""
    forced = os.environ.get(WRITER_ENV, "").strip().lower()
    if forced in ("deltalake", "embedded"):
        return False
    if forced == "spark":
        return True
    if spark is None:
        return False
    try:
        ext = spark.conf.get("spark.sql.extensions", "") or ""
        catalog = spark.conf.get("spark.sql.catalog.spark_catalog", "") or ""
    except Exception:
        return False
    return "delta" in ext.lower() or "delta" in catalog.lower()


def to_arrow(rows_or_arrow: Any, schema: pa.Schema) -> pa.Table:
    """Rows (dicts), a pyarrow Table/RecordBatch, or a Spark DataFrame, as a pyarrow Table of ``schema``."""
    if isinstance(rows_or_arrow, pa.Table):
        table = rows_or_arrow
    elif isinstance(rows_or_arrow, pa.RecordBatch):
        table = pa.Table.from_batches([rows_or_arrow])
    elif hasattr(rows_or_arrow, "toArrow"):  # Spark DataFrame
        table = rows_or_arrow.toArrow()
    else:
        rows = [r.asDict() if hasattr(r, "asDict") else dict(r) for r in rows_or_arrow]
        return pa.Table.from_pylist(rows, schema=schema)
    table = table.select(schema.names)
    return table.cast(schema)


def spark_schema(schema: pa.Schema) -> Any:
    """The Spark StructType matching an arrow schema."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)


def _dedupe(table: pa.Table, keys: Sequence[str]) -> pa.Table:
    """Keep the last row per key, as MERGE needs at most one source row per target row."""
    if table.num_rows < 2:
        return table
    seen: dict[tuple, int] = {}
    cols = [table.column(k).to_pylist() for k in keys]
    for i, key in enumerate(zip(*cols, strict=True)):
        seen[key] = i
    if len(seen) == table.num_rows:
        return table
    return table.take(sorted(seen.values()))


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def sql_string(value: str) -> str | None:
    """A SQL string literal both Spark and delta-rs read the same way, or None when the value needs escapes."""
    if any(c in value for c in "'\\\n\r"):
        return None
    return f"'{value}'"


def _merge_predicate(keys: Sequence[str]) -> str:
    return " AND ".join(f"t.{_quote(k)} = s.{_quote(k)}" for k in keys)


def _changed_predicate(columns: Sequence[str]) -> str:
    return " OR ".join(f"(NOT (t.{_quote(c)} <=> s.{_quote(c)}))" for c in columns)


def _changed_predicate_deltars(columns: Sequence[str]) -> str:
    # delta-rs (DataFusion SQL) spells null-safe inequality IS DISTINCT FROM
    return " OR ".join(f"(t.{_quote(c)} IS DISTINCT FROM s.{_quote(c)})" for c in columns)


@contextlib.contextmanager
def _writer_lock(path: str) -> Iterator[None]:
    """Serialize local writers of one table (advisory lock next to it); a no-op for remote storage."""
    if not _is_local(path):
        yield
        return
    parent = os.path.dirname(os.path.abspath(_local(path)))
    os.makedirs(parent, exist_ok=True)
    lock_path = os.path.join(parent, f".{os.path.basename(_local(path))}{_LOCK_NAME}")
    with _THREAD_LOCKS_GUARD:  # POSIX locks are per process: threads of one process need their own lock
        thread_lock = _THREAD_LOCKS.setdefault(lock_path, threading.Lock())
    with thread_lock:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX)
            yield
        finally:
            with contextlib.suppress(OSError):
                fcntl.lockf(fd, fcntl.LOCK_UN)
            os.close(fd)


def _is_conflict(exc: BaseException) -> bool:
    name = type(exc).__name__
    text = str(exc)
    lower = text.lower()
    return ("CommitFailed" in name or "Concurrent" in name or "concurrent" in lower or "conflict" in lower
            or ("already exists" in lower and "version" in lower))


def _retry(fn, retries: int) -> Any:
    delay = 0.05
    for attempt in range(retries + 1):
        try:
            return fn()
        except Exception as e:
            if attempt == retries or not _is_conflict(e):
                raise
            time.sleep(delay * (1 + random.random()))
            delay = min(delay * 2, 2.0)
    return None


def _write_deltalake(uri: str, table: pa.Table, merge_keys: Sequence[str] | None,
                     update_when_changed: Sequence[str] | None, retries: int,
                     delete_unmatched: str | None = None) -> None:
    from deltalake import DeltaTable, write_deltalake

    def attempt() -> None:
        if not merge_keys:
            write_deltalake(uri, table, mode="append", schema_mode="merge")
            return
        if not DeltaTable.is_deltatable(uri):
            write_deltalake(uri, table.schema.empty_table(), mode="append")
        dt = DeltaTable(uri)
        # merge_schema: tables written by an older segdex gain the columns added since (runs.files_failed)
        merger = dt.merge(table, predicate=_merge_predicate(merge_keys), source_alias="s", target_alias="t",
                          merge_schema=True)
        if update_when_changed:
            merger = merger.when_matched_update_all(predicate=_changed_predicate_deltars(update_when_changed))
        else:
            merger = merger.when_matched_update_all()
        merger = merger.when_not_matched_insert_all()
        if delete_unmatched:
            merger = merger.when_not_matched_by_source_delete(predicate=delete_unmatched)
        merger.execute()

    with _writer_lock(uri):
        _retry(attempt, retries)


def _write_spark(spark: Any, uri: str, table: pa.Table, schema: pa.Schema, merge_keys: Sequence[str] | None,
                 update_when_changed: Sequence[str] | None, retries: int,
                 delete_unmatched: str | None = None) -> None:
    df = spark.createDataFrame(table, schema=spark_schema(schema)) if table.num_rows else \
        spark.createDataFrame([], spark_schema(schema))

    def exists() -> bool:
        if _is_local(uri):
            return os.path.isdir(os.path.join(_local(uri), "_delta_log"))
        try:
            spark.read.format("delta").load(uri).limit(0).collect()
            return True
        except Exception:
            return False

    def attempt() -> None:
        if not merge_keys or not exists():
            df.write.format("delta").mode("append").save(uri)
            return
        spark.conf.set("spark.databricks.delta.schema.autoMerge.enabled", "true")  # columns added since
        view = f"_segdex_src_{os.getpid()}_{random.randrange(1 << 30)}"
        df.createOrReplaceTempView(view)
        try:
            cond = f" AND ({_changed_predicate(update_when_changed)})" if update_when_changed else ""
            delete = f" WHEN NOT MATCHED BY SOURCE AND ({delete_unmatched}) THEN DELETE" if delete_unmatched else ""
            spark.sql(
                f"MERGE INTO delta.{_quote(uri)} t USING {view} s ON {_merge_predicate(merge_keys)} "
                f"WHEN MATCHED{cond} THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *{delete}")
        finally:
            spark.catalog.dropTempView(view)

    _retry(attempt, retries)


def write_table(spark: Any, path: str, name: str, rows_or_arrow: Any, schema: pa.Schema,
                merge_keys: Sequence[str] | None = None, update_when_changed: Sequence[str] | None = None,
                retries: int = DEFAULT_RETRIES, delete_unmatched: str | None = None) -> int:
    """Upsert (MERGE on ``merge_keys``) or append rows into the Delta table ``path/name``; returns the row count.

    ``rows_or_arrow``: dicts, a pyarrow Table, or a Spark DataFrame. With ``update_when_changed``, a matched row
    is rewritten only when one of those columns differs, so rewriting the same facts changes nothing. With
    ``delete_unmatched`` (a SQL predicate over the target alias ``t``), target rows it selects that have no
    source row are deleted, e.g. the rows of a rescanned scope whose segments are gone. The table is created
    with ``schema`` when absent. Commit conflicts are retried up to ``retries`` times.
    """
    uri = table_path(path, name)
    table = to_arrow(rows_or_arrow, schema)
    if merge_keys:
        table = _dedupe(table, merge_keys)
    if spark_has_delta(spark):
        _write_spark(spark, uri, table, schema, merge_keys, update_when_changed, retries, delete_unmatched)
    else:
        if table.num_rows == 0 and not merge_keys:
            from deltalake import DeltaTable

            if DeltaTable.is_deltatable(uri):
                return 0
        _write_deltalake(uri, table, merge_keys, update_when_changed, retries, delete_unmatched)
    return table.num_rows


def read_arrow(path: str, name: str) -> pa.Table:
    """The current state of table ``path/name`` as a pyarrow Table (embedded reader, no Spark)."""
    from deltalake import DeltaTable

    uri = table_path(path, name)
    if not DeltaTable.is_deltatable(uri):
        raise MetadataStoreError(f"{uri}: no Delta table (run `segdex reindex` or `segdex verify` first)")
    return DeltaTable(uri).to_pyarrow_table()


def read_table(spark: Any, path: str, name: str) -> Any:
    """The current state of table ``path/name`` as a Spark DataFrame."""
    uri = table_path(path, name)
    if spark_has_delta(spark):
        return spark.read.format("delta").load(uri)
    table = read_arrow(path, name)
    return spark.createDataFrame(table, schema=spark_schema(table.schema)) if table.num_rows else \
        spark.createDataFrame([], spark_schema(table.schema))


def table_names(path: str) -> list[str]:
    """Names of the Delta tables directly under ``path`` (local paths only; empty when none)."""
    local = _local(path)
    if not _is_local(path) or not os.path.isdir(local):
        return []
    return sorted(n for n in os.listdir(local) if os.path.isdir(os.path.join(local, n, "_delta_log")))


def register_views(spark: Any, path: str, names: Iterable[str] | None = None) -> list[str]:
    """Register each table under ``path`` as a temporary view named after it; returns the names registered."""
    registered = []
    for name in (list(names) if names is not None else table_names(path)):
        read_table(spark, path, name).createOrReplaceTempView(name)
        registered.append(name)
    return registered


def rows_of(table: pa.Table) -> list[dict]:
    """A pyarrow Table as a list of dicts (for tests and small tables)."""
    return table.to_pylist()


def sort_rows(rows: Iterable[Mapping[str, Any]], keys: Sequence[str]) -> list[dict]:
    return sorted((dict(r) for r in rows), key=lambda r: tuple(r[k] for k in keys))
