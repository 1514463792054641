"""``segdex clean --apply`` killed at every write, fsync, rename and unlink it makes, one run per call.

Every one: strace's ``when=N`` counts each call of a process, whatever its file, so N walks all of them up to the
most one process makes (the quarantine's copies, the cleaned segments, the swap, the checkpoint, and writes to
pipes).

    .venv/bin/python -m scripts.crash_every_point [--only rename] [--limit N] [--groups]

``--groups``: the partition whose round is four groups (``compacted_groups``), each streamed and swapped in
before the next.

The suite kills it at 8 random calls (``tests/jobs/test_crash_points.py``); this walks all of them with the same
checks: the command is killed (``strace -e inject=CALL:signal=KILL:when=N``), Kafka 4.4's own load of what it
left finishes or rolls back the swap with no ``.cleaned``, ``.swap`` or ``.deleted`` file and no key's value lost,
and segdex's next run finishes, cleans, and leaves no stray file. Prints the points by call and the failures;
exit 1 when any. Not part of the test run (about two seconds a point).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.jobs.test_crash_points import (
    CALL,
    CLEAN_NOW,
    REPO,
    SHAPES,
    clean_args,
    joined_lines,
    latest_values,
    strace,
)
from tests.support.kafka_harness import KafkaInstall, KafkaOracle

STRAYS = (".cleaned", ".swap", ".deleted")


def calls_per_process(trace: Path) -> dict[str, int]:
    """Each call's most in one process of the run, whatever the file: strace's ``when=N`` counts per process."""
    per: dict[tuple[str, str], int] = {}
    for line in joined_lines(trace):
        m = CALL.match(line)
        if m and int(m.group("ret")) >= 0 and m.group("name") != "openat":
            key = (m.group("pid"), "rename" if m.group("name").startswith("rename") else m.group("name"))
            per[key] = per.get(key, 0) + 1
    out: dict[str, int] = {}
    for (_pid, name), n in per.items():
        out[name] = max(out.get(name, 0), n)
    return out


def one_point(root: Path, oracle: KafkaOracle, what: str, before: dict, groups: bool = False) -> str | None:
    """The kill at ``what`` and its checks; None when every one holds, else what failed."""
    part = SHAPES["groups" if groups else "one group"](root / "crash")
    proc = strace(clean_args(part.parent, root / "q", groups), root / "trace", inject=what)
    if proc.returncode == 0:
        return "not killed"
    loaded = root / "loaded" / "table-0"
    shutil.copytree(part, loaded)
    answer = oracle.load(loaded, CLEAN_NOW)
    if "exception" in answer:
        return f"Kafka's load failed: {answer}"
    if [p for p in loaded.iterdir() if p.suffix in STRAYS]:
        return "Kafka's load left .cleaned/.swap/.deleted files"
    if latest_values(loaded) != before:
        return "Kafka's load lost a key's value"
    proc = subprocess.run([sys.executable, "-m", "segdex.jobs.cli", *clean_args(part.parent, root / "q", groups)],
                          cwd=REPO, capture_output=True, text=True)
    if proc.returncode != 0:
        return f"the next run failed ({proc.returncode}): {proc.stderr[-300:]}"
    if [p for p in part.iterdir() if p.suffix in STRAYS] or list(part.parent.rglob(".segdex-*")):
        return "the next run left a stray file"
    if latest_values(part) != before:
        return "the next run lost a key's value"
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="one call name (write, fsync, rename, unlink, ...)")
    ap.add_argument("--limit", type=int, help="at most this many points of each call")
    ap.add_argument("--groups", action="store_true", help="a round of four groups")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="segdex-crash-") as tmp:
        base = Path(tmp)
        clean = SHAPES["groups" if args.groups else "one group"](base / "clean")
        before = latest_values(clean)
        strace(clean_args(clean.parent, base / "clean-q", args.groups), base / "clean-trace")
        counts = calls_per_process(base / "clean-trace")
        oracle = KafkaOracle(KafkaInstall("4.4.0"), base / "oracle")
        failures, done, start = [], {}, time.monotonic()
        try:
            for name, n in sorted(counts.items()):
                if args.only and name != args.only:
                    continue
                for when in range(1, min(n, args.limit or n) + 1):
                    what = f"{name}:signal=KILL:when={when}"
                    root = base / "point"
                    shutil.rmtree(root, ignore_errors=True)
                    root.mkdir()
                    failed = one_point(root, oracle, what, before, args.groups)
                    done[name] = done.get(name, 0) + 1
                    if failed:
                        failures.append(f"{what}: {failed}")
        finally:
            oracle.close()
    by_call = ", ".join(f"{k} {v}" for k, v in sorted(done.items()))
    print(f"segdex clean --apply killed at {sum(done.values())} calls ({by_call}) in {time.monotonic() - start:.0f}s: "
          f"{len(failures)} failed")
    for line in failures:
        print(f"  {line}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
