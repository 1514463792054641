"""``segdex groups``: what ``kafka-consumer-groups --describe`` prints, from log dirs alone (no broker).

A view over a ``__consumer_offsets`` partition loaded only in part (a damaged or cut segment) or missing says so
above its rows, in the JSON rows (``partial``, ``loaded_to_offset``, ``kafka_after_start``), and in the exit
status (1)."""

from __future__ import annotations

import argparse
import json
import sys

from segdex.indexcore.errors import SegdexError
from segdex.indexcore.status import ExitStatus
from segdex.indexcore.tools.cluster_view import CONSUMER_OFFSETS, ClusterView
from segdex.indexcore.tools.consumer_groups import DEAD, OK, describe_groups, format_offsets, restore_check
from segdex.jobs.common import report_cluster_view

HELP = ("describe consumer groups offline as kafka-consumer-groups --describe does: committed offsets, log end "
        "offsets and lag from __consumer_offsets and the partitions of one or more log dirs")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--group", action="append", metavar="G",
                        help="describe this group (repeatable); default: every group (--all-groups)")
    parser.add_argument("--json", action="store_true",
                        help="one JSON object per group: state, type, members, offsets and the restore check")
    parser.add_argument("log_dirs", nargs="+", metavar="LOGDIR",
                        help="a broker's log dir; give several (a cluster's disks) to read them together")


def run(args: argparse.Namespace) -> int:
    try:
        view = ClusterView(args.log_dirs)
        missing = view.missing_partitions(CONSUMER_OFFSETS)
        groups = describe_groups(view.group_coordinators, view.topic_names, view.log_offsets, args.group,
                                 missing=missing)
        checks = restore_check(groups, view.count_records)
    except (OSError, SegdexError) as e:
        print(f"segdex groups: {getattr(e, 'strerror', None) or e}", file=sys.stderr)
        return ExitStatus.USAGE
    status = report_cluster_view("groups", view, view.group_coordinators)
    if not view.group_coordinators:
        print("segdex groups: no __consumer_offsets partition in the log dirs given: no group to describe",
              file=sys.stderr)
        return ExitStatus.ATTENTION
    if args.json:
        for line in view.partial_lines(CONSUMER_OFFSETS):
            print(f"segdex groups: {line}", file=sys.stderr)
        by_group: dict[str, list] = {}
        for c in checks:
            by_group.setdefault(c.group, []).append(c.__dict__)
        for g in groups:
            print(json.dumps({**g.as_dict(), "restore_check": by_group.get(g.group, [])}))
    else:
        out, err = format_offsets(groups)
        sys.stdout.write("".join(f"{line}\n" for line in view.partial_lines(CONSUMER_OFFSETS)))
        sys.stdout.write(out)
        sys.stderr.write(err)
    for c in checks:
        if c.status != OK:
            print(f"restore check: {c.describe()}", file=sys.stderr)
            status = ExitStatus.ATTENTION
    if missing or any(g.state == DEAD or g.partial for g in groups):
        status = ExitStatus.ATTENTION
    return status


if __name__ == "__main__":
    from segdex.jobs.cli import main

    sys.exit(main(["groups", *sys.argv[1:]]))
