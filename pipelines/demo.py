"""``segdex demo``: generate a sample log dir, verify it, reindex it, and query the metadata with SQL."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any, TextIO

from indexcore.log_config import LogConfig

from . import reindex, sql
from .sample_logdir import generate_sample

MARKER = ".segdex-demo"
QUERIES = (
    ("segments per topic after reindex",
     "SELECT topic, count(DISTINCT partition) AS partitions, count(*) AS segments, sum(record_count) AS records, "
     "sum(size_bytes) AS bytes, sum(index_entries) AS index_entries, sum(txn_index_entries) AS aborted_txns, "
     "max(codecs) AS codecs, max(magic) AS magic, count_if(status <> 'ok') AS needs_attention "
     "FROM segments GROUP BY topic ORDER BY topic"),
    ("segments that need attention",
     "SELECT topic, partition, base_offset, status, valid_bytes, size_bytes, reason FROM segments "
     "WHERE status <> 'ok' ORDER BY topic, partition, base_offset"),
    ("runs",
     "SELECT command, segments, count_missing AS missing, count_corrupt_log_tail AS corrupt_tail, files_written, "
     "exit_status FROM runs ORDER BY started_at"),
)


def prepare(root: Path) -> tuple[Path, Path]:
    """Fresh ``root/kafka-logs`` and ``root/metadata``; refuses to clear a folder the demo did not create."""
    if root.exists() and any(root.iterdir()) and not (root / MARKER).exists():
        raise FileExistsError(f"{root} exists and was not made by `segdex demo`; pass --dir with another folder")
    for sub in ("kafka-logs", "metadata"):
        shutil.rmtree(root / sub, ignore_errors=True)
    root.mkdir(parents=True, exist_ok=True)
    (root / MARKER).write_text("made by segdex demo; removed and regenerated on each run\n")
    return root / "kafka-logs", root / "metadata"


def damage_tail(log_dir: Path) -> Path:
    """Cut the last segment of ``clicks-1`` inside its last batch, as a crash mid-write would."""
    last = sorted((log_dir / "clicks-1").glob("*.log"))[-1]
    data = last.read_bytes()
    last.write_bytes(data[:-25])
    return last


def run(spark: Any, root: str, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    logs, meta = prepare(Path(root))
    counts = generate_sample(logs)
    damaged = damage_tail(logs)
    print(f"== generated {logs}: {counts['partitions']} partitions, {counts['segments']} segments, "
          f"{counts['bytes']} bytes of .log files, no index files; cut the tail of {damaged.relative_to(logs)}",
          file=out, flush=True)
    for mode in ("verify", "reindex"):
        print(f"\n== segdex {mode} --metadata {meta} {logs}", file=out, flush=True)
        reindex.run(spark, [str(logs)], mode, str(meta), LogConfig(), {}, arguments=[mode, str(logs)], out=out)
    for title, query in QUERIES:
        print(f"\n== segdex sql --metadata {meta} \"{query}\"\n-- {title}", file=out, flush=True)
        columns, rows = sql.run_query(spark, str(meta), query)
        sql.format_rows(columns, rows, "table", out)
    return 0
