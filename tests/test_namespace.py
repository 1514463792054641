"""Every import goes through the ``segdex`` namespace (issue 10, point 6): the generic top-level names
``indexcore``, ``pipelines`` and ``jobs`` are never imported, so they cannot meet another distribution's
packages of the same names in a shared Spark or Airflow environment, and no module is loaded twice."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BARE = re.compile(r"^\s*(from|import)\s+(indexcore|pipelines|jobs)\b", re.M)


def test_no_source_imports_a_bare_top_level_name():
    offenders = []
    for folder in ("indexcore", "pipelines", "jobs", "airflow_dags", "benchmarks", "tests", "segdex"):
        for path in (REPO / folder).rglob("*.py"):
            if "segdex/" in str(path.relative_to(REPO)) and path.name != "__init__.py":
                continue  # the symlinked packages themselves, seen once through their own folders
            if BARE.search(path.read_text()):
                offenders.append(str(path.relative_to(REPO)))
    assert not offenders


def test_every_module_loads_once_under_segdex(tmp_path):
    code = ("import importlib, pkgutil, sys, segdex\n"
            "for pkg in ('segdex.indexcore', 'segdex.pipelines', 'segdex.jobs'):\n"
            "    p = importlib.import_module(pkg)\n"
            "    for m in pkgutil.walk_packages(p.__path__, pkg + '.'):\n"
            "        importlib.import_module(m.name)\n"
            "bare = sorted(m for m in sys.modules if m.split('.')[0] in ('indexcore', 'pipelines', 'jobs'))\n"
            "print(len([m for m in sys.modules if m.startswith('segdex.')]), bare)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    count, bare = proc.stdout.split(" ", 1)
    assert int(count) > 50 and bare.strip() == "[]"
