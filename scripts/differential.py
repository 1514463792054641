"""Differential run: N generated (and damaged) partitions, each recovered by Kafka's own code and by segdex.

    .venv/bin/python -m scripts.differential [--cases 10000] [--seed 1] [--kafka 4.4.0] [--show 3]
    .venv/bin/python -m scripts.differential --cleaner [--cases 2000] [--codecs 0,0,1,2,3,4] [--split 4]
    .venv/bin/python -m scripts.differential --preview [--cases 300]

With ``--cleaner`` the cases are compacted partitions cleaned two rounds each by Kafka 4.4's own cleaner and by
segdex (``tests.support.cleaner_cases``): every cleaned file byte for byte, the cleaner's view and end offsets, or
the exception where Kafka's round throws. A quarter of them draw ``min.compaction.lag.ms`` and small
``segment.index.bytes`` too, a quarter put ``segment.index.bytes`` at the edge of a merge (where Kafka's round can
outgrow a merged segment's index and throw), a quarter are logs of the v0 and v1 message formats (which Kafka
4.4's cleaner rewrites as v2 batches; keyless records among them; in half of them one compressed wrapper's inner
messages are flawed before the start, ``malform_wrapper``, which Kafka's load or round may refuse); one case in
five has a damaged batch below the recovery point of a clean start, which the cleaner meets as it is (a CRC, magic
byte, size field or compression id damaged, a size field inside the batch and below its fields, one past a v2
header but short of its records, or the segment cut in it; the rest split as before). The damaged cases
and the wide ones that are not at a merge's edge also draw the cleaner's read buffer (its start, the topic's
``max.message.bytes``, the broker's ``message.max.bytes``), which decides what a damaged batch throws.

With ``--preview`` the cases are damaged compacted partitions (``tests.support.preview_cases``) whose next start,
clean or unclean, ``verify``'s startup preview foretells and Kafka 4.4's own ``LogLoader`` makes: whether the start
fails, else the log end offset it serves.

Prints the cases by class (``v2/bitflip:attributes+crc``, ``v1/truncate``, ...) with their mismatch counts, and
a few mismatches of each class in full. Each case runs through both scan kernels (C and Python). Exit status 1
when any case mismatches. Not part of the test run (the test suite runs a few hundred Hypothesis cases per
Kafka version); the jars come from `bash scripts/test.sh`.
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import sys
import tempfile
import time
from pathlib import Path

from segdex.indexcore.log.cleaner import THREADS_ENV, default_threads
from tests.support.cleaner_cases import DRAWN_DAMAGES, CleanerVerdict, judge_cleaning
from tests.support.kafka_harness import KAFKA_VERSIONS, KafkaInstall, KafkaOracle
from tests.support.preview_cases import judge_preview
from tests.support.segment_cases import Draw, generate, judge


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--kafka", action="append", help=f"Kafka version (repeatable; default {KAFKA_VERSIONS})")
    parser.add_argument("--show", type=int, default=3, help="mismatches printed per class")
    parser.add_argument("--cleaner", action="store_true", help="the log cleaner's rounds (Kafka 4.4.0)")
    parser.add_argument("--preview", action="store_true", help="verify's startup preview (Kafka 4.4.0's load)")
    parser.add_argument("--codecs", default="0,0,1,2,3,4",
                        help="--cleaner: the data batches' codecs drawn from (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd)")
    parser.add_argument("--split", type=int, default=None, metavar="THREADS",
                        help="--cleaner: segdex's rounds split over this many threads (the offset map's build and the "
                             "groups' cleaning: SEGDEX_CLEAN_THREADS); 1: the one-thread round; default: "
                             "SEGDEX_CLEAN_THREADS, else the cores this process may use, as segdex clean")
    args = parser.parse_args()
    if args.split is not None:
        os.environ[THREADS_ENV] = str(max(1, args.split))
    if args.preview:
        return preview_run(args.cases, args.seed, args.show)
    if args.cleaner:
        threads = default_threads()
        print(f"segdex's cleaning rounds split over {threads} threads" if threads > 1
              else "segdex's cleaning rounds on one thread")
        codecs = tuple(int(c) for c in args.codecs.split(","))
        return cleaner_run(args.cases, args.seed, args.show, codecs)
    failed = False
    for version in args.kafka or KAFKA_VERSIONS:
        with tempfile.TemporaryDirectory(prefix="segdex-diff-") as tmp:
            oracle = KafkaOracle(KafkaInstall(version), Path(tmp) / "oracle")
            by_class: collections.Counter[str] = collections.Counter()
            bad: dict[str, list[str]] = collections.defaultdict(list)
            start = time.monotonic()
            try:
                for i in range(args.cases):
                    seed = args.seed * 1_000_003 + i
                    case = generate(Draw.from_random(random.Random(seed)))
                    by_class[case.kind] += 1
                    for native in (True, False):  # the C scan kernel and its Python twin
                        verdict = judge(case, oracle, Path(tmp) / "case", native=native)
                        if verdict.mismatches:
                            kernel = "native" if native else "python"
                            bad[case.kind].append(f"seed {seed} ({kernel}): {'; '.join(verdict.mismatches)}")
            finally:
                oracle.close()
            elapsed = time.monotonic() - start
        mismatched = sum(len(v) for v in bad.values())
        failed |= mismatched > 0
        print(f"Kafka {version}: {args.cases} cases in {elapsed:.0f}s, {mismatched} mismatches")
        print_classes(by_class, bad, args.show, 400)
    return 1 if failed else 0


def cleaner_run(cases: int, seed: int, show: int, codecs: tuple[int, ...]) -> int:
    """``--cleaner``: the cases against Kafka 4.4.0's cleaner, their mismatches by class, what they covered."""
    by_class: collections.Counter[str] = collections.Counter()
    bad: dict[str, list[str]] = collections.defaultdict(list)
    total = CleanerVerdict()
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="segdex-diff-") as tmp:
        oracle = KafkaOracle(KafkaInstall("4.4.0"), Path(tmp) / "oracle")
        try:
            for i in range(cases):
                case_seed = seed * 1_000_003 + i
                # base, wide, tight, v0/v1 and damaged cases in turn
                k = i % 5
                wide, tight, damage = k in (1, 2, 3), k == 2, k == 4
                magic = (2, 2, 2, i // 5 % 2, (2, 2, 1)[i // 5 % 3])[k]
                wrapper = k == 3 and i // 10 % 2 == 1  # half the v0/v1 cases: a wrapper's inner messages flawed
                v = judge_cleaning(random.Random(case_seed), oracle, Path(tmp) / "case", codecs, wide, tight, magic,
                                   damage, buffers=k in (1, 3, 4), damages=DRAWN_DAMAGES, wrapper=wrapper)
                by_class[v.kind] += 1
                total.add(v)
                if v.mismatches:
                    bad[v.kind].append(f"seed {case_seed} (wide={wide}, tight={tight}, magic={magic}, "
                                       f"damage={damage}): {'; '.join(v.mismatches)}")
        finally:
            oracle.close()
    mismatched = sum(len(v) for v in bad.values())
    print(f"Kafka 4.4.0's cleaner: {cases} cases in {time.monotonic() - start:.0f}s, {mismatched} mismatches")
    print(f"  rounds {total.rounds}, batches rebuilt {total.rebuilt} (recompressed by codec {total.recompressed}), "
          f"rounds the offset map cut short {total.full}, segments grouped {total.grouped}, "
          f".txnindex files {total.txn_files}, batches left empty {total.emptied}")
    for kind, n in sorted(total.threw.items()):
        print(f"  rounds Kafka's cleaner and segdex's both failed with {kind}: {n}")
    print_classes(by_class, bad, show)
    return 1 if mismatched else 0


def preview_run(cases: int, seed: int, show: int) -> int:
    """``--preview``: the cases against Kafka 4.4.0's load, by class (the damage, a clean or unclean start, whether
    Kafka's start failed), with their mismatches."""
    by_class: collections.Counter[str] = collections.Counter()
    bad: dict[str, list[str]] = collections.defaultdict(list)
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="segdex-diff-") as tmp:
        oracle = KafkaOracle(KafkaInstall("4.4.0"), Path(tmp) / "oracle")
        try:
            for i in range(cases):
                case_seed = seed * 1_000_003 + i
                v = judge_preview(random.Random(case_seed), oracle, Path(tmp) / "case")
                kind = f"{v.kind}{' (Kafka fails)' if v.kafka_fails else ''}"
                by_class[kind] += 1
                if v.mismatch:
                    bad[kind].append(f"seed {case_seed}: {v.mismatch}")
        finally:
            oracle.close()
    mismatched = sum(len(v) for v in bad.values())
    print(f"Kafka 4.4.0's load: {cases} cases in {time.monotonic() - start:.0f}s, {mismatched} mismatches")
    print_classes(by_class, bad, show)
    return 1 if mismatched else 0


def print_classes(by_class: collections.Counter[str], bad: dict[str, list[str]], show: int, width: int = 600) -> None:
    """The cases by class with their mismatch counts, then up to ``show`` mismatches of each class (``width``
    characters each)."""
    for kind, n in sorted(by_class.items()):
        print(f"  {kind:40} {n:6} cases  {len(bad.get(kind, [])):5} mismatches")
    for kind, lines in sorted(bad.items()):
        print(f"  -- {kind}")
        for line in lines[:show]:
            print(f"     {line[:width]}")


if __name__ == "__main__":
    sys.exit(main())
