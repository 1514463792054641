"""``segdex clean`` against Kafka's own cleaner thread, side by side in one run: GB/s, records/s and the ratio.

    .venv/bin/python -m benchmarks.bench_clean [--offsets-gib 1] [--topic-partitions 64] [--topic-mib 16] [--runs 3]

Two shapes, each cleaned from a fresh copy (page cache warm, synced) in one round with the same offset map
(``log.cleaner.dedupe.buffer.size`` 128 MiB for one thread, as a broker's default) and the same clock:

- ``__consumer_offsets``-like: one partition of ``--offsets-gib`` GiB in 100 MiB segments (the topic's
  ``offsets.topic.segment.bytes``), uncompressed batches of 1 to 8 offset commits (``OffsetCommitKey`` v1 and
  ``OffsetCommitValue`` v3 sized records) from 5,000 groups, each group committing its partitions again and again;
- a compacted topic: ``--topic-partitions`` partitions of ``--topic-mib`` MiB in 4 MiB segments, batches of 10
  records with 20,000 keys per partition and 100 to 1,000 byte values.

Kafka: ``Cleaner.doClean`` in Kafka 4.4.0's own classes (``KafkaOracle cleanable``: one cleaner thread, the log
loaded first, only ``doClean`` timed), one partition after another as one cleaner thread takes them. segdex:
``Cleaner.clean`` in this process (the same work: offset map, grouping, cleaning into memory, one core), and the
whole ``segdex clean --apply --discard`` command (load, plan, clean, swap, fsync; every core) on the same data.
Medians of ``--runs``. Not a test.

One partition on every core: ``--threads 1 2`` cleans the ``__consumer_offsets``-like partition's
round split over 1 and 2 threads, back to back run after run (medians of ``--runs``; wall and CPU seconds, the
load average), beside Kafka's ``doClean`` on the same data. Each round's threads' CPU too (``ThreadCPU``): the
main thread's plus the busiest pool thread's is about the wall time on free cores, which a machine shared with
other sessions does not show (each session gets its share of the cores, whatever its threads).

Memory at size: ``--memory-gib 1 4`` measures, for each size, one compacted partition of that many GiB
in 100 MiB segments whose keys are nearly all live (a changelog: batches of 10 records of 1,000 byte values,
one record in ten overwriting an earlier key), the peak memory of ``segdex clean --apply --discard`` (one round)
and of the ``--until-clean`` plan, as separate commands: the process tree's resident set sampled every 20 ms
(anonymous memory, ``RssAnon``, summed over the tree; the mapped segments' page cache, ``RssFile``, apart), and
the wall time. The segdex the commands run is the one ``python -m segdex.jobs.cli`` imports (run it once per tree
to compare two)::

    .venv/bin/python -m benchmarks.bench_clean --memory-gib 1 4
    .venv/bin/python -m benchmarks.bench_clean --memory-gib 1 4 16 --memory-shape offsets --memory-kafka

``--memory-shape offsets`` measures a ``__consumer_offsets`` partition of the first shape instead (Kafka's configs for
its internal topic), ``--memory-kafka`` times Kafka's ``doClean`` round on the same data beside.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.log.cleaner import Cleaner
from segdex.indexcore.log.log_cleaner import load_for_cleaning
from segdex.indexcore.log.log_cleaner_manager import cleaning_view, last_stable_offset
from segdex.indexcore.log.skimpy_offset_map import SkimpyOffsetMap
from segdex.indexcore.tools.segment_writer import Record, build_batch, segment_name

DEDUPE = 128 * 1024 * 1024  # log.cleaner.dedupe.buffer.size, one cleaner thread
T0 = 1_700_000_000_000
NOW = T0 + 30 * 86_400_000
BASE_OFFSET = struct.Struct(">q")  # a batch's first field; its CRC covers only what follows the attributes


def _commit_key(group: str, topic: str, partition: int) -> bytes:
    """``OffsetCommitKey`` v1: version, group, topic, partition."""
    g, t = group.encode(), topic.encode()
    return struct.pack(">hh", 1, len(g)) + g + struct.pack(">h", len(t)) + t + struct.pack(">i", partition)


def _commit_value(offset: int) -> bytes:
    """``OffsetCommitValue`` v3: version, offset, leader epoch, metadata (empty), commit timestamp."""
    return struct.pack(">hqihq", 3, offset, 0, 0, T0)


def write_partition(part: Path, pool: list[bytes], total: int, segment_bytes: int, rng: random.Random) -> int:
    """``part`` filled with batches drawn from ``pool`` (their base offsets rewritten) up to ``total`` bytes, rolled
    at ``segment_bytes``; a small active segment last. Answers the records written."""
    part.mkdir(parents=True, exist_ok=True)
    offset, written, n_records = 0, 0, 0
    counts = [int.from_bytes(b[57:61], "big") for b in pool]  # each batch's record count
    while written < total:
        base, chunks, size = offset, [], 0
        while size < segment_bytes - 65536 and written + size < total:
            i = rng.randrange(len(pool))
            b = bytearray(pool[i])
            BASE_OFFSET.pack_into(b, 0, offset)
            chunks.append(b)
            size += len(b)
            offset += counts[i]
            n_records += counts[i]
        (part / segment_name(base)).write_bytes(b"".join(chunks))
        written += size
    active = bytearray(pool[0])
    BASE_OFFSET.pack_into(active, 0, offset)
    (part / segment_name(offset)).write_bytes(bytes(active))
    return n_records + counts[0]


def offsets_pool(rng: random.Random) -> list[bytes]:
    """Commit batches of 5,000 groups, each over its own 1 to 8 partitions of a few topics."""
    pool = []
    for g in range(5000):
        topic = f"orders-{g % 40}"
        parts = rng.sample(range(64), rng.randint(1, 8))
        recs = [Record(i, T0, _commit_key(f"group-{g}", topic, p), _commit_value(rng.randrange(1 << 40)))
                for i, p in enumerate(parts)]
        pool.append(build_batch(0, recs))
    return pool


def topic_pool(rng: random.Random) -> list[bytes]:
    """Batches of 10 records over 20,000 keys, values of 100 to 1,000 bytes."""
    return [build_batch(0, [Record(i, T0, f"key-{rng.randrange(20000)}".encode(), rng.randbytes(rng.randint(100, 1000)))
                            for i in range(10)]) for _ in range(4000)]


def ensure_data(root: Path, offsets_gib: float, partitions: int, topic_mib: int) -> tuple[Path, Path, int, int]:
    """The pristine log dirs (generated once): (offsets dir, topic dir, their records)."""
    rng = random.Random(27)
    offsets, topic = root / f"offsets-{offsets_gib}g", root / f"topic-{partitions}x{topic_mib}m"

    def make_offsets() -> int:
        return write_partition(offsets / "__consumer_offsets-0", offsets_pool(rng), int(offsets_gib * (1 << 30)),
                               100 << 20, rng)

    def make_topic() -> int:
        pool = topic_pool(rng)
        return sum(write_partition(topic / f"compacted-{p}", pool, topic_mib << 20, 4 << 20, rng)
                   for p in range(partitions))

    counts = []
    for d, make in ((offsets, make_offsets), (topic, make_topic)):
        stamp = d / ".complete"
        if not stamp.exists():
            shutil.rmtree(d, ignore_errors=True)
            t = time.perf_counter()
            n = make()
            os.sync()
            stamp.write_text(str(n))
            print(f"  generated {d.name} ({n:,} records) in {time.perf_counter() - t:.0f} s", flush=True)
        counts.append(int(stamp.read_text()))
    return offsets, topic, counts[0], counts[1]


def fresh_copy(pristine: Path, work: Path) -> Path:
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(pristine, work, ignore=shutil.ignore_patterns(".complete"))
    os.sync()
    return work


def config_for(part: Path) -> LogConfig:
    segment = 100 << 20 if part.name.startswith("__consumer_offsets") else 4 << 20
    return LogConfig(cleanup_policy="compact", segment_bytes=segment)


def kafka_clean(oracle, log_dir: Path) -> float:
    """Seconds of ``doClean`` summed over the dir's partitions (one cleaner thread takes one at a time)."""
    total = 0.0
    for part in sorted(p for p in log_dir.iterdir() if p.is_dir()):
        config = config_for(part)
        answer = oracle.cleanable(part, NOW, 0, -1, None, DEDUPE, config={
            "cleanup.policy": "compact", "internal.segment.bytes": config.segment_bytes})
        if "cleanMs" not in answer:
            raise SystemExit(f"Kafka's cleaner failed on {part}: {answer}")
        total += answer["cleanMs"] / 1000
    return total


class ThreadCPU:
    """Each thread's CPU seconds while in the ``with`` (``/proc/self/task/*/schedstat``, sampled every 20 ms, so a
    pool thread's last 20 ms before it ends may be missed): this thread's (``main``) and the others' (``pool``, by
    thread: the cleaner's pool; the sampler's own and the idle ones aside). On a shared machine a process gets its
    session's share of the cores whatever its threads, so the wall time of a split round there says little;
    ``main`` + the busiest pool thread is about the wall time it would take on free cores."""

    def __init__(self) -> None:
        self.main, self.pool = 0.0, {}
        self._seen: dict[int, float] = {}

    @staticmethod
    def _cpu(tid: int) -> float | None:
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                return int(f.read().split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            return None

    def _sample(self) -> None:
        for name in os.listdir("/proc/self/task"):
            tid = int(name)
            cpu = self._cpu(tid)
            if cpu is not None and tid not in (self._main_tid, self._sampler.native_id):
                self._seen[tid] = max(self._seen.get(tid, 0.0), cpu - self._before.get(tid, 0.0))

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self._sample()

    def __enter__(self) -> ThreadCPU:
        self._main_tid = threading.get_native_id()
        self._before = {int(n): self._cpu(int(n)) or 0.0 for n in os.listdir("/proc/self/task")}
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._run, daemon=True)
        self._sampler.start()
        return self

    def __exit__(self, *exc) -> None:
        self._sample()
        self.main += (self._cpu(self._main_tid) or 0.0) - self._before[self._main_tid]
        self._stop.set()
        self._sampler.join()
        self.pool.update({tid: cpu for tid, cpu in self._seen.items() if cpu >= 0.01})  # the idle ones aside


def segdex_round(log_dir: Path, threads: int = 1, cpu: ThreadCPU | None = None) -> tuple[float, int]:
    """Seconds of ``Cleaner.clean`` (the load not counted, as Kafka's) over the dir's partitions, one at a
    time in this process, each round split over ``threads``; and the bytes left. ``cpu``: entered around each
    round (its threads' CPU)."""
    total, left = 0.0, 0
    for part in sorted(p for p in log_dir.iterdir() if p.is_dir()):
        config = config_for(part)
        loaded = load_for_cleaning(str(part), config, NOW)
        start, leo = loaded.log_start_offset, loaded.log_end_offset
        lso = last_stable_offset(loaded.first_unstable_offset, leo)
        view = cleaning_view(loaded.facts, start, leo, lso, None, NOW, config)
        t = time.perf_counter()
        with cpu if cpu is not None else contextlib.nullcontext():
            round_ = Cleaner(SkimpyOffsetMap(DEDUPE), threads=threads).clean(loaded.segments, view.log, start, leo,
                                                                             loaded.active_producers(), config, NOW)
        total += time.perf_counter() - t
        left += sum(len(c.log) for c in round_.segments)
    return total, left


def segdex_command(log_dir: Path, work: Path) -> float:
    exe = Path(sys.executable).parent / "segdex"
    t = time.perf_counter()
    proc = subprocess.run([str(exe), "clean", "--apply", "--discard", "--no-record", "--no-progress",
                           "--now", str(NOW), "--dedupe-buffer-size", str(DEDUPE),
                           "--config", "cleanup.policy=compact", "--topic-config",
                           "__consumer_offsets:segment.bytes=104857600", "--config", "segment.bytes=4194304",
                           "--metadata", str(work / "meta"), str(log_dir)], capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"segdex clean failed ({proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return wall


def changelog_partition(root: Path, gib: float) -> Path:
    """A log dir (generated once) of one compacted partition of ``gib`` GiB in 100 MiB segments, nearly every key
    live: batches of 10 records with 1,000 byte values, one record in ten overwriting an earlier key."""
    log_dir = root / f"changelog-{gib}g"
    stamp = log_dir / ".complete"
    if stamp.exists():
        return log_dir
    shutil.rmtree(log_dir, ignore_errors=True)
    part = log_dir / "changelog-0"
    part.mkdir(parents=True)
    rng = random.Random(38)
    value = rng.randbytes(1000)
    total, written, offset, t = int(gib * (1 << 30)), 0, 0, time.perf_counter()
    while written < total:
        base, chunks, size = offset, [], 0
        while size < (100 << 20) - 20_000 and written + size < total:
            keys = [rng.randrange(offset + i) if offset and rng.random() < 0.1 else offset + i for i in range(10)]
            recs = [Record(offset + i, T0, f"key-{k}".encode(), value) for i, k in enumerate(keys)]
            b = build_batch(offset, recs)
            chunks.append(b)
            size += len(b)
            offset += 10
        (part / segment_name(base)).write_bytes(b"".join(chunks))
        written += size
    (part / segment_name(offset)).write_bytes(build_batch(offset, [Record(offset, T0, b"last", value)]))
    os.sync()
    stamp.write_text(str(offset))
    print(f"  generated {log_dir.name} ({offset:,} records) in {time.perf_counter() - t:.0f} s", flush=True)
    return log_dir


def _tree_pids(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return out


def _rss(pid: int) -> tuple[int, int]:
    """(RssAnon, RssFile) of one process, bytes."""
    anon = file = 0
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    anon = int(line.split()[1]) * 1024
                elif line.startswith("RssFile:"):
                    file = int(line.split()[1]) * 1024
    except OSError:
        pass
    return anon, file


def peak_memory(cmd: list[str]) -> tuple[int, int, float, subprocess.CompletedProcess]:
    """Run ``cmd``; (peak anonymous memory of its process tree, peak mapped file pages, seconds, the result)."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak_anon = peak_file = 0
    while proc.poll() is None:
        sizes = [_rss(p) for p in _tree_pids(proc.pid)]
        peak_anon = max(peak_anon, sum(a for a, _ in sizes))
        peak_file = max(peak_file, sum(f for _, f in sizes))
        time.sleep(0.02)
    out, err = proc.communicate()
    return peak_anon, peak_file, time.perf_counter() - t, subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def offsets_partition(root: Path, gib: float) -> Path:
    """A log dir (generated once) of one ``__consumer_offsets`` partition of ``gib`` GiB (``ensure_data``'s
    shape: 100 MiB segments of offset commits from 5,000 groups, few keys live)."""
    log_dir = root / f"offsets-mem-{gib}g"
    stamp = log_dir / ".complete"
    if not stamp.exists():
        shutil.rmtree(log_dir, ignore_errors=True)
        rng, t = random.Random(27), time.perf_counter()
        n = write_partition(log_dir / "__consumer_offsets-0", offsets_pool(rng), int(gib * (1 << 30)), 100 << 20, rng)
        os.sync()
        stamp.write_text(str(n))
        print(f"  generated {log_dir.name} ({n:,} records) in {time.perf_counter() - t:.0f} s", flush=True)
    return log_dir


MEMORY_SHAPES = {  # shape: (its log dir, its partition, the topic configs given)
    "changelog": (changelog_partition, "changelog-0", ["--topic-config", "changelog:cleanup.policy=compact",
                                                       "--topic-config", "changelog:segment.bytes=104857600"]),
    "offsets": (offsets_partition, "__consumer_offsets-0", []),  # Kafka's own configs for its internal topic
}


def memory_run(root: Path, sizes: list[float], shape: str = "changelog", kafka: bool = False) -> int:
    """Peak memory and time of an applied round and of an --until-clean plan, per size (the module's docs); with
    ``kafka``, Kafka's ``doClean`` round on the same data too."""
    import segdex

    make, partition, configs = MEMORY_SHAPES[shape]
    where = os.path.dirname(segdex.__file__) if hasattr(segdex, "__file__") else "?"
    print(f"segdex clean at size, {shape} shape ({where}, dedupe buffer {DEDUPE >> 20} MiB): peak anonymous memory "
          f"of the process tree (mapped page cache apart)")
    print(f"{'GiB':>5} {'command':34} {'peak anon':>10} {'mapped':>9} {'seconds':>8}  result")
    failed = 0
    oracle = None
    if kafka:
        from tests.support.kafka_harness import KafkaInstall, KafkaOracle

        oracle = KafkaOracle(KafkaInstall("4.4.0"), root / "oracle", broker_jvm=True)
    try:
        for gib in sizes:
            pristine = make(root, gib)
            base = [sys.executable, "-m", "segdex.jobs.cli", "clean", "--no-record", "--now", str(NOW),
                    "--dedupe-buffer-size", str(DEDUPE), *configs]
            for name, extra in (("--until-clean (plan)", ["--until-clean"]), ("--apply --discard", ["--apply",
                                                                                                   "--discard"])):
                work = fresh_copy(pristine, root / "mem")
                anon, mapped, secs, proc = peak_memory([*base, *extra, str(work)])
                line = [ln for ln in proc.stdout.splitlines() if ln.startswith(partition)]
                result = (line[0][len(partition) + 2:][:110] if line
                          else f"exit {proc.returncode}: {proc.stderr[-300:]}")
                failed += proc.returncode != 0
                print(f"{gib:5} {name:34} {anon / 2**20:7.0f} MiB {mapped / 2**20:5.0f} MiB {secs:8.1f}  {result}",
                      flush=True)
            if oracle is not None:
                secs = kafka_clean(oracle, fresh_copy(pristine, root / "mem"))
                print(f"{gib:5} {'Kafka 4.4 doClean (one round)':34} {'':>10} {'':>9} {secs:8.1f}", flush=True)
            shutil.rmtree(root / "mem", ignore_errors=True)
    finally:
        if oracle is not None:
            oracle.close()
    return 1 if failed else 0


def threads_run(args) -> int:
    """One partition on every core: the ``__consumer_offsets``-like partition's ``Cleaner.clean`` split
    over each of ``--threads`` (one copy, read only, cleaned into memory), the counts interleaved run after run so
    that the machine's load falls on each alike; wall and CPU seconds (medians), the load average before and after,
    and Kafka 4.4.0's ``doClean`` on the same data (its JIT warmed first)."""
    from tests.support.kafka_harness import KafkaInstall, KafkaOracle

    offsets, topic, n, _ = ensure_data(args.root, args.offsets_gib, args.topic_partitions, args.topic_mib)
    size = sum(f.stat().st_size for f in offsets.rglob("*.log"))
    ours = fresh_copy(offsets, args.root / "ours")
    print(f"{offsets.name}: {size / 1e9:.2f} GB, {n:,} records, {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.1f} before", flush=True)
    walls: dict[int, list[float]] = {t: [] for t in args.threads}
    cpus: dict[int, list[float]] = {t: [] for t in args.threads}
    paths: dict[int, list[float]] = {t: [] for t in args.threads}  # main thread + busiest pool thread, CPU s
    for run in range(args.runs):
        for t in args.threads:
            c, threads_cpu = time.process_time(), ThreadCPU()
            wall, _ = segdex_round(ours, t, threads_cpu)
            walls[t].append(wall)
            cpus[t].append(time.process_time() - c)
            pool = sorted(threads_cpu.pool.values())
            paths[t].append(threads_cpu.main + (pool[-1] if pool else 0.0))
            print(f"  run {run + 1}: {t} threads {wall:6.2f} s wall, {cpus[t][-1]:6.2f} s CPU (main thread "
                  f"{threads_cpu.main:.2f} s, pool threads {', '.join(f'{p:.2f}' for p in pool) or 'none'}; load "
                  f"average {os.getloadavg()[0]:.1f})", flush=True)
    oracle = KafkaOracle(KafkaInstall("4.4.0"), args.root / "oracle", broker_jvm=True)
    try:
        kafka_clean(oracle, fresh_copy(topic, args.root / "warm"))  # the JIT warm
        kafka = statistics.median(kafka_clean(oracle, fresh_copy(offsets, args.root / "theirs"))
                                  for _ in range(args.kafka_runs))
    finally:
        oracle.close()
    one, one_path = statistics.median(walls[args.threads[0]]), statistics.median(paths[args.threads[0]])
    print(f"Kafka 4.4.0 doClean (one thread): {kafka:.2f} s, {size / kafka / 1e9:.2f} GB/s")
    for t in args.threads:
        wall, path = statistics.median(walls[t]), statistics.median(paths[t])
        print(f"segdex, {t} threads: {wall:.2f} s wall (median of {args.runs}), {statistics.median(cpus[t]):.2f} s "
              f"CPU; {size / wall / 1e9:.2f} GB/s; {one / wall:.2f}x {args.threads[0]} thread(s); "
              f"{kafka / wall:.2f}x Kafka's thread, {kafka / wall / t:.2f}x per core; on free cores about "
              f"{path:.2f} s (main thread + busiest pool thread's CPU), {one_path / path:.2f}x")
    print(f"load average after: {os.getloadavg()}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--offsets-gib", type=float, default=1.0)
    ap.add_argument("--topic-partitions", type=int, default=64)
    ap.add_argument("--topic-mib", type=int, default=16)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--kafka-runs", type=int, default=1, help="--threads: Kafka's doClean runs")
    ap.add_argument("--root", type=Path, default=Path(tempfile.gettempdir()) / "segdex-bench-clean")
    ap.add_argument("--memory-gib", type=float, nargs="+", metavar="GIB",
                    help="instead: peak memory of an applied round and an --until-clean plan at these sizes")
    ap.add_argument("--memory-shape", choices=sorted(MEMORY_SHAPES), default="changelog",
                    help="--memory-gib: a changelog's partition (nearly every key live) or a __consumer_offsets one")
    ap.add_argument("--memory-kafka", action="store_true",
                    help="--memory-gib: Kafka 4.4's doClean round on the same data too")
    ap.add_argument("--threads", type=int, nargs="+", metavar="N",
                    help="instead: the __consumer_offsets-like partition's round split over each of these thread "
                         "counts, run after run back to back, beside Kafka's doClean")
    args = ap.parse_args(argv)
    if args.memory_gib:
        return memory_run(args.root, args.memory_gib, args.memory_shape, args.memory_kafka)
    if args.threads:
        return threads_run(args)
    from tests.support.kafka_harness import KafkaInstall, KafkaOracle

    offsets, topic, n_offsets, n_topic = ensure_data(args.root, args.offsets_gib, args.topic_partitions,
                                                     args.topic_mib)
    oracle = KafkaOracle(KafkaInstall("4.4.0"), args.root / "oracle", broker_jvm=True)
    try:
        kafka_clean(oracle, fresh_copy(topic, args.root / "warm"))  # the JIT warm
        print(f"segdex clean vs Kafka 4.4.0's cleaner thread: medians of {args.runs}, dedupe buffer "
              f"{DEDUPE >> 20} MiB, {os.cpu_count()} cores")
        print(f"{'shape':34} {'GB':>6} {'records':>12} {'Kafka doClean':>14} {'segdex round':>13} "
              f"{'ratio':>6} {'segdex clean --apply':>21} {'ratio':>6}")
        for name, pristine, n in (("__consumer_offsets-like, 1 part.", offsets, n_offsets),
                                  (f"compacted, {args.topic_partitions} partitions", topic, n_topic)):
            size = sum(f.stat().st_size for f in pristine.rglob("*.log"))
            kafka = statistics.median(kafka_clean(oracle, fresh_copy(pristine, args.root / "theirs"))
                                      for _ in range(args.runs))
            ours = statistics.median(segdex_round(fresh_copy(pristine, args.root / "ours"))[0]
                                     for _ in range(args.runs))
            whole = statistics.median(segdex_command(fresh_copy(pristine, args.root / "cmd"), args.root)
                                      for _ in range(args.runs))
            print(f"{name:34} {size / 1e9:6.2f} {n:12,} {kafka:11.2f} s {ours:10.2f} s {ours / kafka:5.2f}x "
                  f"{whole:18.2f} s {whole / kafka:5.2f}x", flush=True)
            print(f"{'':34} {'':6} {'':12} {size / kafka / 1e9:7.2f} GB/s {size / ours / 1e9:7.2f} GB/s "
                  f"{'':6} {size / whole / 1e9:13.2f} GB/s; records/s: Kafka {n / kafka:,.0f}, "
                  f"segdex {n / ours:,.0f}")
    finally:
        oracle.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
