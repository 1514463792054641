"""Time ``segdex rebuild`` on 1 GiB segments and compare with Kafka's recovery and with a plain read+CRC pass.

Two segments are made with ``indexcore.segment_writer`` (and cached in ``--dir`` across runs): one of
~190 B single-record batches, one of ~16 KiB batches. Each is rebuilt by a whole ``segdex rebuild
--out-dir TMP PATH`` process: one warm-up run (which also brings the file into the page cache), then the
median of ``--runs`` timed runs. In the same run, one read+CRC-32C pass over the file (fresh mmap, 1 MiB
chunks, hardware CRC of the ``crc32c`` package) gives the floor any rebuild has to pay.

Kafka is timed in the same run on the same files: its own ``LogSegment.recover`` (from the release jars that
``bash scripts/test.sh`` fetches, through ``tests/kafka/oracle/KafkaOracle.java``), in one JVM, two warm-up
calls, then the median of ``--runs`` calls. Each Kafka figure is the recover call alone (no JVM start);
segdex's rebuild figure is a whole process, so the ratio is conservative for segdex.

    .venv/bin/python -m benchmarks.bench_rebuild            # 1 GiB segments
    .venv/bin/python -m benchmarks.bench_rebuild --quick    # 64 MiB, for a smoke run
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import crc32c

from segdex.indexcore.tools.segment_writer import segment_name, uniform_segment

REPO = Path(__file__).resolve().parent.parent

GIB = 1 << 30
KAFKA_WARMUP = 2
SHAPES = {
    # value_size 112 with an 8-byte key gives 190-byte single-record batches.
    "small": dict(records_per_batch=1, value_size=112, key_size=8),
    # 16 records of ~1 KiB: 16333-byte batches.
    "large": dict(records_per_batch=16, value_size=1000, key_size=8),
}
TARGETS = {"small": "10x Kafka", "large": "within 1.25x of read+CRC"}


def make_segment(root: Path, shape: str, size: int) -> tuple[Path, int]:
    """The cached segment of one shape and size: ``root/<shape>-<size>/bench-0/000...0.log``; (path, batches)."""
    params = dict(SHAPES[shape], target_bytes=size, version=1)
    part = root / f"{shape}-{size >> 20}MiB" / "bench-0"
    log = part / segment_name(0)
    stamp = part.parent / "params.json"
    if log.exists() and stamp.exists() and json.loads(stamp.read_text()).get("params") == params:
        return log, json.loads(stamp.read_text())["batches"]
    part.mkdir(parents=True, exist_ok=True)
    tmp = log.with_suffix(".log.tmp")
    t0 = time.perf_counter()
    written = uniform_segment(tmp, size, **SHAPES[shape])
    os.replace(tmp, log)
    with open(log, "rb") as f:
        batch_size = int.from_bytes(f.read(12)[8:12], "big") + 12
    batches = written // batch_size if written else 0
    stamp.write_text(json.dumps({"params": params, "batches": batches}))
    print(f"  made {log} ({written / GIB:.2f} GiB, {batches} batches of {batch_size if written else 0} B) "
          f"in {time.perf_counter() - t0:.1f} s", flush=True)
    return log, batches


def segdex_command() -> list[str]:
    exe = Path(sys.executable).parent / "segdex"
    if exe.exists():
        return [str(exe)]
    return [sys.executable, "-c", "import sys; from segdex.jobs.cli import main; sys.exit(main())"]


def time_rebuild(log: Path) -> float:
    """Wall time of one whole ``segdex rebuild --out-dir TMP log`` process."""
    out = Path(tempfile.mkdtemp(prefix="segdex-bench-", dir=log.parent.parent))
    try:
        t0 = time.perf_counter()
        proc = subprocess.run([*segdex_command(), "rebuild", "--quiet", "--out-dir", str(out), str(log)],
                              capture_output=True, text=True)
        elapsed = time.perf_counter() - t0
        if proc.returncode != 0:
            raise SystemExit(f"segdex rebuild failed ({proc.returncode}): {proc.stdout}{proc.stderr}")
        return elapsed
    finally:
        shutil.rmtree(out, ignore_errors=True)


def time_read_crc(log: Path, chunk: int = 1 << 20) -> float:
    """One pass over the file: fresh read-only mmap, CRC-32C of every 1 MiB chunk."""
    t0 = time.perf_counter()
    with open(log, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        mv = memoryview(m)
        crc = 0
        for i in range(0, len(m), chunk):
            crc = crc32c.crc32c(mv[i:i + chunk], crc)
        mv.release()
    return time.perf_counter() - t0


READ_CRC_SCRIPT = """
import mmap, sys, crc32c
with open(sys.argv[1], "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
    mv, crc = memoryview(m), 0
    for i in range(0, len(m), 1 << 20):
        crc = crc32c.crc32c(mv[i:i + (1 << 20)], crc)
    mv.release()
"""


def time_read_crc_process(log: Path) -> float:
    """The same read+CRC pass as a whole Python process (interpreter start included), like the rebuild."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", READ_CRC_SCRIPT, str(log)], check=True)
    return time.perf_counter() - t0


def time_recover_in_process(log: Path) -> float:
    """``recover_file`` alone (no process start, no index writes): the scan itself."""
    from segdex.indexcore.log.log_segment import recover_file

    t0 = time.perf_counter()
    recover_file(log, 0)
    return time.perf_counter() - t0


def median_of(fn, arg, runs: int) -> tuple[float, list[float]]:
    fn(arg)  # warm-up
    times = [fn(arg) for _ in range(runs)]
    return statistics.median(times), times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=Path("bench-data"), help="where segments are made and cached")
    parser.add_argument("--quick", action="store_true", help="64 MiB segments instead of 1 GiB (smoke run)")
    parser.add_argument("--size-mib", type=int, default=None, help="segment size in MiB (default 1024)")
    parser.add_argument("--runs", type=int, default=3, help="timed runs per measurement (median reported)")
    parser.add_argument("--shape", choices=list(SHAPES), action="append", help="only these shapes")
    parser.add_argument("--kafka", default=None, help="Kafka version whose LogSegment.recover is timed "
                                                        "(default: the newest the project fetches)")
    args = parser.parse_args(argv)
    from tests.support.kafka_harness import KAFKA_VERSIONS, KafkaInstall, KafkaOracle
    version = args.kafka or KAFKA_VERSIONS[0]
    oracle = KafkaOracle(KafkaInstall(version), Path(tempfile.mkdtemp(prefix="segdex-bench-kafka-")),
                         broker_jvm=True)
    try:
        return run(args, oracle, version)
    finally:
        oracle.close()


def run(args, oracle, version: str) -> int:
    size = (args.size_mib or (64 if args.quick else 1024)) << 20
    args.dir.mkdir(parents=True, exist_ok=True)

    from segdex.indexcore.log import scan
    from segdex.indexcore.log.scan import native

    print(f"segdex rebuild benchmark: {size >> 20} MiB segments, median of {args.runs} after a warm-up, "
          f"{os.cpu_count()} CPUs, native kernel: {scan.native_available()}"
          f"{'' if scan.native_available() else ' (' + str(native.error()) + ')'}")
    load = os.getloadavg()[0]
    if load > 0.5:
        print(f"  warning: load average {load:.2f} before the run: other work shares the CPUs, timings are noisy")
    empty, _ = make_segment(args.dir, "small", 0)
    fixed, _ = median_of(time_rebuild, empty, args.runs)
    print(f"  fixed cost (segdex rebuild of an empty segment): {fixed * 1000:.0f} ms")
    for shape in args.shape or list(SHAPES):
        log, batches = make_segment(args.dir, shape, size)
        nbytes = log.stat().st_size
        rebuild, rebuild_runs = median_of(time_rebuild, log, args.runs)
        floor, _ = median_of(time_read_crc, log, args.runs)
        floor_proc, _ = median_of(time_read_crc_process, log, args.runs)
        scan, _ = median_of(time_recover_in_process, log, args.runs)
        kafka_runs = oracle.bench(log.parent, 0, runs=KAFKA_WARMUP + args.runs)[KAFKA_WARMUP:]
        kafka = statistics.median(kafka_runs)
        print(f"\n[{shape}] {nbytes / GIB:.3f} GiB, {batches} batches of {nbytes // batches} B")
        print(f"  segdex rebuild : {rebuild:.3f} s  ({nbytes / rebuild / 1e9:.2f} GB/s, "
              f"{batches / rebuild / 1e6:.2f} M batches/s)  runs: {', '.join(f'{t:.3f}' for t in rebuild_runs)}")
        print(f"  read+CRC pass  : {floor:.3f} s  ({nbytes / floor / 1e9:.2f} GB/s) in-process; "
              f"{floor_proc:.3f} s as a whole process")
        print(f"  -> rebuild / read+CRC = {rebuild / floor:.2f}x (vs in-process pass), "
              f"{rebuild / floor_proc:.2f}x (process vs process)")
        print(f"  recover_file in-process (scan only): {scan:.3f} s  ({nbytes / scan / 1e9:.2f} GB/s, "
              f"{batches / scan / 1e6:.2f} M batches/s) = {scan / floor:.2f}x the in-process read+CRC pass")
        print(f"  Kafka {version} LogSegment.recover (warm JVM, this run): {kafka:.3f} s  "
              f"({nbytes / kafka / 1e9:.2f} GB/s, {batches / kafka / 1e6:.2f} M batches/s)  runs: "
              f"{', '.join(f'{t:.3f}' for t in kafka_runs)}  -> segdex rebuild is {kafka / rebuild:.1f}x Kafka, "
              f"segdex's scan {kafka / scan:.1f}x")
        if shape == "small":
            verdict = "met" if kafka / rebuild >= 10 else "NOT met"
        else:
            verdict = ", ".join(f"{'met' if r <= 1.25 else 'NOT met'} {how}" for r, how in (
                (rebuild / floor, "vs in-process pass"), (rebuild / floor_proc, "process vs process")))
        print(f"  target {TARGETS[shape]}: {verdict}; at least Kafka's speed: "
              f"{'met' if kafka >= rebuild else 'NOT met'}")
    print(f"\nload average after the run: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
