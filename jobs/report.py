"""How the ``segdex`` commands show their results: the drivers in ``pipelines`` return result objects and
print nothing; these functions turn them into the lines an operator reads (problems on stderr, summaries and
tables on stdout)."""

from __future__ import annotations

import csv
import json
import sys
from datetime import date, datetime
from decimal import Decimal
from typing import Any, TextIO

MAX_PRINTED = 20  # problem lines printed per run; the tables hold them all
STARTUP_PREFIX = "startup: "  # scan's lines about the broker's next start


def fmt_bytes(n: float) -> str:
    """A byte count as a person reads it (decimal units)."""
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000:
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1000
    return f"{n:.1f} TB"


def human_bytes(n: int) -> str:
    """A byte count in text output: decimal units, then the exact count (``386.9 KB (386,970 bytes)``)."""
    return f"{n} bytes" if abs(n) < 1000 else f"{fmt_bytes(n)} ({n:,} bytes)"


def print_discovery(discovery: Any, out: TextIO | None = None, err: TextIO | None = None) -> None:
    """What the driver found before the scan: what a broker's start trips on, refused dirs, skipped ones,
    temporaries removed."""
    out, err = out or sys.stdout, err or sys.stderr
    print_unloadable(discovery.unloadable, err)
    for _log_dir, why in discovery.refused:
        print(f"refused: {why}", file=err)
    for path, why in discovery.skipped:
        print(f"skipped: {path}: {why}", file=out)
    for path in discovery.removed:
        print(f"removed: {path}: temporary file left by an interrupted segdex run", file=err)
    for note in discovery.notes:
        print(f"note: {note}", file=err)


def print_unloadable(problems: Any, err: TextIO | None = None) -> None:
    """One line per thing a broker's start trips on (``indexcore.log.unloadable``): "unloadable: <path>: the broker
    will not start: <Kafka's exception> (<why, what to do>)"."""
    for problem in problems:
        print(f"unloadable: {problem}", file=err or sys.stderr)


def print_run(summary: Any, out: TextIO | None = None, err: TextIO | None = None) -> None:
    """A reindex/verify run: its discovery, the problems found (at most ``MAX_PRINTED`` lines), then one
    summary line."""
    out, err = out or sys.stdout, err or sys.stderr
    print_discovery(summary.discovery, out, err)
    for path in (p for o in summary.outcomes for p in o.removed):
        print(f"removed: {path}: temporary file left by an interrupted segdex run", file=err)
    messages = [m for o in summary.outcomes for m in o.messages if not m.startswith(STARTUP_PREFIX)]
    for msg in messages[:MAX_PRINTED]:
        print(msg, file=err)
    if len(messages) > MAX_PRINTED:
        print(f"... and {len(messages) - MAX_PRINTED} more (all in the segments table: "
              "segdex sql \"SELECT * FROM segments WHERE status <> 'ok'\")", file=err)
    # verify's startup preview: what the broker's next start loses or fails on, after the segments' problems
    startup = [m for o in summary.outcomes for m in o.messages if m.startswith(STARTUP_PREFIX)]
    for msg in startup[:MAX_PRINTED]:
        print(msg, file=err)
    if len(startup) > MAX_PRINTED:
        print(f"... and {len(startup) - MAX_PRINTED} more startup lines (segdex sql \"SELECT topic, partition, "
              "startup_action, startup_lost_bytes, startup_note FROM partitions WHERE startup_action IN "
              "('truncate', 'fail')\")", file=err)
    for note in [n for o in summary.outcomes for n in o.notes][:MAX_PRINTED]:
        print(note, file=err)
    print_restore_check(summary, err)
    print_on_defaults(summary, err)
    print(summary_line(summary), file=out)


def print_restore_check(summary: Any, err: TextIO) -> None:
    """One line per group whose committed offsets a consumer could not resume from (the restore check), and the
    coordinator partitions Kafka's load would fail on."""
    coordination = getattr(summary, "coordination", None)
    if coordination is None:
        return
    for problem in coordination.problems[:MAX_PRINTED]:
        print(f"coordinator: {problem}", file=err)
    by_group: dict[str, list] = {}
    for c in coordination.restore_problems:
        by_group.setdefault(c.group, []).append(c)
    for group, checks in sorted(by_group.items())[:MAX_PRINTED]:
        ahead = [c for c in checks if c.status == "ahead_of_end"]
        before = [c for c in checks if c.status == "before_start"]
        gone = [c for c in checks if c.status == "partition_not_found"]
        parts = []
        if ahead:
            parts.append(f"{len(ahead)} partition{'s' if len(ahead) != 1 else ''} committed past the log end "
                         f"(auto.offset.reset=earliest re-reads {sum(max(c.reread_if_earliest, 0) for c in ahead)} "
                         f"records)")
        if before:
            parts.append(f"{len(before)} committed before the log start ({sum(c.lost_offsets for c in before)} "
                         f"offsets gone; latest skips {sum(max(c.skipped_if_latest, 0) for c in before)} records)")
        if gone:
            parts.append(f"{len(gone)} committed for partitions no log dir holds")
        print(f"restore check: group {group}: {'; '.join(parts)} (segdex sql \"SELECT * FROM group_offsets WHERE "
              f"restore_status <> 'ok'\")", file=err)


def print_on_defaults(summary: Any, err: TextIO) -> None:
    """One line naming the topics whose index settings nobody gave (Kafka's defaults assumed)."""
    topics = getattr(summary, "on_defaults", None) or []
    if not topics:
        return
    from segdex.indexcore.config.log_config import INDEX_CONFIGS, LogConfig

    shown = ", ".join(topics[:10]) + (f" and {len(topics) - 10} more" if len(topics) > 10 else "")
    print(f"config: {len(topics)} topic{'s' if len(topics) != 1 else ''} ran on Kafka's defaults only "
          f"({LogConfig().describe(list(INDEX_CONFIGS))}, from no --topic-config, --topic-configs, "
          f"--bootstrap-server, --config, --broker-config or metadata log): {shown}; every value and its source: "
          f"segdex sql \"SELECT * FROM topic_configs\"", file=err)


def progress_line(p: Any) -> str:
    """A ``ProgressSnapshot`` as the progress line on stderr."""
    eta = f"{p.left_s:.0f}s" if p.left_s is not None else "?"
    return (f"progress: {p.segments_done}/{p.total_segments} segments, {fmt_bytes(p.bytes_done)}/"
            f"{fmt_bytes(p.total_bytes)}, {fmt_bytes(p.rate)}/s, elapsed {p.elapsed_s:.0f}s, left ~{eta}")


def print_progress(p: Any) -> None:
    print(progress_line(p), file=sys.stderr, flush=True)


def summary_line(summary: Any) -> str:
    from segdex.indexcore.status import STATUSES, SegmentStatus

    row = summary.run_row
    found = summary.found
    counts = ", ".join(f"{s}={found[s]}" for s in STATUSES if found.get(s))
    if summary.command in ("reindex", "recover"):
        kind = "index files" if summary.command == "reindex" else "files"
        files = f"rewrote {row.files_written} {kind}" + (
            f", {row.files_failed} FAILED" if row.files_failed else "")
    else:
        would = sum(n for s, n in found.items()
                    if SegmentStatus(s).rebuildable and s != SegmentStatus.CORRUPT_LOG_TAIL)
        files = f"would rewrite {would} segments"
    phases = ", ".join(f"{k} {v:.2f}s" for k, v in summary.phases.items())
    return (f"{summary.command} {summary.run_id}: {row.partitions} partitions, {row.segments} segments, "
            f"{fmt_bytes(row.bytes)} in {summary.wall_seconds:.2f}s ({phases}){_peak(summary)}; "
            f"found {counts or 'nothing'}; "
            f"{files}; metadata in {summary.metadata_path}")


def _peak(summary: Any) -> str:
    peak = getattr(summary, "driver_peak_bytes", None)
    return f", driver peak {fmt_bytes(peak)}" if peak else ""


def print_recover(summary: Any, out: TextIO | None = None, err: TextIO | None = None) -> None:
    """A recover run: the run as reindex prints it, then one line per log dir saying whether the broker's next
    start there re-reads nothing (marked clean) or which partitions it will recover itself."""
    out, err = out or sys.stdout, err or sys.stderr
    print_run(summary.run, out, err)
    for d in summary.log_dirs:
        if d.error:
            print(f"error: {d.log_dir}: {d.error}; no clean-shutdown marker", file=err)
        elif d.marker:
            print(f"clean: {d.log_dir}: {d.clean} partitions recovered; .kafka_cleanshutdown written (the broker's "
                  f"next start re-reads no segment here)", file=out)
        else:
            shown = ", ".join(d.not_clean[:MAX_PRINTED]) + (" ..." if len(d.not_clean) > MAX_PRINTED else "")
            print(f"not clean: {d.log_dir}: {d.clean} partitions recovered, {len(d.not_clean)} left to the "
                  f"broker's own recovery ({shown or 'stray entries in the log dir'}); no clean-shutdown marker",
                  file=err)


def _plain(value: Any) -> Any:
    """A JSON-friendly value: timestamps as ISO 8601, decimals as numbers, rows/maps as objects."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, bytes | bytearray):
        return value.hex()
    if hasattr(value, "asDict"):
        return {k: _plain(v) for k, v in value.asDict().items()}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _text(value: Any) -> str:
    if value is None:
        return "NULL"
    value = _plain(value)
    return json.dumps(value) if isinstance(value, dict | list) else str(value)


def print_rows(columns: list[str], rows: list[tuple], fmt: str, out: TextIO | None = None) -> None:
    """Print rows as an aligned table, CSV with a header, or one JSON object per line."""
    out = out or sys.stdout
    if fmt == "json":
        for row in rows:
            print(json.dumps({c: _plain(v) for c, v in zip(columns, row, strict=True)}), file=out)
    elif fmt == "csv":
        w = csv.writer(out, lineterminator="\n")
        w.writerow(columns)
        for row in rows:
            w.writerow(["" if v is None else _text(v) for v in row])
    else:
        cells = [[_text(v) for v in row] for row in rows]
        widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
        numeric = [all(isinstance(row[i], int | float | Decimal) or row[i] is None for row in rows) and rows
                   for i in range(len(columns))]

        def line(values: list[str]) -> str:
            return " | ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric,
                                                                                  strict=True)).rstrip()
        print(line(columns), file=out)
        print("-+-".join("-" * w for w in widths), file=out)
        for r in cells:
            print(line(r), file=out)
        print(f"({len(rows)} row{'s' if len(rows) != 1 else ''})", file=out)


