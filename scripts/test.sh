#!/usr/bin/env bash
# Set up (or refresh) the project's virtualenv, then run the linters and the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
segdex_venv
# The airflow extra (Airflow 3 + Spark provider) for the DAG tests, in the same .venv.
source scripts/airflow_env.sh
segdex_airflow_extra
.venv/bin/ruff check .
exec .venv/bin/python -m pytest "$@"
