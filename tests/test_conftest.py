"""The suite's own set-up for the mutation run (tests/conftest.py): a test a mutant makes loop is ended."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CASES = '''
import time

def test_quick():
    assert sum(range(1000)) == 499500

def test_loops():
    while True:
        pass

def test_waits():
    time.sleep(1)

def test_busy():
    start = time.process_time()
    while time.process_time() - start < 1.0:
        pass
'''


def _run(tmp_path: Path, test: str, measured: dict[str, float] | None) -> subprocess.CompletedProcess:
    """``test`` of CASES in a pytest of its own with the suite's conftest as a plugin, as mutmut's child runs it:
    SEGDEX_TEST_ORDER names mutmut's stats file (``measured``: seconds by test id) or a file not there yet."""
    (tmp_path / "test_cases.py").write_text(CASES)
    stats = tmp_path / "mutmut-stats.json"
    if measured is not None:
        stats.write_text(json.dumps({"duration_by_test": measured}))
    env = dict(os.environ, SEGDEX_TEST_ORDER=str(stats), SEGDEX_TEST_CPU_FLOOR="0.5", PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest",
         "--rootdir", str(tmp_path), f"{tmp_path}/test_cases.py::{test}"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)


def test_a_looping_test_of_the_mutation_run_ends_by_sigxcpu_as_mutmuts_limit(tmp_path):
    """A test past its CPU limit (the floor, 0.5 s, plus 30 times its measured 0.01 s) ends its process by
    SIGXCPU, which mutmut counts a timeout; a quick test passes under the same limit."""
    measured = {"test_cases.py::test_loops": 0.01, "test_cases.py::test_quick": 0.01}
    looped = _run(tmp_path, "test_loops", measured)
    assert looped.returncode == -signal.SIGXCPU, looped.stdout[-2000:] + looped.stderr[-2000:]
    quick = _run(tmp_path, "test_quick", measured)
    assert quick.returncode == 0, quick.stdout[-2000:]


def test_the_limit_counts_cpu_time_from_the_measured_time_once_the_tests_are_timed(tmp_path):
    """1 s of CPU passes under the limit of a test measured at 0.05 s (2 s), and before mutmut's stats file
    exists (its timing run: no limit); it ends by SIGXCPU past the floor alone. Waiting 1 s takes no CPU."""
    assert _run(tmp_path, "test_busy", {"test_cases.py::test_busy": 0.05}).returncode == 0
    assert _run(tmp_path, "test_busy", None).returncode == 0
    assert _run(tmp_path, "test_busy", {}).returncode == -signal.SIGXCPU
    assert _run(tmp_path, "test_waits", {}).returncode == 0
