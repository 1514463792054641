"""Real crashes at random system calls, and the fsync/rename order of every atomic write path (issue 15, point 1).

``strace`` runs the writing command as a child process: ``-y`` names the file behind each descriptor so the
order of ``fsync(tmp)``, ``rename(tmp, target)`` and ``fsync(directory)`` can be read from the real system
calls, and ``-e inject=SYSCALL:signal=KILL:when=N`` kills the process at the N-th such call (a write, an fsync, a
rename, an unlink, retention's roll), which no ``finally`` can clean up after. After each kill the directory
must load by Kafka's rules with no partial file, and a re-run must finish the job and leave no stray file.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from segdex.indexcore.tools.segment_writer import build_batch, write_partition
from tests.support.cli import command, segdex
from tests.support.fixtures import FIXTURES, REPO_ROOT, load_case
from tests.support.retention_cases import CASE, assert_broker_loadable, check_kafka_state, exp_args, stage

REPO = REPO_ROOT
STRACE = shutil.which("strace")


@pytest.fixture(autouse=True)
def strace_present():
    assert STRACE is not None, "strace is not installed: scripts/test.sh installs it (apt-get install strace)"
TRACED = "openat,write,fsync,fdatasync,syncfs,rename,renameat,renameat2,unlink,unlinkat"
CALL = re.compile(r"^(?P<pid>\d+)\s+(?P<name>\w+)\((?P<args>.*)\)\s+=\s+(?P<ret>-?\d+)")
PATH = re.compile(r"<([^>]*)>|\"([^\"]*)\"")
SEEDS = range(12)


def strace(args: list[str], out: Path, inject: str | None = None) -> subprocess.CompletedProcess:
    """``segdex ARGS`` under strace (``strace_python``)."""
    return strace_python(command(*args)[1:], out, inject)


def strace_python(argv: list[str], out: Path, inject: str | None = None) -> subprocess.CompletedProcess:
    """``python ARGV`` with the traced calls written to ``out``; ``inject`` an strace fault (``name:...``)."""
    cmd = [STRACE, "-f", "-qq", "-y", "-e", f"trace={TRACED}", "-o", str(out)]
    if inject:
        cmd += ["-e", f"inject={inject}"]
    return subprocess.run([*cmd, sys.executable, *argv], cwd=REPO, capture_output=True, text=True, timeout=300)


RESUMED = re.compile(r"^(?P<pid>\d+)\s+<\.\.\. \w+ resumed>(?P<rest>.*)$")


def joined_lines(trace: Path) -> list[str]:
    """strace's lines with calls that other threads interrupted (``<unfinished ...>`` ... ``<... resumed>``)
    joined back into one line each, placed where they completed."""
    pending: dict[str, str] = {}
    lines = []
    for line in trace.read_text().splitlines():
        if line.endswith("<unfinished ...>"):
            pending[line.split()[0]] = line[: -len("<unfinished ...>")].rstrip()
            continue
        m = RESUMED.match(line)
        if m and m.group("pid") in pending:
            line = pending.pop(m.group("pid")) + m.group("rest")
        lines.append(line)
    return lines


def events(trace: Path) -> list[tuple[str, list[str]]]:
    """(syscall, paths) of every successful traced call, in the order they completed."""
    out = []
    for line in joined_lines(trace):
        m = CALL.match(line)
        if not m or int(m.group("ret")) < 0:
            continue
        paths = [a or b for a, b in PATH.findall(m.group("args"))]
        out.append((m.group("name"), paths))
    return out


def check_atomic_order(trace: Path, root: Path) -> int:
    """Every rename into ``root`` moves a temporary made durable after its last write, the directory is made
    durable after the rename, and no target under ``root`` is ever opened for writing in place. Durable: an
    fsync of the file itself, or a ``syncfs`` on its filesystem through a descriptor opened before the file's
    first write (syncfs reports the writeback errors since its descriptor was opened). Returns the number of
    atomic replacements seen."""
    evs = events(trace)
    seen = 0
    for i, (name, paths) in enumerate(evs):
        opened = paths[-1] if name == "openat" and paths else ""  # openat(AT_FDCWD</cwd>, "path", ...)
        if opened.startswith(str(root)) and ".segdex-" not in opened and Path(opened).name != ".lock":
            line = trace.read_text()  # flags are not parsed: look them up on the raw line
            assert not re.search(rf'"{re.escape(opened)}", O_(?:WRONLY|RDWR)', line), f"in-place write {opened}"
        if not name.startswith("rename") or not paths or ".segdex-" not in paths[0]:
            continue
        tmp, target = paths[0], paths[-1]
        if not target.startswith(str(root)):
            continue
        seen += 1
        writes = [j for j, (n, p) in enumerate(evs[:i]) if n == "write" and p and p[0] == tmp]
        last_write = max(writes, default=-1)
        synced = [j for j, (n, p) in enumerate(evs[:i]) if n in ("fsync", "fdatasync") and p and p[0] == tmp]
        synced += syncfs_calls(evs, last_write + 1, i, root, opened_before=min(writes, default=i))
        assert synced and max(synced) > last_write, f"{tmp} renamed to {target} without an fsync after its writes"
        directory = str(Path(target).parent)
        assert any(n == "fsync" and p and p[0] == directory for n, p in evs[i + 1:]) or \
            syncfs_calls(evs, i + 1, len(evs), root, opened_before=i), \
            f"{directory} not fsynced after {target} was renamed into it"
    return seen


def syncfs_calls(evs: list[tuple[str, list[str]]], start: int, end: int, root: Path, opened_before: int) -> list[int]:
    """Indexes in ``evs[start:end]`` of syncfs calls on ``root``'s filesystem through a directory opened before
    ``opened_before``."""
    device = os.stat(root).st_dev
    opened = {p[-1] for n, p in evs[:opened_before] if n == "openat" and p}
    return [j for j in range(start, end) if evs[j][0] == "syncfs" and evs[j][1] and evs[j][1][0] in opened
            and os.stat(evs[j][1][0]).st_dev == device]


def partition(root: Path) -> Path:
    batches = [build_batch(i, [(1_700_000_000_000 + i, b"k", b"v" * 300)]) for i in range(120)]
    write_partition(root / "logs", "t", 0, batches, segment_bytes=20 * len(batches[0]))
    return root / "logs" / "t-0"


# ---------------------------------------------------------------------------------------------------------------
# The order of fsync(tmp), rename, fsync(dir)


def test_rebuild_order(tmp_path):
    part = partition(tmp_path)
    proc = strace(["rebuild", "-q", str(part)], tmp_path / "trace")
    assert proc.returncode == 0, proc.stderr
    assert check_atomic_order(tmp_path / "trace", part) == 12  # .index and .timeindex of 6 segments


def test_retention_apply_order(tmp_path, kafka_fixtures):
    e = load_case(CASE)["retention"]["experiments"][1]  # retention.ms: the log start moves 0 -> 828
    log_dir = stage(tmp_path, e.get("new_log_start_offset", 0), e["high_watermark"])
    proc = strace(["retention", *exp_args(e), "--no-record", "--apply", str(log_dir)], tmp_path / "trace")
    assert proc.returncode == 0, proc.stderr
    assert check_atomic_order(tmp_path / "trace", log_dir) >= 2  # log-start-offset and leader-epoch checkpoints
    evs = events(tmp_path / "trace")
    deleted = [i for i, (n, p) in enumerate(evs) if n.startswith("rename") and p[-1].endswith(".deleted")]
    checkpoint = max(i for i, (n, p) in enumerate(evs) if n.startswith("rename")
                     and p[-1].endswith("log-start-offset-checkpoint"))
    assert deleted and checkpoint < deleted[0]  # the log start offset is durable before any segment goes
    part = str(log_dir / "events-0")
    assert any(n == "fsync" and p and p[0] == part for n, p in evs[deleted[-1] + 1:])
    check_kafka_state(log_dir, e)


def test_compact_apply_order(tmp_path):
    part = partition(tmp_path)
    rebuilt = segdex("rebuild", "-q", str(part))
    assert rebuilt.returncode == 0
    for idx in sorted(part.glob("*.index"))[:-1]:
        idx.write_bytes(idx.read_bytes() + bytes(4096))  # preallocated tails, as after a crash
    proc = strace(["compact", "--apply", str(part.parent)], tmp_path / "trace")
    assert proc.returncode == 0, proc.stderr
    assert check_atomic_order(tmp_path / "trace", part) == 5


def batch_write_trace(tmp_path: Path, dirty_limit: int | None, inject: str | None = None) -> tuple[Path, str]:
    """The executors' batched writer (``PendingWrites``), as reindex's tasks use it, over 8 files under
    strace; ``dirty_limit`` is what the machine may have dirty besides them for it to take one syncfs (None:
    more is dirty than any bound allows)."""
    bound = (f"batch_write.SYNCFS_DIRTY_LIMIT = {dirty_limit}\n" if dirty_limit is not None
             else "batch_write.syncfs_bounded = lambda dirty, batch: False\n")
    code = ("import sys\nfrom segdex.pipelines import batch_write\n"
            f"{bound}p = batch_write.PendingWrites()\n"
            "for i in range(8):\n    p.stage(f'{sys.argv[1]}/{i:020d}.index', bytes([i]) * 80)\n"
            "print(p.commit())\n")
    trace = tmp_path / "trace"
    proc = strace_python(["-c", code, str(tmp_path)], trace, inject)
    assert proc.returncode == 0, proc.stderr
    return trace, proc.stdout.strip()


def test_batch_write_order_with_one_syncfs(tmp_path):
    trace, errors = batch_write_trace(tmp_path, 1 << 50)
    assert errors == "[]"
    assert check_atomic_order(trace, tmp_path) == 8
    names = [n for n, _ in events(trace)]
    assert names.count("syncfs") == 2 and "fsync" not in names  # the files, then the directory


def test_batch_write_order_with_an_fsync_per_file_when_much_is_dirty(tmp_path):
    trace, errors = batch_write_trace(tmp_path, None)  # as when the machine has more dirty than the bound
    assert errors == "[]"
    assert check_atomic_order(trace, tmp_path) == 8
    names = [n for n, _ in events(trace)]
    assert "syncfs" not in names and names.count("fsync") == 9


def test_a_failed_syncfs_falls_back_to_an_fsync_per_file(tmp_path):
    """syncfs reporting a writeback error (EIO injected into the real call): each file is fsynced on its own,
    which names the one that failed; here none did, so all 8 are replaced."""
    trace, errors = batch_write_trace(tmp_path, 1 << 50, inject="syncfs:error=EIO")
    assert errors == "[]"
    assert check_atomic_order(trace, tmp_path) == 8
    assert sorted(p.name for p in tmp_path.glob("*.index")) == [f"{i:020d}.index" for i in range(8)]
    fsynced = [p[0] for n, p in events(trace) if n == "fsync" and p]
    assert len([p for p in fsynced if ".segdex-" in p]) == 8 and str(tmp_path) in fsynced


# ---------------------------------------------------------------------------------------------------------------
# Killed at a random system call, then re-run


def injection(seed: int, calls: dict[str, int]) -> str:
    rng = random.Random(seed)
    name = rng.choice(sorted(n for n, count in calls.items() if count))
    return f"{name}:signal=KILL:when={rng.randint(1, calls[name])}"


def call_counts(trace: Path, root: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for name, paths in events(trace):
        if paths and paths[0].startswith(str(root)):
            key = "rename" if name.startswith("rename") else name
            counts[key] = counts.get(key, 0) + 1
    return counts


@pytest.mark.parametrize("seed", SEEDS)
def test_rebuild_killed_at_a_random_call(tmp_path, seed):
    clean = partition(tmp_path / "clean")
    strace(["rebuild", "-q", str(clean)], tmp_path / "clean-trace")
    expected = {p.name: p.read_bytes() for p in clean.iterdir() if p.suffix in (".index", ".timeindex")}
    counts = call_counts(tmp_path / "clean-trace", clean)

    part = partition(tmp_path / "crash")
    what = injection(seed, counts)
    proc = strace(["rebuild", "-q", str(part)], tmp_path / "trace", inject=what)
    assert proc.returncode != 0, f"not killed by {what}"
    for p in part.iterdir():  # no partial file: each index file is absent, or whole
        if p.suffix in (".index", ".timeindex"):
            assert p.read_bytes() == expected[p.name], (what, p.name)
    proc = segdex("rebuild", "-q", str(part))
    assert proc.returncode == 0, proc.stderr
    assert {p.name: p.read_bytes() for p in part.iterdir() if p.suffix in (".index", ".timeindex")} == expected
    assert not list(part.glob(".segdex-*")), what  # the re-run removed what the crash left


@pytest.mark.parametrize("seed", SEEDS)
def test_retention_killed_at_a_random_call(tmp_path, seed, kafka_fixtures):
    e = load_case(CASE)["retention"]["experiments"][1 + seed % 4]
    args = ["retention", *exp_args(e), "--no-record", "--apply"]
    clean = stage(tmp_path / "clean", e.get("new_log_start_offset", 0), e["high_watermark"])
    strace([*args, str(clean)], tmp_path / "clean-trace")
    counts = call_counts(tmp_path / "clean-trace", clean)

    log_dir = stage(tmp_path / "crash", e.get("new_log_start_offset", 0), e["high_watermark"])
    what = injection(seed, counts)
    proc = strace([*args, str(log_dir)], tmp_path / "trace", inject=what)
    assert proc.returncode != 0, f"not killed by {what}"
    assert_broker_loadable(log_dir, e)
    proc = segdex(*args, str(log_dir))
    assert proc.returncode == 0, (what, proc.stderr)
    check_kafka_state(log_dir, e)  # Kafka's end state, no stray file (the listing is compared whole)
    assert not list(log_dir.rglob(".segdex-*")), what


def test_fixtures_present():
    assert (FIXTURES / CASE).is_dir()


# ---------------------------------------------------------------------------------------------------------------
# segdex clean --apply: Kafka's swap protocol, killed anywhere


CLEAN_NOW = 1_700_100_000_000


def compacted(root: Path) -> Path:
    """A compacted partition of five segments: keys overwritten and deleted, an idempotent producer."""
    from tests.support.compacted_partitions import compacted_partition

    rng = random.Random(2)
    while True:
        data, _ = compacted_partition(rng, 1_700_000_000_000)
        if len(data) >= 4:
            break
    part = root / "logs" / "table-0"
    part.mkdir(parents=True)
    for base, seg in data.items():
        (part / f"{base:020d}.log").write_bytes(seg)
    return part


def compacted_groups(root: Path) -> Path:
    """A compacted partition whose round is several groups: four segments of about 700 KB (every key overwritten
    in each) and an active one, cleaned with ``segment.bytes`` 1 MiB (``GROUPS_CONFIG``), so that each segment is
    a group of its own, streamed and swapped in before the next is read."""
    rng = random.Random(3)
    part = root / "logs" / "table-0"
    part.mkdir(parents=True)
    offset = 0
    for _ in range(4):
        base, batches = offset, []
        for _ in range(70):
            batches.append(build_batch(offset, [(1_700_000_000_000, f"k{rng.randrange(300)}".encode(),
                                                 rng.randbytes(1000)) for _ in range(10)]))
            offset += 10
        (part / f"{base:020d}.log").write_bytes(b"".join(batches))
    (part / f"{offset:020d}.log").write_bytes(build_batch(offset, [(1_700_000_000_000, b"last", b"x")]))
    return part


GROUPS_CONFIG = "table:segment.bytes=1048576"


def latest_values(part: Path) -> dict[bytes, bytes | None]:
    """Each key's last value in offset order, over the live segments (a compacted topic's meaning)."""
    from segdex.indexcore.record.file_records import batches, open_log
    from segdex.indexcore.record.records import records

    out: dict[bytes, bytes | None] = {}
    for log in sorted(part.glob("*.log")):
        with open_log(log) as buf:
            for batch in batches(buf, 0):
                if not batch.is_control:
                    for r in records(buf, batch):
                        out[r.key] = r.value
    return out


def clean_args(log_dir: Path, quarantine: Path, groups: bool = False) -> list[str]:
    """``groups``: for ``compacted_groups``' partition, a segment of its own per group."""
    return ["clean", "--apply", "--quarantine", str(quarantine), "--no-record", "--now", str(CLEAN_NOW),
            "--topic-config", "table:cleanup.policy=compact", *(["--topic-config", GROUPS_CONFIG] if groups else []),
            str(log_dir)]


SHAPES = {"one group": compacted, "groups": compacted_groups}


def test_clean_apply_order(tmp_path):
    """Every replaced file is in the quarantine, fsynced, before the first .cleaned file exists; .cleaned files are
    fsynced and renamed .swap before any old segment is renamed .deleted; the directory is fsynced after the
    .swap files are renamed in; the checkpoint is written last, atomically."""
    part = compacted(tmp_path)
    proc = strace(clean_args(part.parent, tmp_path / "q"), tmp_path / "trace")
    assert proc.returncode == 0, proc.stderr
    evs = events(tmp_path / "trace")
    renames = [(i, p) for i, (n, p) in enumerate(evs) if n.startswith("rename")]
    first_cleaned = min(i for i, p in renames if p[-1].endswith(".cleaned"))
    copies = [i for i, (n, p) in enumerate(evs) if n == "fsync" and p and str(tmp_path / "q") in p[0]
              and os.path.basename(p[0])[:1].isdigit()]  # the copies (the manifest is rewritten after the swap too)
    assert copies and max(copies) < first_cleaned
    swaps = [i for i, p in renames if p[-1].endswith(".swap")]
    deleted = [i for i, p in renames if p[-1].endswith(".deleted")]
    assert swaps and deleted and max(swaps) < min(deleted)
    live = [i for i, p in renames if p[0].endswith(".swap")]
    assert any(n == "fsync" and p and p[0] == str(part) for n, p in evs[max(live) + 1:])
    checkpoint = max(i for i, p in renames if p[-1].endswith("cleaner-offset-checkpoint"))
    assert checkpoint > max(live)
    assert check_atomic_order(tmp_path / "trace", part.parent) >= 1


@pytest.mark.parametrize("threads", ["1", "2"])
def test_clean_apply_order_group_by_group(tmp_path, threads, monkeypatch):
    """A round of four groups, streamed: each group's originals are in the quarantine, fsynced, before its own
    ``.cleaned`` files exist and after the group before it was swapped in (room for a group, not a round); each
    group's ``.swap`` files are renamed in before the next group's ``.cleaned`` file; the checkpoint last. On one
    thread and split over two (``SEGDEX_CLEAN_THREADS``: the groups cleaned ahead wait for their turn)."""
    monkeypatch.setenv("SEGDEX_CLEAN_THREADS", threads)
    part = compacted_groups(tmp_path)
    bases = sorted(p.name[:20] for p in part.glob("*.log"))[:-1]
    proc = strace(clean_args(part.parent, tmp_path / "q", groups=True), tmp_path / "trace")
    assert proc.returncode == 0, proc.stderr
    evs = events(tmp_path / "trace")
    renames = [(i, p) for i, (n, p) in enumerate(evs) if n.startswith("rename")]
    q = str(tmp_path / "q")
    for n, base in enumerate(bases):
        cleaned = min(i for i, p in renames if p[-1].endswith(f"{base}.log.cleaned"))
        copied = [i for i, (c, p) in enumerate(evs) if c == "fsync" and p and p[0].startswith(q)
                  and os.path.basename(p[0]).startswith(base)]
        assert copied and max(copied) < cleaned, base
        swapped_in = max(i for i, p in renames if p[0].endswith(".swap") and os.path.basename(p[0]).startswith(base))
        if n + 1 < len(bases):
            later = bases[n + 1]
            assert swapped_in < min(i for i, p in renames if p[-1].endswith(f"{later}.log.cleaned")), base
            assert swapped_in < min(i for i, (c, p) in enumerate(evs) if c == "fsync" and p and p[0].startswith(q)
                                    and os.path.basename(p[0]).startswith(later)), base
    checkpoint = max(i for i, p in renames if p[-1].endswith("cleaner-offset-checkpoint"))
    assert checkpoint > max(i for i, p in renames if p[0].endswith(".swap"))
    assert check_atomic_order(tmp_path / "trace", part.parent) >= 4


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("seed", range(8))
def test_clean_apply_killed_at_a_random_call(tmp_path, seed, shape, kafka44):
    groups = shape == "groups"
    clean = SHAPES[shape](tmp_path / "clean")
    before = latest_values(clean)
    strace(clean_args(clean.parent, tmp_path / "clean-q", groups), tmp_path / "clean-trace")
    assert latest_values(clean) == before  # the round keeps every key's last value (none expired at this clock)
    counts = call_counts(tmp_path / "clean-trace", clean)

    part = SHAPES[shape](tmp_path / "crash")
    what = injection(seed, counts)
    proc = strace(clean_args(part.parent, tmp_path / "q", groups), tmp_path / "trace", inject=what)
    assert proc.returncode != 0, f"not killed by {what}"
    # Kafka's own load of what the kill left: it finishes or rolls back the swap, and no key's value is lost
    loaded = tmp_path / "loaded" / "table-0"
    shutil.copytree(part, loaded)
    answer = kafka44.load(loaded, CLEAN_NOW)
    assert "exception" not in answer, (what, answer)
    assert not [p for p in loaded.iterdir() if p.suffix in (".cleaned", ".swap", ".deleted")], what
    assert latest_values(loaded) == before, what
    # segdex's next run finishes the same way and cleans
    proc = segdex(*clean_args(part.parent, tmp_path / "q", groups))
    assert proc.returncode == 0, (what, proc.stdout, proc.stderr)
    assert not [p for p in part.iterdir() if p.suffix in (".cleaned", ".swap", ".deleted")], what
    assert latest_values(part) == before, what
    assert not list(part.parent.rglob(".segdex-*")), what


def swap_in_renames(trace: Path) -> list[tuple[int, str]]:
    """(its count among its process's renames, the file) of each ``.swap`` renamed in, from a clean run's trace:
    strace's ``when=N`` counts a call per process."""
    counts: dict[str, int] = {}
    out = []
    for line in joined_lines(trace):
        m = CALL.match(line)
        if not m or int(m.group("ret")) < 0 or not m.group("name").startswith("rename"):
            continue
        counts[m.group("pid")] = counts.get(m.group("pid"), 0) + 1
        paths = [a or b for a, b in PATH.findall(m.group("args"))]
        if paths and paths[0].endswith(".swap"):
            out.append((counts[m.group("pid")], Path(paths[0]).name))
    return out


@pytest.mark.parametrize("shape", SHAPES)
def test_clean_apply_killed_at_each_swap_in_rename(tmp_path, shape, kafka44):
    """Killed at each ``.swap`` renamed in (the ``.log``'s, then its indexes'; with ``groups``, of every group of
    the round, the groups before it already swapped in): Kafka's load and segdex's next run rename the rest in,
    lose no value and leave no ``.swap`` (the walk over every call, scripts/crash_every_point.py, found a
    ``.txnindex.swap`` segdex left behind here)."""
    groups = shape == "groups"
    clean = SHAPES[shape](tmp_path / "clean")
    before = latest_values(clean)
    strace(clean_args(clean.parent, tmp_path / "clean-q", groups), tmp_path / "clean-trace")
    points = swap_in_renames(tmp_path / "clean-trace")
    assert len(points) >= 3 and points[0][1].endswith(".log.swap")
    if groups:  # each group's .log renamed in, the last group's indexes too
        assert len({name[:20] for _, name in points}) == 4
        points = [(w, n) for w, n in points if n.endswith(".log.swap") or n[:20] == points[-1][1][:20]]
    for when, name in points:
        root = tmp_path / f"at-{when}"
        part = SHAPES[shape](root / "crash")
        proc = strace(clean_args(part.parent, root / "q", groups), root / "trace",
                      inject=f"rename:signal=KILL:when={when}")
        assert proc.returncode != 0, f"not killed renaming {name} in"
        assert (part / name).exists(), name  # killed just before this rename
        loaded = root / "loaded" / "table-0"
        shutil.copytree(part, loaded)
        answer = kafka44.load(loaded, CLEAN_NOW)
        assert "exception" not in answer, (name, answer)
        proc = segdex(*clean_args(part.parent, root / "q", groups))
        assert proc.returncode == 0, (name, proc.stdout, proc.stderr)
        assert f"renamed {name} in" in proc.stdout, (name, proc.stdout)
        for d in (loaded, part):
            assert not [p.name for p in d.iterdir() if p.suffix in (".cleaned", ".swap", ".deleted")], (name, d)
            assert latest_values(d) == before, (name, d)
