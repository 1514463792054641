"""``segdex compact``: trim over-long index files of non-active segments; maintain the metadata Delta tables.

Not Kafka's log compaction (the log cleaner): no ``.log`` byte changes. The command keeps its name for its users;
the code says what it does (``pipelines.index_trim``, ``pipelines.maintain``).

Report by default, ``--apply`` to trim (atomically, refused where a broker holds the log dir's ``.lock``).
``--metadata PATH`` also compacts small files and vacuums old versions of every table under PATH (retention
``--vacuum-hours``, at least 168 unless ``--unsafe-vacuum``). Exit 0 clean, 1 attention, 2 usage.
"""

from __future__ import annotations

import argparse
import os
import sys

from segdex.indexcore.status import ExitStatus
from segdex.jobs.common import add_allow_unloadable_argument, check_log_dirs, print_log_dir_outcome, spark_if_master
from segdex.jobs.report import human_bytes
from segdex.pipelines.engine import Engine

SPARK = True  # a Spark command: `-v` shows Spark's own log lines
HELP = ("trim over-long (preallocated or densified) index files of non-active segments; with --metadata, "
        "compact and vacuum the Delta tables (not Kafka's log compaction: no .log file changes)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--apply", action="store_true", help="trim the files (default: report only)")
    add_allow_unloadable_argument(parser)
    parser.add_argument("--metadata", metavar="PATH", help="also maintain the Delta tables under PATH")
    parser.add_argument("--vacuum-hours", type=int, default=168, metavar="H",
                        help="keep files of table versions younger than H hours (default 168, Delta's default)")
    parser.add_argument("--unsafe-vacuum", action="store_true", help="allow --vacuum-hours below 168")
    parser.add_argument("--master", metavar="URL", help="Spark master; with it, one Spark task per log dir")
    parser.add_argument("--verbose", "-v", action="store_true", help="list every over-long file")
    parser.add_argument("log_dirs", nargs="*", metavar="LOGDIR", help="Kafka log dir (holds <topic>-<n> dirs)")


def _err(msg: str) -> None:
    print(f"segdex compact: {msg}", file=sys.stderr)


def _usage_error(args: argparse.Namespace, safe_hours: int) -> str | None:
    if not args.log_dirs and not args.metadata:
        return "give at least one LOGDIR, or --metadata PATH"
    if args.vacuum_hours < safe_hours and not args.unsafe_vacuum:
        return (f"--vacuum-hours {args.vacuum_hours} is below the safe {safe_hours}: readers of older versions "
                f"could lose files; add --unsafe-vacuum to force")
    return None


def print_outcome(o, apply: bool, verbose: bool) -> None:
    """One log dir's index files: problems on stderr, trimmed or trimmable files with -v, then a summary."""
    from segdex.indexcore.tools.index_trim import IndexFileState

    print_log_dir_outcome(o, apply)
    counts: dict[str, int] = {}
    for c in o.checks:
        counts[c.status] = counts.get(c.status, 0) + 1
        if IndexFileState(c.status).needs_attention:
            print(f"{c.status}: {c.reason}", file=sys.stderr)
        elif c.status in (IndexFileState.OVERLONG, IndexFileState.TRIMMED) and verbose:
            print(f"{c.status}: {c.path}: {human_bytes(c.size_bytes)} -> {human_bytes(c.valid_bytes)} "
                  f"({c.entries} entries)")
    verb = "reclaimed" if o.applied else "reclaimable"
    summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "no index files"
    print(f"{o.log_dir}: {human_bytes(o.reclaimable_bytes)} {verb} ({summary})")


def maintain_metadata(args: argparse.Namespace, spark: Engine) -> int:
    """Compact and vacuum every table under --metadata; one line per table."""
    from segdex.pipelines import maintain
    from segdex.pipelines import metadata_store as ms

    names = ms.table_names(args.metadata)
    if not names:
        _err(f"{args.metadata}: no Delta tables")
        return ExitStatus.ATTENTION
    status = ExitStatus.OK
    for name in names:
        try:
            r = maintain.maintain_table(spark, args.metadata, name, args.vacuum_hours, args.unsafe_vacuum)
            print(f"{args.metadata}/{name}: files {r['files_before']} -> {r['files_after']}, "
                  f"vacuumed {r['vacuumed']} (retention {args.vacuum_hours} h)")
        except Exception as e:  # one table's failure is a row, not a crash
            print(f"{args.metadata}/{name}: maintenance failed: {type(e).__name__}: {e}", file=sys.stderr)
            status = ExitStatus.ATTENTION
    return status


def run(args: argparse.Namespace) -> int:
    from segdex.pipelines import index_trim, maintain

    why = _usage_error(args, maintain.SAFE_RETENTION_HOURS)
    if why:
        _err(why)
        return ExitStatus.USAGE
    if check_log_dirs("compact", args.log_dirs):
        return ExitStatus.USAGE
    spark = spark_if_master(args.master, "compact", args.remote)
    status = ExitStatus.OK
    for o in index_trim.trim_indexes([os.path.abspath(d) for d in args.log_dirs], args.apply, spark,
                                     args.allow_unloadable):
        print_outcome(o, args.apply, args.verbose)
        if o.needs_attention:
            status = ExitStatus.ATTENTION
    if args.metadata:
        from segdex.pipelines import metadata_store as ms

        if spark is None and ms.writer_is_spark():  # OPTIMIZE and VACUUM through Delta Lake on Spark, as asked
            from segdex.pipelines.spark_session import get_spark

            spark = get_spark(None, "segdex-compact")
        status = max(status, maintain_metadata(args, spark))
    return status


if __name__ == "__main__":
    from segdex.jobs.cli import main

    sys.exit(main(["compact", *sys.argv[1:]]))
