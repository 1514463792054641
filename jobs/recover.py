"""``segdex recover``: Kafka's startup recovery of whole log dirs done offline with Spark, leaving each log dir as
Kafka's recovery followed by a clean shutdown leaves it, so the broker's next start re-reads nothing.

Also ``spark-submit jobs/recover.py [options] LOGDIR...`` (see the README).
"""

from __future__ import annotations

import argparse
import sys

from segdex.indexcore.errors import SegdexError
from segdex.indexcore.status import ExitStatus
from segdex.jobs.common import add_allow_unloadable_argument, check_log_dirs, now_error, with_command_time
from segdex.jobs.reindex import _arguments, add_common_arguments, guarded_run, resolve_configs

SPARK = True  # a Spark command: `-v` shows Spark's own log lines
HELP = ("recover whole Kafka log dirs offline as the broker's start would (index files, producer snapshots, "
        "leader epochs, checkpoints), then mark each clean one for a fast start")
COMMAND = "recover"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--now", metavar="EPOCH_MS", type=int, default=None,
                        help="the broker clock its load would see: producers idle longer than "
                             "producer.id.expiration.ms (default one day) before it are dropped from the snapshots "
                             "(default: now)")
    parser.add_argument("--truncate", action="store_true",
                        help="where a .log has a corrupt tail, cut it as Kafka's recovery would (and drop the "
                             "partition's later segments), keeping every removed byte under --quarantine")
    parser.add_argument("--quarantine", metavar="DIR",
                        help="with --truncate: where removed bytes and segments go, with a manifest.json saying "
                             "where each came from and how to put it back (outside every log dir)")
    add_allow_unloadable_argument(parser)
    add_common_arguments(parser)


def run(args: argparse.Namespace) -> int:
    try:
        default, topics = resolve_configs(args)
    except SegdexError as e:
        print(f"segdex {COMMAND}: {e}", file=sys.stderr)
        return ExitStatus.USAGE
    if now_error(args.now):
        print(f"segdex {COMMAND}: {now_error(args.now)}", file=sys.stderr)
        return ExitStatus.USAGE
    if bool(args.truncate) != bool(args.quarantine):
        print(f"segdex {COMMAND}: --truncate and --quarantine DIR go together (nothing is cut without a place "
              f"to keep it)", file=sys.stderr)
        return ExitStatus.USAGE
    if not args.log_dirs or check_log_dirs(COMMAND, args.log_dirs):
        return ExitStatus.USAGE
    from segdex.jobs import report
    from segdex.pipelines import recover
    from segdex.pipelines.local_engine import close_engine, get_engine
    from segdex.pipelines.run_context import RunRequest
    from segdex.pipelines.schemas import default_metadata_path

    spark = get_engine(args.master, f"segdex-{COMMAND}", args.remote)
    arguments = _arguments(args, COMMAND)
    if args.truncate:
        arguments[1:1] = ["--truncate", "--quarantine", args.quarantine]
    if args.now is not None:
        arguments[1:1] = ["--now", str(args.now)]
    try:
        request = RunRequest(args.log_dirs, args.metadata or default_metadata_path(), default, topics,
                             arguments=arguments, now_ms=args.now, resolver=args._resolver,
                             allow_unloadable=args.allow_unloadable, quarantine=args.quarantine)
        summary, failed = guarded_run(COMMAND, lambda: recover.run(
            spark, request, None if args.no_progress else report.print_progress), "; no log dir was marked clean")
    finally:
        close_engine(spark)
    if failed is not None:
        return failed
    with_command_time(summary.run)
    report.print_recover(summary)
    return summary.exit_status


if __name__ == "__main__":  # spark-submit jobs/recover.py ...
    from segdex.jobs.cli import main
    from segdex.pipelines.spark_session import stop_active

    code = main([COMMAND, *sys.argv[1:]])
    stop_active()
    sys.exit(code)
