"""``segdex offsets``: what ``kafka-get-offsets --time T`` answers, from partition dirs alone (no broker)."""

from __future__ import annotations

import argparse
import json
import os
import sys

from segdex.indexcore.errors import SegdexError, UsageException
from segdex.indexcore.log.checkpoints import CorruptCheckpointException
from segdex.indexcore.log.layout import parse_partition_dir_name
from segdex.indexcore.log.log_dir import describe_dir, list_log_dir
from segdex.indexcore.status import ExitStatus
from segdex.indexcore.tools.list_offsets import log_start_offsets, parse_target
from segdex.jobs.common import spark_if_master
from segdex.pipelines.offsets import list_offsets

SPARK = True  # a Spark command: `-v` shows Spark's own log lines
HELP = ("answer ListOffsets offline (kafka-get-offsets --time): offset, timestamp and leader epoch per partition, "
        "by timestamp, earliest, latest or max-timestamp")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--time", required=True, metavar="T",
                        help="epoch milliseconds, or -1/latest, -2/earliest, -3/max-timestamp")
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true",
                     help='one {"topic", "partition", "offset", "timestamp", "leader_epoch"} object per line')
    out.add_argument("--format", choices=["text", "json", "reset-csv"], default="text",
                     help="text: topic:partition:offset as kafka-get-offsets prints it; reset-csv: "
                          "topic,partition,offset lines for kafka-consumer-groups --reset-offsets --from-file")
    parser.add_argument("--master", metavar="URL",
                        help="Spark master: partitions are answered by Spark tasks (for log dirs of many partitions); "
                             "default: in this process, no Spark")
    parser.add_argument("paths", nargs="+", metavar="PATH", help="a partition dir (<topic>-<n>) or a log dir")


def _partitions(path: str) -> list[tuple[str, int | None]]:
    """(partition dir, its log-start-offset-checkpoint entry) for a partition dir or every one of a log dir."""
    if not os.path.isdir(path):
        raise UsageException(f"{path}: not a directory (give a partition dir or a log dir)")
    kind = describe_dir(path)
    if kind == "partition_dir":
        parent = os.path.dirname(os.path.normpath(path)) or "."
        starts = _starts(parent)
        tp = parse_partition_dir_name(os.path.basename(os.path.normpath(path)))
        return [(path, starts.get((tp.topic, tp.partition)))]
    if kind == "log_dir":
        starts = _starts(path)
        return [(p.path, starts.get((p.topic, p.partition))) for p in list_log_dir(path).partitions
                if not p.topic_partition.kind]  # -future dirs answer nothing to a client
    raise UsageException(f"{path}: neither a partition dir nor a log dir (no segment files, no <topic>-<n> dirs)")


def _starts(log_dir: str) -> dict[tuple[str, int], int]:
    try:
        return log_start_offsets(log_dir)
    except (OSError, CorruptCheckpointException) as e:
        print(f"segdex offsets: {log_dir}: log-start-offset-checkpoint unreadable ({e}); using first segments",
              file=sys.stderr)
        return {}


def run(args: argparse.Namespace) -> int:
    fmt = "json" if args.json else args.format
    try:
        target = parse_target(args.time)
        work = [item for path in args.paths for item in _partitions(path)]
    except (UsageException, SegdexError) as e:
        print(f"segdex offsets: {e}", file=sys.stderr)
        return ExitStatus.USAGE
    answers = list_offsets(work, target, spark_if_master(args.master, "offsets", args.remote))
    status = ExitStatus.OK
    for a in answers:
        if a.error:
            status = ExitStatus.ATTENTION
            print(f"error: {a.topic}-{a.partition}: {a.error}", file=sys.stderr)
        if fmt == "json":
            print(json.dumps(a.as_dict()))
        elif a.error:
            continue
        elif fmt == "reset-csv":
            if a.offset < 0:
                print(f"note: {a.topic}-{a.partition}: no offset at or after {args.time}; left out of the CSV",
                      file=sys.stderr)
                continue
            print(f"{a.topic},{a.partition},{a.offset}")
        else:
            print(f"{a.topic}:{a.partition}:{a.offset}")
    return status


if __name__ == "__main__":
    from segdex.jobs.cli import main

    sys.exit(main(["offsets", *sys.argv[1:]]))
