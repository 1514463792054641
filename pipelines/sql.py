"""``segdex sql``: Spark SQL over the metadata tables, registered as views by their names; table/csv/json output."""

from __future__ import annotations

import csv
import json
import sys
from datetime import date, datetime
from decimal import Decimal
from typing import Any, TextIO

from . import metadata_store

FORMATS = ("table", "csv", "json")


def _plain(value: Any) -> Any:
    """A JSON-friendly value: timestamps as ISO 8601, decimals as numbers, rows/maps as objects."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, bytes | bytearray):
        return value.hex()
    if hasattr(value, "asDict"):
        return {k: _plain(v) for k, v in value.asDict().items()}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _text(value: Any) -> str:
    if value is None:
        return "NULL"
    value = _plain(value)
    return json.dumps(value) if isinstance(value, dict | list) else str(value)


def format_rows(columns: list[str], rows: list[tuple], fmt: str, out: TextIO | None = None) -> None:
    """Print rows as an aligned table, CSV with a header, or one JSON object per line."""
    out = out or sys.stdout
    if fmt == "json":
        for row in rows:
            print(json.dumps({c: _plain(v) for c, v in zip(columns, row, strict=True)}), file=out)
    elif fmt == "csv":
        w = csv.writer(out, lineterminator="\n")
        w.writerow(columns)
        for row in rows:
            w.writerow(["" if v is None else _text(v) for v in row])
    else:
        cells = [[_text(v) for v in row] for row in rows]
        widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
        numeric = [all(isinstance(row[i], int | float | Decimal) or row[i] is None for row in rows) and rows
                   for i in range(len(columns))]

        def line(values: list[str]) -> str:
            return " | ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric,
                                                                                  strict=True)).rstrip()
        print(line(columns), file=out)
        print("-+-".join("-" * w for w in widths), file=out)
        for r in cells:
            print(line(r), file=out)
        print(f"({len(rows)} row{'s' if len(rows) != 1 else ''})", file=out)


def run_query(spark: Any, metadata_path: str, query: str) -> tuple[list[str], list[tuple]]:
    """Register the tables under ``metadata_path`` as views, run ``query``; (column names, rows)."""
    metadata_store.register_views(spark, metadata_path)
    df = spark.sql(query)
    return df.columns, [tuple(r) for r in df.collect()]
