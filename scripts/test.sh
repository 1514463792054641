#!/usr/bin/env bash
# Set up (or refresh) the project's virtualenv, then run the linters and the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
segdex_venv
# The airflow extra (Airflow 3 + Spark provider) for the DAG tests, in the same .venv.
source scripts/airflow_env.sh
segdex_airflow_extra
# strace: the crash-point tests trace and kill writing commands at chosen system calls
if ! command -v strace >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  apt-get update -qq >/dev/null && apt-get install -y -qq strace >/dev/null
fi
# Apache Kafka's jars (a real broker and Kafka's own recovery code, for the tests that compare with Kafka)
segdex_kafka
# s3proxy's jars (a real S3-compatible server for the tests of tables on object storage)
segdex_s3proxy
.venv/bin/ruff check .
# layers enforced: jobs -> pipelines -> indexcore, indexcore without Spark/Delta, no import cycles
bash scripts/lint_imports.sh
# Two workers, each test module on one of them (its module-scoped broker or oracle JVM started once): the suite
# spends most of its time waiting on JVMs and brokers, so two workers on two cores halve it. SEGDEX_TEST_WORKERS=0
# runs it in one process.
exec .venv/bin/python -m pytest -n "${SEGDEX_TEST_WORKERS:-2}" --dist loadscope "$@"
