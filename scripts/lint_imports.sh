#!/usr/bin/env bash
# The import contracts of pyproject.toml ([tool.importlinter]) checked by lint-imports over a copy of the package
# laid out as a wheel installs it: lint-imports walks segdex/'s folder, which in a checkout holds only __init__.py.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
.venv/bin/python scripts/import_tree.py "$tree"
cd "$tree"
PYTHONPATH="$tree" "$repo/.venv/bin/lint-imports" "$repo/pyproject.toml" --no-cache "$@"
