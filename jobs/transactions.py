"""``segdex transactions``: what ``kafka-transactions list | describe | find-hanging`` prints, from log dirs
alone (no broker).

A view over a ``__transaction_state`` partition loaded only in part (a damaged or cut segment) or missing says so
above its table, in each JSON row (``partial``, ``loaded_to_offset``, ``kafka_after_start``; a ``find-hanging``
row is partial whenever any transaction coordinator is, its verdict depending on them all), and in the exit
status (1)."""

from __future__ import annotations

import argparse
import json
import sys
import time

from segdex.indexcore.errors import SegdexError
from segdex.indexcore.status import ExitStatus
from segdex.indexcore.tools.cluster_view import TRANSACTION_STATE, ClusterView
from segdex.indexcore.tools.find_hanging import DEAD
from segdex.indexcore.tools.transactions import (
    DESCRIBE_HEADERS,
    FIND_HANGING_HEADERS,
    LIST_HEADERS,
    coordinated_transactions,
    find_hanging_row,
    find_hanging_transactions,
    list_transactions,
    pretty_print_table,
)
from segdex.jobs.common import report_cluster_view

HELP = ("list, describe and find hanging transactions offline as kafka-transactions does, from __transaction_state "
        "and the partitions' producer state in one or more log dirs")


NOW_HELP = ("the time durations are measured to (default: now); give the time the broker stopped to see what it "
            "would have answered then")
JSON_HELP = "one JSON object per row"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--now", type=int, metavar="EPOCH_MS", help=NOW_HELP)
    parser.add_argument("--json", action="store_true", help=JSON_HELP)
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = sub.add_parser("list", help="list transactions (kafka-transactions list)")
    listing.add_argument("--duration-filter", type=int, metavar="MS",
                         help="only transactions running longer than MS milliseconds")
    describe = sub.add_parser("describe", help="describe a transactional id (kafka-transactions describe)")
    describe.add_argument("--transactional-id", required=True, metavar="ID",
                          help="the transactional id to describe, as its producer's transactional.id names it")
    hanging = sub.add_parser("find-hanging", help="open transactions the coordinator will never end")
    hanging.add_argument("--topic", help="only this topic's partitions")
    hanging.add_argument("--partition", type=int, help="only this partition (with --topic)")
    hanging.add_argument("--max-transaction-timeout", type=int, default=15, metavar="MIN",
                         help="the broker's transaction.max.timeout.ms in minutes (default 15)")
    for p in (listing, describe, hanging):
        # also after the action (`transactions list --json LOGDIR`), as kafka-transactions takes them; SUPPRESS:
        # when not given here, the value given before the action (or its default) stays
        p.add_argument("--now", type=int, metavar="EPOCH_MS", default=argparse.SUPPRESS, help=NOW_HELP)
        p.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help=JSON_HELP)
        p.add_argument("log_dirs", nargs="+", metavar="LOGDIR",
                       help="a broker's log dir; give several (a cluster's disks) to read them together")


def run(args: argparse.Namespace) -> int:
    from segdex.jobs.common import now_error

    if now_error(args.now):
        print(f"segdex transactions: {now_error(args.now)}", file=sys.stderr)
        return ExitStatus.USAGE
    now_ms = args.now if args.now is not None else int(time.time() * 1000)
    if getattr(args, "partition", None) is not None and args.topic is None:
        print("segdex transactions: --partition needs --topic", file=sys.stderr)
        return ExitStatus.USAGE
    try:
        view = ClusterView(args.log_dirs)
        partial = view.partial_lines(TRANSACTION_STATE)
        if args.action == "list":
            found = list_transactions(view, now_ms, args.duration_filter)
            headers, rows, marks = LIST_HEADERS, [t.list_row() for t in found], [t.marks() for t in found]
        elif args.action == "describe":
            t = coordinated_transactions(view).get(args.transactional_id)
            if t is None or t.metadata.state == DEAD:
                print(f"Failed to describe transaction state of transactional-id `{args.transactional_id}`: no "
                      f"__transaction_state partition of the log dirs holds it"
                      f"{' (some are partial: it may be there)' if partial else ''}", file=sys.stderr)
                return ExitStatus.ATTENTION
            headers, rows, marks = DESCRIBE_HEADERS, [t.describe_row(now_ms)], [t.marks()]
        else:
            hanging = find_hanging_transactions(view, now_ms, args.max_transaction_timeout * 60_000, args.topic,
                                                args.partition)
            headers, rows = FIND_HANGING_HEADERS, [find_hanging_row(t, now_ms) for t in hanging]
            marks = [{"partial": bool(partial)} for _ in rows]
        status = report_cluster_view("transactions", view, view.transaction_coordinators)
    except (OSError, SegdexError) as e:
        print(f"segdex transactions: {getattr(e, 'strerror', None) or e}", file=sys.stderr)
        return ExitStatus.USAGE
    if not view.transaction_coordinators and args.action != "find-hanging":
        print("segdex transactions: no __transaction_state partition in the log dirs given", file=sys.stderr)
        status = ExitStatus.ATTENTION
    _print(args.json, headers, rows, marks, partial)
    if (args.action == "find-hanging" and rows) or partial:
        status = ExitStatus.ATTENTION
    return status


def _print(as_json: bool, headers: tuple[str, ...], rows: list[list[str]], marks: list[dict], partial: list[str],
           ) -> None:
    """The table, or one JSON object per row with its partial mark; the partial lines above the table (on stderr
    with ``--json``)."""
    for line in partial:
        print(f"segdex transactions: {line}" if as_json else line, file=sys.stderr if as_json else sys.stdout)
    if as_json:
        for row, mark in zip(rows, marks, strict=True):
            print(json.dumps({**dict(zip(headers, row, strict=True)), **mark}))
    else:
        sys.stdout.write(pretty_print_table(headers, rows))


if __name__ == "__main__":
    from segdex.jobs.cli import main

    sys.exit(main(["transactions", *sys.argv[1:]]))
