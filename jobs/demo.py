"""``segdex demo``: generate a sample Kafka log dir, verify and reindex it with Spark, show SQL over the metadata."""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from segdex.indexcore.status import ExitStatus
from segdex.pipelines.engine import Engine

SPARK = True  # a Spark command: `-v` shows Spark's own log lines
HELP = "generate a sample log dir (several topics, partitions, segments), reindex it, and query it with SQL"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dir", default="sample", metavar="DIR",
                        help="where to put kafka-logs/ and metadata/ (default: ./sample; regenerated each run)")
    parser.add_argument("--master", metavar="URL", help="Spark master (default: embedded local[*])")


def show(result: Any, out: TextIO | None = None) -> None:
    """Print what the demo made, each run's report, and the query results."""
    from segdex.jobs import report

    out = out or sys.stdout
    counts, logs, meta = result.counts, result.logs, result.metadata
    print(f"== generated {logs}: {counts['partitions']} partitions, {counts['segments']} segments, "
          f"{counts['bytes']} bytes of .log files, no index files; cut the tail of "
          f"{result.damaged.relative_to(logs)}", file=out)
    for summary in result.runs:
        print(f"\n== segdex {summary.command} --metadata {meta} {logs}", file=out)
        report.print_run(summary, out, out)
    for title, query, columns, rows in result.queries:
        print(f"\n== segdex sql --metadata {meta} \"{query}\"\n-- {title}", file=out)
        report.print_rows(columns, rows, "table", out)


def demo(spark: Engine, root: str, out: TextIO | None = None) -> int:
    """The whole demo on ``spark``: run it, show it."""
    from segdex.pipelines import demo as pipeline

    show(pipeline.run(spark, root), out)
    return ExitStatus.OK


def run(args: argparse.Namespace) -> int:
    from segdex.pipelines import demo as pipeline
    from segdex.pipelines.spark_session import get_spark

    try:
        pipeline.prepare  # noqa: B018 - fail fast on import problems before Spark starts
        spark = get_spark(args.master, "segdex-demo", remote=args.remote)
        return demo(spark, args.dir)
    except FileExistsError as e:
        print(f"segdex demo: {e}", file=sys.stderr)
        return ExitStatus.USAGE


if __name__ == "__main__":
    from segdex.jobs.cli import main

    sys.exit(main(["demo", *sys.argv[1:]]))
