"""``segdex dump``: what kafka-dump-log shows for segment files, plus index verification."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator

from segdex.indexcore.coordinator.records import (
    OffsetsMessageParser,
    StringMessageParser,
    TransactionLogMessageParser,
)
from segdex.indexcore.errors import SegdexError
from segdex.indexcore.log.layout import LOG_FILE_SUFFIX, parse_segment_file_name
from segdex.indexcore.metadata.records import ClusterMetadataLogMessageParser
from segdex.indexcore.metadata.snapshots import snapshot_id
from segdex.indexcore.status import ExitStatus
from segdex.indexcore.tools.dump_log import dump, kafka_batch_line, kafka_record_line

HELP = "print batches, records and index entries of segment files (JSON lines with --json) and verify indexes"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--deep", "--deep-iteration", action="store_true",
                        help="decode the records inside each batch")
    parser.add_argument("--print-data-log", action="store_true",
                        help="also print each record's key and value (UTF-8 text, as kafka-dump-log's StringDecoder)")
    decoders = parser.add_mutually_exclusive_group()
    decoders.add_argument("--offsets-decoder", action="store_true",
                          help="decode keys and values as __consumer_offsets records (groups and offset commits)")
    decoders.add_argument("--transaction-log-decoder", action="store_true",
                          help="decode keys and values as __transaction_state records")
    decoders.add_argument("--cluster-metadata-decoder", action="store_true",
                          help="decode values as KRaft metadata records (__cluster_metadata's log and snapshots)")
    parser.add_argument("--max-bytes", type=_positive_int, default=None, metavar="N",
                        help="read only the batches within the first N bytes of each .log")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help=".log, .index, .timeindex or .txnindex file, or a metadata snapshot (.checkpoint)")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of bytes: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be at least 1 byte: {text}")
    return value


def _message_parser(args: argparse.Namespace):
    if args.offsets_decoder:
        return OffsetsMessageParser()
    if args.transaction_log_decoder:
        return TransactionLogMessageParser()
    if args.cluster_metadata_decoder:
        return ClusterMetadataLogMessageParser()
    return StringMessageParser() if args.print_data_log else None


def _log_lines(path: str, rows) -> Iterator[tuple[str, int]]:
    """A .log's rows as kafka-dump-log prints them (``Log starting offset``, batch lines, ``|`` record lines, the
    trailing-bytes line), each with the exit status it calls for."""
    snapshot = snapshot_id(path)
    if snapshot is not None:
        yield f"Snapshot end offset: {snapshot[0]}, epoch: {snapshot[1]}", 0
    else:
        yield f"Log starting offset: {parse_segment_file_name(os.path.basename(path)).base_offset}", 0
    batch_row: dict = {}
    for row in rows:
        kind = row["type"]
        if kind == "batch":
            batch_row = row
            yield kafka_batch_line(row), 0 if row["isValid"] else ExitStatus.ATTENTION
        elif kind == "record":
            yield kafka_record_line(row, batch_row), ExitStatus.ATTENTION if row.get("decodeError") else 0
        elif kind == "partialBatch":
            yield (f"Found {row['trailingBytes']} invalid bytes at the end of {os.path.basename(path)}",
                   ExitStatus.ATTENTION)
        else:
            yield _text(row), ExitStatus.ATTENTION


def _json_lines(path: str, rows) -> Iterator[tuple[str, int]]:
    for row in rows:
        row.pop("_extras", None)
        attention = (row["type"] in ("error", "partialBatch") or row.get("decodeError")
                     or (row["type"] == "verification" and not row["ok"])
                     or (row["type"] == "batch" and not row["isValid"]))
        yield json.dumps({"file": path, **row}), ExitStatus.ATTENTION if attention else 0


def _index_lines(rows) -> Iterator[tuple[str, int]]:
    for row in rows:
        yield _text(row), ExitStatus.ATTENTION if row["type"] == "verification" and not row["ok"] else 0


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
    parser = _message_parser(args)
    for path in args.paths:
        if not args.json:
            print(f"Dumping {path}")
        try:
            rows = dump(path, deep=args.deep, parser=parser, max_bytes=args.max_bytes)
            if args.json:
                lines = _json_lines(path, rows)
            elif path.endswith(LOG_FILE_SUFFIX) or snapshot_id(path) is not None:
                lines = _log_lines(path, rows)
            else:
                lines = _index_lines(rows)
            for line, line_status in lines:
                status = max(status, line_status)
                print(line)
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
