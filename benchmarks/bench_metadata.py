"""Benchmark the two Delta writers behind the metadata tables (not a timed test): the ``metadata`` phase of
``segdex verify`` (every table written: segments, partitions, runs, topic_configs) with delta-rs
(``SEGDEX_DELTA_WRITER=deltalake``) and with Delta Lake on Spark (``SEGDEX_DELTA_WRITER=spark``), on the demo
sample and on a 20,000-segment log dir, first run (tables created) and a re-run (MERGE into existing tables).
Also the whole command's wall time and its Spark start, as the summary line reports them.

    .venv/bin/python -m benchmarks.bench_metadata [--data DIR] [--runs 3] [--segments 20000]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

from segdex.pipelines.sample_logdir import generate_sample, generate_uniform

REPO = Path(__file__).resolve().parent.parent

SUMMARY = re.compile(r" in (\d+\.\d)s \(spark start (\d+\.\d)s, discover (\d+\.\d)s, scan (\d+\.\d)s, "
                     r"metadata (\d+\.\d)s\)")


def verify(log_dir: Path, meta: Path, writer: str) -> dict[str, float]:
    env = {**os.environ, "SEGDEX_DELTA_WRITER": writer}
    proc = subprocess.run([str(REPO / ".venv/bin/segdex"), "verify", "--no-progress", "--metadata", str(meta),
                           str(log_dir)], capture_output=True, text=True, env=env)
    match = SUMMARY.search(proc.stdout)
    if proc.returncode not in (0, 1) or not match:
        raise SystemExit(f"verify failed ({proc.returncode}):\n{proc.stdout[-1000:]}\n{proc.stderr[-2000:]}")
    total, start, _discover, scan, metadata = map(float, match.groups())
    return {"total": total, "spark_start": start, "scan": scan, "metadata": metadata}


def measure(name: str, log_dir: Path, runs: int, work: Path) -> None:
    print(f"\n{name}: {sum(1 for _ in log_dir.rglob('*.log'))} segments", flush=True)
    print("| writer | metadata, first run | metadata, re-run (MERGE) | whole command, re-run | Spark start |")
    print("|---|---|---|---|---|")
    for writer in ("deltalake", "spark"):
        first, again = [], []
        for i in range(runs):
            meta = work / f"meta-{writer}-{i}"
            shutil.rmtree(meta, ignore_errors=True)
            first.append(verify(log_dir, meta, writer))
            again.append(verify(log_dir, meta, writer))
        med = {k: statistics.median(r[k] for r in again) for k in again[0]}
        print(f"| {writer} | {statistics.median(r['metadata'] for r in first):.1f} s | {med['metadata']:.1f} s | "
              f"{med['total']:.1f} s | {med['spark_start']:.1f} s |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "segdex-bench-metadata"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--segments", type=int, default=20000)
    args = parser.parse_args()
    data = Path(args.data)
    data.mkdir(parents=True, exist_ok=True)
    print(f"load average {os.getloadavg()[0]:.2f}, medians of {args.runs}")
    demo = data / "demo"
    if not demo.exists():
        generate_sample(demo)
    measure("demo sample", demo, args.runs, data)
    many = data / f"uniform-{args.segments}"
    if not many.exists():
        generate_uniform(many, args.segments // 10, 10, 4096)
    measure(f"{args.segments:,}-segment log dir", many, args.runs, data)


if __name__ == "__main__":
    main()
