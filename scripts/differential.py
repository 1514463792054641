"""Differential run: N generated (and damaged) partitions, each recovered by Kafka's own code and by segdex.

    .venv/bin/python -m scripts.differential [--cases 10000] [--seed 1] [--kafka 4.4.0] [--show 3]

Prints the cases by class (``v2/bitflip:attributes+crc``, ``v1/truncate``, ...) with their mismatch counts, and
a few mismatches of each class in full. Each case runs through both scan kernels (C and Python). Exit status 1
when any case mismatches. Not part of the test run (the test suite runs a few hundred Hypothesis cases per
Kafka version); the jars come from `bash scripts/test.sh`.
"""

from __future__ import annotations

import argparse
import collections
import random
import sys
import tempfile
import time
from pathlib import Path

from tests.support.kafka_harness import KAFKA_VERSIONS, KafkaInstall, KafkaOracle
from tests.support.segment_cases import Draw, generate, judge


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--kafka", action="append", help=f"Kafka version (repeatable; default {KAFKA_VERSIONS})")
    parser.add_argument("--show", type=int, default=3, help="mismatches printed per class")
    args = parser.parse_args()
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
        for kind, n in sorted(by_class.items()):
            print(f"  {kind:40} {n:6} cases  {len(bad.get(kind, [])):5} mismatches")
        for kind, lines in sorted(bad.items()):
            print(f"  -- {kind}")
            for line in lines[: args.show]:
                print(f"     {line[:400]}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
