"""segdex.jobs.cli: what the command's process is before any subcommand runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def _threads_after_numpy(preamble: str) -> int:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    code = f"{preamble}\nimport os, numpy\nprint(len(os.listdir('/proc/self/task')))"
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    return int(proc.stdout.split()[-1])


def test_numpy_starts_no_openblas_threads_under_the_command():
    """OpenBLAS would start a spinning thread per core beside the scan's workers (0.1 s of CPU on 2 cores)."""
    assert _threads_after_numpy("import segdex.jobs.cli") == 1
    if (os.cpu_count() or 1) > 1:  # what the setting prevents
        assert _threads_after_numpy("") > 1


def test_a_user_setting_for_openblas_stays():
    code = "import os\nos.environ['OPENBLAS_NUM_THREADS'] = '3'\nimport segdex.jobs.cli\n" \
           "print(os.environ['OPENBLAS_NUM_THREADS'])"
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert proc.stdout.split() == ["3"], proc.stderr


def test_help_says_where_topic_configs_come_from(capsys):
    """cleanup.policy decides what clean and retention touch: each command that resolves topic configs names their
    sources, highest first, in its --help."""
    from segdex.jobs.cli import main

    for command in ("rebuild", "reindex", "verify", "recover", "retention", "clean"):
        assert main([command, "--help"]) == 0
        text = " ".join(capsys.readouterr().out.split())
        assert "Topic configs (cleanup.policy, retention.ms" in text, command
        assert "Kafka's defaults (cleanup.policy=delete)." in text, command
        assert "exit status: 0 clean; 1 something needs attention" in text, command
