"""Benchmark ``segdex reindex`` (not a timed test): scaling from one to two cores, per-segment overhead, and the
time to get a migrated log dir's indexes back against Kafka's own startup recovery.

    .venv/bin/python -m benchmarks.bench_reindex [--data DIR] [--segments 1000] [--segment-kib 4096] [--skip-kafka]

1. A generated log dir of ``--segments`` segments (``--segment-kib`` each, 4 segments per partition, half the
   topics 1 x 120 B records per batch, half 16 x 1000 B). Index files are deleted before every run, so each run
   rebuilds everything. Prints the wall time of the whole ``segdex reindex`` command (Spark start included)
   with ``--master local[1]`` and ``local[2]``, their ratio, and the sum of single-segment rebuild times
   (indexcore alone, in one process) with the per-segment overhead of the Spark command over it.
2. Kafka's figure: 64 partitions x 4 segments of 16 MiB (4.3 GB, same two record shapes), no index files, as
   after an unclean shutdown. Kafka 4.0 recovered it in 43 s with one recovery thread and 22 s with two
   (``num.recovery.threads.per.data.dir``) on this kind of machine. Prints segdex's whole-command time.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.log.log_segments import PartitionRecovery, segment_logs
from segdex.indexcore.tools.rebuild import write_index_files
from segdex.pipelines.sample_logdir import generate_uniform

REPO = Path(__file__).resolve().parent.parent

KAFKA_ONE_THREAD_S = 43.0
KAFKA_TWO_THREADS_S = 22.0
INDEX_SUFFIXES = (".index", ".timeindex", ".txnindex")


def drop_indexes(log_dir: Path) -> int:
    n = 0
    for p in log_dir.glob("*/*"):
        if p.suffix in INDEX_SUFFIXES:
            p.unlink()
            n += 1
    return n


def ensure_data(log_dir: Path, partitions: int, segments_per_partition: int, segment_bytes: int) -> dict[str, int]:
    stamp = log_dir / f".generated-{partitions}x{segments_per_partition}x{segment_bytes}"
    if not stamp.exists():
        shutil.rmtree(log_dir, ignore_errors=True)
        t = time.monotonic()
        print(f"generating {log_dir}: {partitions} partitions x {segments_per_partition} segments of "
              f"{segment_bytes >> 10} KiB ...", flush=True)
        generate_uniform(log_dir, partitions, segments_per_partition, segment_bytes)
        stamp.write_text("")
        print(f"  generated in {time.monotonic() - t:.1f}s", flush=True)
    logs = list(log_dir.glob("*/*.log"))
    return {"segments": len(logs), "bytes": sum(p.stat().st_size for p in logs)}


def warm_cache(log_dir: Path) -> None:
    """Read every .log once so that all runs start from the page cache (as a broker restart mostly does)."""
    for p in log_dir.glob("*/*.log"):
        with open(p, "rb") as f:
            while f.read(16 << 20):
                pass


def run_reindex(log_dir: Path, cores: int, metadata: Path) -> tuple[float, float]:
    """Wall time of the whole ``segdex reindex`` command (Spark start included), and of its Spark job (the scan
    and index writes, as the command reports it)."""
    drop_indexes(log_dir)
    shutil.rmtree(metadata, ignore_errors=True)
    cmd = [str(REPO / ".venv" / "bin" / "segdex"), "reindex", "--master", f"local[{cores}]", "--metadata",
           str(metadata), "--no-progress", str(log_dir)]
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    t = time.monotonic()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.monotonic() - t
    if proc.returncode != 0:
        sys.exit(f"segdex reindex failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    summary = [line for line in proc.stdout.splitlines() if line.startswith("reindex ")]
    print(f"    {wall:6.2f} s: {summary[-1] if summary else ''}", flush=True)
    m = re.search(r" in ([0-9.]+)s \(.*scan ([0-9.]+)s", summary[-1] if summary else "")
    return wall, float(m.group(2)) if m else float("nan")


def single_segment_times(log_dir: Path) -> tuple[float, int]:
    """Sum of indexcore rebuild times (recover + write), one segment at a time, one process."""
    drop_indexes(log_dir)
    total, n = 0.0, 0
    for part in sorted(p for p in log_dir.iterdir() if p.is_dir()):
        recovery = PartitionRecovery(LogConfig())
        logs, _ = segment_logs(part)
        for base, path in logs:
            t = time.perf_counter()
            write_index_files(recovery.recover_segment(path, base), str(part))
            total += time.perf_counter() - t
            n += 1
    return total, n


def median_of(runs: int, fn, *args) -> tuple[float, float]:
    """Median of ``runs`` timed runs after one warm-up run (quoted figures are medians)."""
    fn(*args)
    results = [fn(*args) for _ in range(runs)]
    return statistics.median(r[0] for r in results), statistics.median(r[1] for r in results)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(REPO / "bench-data"), help="where generated log dirs are kept")
    ap.add_argument("--segments", type=int, default=1000)
    ap.add_argument("--segment-kib", type=int, default=4096)
    ap.add_argument("--runs", type=int, default=3, help="timed runs per measurement, after a warm-up (median)")
    ap.add_argument("--skip-scaling", action="store_true")
    ap.add_argument("--skip-kafka", action="store_true")
    args = ap.parse_args()
    data = Path(args.data)
    metadata = Path(tempfile.mkdtemp(prefix="segdex-bench-meta-"))
    print(f"cores: {os.cpu_count()}, load average at start: {os.getloadavg()[0]:.2f} "
          f"(a shared machine's timings are noisy)", flush=True)
    try:
        if not args.skip_scaling:
            partitions = max(2, args.segments // 4)
            d = data / f"scaling-{partitions}x4x{args.segment_kib}k"
            info = ensure_data(d, partitions, 4, args.segment_kib << 10)
            warm_cache(d)
            print(f"\n[1] {info['segments']} segments, {info['bytes'] / 1e9:.2f} GB", flush=True)
            (t1, w1) = median_of(args.runs, run_reindex, d, 1, metadata)
            (t2, w2) = median_of(args.runs, run_reindex, d, 2, metadata)
            single, n = single_segment_times(d)
            print(f"  segdex reindex, whole command:   1 core {t1:6.2f} s, 2 cores {t2:6.2f} s, "
                  f"ratio {t1 / t2:.2f}x")
            print(f"  of which the Spark job:          1 core {w1:6.2f} s, 2 cores {w2:6.2f} s, "
                  f"ratio {w1 / w2:.2f}x (aim >= 1.8x)")
            print(f"  sum of single-segment rebuilds (indexcore rebuild, fsync per file, one process): {single:.2f} s "
                  f"for {n} segments ({single / n * 1000:.2f} ms each)")
            print(f"  per-segment overhead on 1 core: whole command {(t1 - single) / n * 1000:+.2f} ms, "
                  f"Spark job {(w1 - single) / n * 1000:+.2f} ms "
                  f"(ratios to the sum: {t1 / single:.2f}x, {w1 / single:.2f}x)", flush=True)
        if not args.skip_kafka:
            d = data / "kafka64x4"
            info = ensure_data(d, 64, 4, 16 << 20)
            warm_cache(d)
            print(f"\n[2] Kafka startup recovery comparison: {info['segments']} segments, "
                  f"{info['bytes'] / 1e9:.2f} GB, no index files", flush=True)
            (t1, w1) = median_of(args.runs, run_reindex, d, 1, metadata)
            (t2, w2) = median_of(args.runs, run_reindex, d, 2, metadata)
            print(f"  segdex reindex, whole command: 1 core {t1:.2f} s, 2 cores {t2:.2f} s "
                  f"(of which the Spark job: {w1:.2f} s, {w2:.2f} s)")
            print(f"  Kafka 4.0 recovery:            1 thread {KAFKA_ONE_THREAD_S:.0f} s, "
                  f"2 threads {KAFKA_TWO_THREADS_S:.0f} s")
            print(f"  2 cores vs Kafka's 2 threads: {t2:.2f} s = {t2 / KAFKA_TWO_THREADS_S:.2f} of 22 s "
                  f"(must be < 1, aim <= 0.25); {KAFKA_TWO_THREADS_S / t2:.1f}x faster", flush=True)
    finally:
        shutil.rmtree(metadata, ignore_errors=True)
    print(f"\nload average at end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
