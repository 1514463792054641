#!/usr/bin/env bash
# Mutation testing of indexcore/ with cosmic-ray; not in CI (it takes long: every mutant runs the tests).
#   bash scripts/mutation.sh                          # every module of indexcore/ (hours on 2 cores)
#   bash scripts/mutation.sh atomic_file log_config   # only these modules
# Works in a scratch copy of the repository (the working tree is never mutated) and prints, per module, the
# counts and every surviving mutant: a change to the code that no test noticed. Each survivor needs a new test,
# or a line in the closing note saying why it is harmless.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
segdex_venv
.venv/bin/python -m pip show -q cosmic-ray >/dev/null 2>&1 || .venv/bin/python -m pip install -q "cosmic-ray==8.7.0"
repo="$PWD"
work="${SEGDEX_MUTATION_DIR:-/tmp/segdex-mutation}"
rm -rf "$work" && mkdir -p "$work"
tar --exclude=./.venv --exclude=./bench-data --exclude=./sample --exclude=./.git --exclude=__pycache__ -cf - . \
  | tar -xf - -C "$work"
export SEGDEX_KAFKA_FIXTURES="$(cd "${SEGDEX_KAFKA_FIXTURES:-../shared/fixtures/kafka}" && pwd)"
export PYTHONPATH="$work"  # segdex/ in the copy resolves to the copy's (mutated) indexcore/
# no bytecode: a mutant of the same size written within the same second as the last compile would otherwise run
# the cached, unmutated code (Python validates .pyc files by the source's size and whole-second mtime)
export PYTHONDONTWRITEBYTECODE=1
# indexcore's own tests, without Spark, Delta or Airflow, and without the slow random-kill crash tests;
# SEGDEX_MUTATION_TESTS narrows them (pytest arguments) for a quick pass over one module
tests="${SEGDEX_MUTATION_TESTS:-tests/test_atomic_file.py tests/test_indexcore_units.py tests/test_indexcore_fixtures.py tests/test_fastscan.py \
tests/test_segment_writer.py tests/test_bad_input.py tests/test_retention.py tests/test_retention_high_watermark.py \
tests/test_compact.py tests/test_verifier_negative.py tests/test_dump_json_fixtures.py tests/test_scan_layout.py \
tests/test_crash_points.py -k 'not killed_at'}"
if [ "$#" -gt 0 ]; then
  modules=("$@")
else
  modules=()
  for f in indexcore/*.py indexcore/scan/*.py; do
    name="${f#indexcore/}"; name="${name%.py}"
    case "$name" in __init__|scan/__init__|scan/gen_layout) continue ;; esac
    modules+=("$name")
  done
fi
cd "$work"
for m in "${modules[@]}"; do
  cfg="$work/cr-${m//\//_}.toml"
  db="$work/cr-${m//\//_}.sqlite"
  cat > "$cfg" <<TOML
[cosmic-ray]
module-path = "indexcore/$m.py"
timeout = 120.0
excluded-modules = []
test-command = "$repo/.venv/bin/python -m pytest -x -q -p no:cacheprovider $tests"

[cosmic-ray.distributor]
name = "local"
TOML
  "$repo/.venv/bin/cosmic-ray" init "$cfg" "$db" >/dev/null
  "$repo/.venv/bin/cosmic-ray" exec "$cfg" "$db" >/dev/null 2>&1
  echo "== indexcore/$m.py"
  "$repo/.venv/bin/python" - "$db" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("SELECT s.operator_name, s.start_pos_row, s.definition_name, r.test_outcome, r.diff "
                  "FROM mutation_specs s JOIN work_results r ON r.job_id = s.job_id "
                  "ORDER BY s.start_pos_row").fetchall()
counts: dict = {}
for _op, _row, _fn, outcome, _diff in rows:
    counts[outcome] = counts.get(outcome, 0) + 1
print("   ", json.dumps(counts))
for op, row, fn, outcome, diff in rows:
    if outcome == "SURVIVED":
        changed = [x.strip() for x in (diff or "").splitlines()
                   if x.startswith(("-", "+")) and not x.startswith(("---", "+++"))]
        print(f"    survived: line {row} in {fn} ({op}): " + " -> ".join(changed))
PY
done
