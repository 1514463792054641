"""How many times ``segdex verify`` reads a bloated ``__consumer_offsets`` partition's ``.log`` files.

    .venv/bin/python -m benchmarks.bench_coordinator_read [--gib 0.5] [--root DIR]

One ``__consumer_offsets`` partition of ``--gib`` GiB in 100 MiB segments, the shape of ``bench_clean.py``'s
(uncompressed batches of 1 to 8 offset commits from 5,000 groups committing again and again: a partition the
cleaner never compacted), generated once under ``--root``. The whole ``segdex verify`` command (the one-host
engine, its forked workers included) runs under ``strace -f -y``; every ``openat``, ``mmap``, ``read`` and
``pread64`` of the partition's ``.log`` files is tallied: opens, bytes mapped (the scan and the coordinator's load
both read a segment through one ``mmap`` of the whole file; mapped bytes are what ``/proc/PID/io`` never counts)
and bytes read by system calls. Also the command's wall time and exit status.

Then, where a cgroup v1 memory controller can be written (root), the same command again with its page cache
capped (``--memory-mib``, 512 by default: less than the partition and the process together, as on a broker whose
``__consumer_offsets`` outgrew its memory; 0: not run): the partition's pages dropped from the cache first
(``POSIX_FADV_DONTNEED``), then the bytes the process tree read from the disk (``ru_inblock`` of the waited
children, which counts the page faults of mapped files too) and the cgroup's peak memory. The segdex it runs is
the one ``python -m segdex.jobs.cli`` imports. Not a test.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from benchmarks.bench_clean import offsets_pool, write_partition

FD = r"\d+<(?P<path>[^>]*\.log)>"
MMAP = re.compile(rf"mmap\([^,]*, (?P<len>\d+), [^,]*, [^,]*, {FD}, ")
READ = re.compile(rf"p?read(?:64)?\({FD}, .*\) = (?P<ret>\d+)$")
OPEN = re.compile(r'openat\([^,]*, "(?P<path>[^"]*\.log)"')  # a line split by another process's call included


def partition(root: Path, gib: float) -> Path:
    """The pristine log dir (generated once)."""
    log_dir = root / f"offsets-{gib}g"
    stamp = root / f"offsets-{gib}g.complete"
    if not stamp.exists():
        shutil.rmtree(log_dir, ignore_errors=True)
        n = write_partition(log_dir / "__consumer_offsets-0", offsets_pool(random.Random(27)),
                            int(gib * (1 << 30)), 100 << 20, random.Random(27))
        os.sync()
        stamp.write_text(str(n))
    return log_dir


def tally(trace: Path, part: Path) -> dict[str, int]:
    """Opens, bytes mapped and bytes read of the partition's ``.log`` files in an ``strace -f -y`` output."""
    out: Counter = Counter()
    prefix = str(part) + os.sep
    for line in trace.read_text(errors="replace").splitlines():
        if (m := OPEN.search(line)) and m["path"].startswith(prefix):
            out["opens"] += 1
        elif (m := MMAP.search(line)) and m["path"].startswith(prefix):
            out["maps"] += 1
            out["mapped"] += int(m["len"])
        elif (m := READ.search(line)) and m["path"].startswith(prefix):
            out["read"] += int(m["ret"])
    return dict(out)


def capped_disk_reads(cmd: list[str], part: Path, cap_mib: int) -> tuple[int, int, float] | None:
    """(bytes read from the disk by the command's process tree, the cgroup's peak memory, seconds) with memory
    capped at ``cap_mib`` MiB; None where no memory cgroup can be made here."""
    cgroup = Path("/sys/fs/cgroup/memory") / f"segdex-bench-{os.getpid()}"
    try:
        cgroup.mkdir()
    except OSError:
        return None
    try:
        (cgroup / "memory.limit_in_bytes").write_text(str(cap_mib << 20))
        for log in part.glob("*.log"):
            fd = os.open(log, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_inblock
        t = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=False,
                       preexec_fn=lambda: (cgroup / "cgroup.procs").write_text(str(os.getpid())))
        wall = time.perf_counter() - t
        read = (resource.getrusage(resource.RUSAGE_CHILDREN).ru_inblock - before) * 512
        return read, int((cgroup / "memory.max_usage_in_bytes").read_text()), wall
    finally:
        cgroup.rmdir()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=0.5)
    parser.add_argument("--root", default=os.path.join(tempfile.gettempdir(), "segdex-bench-coordinator"))
    parser.add_argument("--memory-mib", type=int, default=512, help="0: no capped run")
    args = parser.parse_args(argv)
    log_dir = partition(Path(args.root), args.gib)
    part = (log_dir / "__consumer_offsets-0").resolve()
    size = sum(p.stat().st_size for p in part.glob("*.log"))
    segments = len(list(part.glob("*.log")))
    work = Path(tempfile.mkdtemp(dir=args.root))
    trace = work / "strace.out"
    verify = [sys.executable, "-m", "segdex.jobs.cli", "verify", "--no-progress", "--metadata", str(work / "meta"),
              str(log_dir)]
    cmd = ["strace", "-f", "-y", "-qq", "-o", str(trace), "-e", "trace=openat,mmap,read,pread64", *verify]
    t = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t
    counts = tally(trace, part)
    print(f"__consumer_offsets-0: {size:,} bytes in {segments} .log files; verify exit {done.returncode}, "
          f"{wall:.0f} s under strace")
    print(f"  opens {counts.get('opens', 0)}, mmaps {counts.get('maps', 0)}, bytes mapped "
          f"{counts.get('mapped', 0):,} ({counts.get('mapped', 0) / size:.2f}x the partition), "
          f"bytes read by read/pread {counts.get('read', 0):,}")
    capped = capped_disk_reads(verify, part, args.memory_mib) if args.memory_mib > 0 else None
    if capped is not None:
        read, peak, wall = capped
        print(f"  memory capped at {args.memory_mib} MiB (peak {peak / (1 << 20):.0f} MiB), page cache dropped: "
              f"{read:,} bytes read from the disk ({read / size:.2f}x the partition), {wall:.0f} s")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
