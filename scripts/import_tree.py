"""Lay the ``segdex`` namespace out in a directory as a wheel installs it (``segdex/indexcore``, ...), as copies.

Import-graph tools (``lint-imports``) find a package's modules by walking its folder; in a checkout,
``segdex.indexcore`` and its siblings are mapped to the top-level folders by packaging, which such tools do not
follow. ``scripts/lint_imports.sh`` runs them over this copy instead, and ``scripts/mutation.sh`` mutates one.

    .venv/bin/python scripts/import_tree.py [--native] DEST
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("indexcore", "pipelines", "jobs")  # the folders package-dir maps under segdex.


def lay_out(dest: Path, native: bool = False) -> Path:
    """``dest/segdex/...``; ``native``: with the C sources and the built kernel too (the mutation run's copy)."""
    root = dest / "segdex"
    root.mkdir(parents=True)
    shutil.copy2(REPO / "segdex" / "__init__.py", root / "__init__.py")
    skipped = ("__pycache__",) if native else ("__pycache__", "*.so", "*.c", "*.h")
    for name in PACKAGES:
        shutil.copytree(REPO / name, root / name, ignore=shutil.ignore_patterns(*skipped))
    return root


if __name__ == "__main__":
    args = sys.argv[1:]
    lay_out(Path(args[-1]), native="--native" in args)
