"""``segdex sql``: Spark SQL over the metadata tables, registered as views by their names; table/csv/json output."""

from __future__ import annotations

from typing import Any

from . import metadata_store

FORMATS = ("table", "csv", "json")


def run_query(spark: Any, metadata_path: str, query: str) -> tuple[list[str], list[tuple]]:
    """Register the tables under ``metadata_path`` as views, run ``query``; (column names, rows)."""
    metadata_store.register_views(spark, metadata_path)
    df = spark.sql(query)
    return df.columns, [tuple(r) for r in df.collect()]
