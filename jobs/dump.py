"""``segdex dump``: what kafka-dump-log shows for segment files, plus index verification."""

from __future__ import annotations

import argparse
import json
import sys

from segdex.indexcore.dump_log import dump
from segdex.indexcore.errors import SegdexError
from segdex.indexcore.status import ExitStatus

HELP = "print batches, records and index entries of segment files (JSON lines with --json) and verify indexes"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--deep", action="store_true", help="decode the records inside each batch")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.add_argument("paths", nargs="+", metavar="PATH", help=".log, .index, .timeindex or .txnindex file")


def _text(row: dict) -> str:
    kind = row["type"]
    fields = {k: v for k, v in row.items() if k != "type"}
    if kind == "record":
        return "| " + " ".join(f"{k}: {v}" for k, v in fields.items())
    if kind == "verification":
        return ("Verification: OK" if row["ok"] else "Verification FAILED: " + "; ".join(row["problems"]))
    return " ".join(f"{k}: {json.dumps(v) if isinstance(v, str) and ' ' in v else v}" for k, v in fields.items())


def run(args: argparse.Namespace) -> int:
    status = 0
    for path in args.paths:
        if not args.json:
            print(f"Dumping {path}")
        try:
            for row in dump(path, deep=args.deep):
                if (row["type"] in ("error", "partialBatch") or (row["type"] == "verification" and not row["ok"])
                        or (row["type"] == "batch" and not row["isValid"])):
                    status = ExitStatus.ATTENTION
                print(json.dumps({"file": path, **row}) if args.json else _text(row))
        except FileNotFoundError:
            print(f"segdex dump: {path}: no such file", file=sys.stderr)
            status = max(status, 1)
        except (OSError, SegdexError) as e:
            print(f"segdex dump: {path}: {getattr(e, 'strerror', None) or e}", file=sys.stderr)
            status = ExitStatus.ATTENTION
    return status


if __name__ == "__main__":
    from segdex.jobs.cli import main

    sys.exit(main(["dump", *sys.argv[1:]]))
