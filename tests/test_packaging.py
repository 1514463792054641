"""The ``segdex`` namespace is made by packaging alone (issue 26, point 5; issue 10, point 6).

``indexcore/``, ``pipelines/`` and ``jobs/`` install as ``segdex.indexcore``, ``segdex.pipelines`` and
``segdex.jobs`` through ``package-dir`` in ``pyproject.toml``: no symlink and no ``sys.path`` edit anywhere in the
repository, every package folder listed, the generic top-level names never imported, and a built wheel holding
the same tree the editable install imports.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
import zipfile

from tests.support.fixtures import REPO_ROOT

REPO = REPO_ROOT
BARE = re.compile(r"^\s*(from|import)\s+(indexcore|pipelines|jobs)\b", re.M)
SOURCE_FOLDERS = ("indexcore", "pipelines", "jobs", "airflow_dags", "benchmarks", "tests", "segdex", "scripts")
MAPPED = {"indexcore": "segdex.indexcore", "pipelines": "segdex.pipelines", "jobs": "segdex.jobs"}


def _tracked() -> list[str]:
    return subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()


def test_no_symlink_in_the_repository():
    links = [p for p in _tracked() if (REPO / p).is_symlink()]
    assert links == []


def test_no_sys_path_edit_in_the_repository():
    edits = re.compile(r"sys\.path\.(insert|append|extend)|sys\.path\s*[+]?=|site\.addsitedir")
    offenders = [p for p in _tracked() if p.endswith(".py") and p != "tests/test_packaging.py"
                 and edits.search((REPO / p).read_text())]
    assert offenders == []


def test_no_source_imports_a_bare_top_level_name():
    offenders = [str(path.relative_to(REPO)) for folder in SOURCE_FOLDERS for path in (REPO / folder).rglob("*.py")
                 if BARE.search(path.read_text())]
    assert offenders == []


def test_every_package_folder_is_listed_in_pyproject():
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {"segdex"}
    for folder, name in MAPPED.items():
        for init in (REPO / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(REPO / folder)
            found.add(".".join([name, *rel.parts]))
    assert listed == found


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
    assert int(count) > 70 and bare.strip() == "[]"


def test_a_built_wheel_holds_the_tree_the_checkout_imports(tmp_path):
    """``pip install .`` gets the same modules, under segdex/, as the editable install maps from the folders."""
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(tmp_path), str(REPO)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    (wheel,) = tmp_path.glob("segdex-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {"segdex/__init__.py"}
    for folder, name in MAPPED.items():
        for path in (REPO / folder).rglob("*.py"):
            expected.add("/".join([*name.split("."), *path.relative_to(REPO / folder).parts]))
    assert expected <= names, sorted(expected - names)
    assert "segdex/indexcore/log/scan/_layout.h" in names
    assert any(n.startswith("segdex/indexcore/log/scan/_fastscan") and n.endswith(".so") for n in names)
    # installed (a wheel is unpacked as it is installed): the modules import from it, the C kernel included
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = ("import segdex.indexcore.log.log_segment as m, segdex.jobs.cli, segdex.pipelines.scan\n"
            "from segdex.indexcore.log import scan\n"
            "print(m.__file__, scan.native_available())\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=site, env={**os.environ, "PYTHONPATH": str(site)},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    where, native = proc.stdout.split()
    assert where == str(site / "segdex" / "indexcore" / "log" / "log_segment.py") and native == "True"
