"""A broker's start after lost indexes, with and without segdex, measured against Kafka itself in one run.

A log dir of ``--partitions`` x ``--segments`` segments of ``--segment-mib`` MiB (``.log`` files only, no
clean-shutdown marker, as an unclean stop that lost the indexes leaves it) is formatted with Kafka's storage
tool. Each run starts from a fresh copy of it (page cache warm for every contender alike) and times:

- ``kafka N threads``: the broker started on the dir (``num.recovery.threads.per.data.dir`` = 1 and 2), from
  process start to "Kafka Server started", and LogManager's own "Loaded ... logs in X ms" figure;
- ``segdex reindex``: the whole ``segdex reindex`` command on the dir (Spark start included), then the
  broker's start on what it left (2 recovery threads), and the sum of both;
- ``segdex recover``: the same with ``segdex recover``, which leaves the dir as Kafka's recovery and a clean
  shutdown leave it (index files, producer snapshots, checkpoints, ``.kafka_cleanshutdown``): the broker's start
  on it re-reads nothing.

Printed: the median of ``--runs`` runs of each, and the ratios. Not a test; the jars come from
``bash scripts/test.sh``.

    .venv/bin/python -m benchmarks.bench_startup                 # 8 partitions x 4 x 16 MiB (512 MiB)
    .venv/bin/python -m benchmarks.bench_startup --partitions 64 # the 4.3 GB dir of the startup table
    .venv/bin/python -m benchmarks.bench_startup --partitions 64 --cases uniform:small uniform:medium \\
        uniform:large one-partition:large                          # the startup table's rows, one process
"""

from __future__ import annotations

import argparse
import filecmp
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from segdex.indexcore.tools.segment_writer import segment_name, uniform_segment
from tests.support.kafka_harness import KAFKA_VERSIONS, KafkaBroker, KafkaInstall

REPO = Path(__file__).resolve().parent.parent

MiB = 1 << 20
SHAPES = {
    "large": {"records_per_batch": 16, "value_size": 1000, "key_size": 8},  # 16 KiB batches
    "small": {"records_per_batch": 1, "value_size": 112, "key_size": 8},  # 190 B batches
    "medium": {"records_per_batch": 1, "value_size": 1000, "key_size": 8},  # 1.1 KiB batches
}
STRAY = re.compile(r"(.+)\.[0-9a-f]{32}-(?:stray|delete)")
LOADED = re.compile(r"Loaded (\d+) logs in (\d+)ms")


def make_pristine(root: Path, install: KafkaInstall, partitions: int, segments: int, segment_bytes: int,
                  shape_name: str, layout: str = "uniform") -> Path:
    """The formatted log dir with the bench topic's segments (.log files only), made once per shape and layout:
    ``uniform`` spreads them over ``partitions``, ``one-partition`` puts partitions x segments in one."""
    if layout == "one-partition":
        partitions, segments = 1, partitions * segments
    pristine = root / f"pristine-{install.version}-{partitions}x{segments}x{segment_bytes >> 20}-{shape_name}"
    if (pristine / ".complete").exists():
        return pristine
    shutil.rmtree(pristine, ignore_errors=True)
    KafkaBroker(install, pristine).format()
    shape = SHAPES[shape_name]
    for p in range(partitions):
        part = pristine / "data" / f"bench-{p}"
        part.mkdir()
        base = 0
        for _ in range(segments):
            size = uniform_segment(part / segment_name(base), segment_bytes, base_offset=base, **shape)
            with open(part / segment_name(base), "rb") as f:
                batch_size = int.from_bytes(f.read(12)[8:12], "big") + 12
            base += size // batch_size * shape["records_per_batch"]
    os.sync()
    (pristine / ".complete").write_text("")  # an interrupted generation is not taken for a whole one
    return pristine


def fresh_copy(pristine: Path, work: Path) -> Path:
    """The pristine dir at ``work``, on disk before the contender starts (a log dir at rest, as after a restore):
    otherwise the copy's own writeback competes with it, and a run that makes its files durable with
    ``syncfs`` waits for gigabytes it did not write.

    Copied the first time; after that restored in place: every file the last contender added or changed moves
    aside into ``trash_of(work)`` (emptied at the bench's end) and the ones it left as they were (same bytes:
    the ``.log`` files) stay, with the pristine's mtime. Deleting the old copy instead frees its inodes, and on
    ext4 without a journal (this project's machines) each file created in the next 5 minutes then walks past
    them in the inode allocator (``recently_deleted``): 0.2-0.3 ms a file instead of 7 us, a cost no log dir at
    rest has."""
    if not (work / "data").is_dir():
        shutil.rmtree(work, ignore_errors=True)
        need = sum(p.stat().st_size for p in (pristine / "data").rglob("*") if p.is_file())
        free = shutil.disk_usage(work.parent).free
        if free < need + (1 << 30):  # and a GiB for what the contenders write
            raise SystemExit(f"bench: {work.parent} has {free / 1e9:.1f} GB free; a copy of {pristine.name} needs "
                             f"{need / 1e9:.1f} GB and 1 GiB besides (each case keeps its copy until the end): "
                             f"free some space or give --dir another filesystem")
        shutil.copytree(pristine / "data", work / "data")
    else:
        trash = trash_of(work) / f"{time.monotonic_ns()}"
        trash.mkdir(parents=True)
        for entry in work.iterdir():
            if entry.name != "data":
                entry.rename(trash / entry.name)
        _restore(pristine / "data", work / "data", trash / "data")
    os.sync()
    return work


def trash_of(work: Path) -> Path:
    return work.parent / f"{work.name}.trash"


def _restore(source: Path, target: Path, trash: Path) -> None:
    """``target`` made equal to ``source`` again, moving what differs into ``trash`` rather than deleting it."""
    wanted = {e.name: e for e in source.iterdir()}
    for entry in list(target.iterdir()):  # a broker renames logs of topics its metadata lacks: <dir>.<id>-stray
        renamed = STRAY.fullmatch(entry.name)
        if renamed and renamed.group(1) in wanted and not (target / renamed.group(1)).exists():
            entry.rename(target / renamed.group(1))
    for entry in list(target.iterdir()):
        origin = wanted.get(entry.name)
        if origin is not None and origin.is_dir() and entry.is_dir() and not entry.is_symlink():
            _restore(origin, entry, trash / entry.name)
            continue
        if origin is not None and origin.is_file() and entry.is_file():
            a, b = origin.stat(), entry.stat()
            if a.st_size == b.st_size and (a.st_mtime_ns == b.st_mtime_ns or filecmp.cmp(origin, entry, False)):
                os.utime(entry, ns=(a.st_atime_ns, a.st_mtime_ns))  # a broker's recovery touches what it reads
                continue
        trash.mkdir(parents=True, exist_ok=True)
        entry.rename(trash / entry.name)
    for name, origin in wanted.items():
        if not (target / name).exists():
            if origin.is_dir():
                shutil.copytree(origin, target / name)
            else:
                shutil.copy2(origin, target / name)


def compile_modules() -> None:
    """segdex's modules compiled to bytecode, as a wheel's are when pip installs it: a checkout compiles them on
    each import where ``PYTHONDONTWRITEBYTECODE`` is set (this project's machines set it), 0.06 s a command."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", *(str(REPO / d) for d in PACKAGES)], check=True,
                   stdout=subprocess.DEVNULL)


PACKAGES = ("segdex", "indexcore", "jobs", "pipelines")


def start_broker(install: KafkaInstall, pristine: Path, work: Path, threads: int,
                 broker_jvm: bool = True) -> tuple[float, float | None]:
    """(seconds to "Kafka Server started", LogManager's "Loaded ... logs in X ms" in seconds) on ``work``, in the
    JVM ``kafka-server-start.sh`` gives a broker, or (``broker_jvm`` False) the tests' small one (serial GC, C1
    only)."""
    cluster_id = (pristine / "data" / "meta.properties").read_text().split("cluster.id=")[1].split()[0]
    broker = KafkaBroker(install, work, {"num.recovery.threads.per.data.dir": str(threads)},
                         data_dir=work / "data", cluster_id=cluster_id, broker_jvm=broker_jvm)
    t0 = time.perf_counter()
    try:
        broker.start(timeout=1800)
        elapsed = time.perf_counter() - t0
    finally:
        broker.kill()
    loaded = LOADED.findall(broker.log_text())
    return elapsed, (int(loaded[-1][1]) / 1000 if loaded else None)


PHASES = re.compile(r"\((spark|engine) start ([\d.]+)s, discover ([\d.]+)s, scan ([\d.]+)s, metadata ([\d.]+)s\)")


def run_segdex(work: Path, command: str = "reindex", phases: dict[str, list[float]] | None = None) -> float:
    """The whole command's wall time; its own phases (spark start, discover, scan, metadata) added to
    ``phases``."""
    exe = Path(sys.executable).parent / "segdex"
    t0 = time.perf_counter()
    proc = subprocess.run([str(exe), command, "--no-progress", "--metadata", str(work / "meta"),
                           str(work / "data")], capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if proc.returncode not in (0, 1) or (proc.returncode == 1 and command != "verify"):
        raise SystemExit(f"segdex {command} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
    found = PHASES.search(proc.stdout + proc.stderr)
    if phases is not None and found:
        engine, *values = found.groups()
        for name, value in zip((f"{engine} start", "discover", "scan", "metadata"), values, strict=True):
            phases.setdefault(f"{command}: {name}", []).append(float(value))
        phases.setdefault(f"{command}: outside the scan", []).append(elapsed - float(found.group(4)))
    return elapsed


def _read_crc(path: str) -> int:
    """One file read whole into memory and its CRC32C (a copy out of the page cache)."""
    import crc32c

    with open(path, "rb") as f:
        data = f.read()
    crc32c.crc32c(data)
    return len(data)


def _mmap_crc(path: str) -> int:
    """One file mapped and its CRC32C in one call: no copy, the least a scan that checks every byte does."""
    import mmap

    import crc32c

    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return 0
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            crc32c.crc32c(m)
            return len(m)


def read_crc_pass(data: Path, how=_mmap_crc) -> tuple[float, int]:
    """(seconds, bytes) of one read+CRC32C pass over every ``.log`` of ``data``, one process per CPU, each
    file read by ``how``."""
    from concurrent.futures import ProcessPoolExecutor

    files = sorted(str(p) for p in data.rglob("*.log"))
    with ProcessPoolExecutor(os.cpu_count()) as pool:
        list(pool.map(_noop, range(os.cpu_count() or 1)))  # the pool started before the clock
        t0 = time.perf_counter()
        total = sum(pool.map(how, files))
        return time.perf_counter() - t0, total


def _noop(_: int) -> None:
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--segments", type=int, default=4)
    parser.add_argument("--segment-mib", type=int, default=16)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=Path("bench-data"))
    parser.add_argument("--kafka", default=KAFKA_VERSIONS[0])
    parser.add_argument("--kafka-jvm", choices=["broker", "tests"], default="broker",
                        help="broker: the JVM kafka-server-start.sh gives a broker (G1, C2, 1 GiB); tests: the "
                             "tests' small JVM (serial GC, C1 only)")
    parser.add_argument("--shape", nargs="+", choices=list(SHAPES), default=["large"],
                        help="16 KiB batches (large), 1.1 KiB (medium) or 190 B single-record batches (small); "
                             "several: each in turn")
    parser.add_argument("--segdex", nargs="+", choices=["reindex", "recover"], default=["recover", "reindex"],
                        help="the segdex commands timed before a broker start")
    parser.add_argument("--layout", nargs="+", choices=["uniform", "one-partition"], default=["uniform"],
                        help="uniform: --partitions partitions; one-partition: the same segments in a single "
                             "partition (a bloated __consumer_offsets, a hot topic's leader); several: each in turn")
    parser.add_argument("--cases", nargs="+", metavar="LAYOUT:SHAPE",
                        help="instead of every --layout with every --shape: these pairs, in this order")
    args = parser.parse_args(argv)
    cases = [(*c.split(":", 1), "")[:2] for c in args.cases] if args.cases else \
        [(layout, shape) for layout in args.layout for shape in args.shape]
    for layout, shape in cases:
        if layout not in ("uniform", "one-partition") or shape not in SHAPES:
            parser.error(f"--cases {layout}:{shape}: a layout (uniform, one-partition) and a shape "
                         f"({', '.join(SHAPES)})")
    install = KafkaInstall(args.kafka).check()
    compile_modules()
    args.dir.mkdir(parents=True, exist_ok=True)
    works: list[Path] = []
    try:  # nothing is deleted before the last shape is measured (see fresh_copy)
        for layout, shape in cases:
            works.append(Path(tempfile.mkdtemp(prefix="segdex-startup-", dir=args.dir)))
            measure(args, install, layout, shape, works[-1])
    finally:
        for work in works:
            shutil.rmtree(work, ignore_errors=True)
            shutil.rmtree(trash_of(work), ignore_errors=True)
    return 0


def measure(args: argparse.Namespace, install: KafkaInstall, layout: str, shape: str, work: Path) -> None:
    """One layout and shape: every contender ``args.runs`` times, alternating within each run; the medians."""
    pristine = make_pristine(args.dir.resolve(), install, args.partitions, args.segments, args.segment_mib * MiB,
                             shape, layout)
    total = sum(p.stat().st_size for p in (pristine / "data").rglob("*.log"))
    parts = len(list((pristine / "data").glob("bench-*")))
    engine = "Spark (SEGDEX_ENGINE=spark)" if os.environ.get("SEGDEX_ENGINE") == "spark" else \
        "its embedded default (the one-host engine where nothing asks for Spark)"
    print(f"segdex on {engine}; broker start after lost indexes: Kafka {install.version}, {parts} partition(s) x "
          f"{args.partitions * args.segments // parts} segments x {args.segment_mib} MiB = {total / 1e9:.2f} GB of "
          f"{shape} batches ({layout}), median of {args.runs} runs, {os.cpu_count()} CPUs, warm page cache, "
          f"Kafka in the {args.kafka_jvm} JVM",
          flush=True)
    results: dict[str, list[float]] = {}
    phases: dict[str, list[float]] = {}
    for _ in range(args.runs):  # contenders alternate within each run
        fresh_copy(pristine, work)  # the limit is read from the very pages the contenders read
        seconds, nbytes = read_crc_pass(work / "data")
        results.setdefault("read+CRC32C pass over the .log files", []).append(seconds)
        seconds, nbytes = read_crc_pass(work / "data", _read_crc)
        results.setdefault("  the same with read() (a copy per file)", []).append(seconds)
        results.setdefault("segdex verify (whole command)", []).append(run_segdex(work, "verify", phases))
        for threads in (1, 2):
            started, loaded = start_broker(install, pristine, fresh_copy(pristine, work), threads,
                                           args.kafka_jvm == "broker")
            results.setdefault(f"kafka start, {threads} recovery thread(s)", []).append(started)
            if loaded is not None:
                results.setdefault(f"  of which LogManager loading, {threads} thread(s)", []).append(loaded)
        for command in args.segdex:
            fresh_copy(pristine, work)
            took = run_segdex(work, command, phases)
            started, loaded = start_broker(install, pristine, work, 2, args.kafka_jvm == "broker")
            if command == "recover":
                log = (work / "broker.log").read_text(errors="replace")
                assert "Skipping recovery of" in log and "Recovering unflushed segment" not in log, log[-2000:]
            results.setdefault(f"segdex {command} (whole command)", []).append(took)
            results.setdefault(f"kafka start after segdex {command}, 2 threads", []).append(started)
            if loaded is not None:
                results.setdefault(f"  of which LogManager loading after {command}", []).append(loaded)
            results.setdefault(f"segdex {command} + kafka start", []).append(took + started)
    medians = {k: statistics.median(v) for k, v in results.items()}
    for name, runs in results.items():
        print(f"  {name:42} {medians[name]:7.2f} s   runs: {', '.join(f'{t:.2f}' for t in runs)}")
    limit = medians["read+CRC32C pass over the .log files"]
    print(f"  the limit: read+CRC32C at {total / limit / 1e9:.2f} GB/s")
    for name, runs in phases.items():
        median = statistics.median(runs)
        share = f"  {total / median / 1e9:.2f} GB/s = {limit / median * 100:.0f}% of the limit" \
            if name.endswith(": scan") else ""
        print(f"  {name:42} {median:7.2f} s{share}")
    alone = medians["kafka start, 2 recovery thread(s)"]
    kafka_loading = medians.get("  of which LogManager loading, 2 thread(s)", alone)
    for command in args.segdex:
        both, took = medians[f"segdex {command} + kafka start"], medians[f"segdex {command} (whole command)"]
        print(f"  -> {command} + start / start alone (2 threads) = {both / alone:.2f}x "
              f"(1 thread: {both / medians['kafka start, 1 recovery thread(s)']:.2f}x); "
              f"segdex {command} / Kafka's own loading (2 threads) = {took / kafka_loading:.2f}x", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
