"""``segdex sql``: run Spark SQL over the metadata tables (``segments``, ``partitions``, ``runs``)."""

from __future__ import annotations

import argparse
import sys

from segdex.indexcore.status import ExitStatus

SPARK = True  # a Spark command: `-v` shows Spark's own log lines
HELP = "run Spark SQL over the metadata Delta tables (segments, partitions, runs), registered as views"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from segdex.pipelines.schemas import METADATA_ENV, default_metadata_path

    parser.add_argument("--metadata", metavar="PATH", default=None,
                        help=f"Delta tables directory (default: ${METADATA_ENV} or ./{default_metadata_path()})")
    parser.add_argument("--format", choices=("table", "csv", "json"), default="table",
                        help="output: aligned table (default), CSV with a header, or one JSON object per line")
    parser.add_argument("--master", metavar="URL", help="Spark master (default: embedded local[*])")
    parser.add_argument("query", metavar="QUERY",
                        help="e.g. \"SELECT topic, sum(size_bytes) FROM segments GROUP BY 1\"")


def run(args: argparse.Namespace) -> int:
    from segdex.jobs.report import print_rows
    from segdex.pipelines import metadata_store
    from segdex.pipelines.schemas import default_metadata_path
    from segdex.pipelines.sql import QueryError, run_query

    path = args.metadata or default_metadata_path()
    if not metadata_store.table_names(path) and "://" not in path:
        print(f"segdex sql: no metadata tables in {path} (run `segdex reindex` or `segdex verify` first, "
              f"or pass --metadata)", file=sys.stderr)
        return ExitStatus.USAGE
    from segdex.pipelines.metadata_store import is_object_store
    from segdex.pipelines.spark_session import get_spark

    spark = get_spark(args.master, "segdex-sql", remote=args.remote, object_store=is_object_store(path))
    try:
        columns, rows = run_query(spark, path, args.query)
    except QueryError as e:
        print(f"segdex sql: {e}", file=sys.stderr)
        return ExitStatus.USAGE
    except Exception as e:  # AnalysisException, ParseException: the user's query, not a crash
        if type(e).__name__ not in ("AnalysisException", "ParseException", "SparkRuntimeException",
                                    "PySparkException", "IllegalArgumentException", "ArithmeticException",
                                    "NumberFormatException", "DateTimeException"):
            raise
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        print(f"segdex sql: {first}", file=sys.stderr)
        return ExitStatus.USAGE
    print_rows(columns, rows, args.format)
    return ExitStatus.OK


if __name__ == "__main__":
    from segdex.jobs.cli import main

    sys.exit(main(["sql", *sys.argv[1:]]))
