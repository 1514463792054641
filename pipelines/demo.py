"""``segdex demo``: generate a sample log dir, verify it, reindex it, and query the metadata with SQL."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from segdex.indexcore.config.log_config import LogConfig

from . import reindex, sql
from .engine import Engine
from .run_context import RunRequest
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


@dataclass
class DemoResult:
    """What the demo made and found: the sample, the verify and reindex runs, the query results."""

    logs: Path
    metadata: Path
    counts: dict[str, int]
    damaged: Path
    runs: list[reindex.RunSummary] = field(default_factory=list)
    queries: list[tuple[str, str, list[str], list[tuple]]] = field(default_factory=list)  # title, SQL, cols, rows


def run(spark: Engine, root: str) -> DemoResult:
    """Generate the sample in ``root``, verify and reindex it, run the demo queries."""
    logs, meta = prepare(Path(root))
    counts = generate_sample(logs)
    result = DemoResult(logs, meta, counts, damage_tail(logs))
    for mode in ("verify", "reindex"):
        result.runs.append(reindex.run(spark, mode, RunRequest([str(logs)], str(meta), LogConfig(),
                                                               arguments=[mode, str(logs)])))
    for title, query in QUERIES:
        columns, rows = sql.run_query(spark, str(meta), query)
        result.queries.append((title, query, columns, rows))
    return result
