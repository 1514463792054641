"""``segdex demo``: generate a sample Kafka log dir, verify and reindex it with Spark, show SQL over the metadata."""

from __future__ import annotations

import argparse
import sys

HELP = "generate a sample log dir (several topics, partitions, segments), reindex it, and query it with SQL"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dir", default="sample", metavar="DIR",
                        help="where to put kafka-logs/ and metadata/ (default: ./sample; regenerated each run)")
    parser.add_argument("--master", metavar="URL", help="Spark master (default: embedded local[*])")


def run(args: argparse.Namespace) -> int:
    from pipelines import demo
    from pipelines.spark_session import get_spark

    try:
        demo.prepare  # noqa: B018 - fail fast on import problems before Spark starts
        spark = get_spark(args.master, "segdex-demo")
        return demo.run(spark, args.dir)
    except FileExistsError as e:
        print(f"segdex demo: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    from jobs.cli import main

    sys.exit(main(["demo", *sys.argv[1:]]))
