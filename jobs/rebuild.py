"""``segdex rebuild``: regenerate .index/.timeindex/.txnindex from .log files, without Spark."""

from __future__ import annotations

import argparse
import sys

from segdex.indexcore.errors import SegdexError, UsageException
from segdex.indexcore.log.log_dir import LogDirLockedException
from segdex.indexcore.status import ExitStatus, SegmentStatus
from segdex.indexcore.tools.rebuild import RebuildOutcome, rebuild
from segdex.jobs.common import (
    add_broker_config_argument,
    topic_config_resolver,
    topic_of_path,
)

HELP = "rebuild index files of partition directories or .log files, as Kafka's recovery writes them"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", action="append", metavar="KEY=VALUE",
                        help="Kafka topic config, e.g. index.interval.bytes=4096 (repeatable)")
    parser.add_argument("--out-dir", metavar="DIR",
                        help="write to DIR/<partition dir name>/ and leave the source untouched")
    parser.add_argument("--quiet", "-q", action="store_true", help="print problems only")
    add_broker_config_argument(parser)
    parser.add_argument("paths", nargs="+", metavar="PATH", help="partition directory or .log file")


def run(args: argparse.Namespace) -> int:
    try:
        resolver, _broker = topic_config_resolver(args, args.paths)
        config = resolver.default
        per_topic = {t: resolver(t) for t in resolver.described}
    except SegdexError as e:
        print(f"segdex rebuild: {e}", file=sys.stderr)
        return ExitStatus.USAGE
    status = 0
    for path in args.paths:
        try:
            for item in rebuild(path, per_topic.get(topic_of_path(path), config), args.out_dir):
                if isinstance(item, RebuildOutcome):
                    seg = item.segment
                    if seg.status != SegmentStatus.OK:
                        print(f"{seg.status}: {seg.reason}", file=sys.stderr)
                        status = ExitStatus.ATTENTION
                    if not args.quiet:
                        r = seg.result
                        detail = (f" batches={r.batch_count} index_entries={len(r.offset_index)} "
                                  f"time_index_entries={len(r.time_index)} txn_index_entries={len(r.txn_index)}"
                                  if r else "")
                        print(f"{seg.log_path}: {seg.status} written={len(item.written)} "
                              f"unchanged={len(item.unchanged)}{detail}")
                else:
                    print(f"{item.kind}: {item.path}: {item.message}", file=sys.stderr)
                    status = max(status, int(item.needs_attention))
        except FileNotFoundError:
            print(f"segdex rebuild: {path}: no such file or directory", file=sys.stderr)
            return ExitStatus.USAGE
        except UsageException as e:
            print(f"segdex rebuild: {e}", file=sys.stderr)
            return ExitStatus.USAGE
        except LogDirLockedException as e:
            print(f"refused: {e}", file=sys.stderr)
            status = ExitStatus.ATTENTION
        except PermissionError as e:
            print(f"unreadable: {path}: {e.strerror}", file=sys.stderr)
            status = ExitStatus.ATTENTION
        except SegdexError as e:
            print(f"error: {path}: {e}", file=sys.stderr)
            status = ExitStatus.ATTENTION
    return status


if __name__ == "__main__":
    from segdex.jobs.cli import main

    sys.exit(main(["rebuild", *sys.argv[1:]]))
