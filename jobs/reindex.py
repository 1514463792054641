"""``segdex reindex``: rebuild, in place and only where they differ, the index files of whole log dirs, with Spark.

Also ``spark-submit jobs/reindex.py [options] LOGDIR...`` (see the README).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.errors import SegdexError
from segdex.indexcore.status import ExitStatus
from segdex.jobs.common import (
    add_allow_unloadable_argument,
    add_broker_config_argument,
    check_log_dirs,
    log_dirs_or_broker,
    topic_config_resolver,
    with_command_time,
)

SPARK = True  # a Spark command: `-v` shows Spark's own log lines
HELP = "rebuild the index files of whole Kafka log dirs in parallel with Spark; record segments in Delta"
COMMAND = "reindex"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--normalize", action="store_true",
                        help="also rewrite valid index files whose bytes differ from Kafka's recovery (`equivalent`: "
                             "older brokers, follower appends, another index.interval.bytes); default: only "
                             "missing or corrupt ones")
    add_allow_unloadable_argument(parser)
    add_common_arguments(parser)


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments reindex and verify share."""
    from segdex.pipelines.schemas import METADATA_ENV, default_metadata_path

    parser.add_argument("--metadata", metavar="PATH", default=None,
                        help=f"Delta tables directory (default: ${METADATA_ENV} or ./{default_metadata_path()})")
    parser.add_argument("--config", action="append", metavar="KEY=VALUE",
                        help="Kafka topic config default for every topic, e.g. index.interval.bytes=4096")
    parser.add_argument("--topic-config", action="append", metavar="TOPIC:KEY=VALUE",
                        help="config of one topic, e.g. orders:index.interval.bytes=1024 (repeatable)")
    parser.add_argument("--master", metavar="URL",
                        help="Spark master (default: spark-submit's, else embedded local[*])")
    parser.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
    add_broker_config_argument(parser)
    parser.add_argument("log_dirs", nargs="*", metavar="LOGDIR",
                        help="a Kafka log dir (holding <topic>-<n> dirs); default: --broker-config's log.dirs")


def resolve_configs(args: argparse.Namespace) -> tuple[LogConfig, dict[str, LogConfig]]:
    """The default LogConfig (Kafka's defaults < the broker's log.* settings < --config) and per-topic ones
    (--topic-configs < --config < --topic-config); ConfigException when bad. ``args._resolver`` keeps where each
    value came from, for the ``topic_configs`` table."""
    resolver, broker = topic_config_resolver(args, args.log_dirs)
    args.log_dirs = log_dirs_or_broker(args.command, args.log_dirs, broker) or []
    args._resolver = resolver
    return resolver.default, {t: resolver(t) for t in resolver.configured_topics()}


def run_command(args: argparse.Namespace, mode: str) -> int:
    """Shared by reindex and verify: validate arguments, start Spark, run the pipeline."""
    try:
        default, topics = resolve_configs(args)
    except SegdexError as e:
        print(f"segdex {mode}: {e}", file=sys.stderr)
        return ExitStatus.USAGE
    if not args.log_dirs or check_log_dirs(mode, args.log_dirs):
        return ExitStatus.USAGE
    from segdex.jobs import report
    from segdex.pipelines import reindex
    from segdex.pipelines.local_engine import close_engine, get_engine
    from segdex.pipelines.run_context import RunRequest
    from segdex.pipelines.schemas import default_metadata_path

    spark = get_engine(args.master, f"segdex-{mode}", args.remote)
    try:
        request = RunRequest(args.log_dirs, args.metadata or default_metadata_path(), default, topics,
                             arguments=_arguments(args, mode), normalize=getattr(args, "normalize", False),
                             resolver=args._resolver, allow_unloadable=getattr(args, "allow_unloadable", False))
        summary, failed = guarded_run(mode, lambda: reindex.run(
            spark, mode, request, None if args.no_progress else report.print_progress))
    finally:
        close_engine(spark)
    if failed is not None:
        return failed
    report.print_run(with_command_time(summary))
    return summary.exit_status


def guarded_run(command: str, call: Callable[[], Any], interrupted_note: str = "") -> tuple[Any, int | None]:
    """Run a writing pipeline (reindex, verify, recover): ``(its summary, None)``, or ``(None, exit status)`` with
    one line on stderr for its typed failures: a check before any change or a bad argument found by the pipeline
    (2), a stop on a signal, a failure after files changed (3, saying what had changed)."""
    from segdex.pipelines import reindex
    from segdex.pipelines.interrupts import RunInterrupted

    try:
        return call(), None
    except RunInterrupted as e:  # a signal, not an error: a BaseException that no `except Exception` swallows
        print(f"segdex {command}: {e}{interrupted_note}", file=sys.stderr)
        return None, e.exit_status
    except reindex.RunFailed as e:
        print(f"segdex {command}: failed: {e}; {e.changed}", file=sys.stderr)
        return None, ExitStatus.FAILED
    except SegdexError as e:  # a check before any change (PreflightError), a bad argument found by the pipeline
        print(f"segdex {command}: {e}", file=sys.stderr)
        return None, ExitStatus.USAGE


def _arguments(args: argparse.Namespace, mode: str) -> list[str]:
    """The command line as parsed, for the runs table."""
    out = [mode]
    if getattr(args, "normalize", False):
        out.append("--normalize")
    if getattr(args, "allow_unloadable", False):
        out.append("--allow-unloadable")
    if args.metadata:
        out += ["--metadata", args.metadata]
    out += [f"--config={c}" for c in args.config or []]
    out += [f"--topic-config={c}" for c in args.topic_config or []]
    if args.master:
        out += ["--master", args.master]
    return out + list(args.log_dirs)


def run(args: argparse.Namespace) -> int:
    return run_command(args, COMMAND)


if __name__ == "__main__":  # spark-submit jobs/reindex.py ...
    from segdex.jobs.cli import main
    from segdex.pipelines.spark_session import stop_active

    code = main([COMMAND, *sys.argv[1:]])
    stop_active()
    sys.exit(code)
