"""``segdex sql``: Spark SQL over the metadata tables, registered as views by their names; table/csv/json output."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from segdex.indexcore.errors import SegdexError

from . import metadata_store
from .engine import Engine

FORMATS = ("table", "csv", "json")


def referenced_tables(query: str, names: list[str]) -> list[str]:
    """The metadata tables ``query`` names (as words, any case): only those are read. All of them when the query
    names none (``SHOW TABLES``, a typo), so that Spark's own error or answer sees every table."""
    used = [n for n in names if re.search(rf"(?<![\w.`]){re.escape(n)}(?![\w`])", query, re.IGNORECASE)]
    return used or names


class QueryError(SegdexError):
    """A query segdex cannot run as asked (a time-travel version or timestamp the table does not have)."""


# Spark SQL's time travel clauses after a table name: VERSION AS OF 3, TIMESTAMP AS OF '2026-11-25 10:00:00',
# and their FOR SYSTEM_VERSION / FOR SYSTEM_TIME synonyms
_AS_OF = (r"\s+(?:FOR\s+)?(?P<kind>VERSION|SYSTEM_VERSION|TIMESTAMP|SYSTEM_TIME)\s+AS\s+OF\s+"
          r"(?P<value>'(?:[^']|'')*'|\d+)")


# an alias after a table reference (AS a, or a bare name that is not the next clause's keyword), or a TABLESAMPLE,
# which Spark's grammar puts before the alias
_CLAUSE_WORDS = ("WHERE|GROUP|ORDER|HAVING|LIMIT|OFFSET|UNION|INTERSECT|EXCEPT|MINUS|JOIN|INNER|LEFT|RIGHT|FULL|"
                 "CROSS|NATURAL|SEMI|ANTI|ON|USING|LATERAL|WINDOW|CLUSTER|DISTRIBUTE|SORT|PIVOT|UNPIVOT|"
                 "QUALIFY")
_ALIAS = re.compile(rf"\s+(?:AS\s+|TABLESAMPLE\b|(?!(?:{_CLAUSE_WORDS})\b)(?=[A-Za-z_`]))", re.IGNORECASE)


def _as_of(table: str, kind: str, raw: str) -> int | datetime:
    if kind.upper() in ("VERSION", "SYSTEM_VERSION"):
        text = raw[1:-1] if raw.startswith("'") else raw
        if not text.isdigit():
            raise QueryError(f"{table} VERSION AS OF {raw}: a version is a whole number")
        return int(text)
    text = raw[1:-1].replace("''", "'") if raw.startswith("'") else raw
    try:
        stamp = datetime.fromisoformat(text)
    except ValueError:
        raise QueryError(f"{table} TIMESTAMP AS OF {raw}: not a timestamp (e.g. '2026-11-25 10:00:00', UTC)") \
            from None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)


def rewrite_time_travel(query: str, names: list[str]) -> tuple[str, dict[str, tuple[str, int | datetime]]]:
    """``query`` without ``<table> VERSION|TIMESTAMP AS OF x`` clauses, and the views to register for them:
    {view name: (table, version or timestamp)}; for the delta-rs reader, whose tables Spark's parser does not
    time-travel. A table read only as of one point keeps its own name (``segments.col`` still resolves); a table
    also read at other points gets one view per point (``__segments_v3``)."""
    views: dict[str, tuple[str, int | datetime]] = {}
    for name in names:
        pattern = re.compile(rf"(?<![\w.`]){re.escape(name)}{_AS_OF}", re.IGNORECASE)
        points = [_as_of(name, m.group("kind"), m.group("value")) for m in pattern.finditer(query)]
        if not points:
            continue
        # another reference to the table itself (not a qualified column, segments.size_bytes)
        plain = re.search(rf"(?<![\w.`]){re.escape(name)}(?![\w`.])(?!{_AS_OF})", query, re.IGNORECASE)
        if len(set(points)) == 1 and not plain:
            views[name] = (name, points[0])
            query = pattern.sub(name, query)
            continue
        names_of = {p: f"__{name}_{'v' if isinstance(p, int) else 't'}{i}"
                    for i, p in enumerate(dict.fromkeys(points))}
        views.update({view: (name, p) for p, view in names_of.items()})

        def view_of(m: re.Match, table: str = name, known: dict = names_of) -> str:
            view = known[_as_of(table, m.group("kind"), m.group("value"))]
            # without an alias of its own (_ALIAS) the view answers to the table's name, as Spark's time travel
            # does (segments.col in a subquery reading segments VERSION AS OF 3)
            return view if _ALIAS.match(m.string, m.end()) else f"{view} AS {table}"

        query = pattern.sub(view_of, query)
    return query, views


def run_query(spark: Engine, metadata_path: str, query: str) -> tuple[list[str], list[tuple]]:
    """Register the tables ``query`` uses under ``metadata_path``, run it; (column names, rows). Time travel runs
    in Spark's Delta reader when the session has it, else through delta-rs (``rewrite_time_travel``)."""
    store = metadata_store.MetadataStore(metadata_path, spark)
    names = referenced_tables(query, store.tables())
    views: dict[str, tuple[str, int | datetime]] = {}
    if not store.reads_through_catalog:
        query, views = rewrite_time_travel(query, names)
        for view, (table, as_of) in views.items():
            try:
                store.register_view(table, view, as_of)
            except Exception as e:  # deltalake: no such version, or a timestamp before the table's first
                raise QueryError(f"{table} as of {as_of}: {str(e).strip().splitlines()[0]}") from None
    store.register_views([n for n in names if n not in views])
    df = spark.sql(query)
    return df.columns, [tuple(r) for r in df.collect()]
