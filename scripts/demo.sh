#!/usr/bin/env bash
# Set up the virtualenv (first run: a few minutes), then generate a sample Kafka log dir in ./sample,
# verify and reindex it with an embedded Spark, and print SQL over the Delta metadata tables.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
segdex_venv
exec .venv/bin/segdex demo "$@"
