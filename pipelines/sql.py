"""``segdex sql``: Spark SQL over the metadata tables, registered as views by their names; table/csv/json output."""

from __future__ import annotations

import re
from typing import Any

from . import metadata_store

FORMATS = ("table", "csv", "json")


def referenced_tables(query: str, names: list[str]) -> list[str]:
    """The metadata tables ``query`` names (as words, any case): only those are read. All of them when the query
    names none (``SHOW TABLES``, a typo), so that Spark's own error or answer sees every table."""
    used = [n for n in names if re.search(rf"(?<![\w.`]){re.escape(n)}(?![\w`])", query, re.IGNORECASE)]
    return used or names


def run_query(spark: Any, metadata_path: str, query: str) -> tuple[list[str], list[tuple]]:
    """Register the tables ``query`` uses under ``metadata_path``, run it; (column names, rows)."""
    store = metadata_store.MetadataStore(metadata_path, spark)
    store.register_views(referenced_tables(query, store.tables()))
    df = spark.sql(query)
    return df.columns, [tuple(r) for r in df.collect()]
