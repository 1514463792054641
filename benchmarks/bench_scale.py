"""``verify``, ``reindex`` and ``recover`` on log dirs of many small segments: the time per segment stays flat from
10,000 to 100,000 segments, and the driver's peak memory (which each command prints) grows only with the rows it
keeps.

    .venv/bin/python -m benchmarks.bench_scale [--segments 10000 30000 100000] [--segment-kib 4] [--runs 1]

Each log dir holds ``N / 4`` partitions of 4 segments (half of 1 x 120 B records per batch, half of 16 x 1000 B,
as ``bench_reindex``), ``.log`` files only and no clean-shutdown marker, as an unclean stop that lost the indexes
leaves them. Every command runs on a fresh copy (page cache warm), embedded (the one-host engine), as a whole
process; the per-segment cost and the driver's peak are read from the command's own summary line. Not a test.
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

from benchmarks.bench_startup import compile_modules, fresh_copy
from segdex.pipelines.sample_logdir import generate_uniform

SUMMARY = re.compile(r" in ([\d.]+)s \((.*?)\), driver peak ([\d.]+) (B|KB|MB|GB)")
UNITS = {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9}


def ensure_data(root: Path, segments: int, segment_kib: int) -> Path:
    d = root / f"scale-{segments}x{segment_kib}k"
    stamp = d / ".generated"
    if not stamp.exists():
        shutil.rmtree(d, ignore_errors=True)
        t = time.perf_counter()
        generate_uniform(d / "data", max(2, segments // 4), 4, segment_kib << 10)
        stamp.write_text("ok")
        print(f"  generated {segments} segments in {time.perf_counter() - t:.0f} s", flush=True)
    return d


def run(command: str, pristine: Path, work: Path) -> tuple[float, float, str]:
    """(wall seconds, driver peak bytes, phases) of one whole command on a fresh copy of ``pristine``
    (``bench_startup.fresh_copy``: restored in place, so that no inodes freed just before slow the files the
    command creates)."""
    fresh_copy(pristine, work)
    exe = Path(sys.executable).parent / "segdex"
    t0 = time.perf_counter()
    proc = subprocess.run([str(exe), command, "--no-progress", "--metadata", str(work / "meta"), str(work / "data")],
                          capture_output=True, text=True)
    wall = time.perf_counter() - t0
    found = SUMMARY.search(proc.stdout + proc.stderr)
    if proc.returncode not in (0, 1) or found is None:
        raise SystemExit(f"segdex {command} failed ({proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return wall, float(found.group(3)) * UNITS[found.group(4)], found.group(2)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--segments", type=int, nargs="+", default=[10_000, 30_000, 100_000])
    ap.add_argument("--segment-kib", type=int, default=4)
    ap.add_argument("--runs", type=int, default=1, help="runs per command and size (median)")
    ap.add_argument("--dir", type=Path, default=Path("bench-data"))
    ap.add_argument("--commands", nargs="+", default=["verify", "reindex", "recover"],
                    choices=["verify", "reindex", "recover"])
    args = ap.parse_args(argv)
    compile_modules()
    args.dir.mkdir(parents=True, exist_ok=True)
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; segments of {args.segment_kib} KiB, "
          f"4 per partition; median of {args.runs} run(s), the whole command each", flush=True)
    per_segment: dict[str, dict[int, float]] = {}
    work = Path(tempfile.mkdtemp(prefix="segdex-scale-", dir=args.dir))
    try:
        for n in args.segments:
            pristine = ensure_data(args.dir.resolve(), n, args.segment_kib)
            for command in args.commands:
                runs = [run(command, pristine, work / str(n)) for _ in range(args.runs)]
                wall = statistics.median(r[0] for r in runs)
                peak = statistics.median(r[1] for r in runs)
                per_segment.setdefault(command, {})[n] = wall / n
                print(f"  {n:>7,} segments  {command:8} {wall:7.2f} s  {wall / n * 1e3:6.3f} ms/segment  "
                      f"driver peak {peak / 1e6:6.0f} MB ({peak / n:,.0f} B/segment)  ({runs[0][2]})", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)  # the copies and their trash dirs (trash_of) inside it
    lo, hi = min(args.segments), max(args.segments)
    if lo != hi:
        for command, by_n in per_segment.items():
            print(f"  -> {command}: time per segment at {hi:,} / at {lo:,} = {by_n[hi] / by_n[lo]:.2f}x "
                  f"(linear: 1.0x)")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
