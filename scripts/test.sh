#!/usr/bin/env bash
# Set up (or refresh) the project's virtualenv, then run the linters and the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
segdex_venv
.venv/bin/ruff check .
exec .venv/bin/python -m pytest "$@"
