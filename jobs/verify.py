"""``segdex verify``: classify every segment's index files against a rebuild, writing nothing in the log dirs.

Also ``spark-submit jobs/verify.py [options] LOGDIR...`` (see the README). Exit 1 when anything needs attention.
"""

from __future__ import annotations

import argparse
import sys

from segdex.jobs.reindex import (
    add_common_arguments,
    run_command,
)

SPARK = True  # a Spark command: `-v` shows Spark's own log lines
HELP = ("verify the index files of whole Kafka log dirs with Spark (ok, equivalent, missing, corrupt_index, "
        "corrupt_log_tail, unreadable); record segments in Delta; writes nothing in the log dirs")
COMMAND = "verify"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_arguments(parser)


def run(args: argparse.Namespace) -> int:
    return run_command(args, COMMAND)


if __name__ == "__main__":  # spark-submit jobs/verify.py ...
    from segdex.jobs.cli import main
    from segdex.pipelines.spark_session import stop_active

    code = main([COMMAND, *sys.argv[1:]])
    stop_active()
    sys.exit(code)
