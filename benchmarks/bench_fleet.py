"""A fleet's tables on object storage (not a timed test), against s3proxy started as the tests start it:

    .venv/bin/python -m benchmarks.bench_fleet [--segments 100000] [--writers 32] [--rows 1000000] [--brokers 100]

1. Rows per second into S3: ``--segments`` segment rows of one broker's log dir MERGEd into ``segments`` (the
   table created, then the same rows merged again: a rerun with nothing changed), on s3:// and on a local path.
2. ``--writers`` processes at once (one per broker) each MERGE 200 rows into one table on S3: each commit's
   latency (median, 95th percentile, max) and the attempts it took; into an unpartitioned table, and as brokers
   into ``segments`` (partitioned by broker, so Delta's conflict check sees the MERGEs as disjoint).
3. ``--rows`` generated segment rows of ``--brokers`` brokers on S3, and the README's fleet queries through
   ``segdex sql``: the embedded default (delta-rs reads) and Spark's Delta reader over s3a, side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa

from segdex.pipelines import metadata_store as ms
from segdex.pipelines.schemas import SEGMENTS_SCHEMA, SEGMENTS_TABLE
from tests.support.s3_harness import S3Server

REPO = Path(__file__).resolve().parent.parent
QUERIES = (
    "SELECT cluster_id, broker_id, count(*) AS segments, sum(size_bytes) AS bytes FROM segments GROUP BY 1, 2",
    "SELECT broker_id, topic, count(*) AS n FROM segments WHERE status <> 'ok' GROUP BY 1, 2 ORDER BY n DESC LIMIT 10",
)


def segment_rows(n: int, broker: int, log_dir: str = "/var/lib/kafka/data", partitions: int = 500) -> pa.Table:
    """``n`` segment rows as a broker's log dir of ``partitions`` partitions gives them."""
    now = datetime.now(UTC)
    per = max(1, n // partitions)
    rows = [{"log_dir": log_dir, "cluster_id": "bench", "broker_id": broker, "host": f"broker-{broker}",
             "topic": f"topic-{i // per % 50}", "partition": i // per, "future": False, "base_offset": (i % per) * 1000,
             "segment_file": f"{(i % per) * 1000:020d}.log", "size_bytes": 1 << 20, "status": "ok" if i % 97 else
             "corrupt_log_tail", "max_timestamp": 1_700_000_000_000 + i, "run_id": "bench", "scanned_at": now}
            for i in range(n)]
    schema = pa.schema([*SEGMENTS_SCHEMA, pa.field("cluster_id", pa.string()), pa.field("broker_id", pa.int32()),
                        pa.field("host", pa.string())])
    return pa.Table.from_pylist(rows, schema=schema)


def _timed(fn) -> float:
    t0 = time.monotonic()
    fn()
    return time.monotonic() - t0


def rows_per_second(server: S3Server, n: int, local: Path) -> None:
    rows = segment_rows(n, broker=1)
    for where in (f"s3://{server.bucket('rows-per-second')}/segdex", str(local)):
        store = ms.MetadataStore(where)
        first = _timed(lambda s=store: s.upsert(SEGMENTS_TABLE, rows))
        again = _timed(lambda s=store: s.upsert(SEGMENTS_TABLE, rows))
        print(f"{n:,} segment rows into {where.split('://')[0] if '://' in where else 'local'}: created "
              f"{first:.1f} s ({n / first:,.0f} rows/s), merged again {again:.1f} s ({n / again:,.0f} rows/s)")


def concurrent_writers(server: S3Server, writers: int, mode: str) -> None:
    """``mode`` upsert: one unpartitioned table, every MERGE may touch every file (they serialize); segments:
    each writer is a broker MERGEing its rows into the segments table, partitioned by broker (disjoint)."""
    uri = f"s3://{server.bucket('concurrent-' + mode)}/segdex"
    start = time.time() + 6.0
    env = {**os.environ, **server.env()}
    if mode == "segments":  # the table exists (partitioned by broker), as after the fleet's first night
        ms.MetadataStore(uri).upsert(SEGMENTS_TABLE, segment_rows(10, broker=writers))
    table = "segments" if mode == "segments" else "events"
    procs = [subprocess.Popen([sys.executable, "-m", "tests.support.fleet_writer", uri, table, str(w), "200",
                               str(start), mode], cwd=REPO, env=env, stdout=subprocess.PIPE, text=True)
             for w in range(writers)]
    results = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]
    seconds = sorted(r["seconds"] for r in results)
    attempts = [r["attempts"] for r in results]
    print(f"{writers} writers at once, one MERGE each ({mode}): commit latency median "
          f"{statistics.median(seconds):.2f} s, "
          f"p95 {seconds[int(0.95 * (len(seconds) - 1))]:.2f} s, max {seconds[-1]:.2f} s; attempts median "
          f"{statistics.median(attempts):.0f}, max {max(attempts)}, retries in all {sum(attempts) - writers}")


def fleet_queries(server: S3Server, rows: int, brokers: int) -> None:
    uri = f"s3://{server.bucket('fleet-queries')}/segdex"
    env = {**os.environ, **server.env()}
    store = ms.MetadataStore(uri)
    t = _timed(lambda: [store.append(SEGMENTS_TABLE, segment_rows(rows // brokers, b)) for b in range(brokers)])
    print(f"{rows:,} rows of {brokers} brokers appended in {t:.1f} s")
    for query in QUERIES:
        for name, extra, path in (("embedded", {}, uri),
                                  ("spark s3a", {"SEGDEX_DELTA_WRITER": "spark"}, uri.replace("s3://", "s3a://"))):
            args = ["sql", "--format", "csv", "--metadata", path, query]
            if extra:
                args[1:1] = ["--master", "local[2]"]
            t0 = time.monotonic()
            proc = subprocess.run([sys.executable, "-m", "segdex.jobs.cli", *args], cwd=REPO, env={**env, **extra},
                                  capture_output=True, text=True)
            lines = proc.stdout.count("\n") - 1
            print(f"  {name:9s} {time.monotonic() - t0:5.1f} s  exit {proc.returncode}  {lines} rows  {query[:70]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--segments", type=int, default=100_000)
    ap.add_argument("--writers", type=int, default=32)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--brokers", type=int, default=100)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="segdex-bench-fleet-") as tmp, S3Server(Path(tmp) / "s3") as server:
        server.start()
        os.environ.update(server.env())  # this process's writers too, as a broker's run exports it
        rows_per_second(server, args.segments, Path(tmp) / "local")
        concurrent_writers(server, args.writers, "upsert")
        concurrent_writers(server, args.writers, "segments")
        fleet_queries(server, args.rows, args.brokers)


if __name__ == "__main__":
    main()
