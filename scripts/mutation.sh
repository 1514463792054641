#!/usr/bin/env bash
# Mutation testing of indexcore/ with mutmut; not in CI (every mutant runs the tests that reach its function).
#   bash scripts/mutation.sh                          # every module of indexcore/ (about 2 h on 2 cores)
#   bash scripts/mutation.sh log/cleaner coordinator  # only these modules or rooms (indexcore/log/cleaner.py,
#                                                     # every module under indexcore/coordinator/); a bare module
#                                                     # name (cleaner) is found under indexcore/ when only one has it
#   SEGDEX_MUTATION_TESTS="tests/indexcore" bash scripts/mutation.sh log   # only these tests (paths for pytest):
#                                                     # a quicker run; what only other tests reach counts "no tests"
#   bash scripts/mutation.sh --recheck                # after new tests: the survivors of the last run again
#   bash scripts/mutation.sh --names FILE             # only the mutants FILE names or globs (one a line)
#   bash scripts/mutation.sh --sync                   # after changes to indexcore/ or tests/: what is owed
#   SEGDEX_MUTATION_EARLIER=benchmarks/mutation/report-earlier.md bash scripts/mutation.sh --sync [MODULE...]
#       # ... where that report's run settles the mutants it killed in functions unchanged since (its .hashes.json);
#       # in a new checkout this makes the scratch copy first, of the MODULEs given (the earlier report's)
#   SEGDEX_MUTATION_JOBS=1 bash scripts/mutation.sh log   # mutants run at once (default: the cores)
#   SEGDEX_MUTATION_KEEP_SURVIVORS=1 SEGDEX_MUTATION_EARLIER=... bash scripts/mutation.sh --sync
#       # ... where an earlier survivor in a function unchanged since is not run again ("survived earlier"): a
#       # sync of the changed functions only (each survivor runs every test that reaches it: the costly part)
# Works in a scratch copy of the repository (the working tree is never mutated). mutmut runs the selected tests
# once to learn which tests reach which function, then runs each mutant against those tests only, in processes
# forked from an already-loaded pytest. The tests are the ones that run indexcore in the test process itself:
# `-m "not spark and not kafka_broker and not fresh_process and not source_text"`: a SparkSession or Kafka's JVM
# cannot be shared by forked children; a fresh_process test checks what a newly started interpreter imports, and
# every process that loads a mutated module imports mutmut's trampolines and what they import; a source_text test
# reads indexcore's files as text, which in the scratch copy are mutmut's rewrites (and calls none of them). The
# slow random-kill crash tests are left out too. Code reached only by a test's subprocess counts as "no tests".
# Writes benchmarks/mutation/report.md (SEGDEX_MUTATION_REPORT): counts per module and every surviving mutant,
# a change to the code no test noticed. Each survivor needs a new test, or a line in the report saying why.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
segdex_venv
.venv/bin/python -m pip show -q mutmut >/dev/null 2>&1 || .venv/bin/python -m pip install -q "mutmut==3.8.1"
repo="$PWD"
work="${SEGDEX_MUTATION_DIR:-$repo/.mutation}"  # kept between runs: --recheck goes on from it
report="${SEGDEX_MUTATION_REPORT:-$repo/benchmarks/mutation/report.md}"
export SEGDEX_KAFKA_FIXTURES="$(cd "${SEGDEX_KAFKA_FIXTURES:-../shared/fixtures/kafka}" && pwd)"
export PYTHONDONTWRITEBYTECODE=1
# once mutmut has timed the tests, each mutant runs the quickest ones first, and a test its mutant makes loop ends
# after 10 s of CPU plus 30 times its measured time, by SIGXCPU (a timeout; tests/conftest.py)
export SEGDEX_TEST_ORDER="$work/mutants/mutmut-stats.json"
# SEGDEX_MUTATION_EARLIER: an earlier report; a mutant it shows killed, in a function unchanged since the source
# this scratch copy started from, keeps that result ("killed earlier") instead of being run again
# (the function hashes of the source that report ran on: REPORT.hashes.json beside it, written with every report;
# else the scratch copy's own first hashes)
earlier=()
if [ -n "${SEGDEX_MUTATION_EARLIER:-}" ]; then
  earlier_report="$(cd "$(dirname "$SEGDEX_MUTATION_EARLIER")" && pwd)/$(basename "$SEGDEX_MUTATION_EARLIER")"
  earlier_hashes="${earlier_report%.md}.hashes.json"
  [ -f "$earlier_hashes" ] || earlier_hashes="$work/source-hashes.json"
  earlier=(--earlier "$earlier_report" --source-hashes "$earlier_hashes")
fi

hashes() {  # mutmut's function hashes of the scratch copy's source, by module
  (cd "$work" && "$repo/.venv/bin/python" -c 'import glob, json
print(json.dumps({p[15:-8]: json.load(open(p))["hash_by_function_name"]
                  for p in glob.glob("mutants/segdex/indexcore/**/*.py.meta", recursive=True)}, sort_keys=True))')
}

watchdog() {  # mutmut's limit counts CPU seconds: a mutant blocked in open() (a FIFO opened without O_NONBLOCK)
  # never reaches it. After 4 minutes of wall time with under 5 s of CPU, a mutant's process gets SIGXCPU, the
  # signal mutmut's limit sends (so it counts as a timeout); each such kill is logged in $work/watchdog.log.
  while sleep 20; do
    ps -eo pid=,etimes=,times=,args= | while read -r pid wall cpu tag name _; do
      if [ "$tag" = "mutmut:" ] && [ "$wall" -gt 240 ] && [ "$cpu" -lt 5 ]; then
        echo "$(date +%FT%T) SIGXCPU $name after ${wall} s, ${cpu} s of CPU" >> "$work/watchdog.log"
        kill -XCPU "$pid" 2>/dev/null || true
      fi
    done
  done
}

run_and_report() {  # LOG MODULES -- MUTANT-NAMES...: mutmut run in $work, then the report over MODULES
  local log="$1" modules=() started
  shift
  while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do modules+=("$1"); shift; done
  shift
  cd "$work"
  started=$(date +%s)
  watchdog & local dog=$!
  "$repo/.venv/bin/mutmut" run --max-children "${SEGDEX_MUTATION_JOBS:-$(nproc)}" "$@" > "$work/$log" 2>&1 || {
    kill "$dog"; tail -c 4000 "$work/$log" | tr '\r' '\n' | tail -30; exit 1; }
  kill "$dog"
  mkdir -p "$(dirname "$report")"
  # the function hashes of the source this scratch copy started from (what SEGDEX_MUTATION_EARLIER ran on)
  [ -f "$work/source-hashes.json" ] || hashes > "$work/source-hashes.json"
  "$repo/.venv/bin/python" "$repo/scripts/mutation_report.py" --seconds $(( $(date +%s) - started )) \
    "${earlier[@]}" --out "$report" "${modules[@]}"
  hashes > "${report%.md}.hashes.json"  # what the report's results hold for (the next run's earlier hashes)
  echo "report: $report"
}

take_tests() {  # the repository's tests into the scratch copy; mutmut times them again (which test reaches what)
  rm -rf "$work/tests" && cp -r tests "$work/tests" && rm -rf "$work/mutants/tests"
  rm -f "$work/mutants/mutmut-stats.json"
}

module_path() {  # a module argument (log/cleaner, log/cleaner.py, cleaner, log, log/, coordinator) as a path
  # under indexcore/ without .py: a module (log/cleaner) or a room, ending in / (log/)
  local m="${1#indexcore/}" found
  m="${m%.py}"
  if [ -d "indexcore/${m%/}" ]; then echo "${m%/}/"; return 0; fi
  if [ -f "indexcore/$m.py" ]; then echo "$m"; return 0; fi
  mapfile -t found < <(cd indexcore && find . -name "$(basename "$m").py" -not -path '*/__pycache__/*' | sed 's|^\./||')
  if [ "${#found[@]}" -eq 1 ]; then echo "${found[0]%.py}"; return 0; fi
  echo "scripts/mutation.sh: no single module of indexcore/ is named '$1' (${found[*]:-none})" >&2
  return 1
}

make_scratch() {  # a fresh scratch copy of the repository, set up for mutmut; ARGS: module paths (module_path)
  rm -rf "$work" && mkdir -p "$work"
  tar --exclude=./.venv --exclude=./bench-data --exclude=./sample --exclude=./.git --exclude=__pycache__ \
    --exclude=./spark-warehouse --exclude=./mutants --exclude='./.mutation*' -cf - . | tar -xf - -C "$work"
  # segdex/ laid out as a wheel installs it (copies of indexcore/, pipelines/, jobs/, the built kernel included):
  # mutating segdex/indexcore names the mutants after the modules the tests import (segdex.indexcore.X), which is
  # what mutmut's trampolines compare against
  rm -rf "$work/segdex" && .venv/bin/python scripts/import_tree.py --native "$work"
  kernel="$(cd indexcore/log/scan && ls _fastscan*.so)"
  local only="" tests="" m t
  for m in "$@"; do  # only the named modules are mutated (mutmut's only_mutate): generating them is quicker
    case "$m" in */) only+="\"segdex/indexcore/$m*\", " ;; *) only+="\"segdex/indexcore/$m.py\", " ;; esac
  done
  for t in ${SEGDEX_MUTATION_TESTS:-tests}; do tests+="\"$t\", "; done
  cat >> "$work/pyproject.toml" <<TOML

[tool.mutmut]
source_paths = ["segdex/indexcore"]
also_copy = ["segdex/__init__.py", "segdex/pipelines", "segdex/jobs", "pipelines", "jobs", "scripts", "airflow_dags",
             "README.md", "segdex/indexcore/log/scan/$kernel", "segdex/indexcore/log/scan/_fastscan.c",
             "segdex/indexcore/log/scan/_layout.h"]
pytest_add_cli_args = ["-p", "no:cacheprovider", "-p", "no:xdist", "-m", "not spark and not kafka_broker and not fresh_process and not source_text",
                       "-k", "not killed_at"]
pytest_add_cli_args_test_selection = [${tests%, }]
TOML
  [ -z "$only" ] || echo "only_mutate = [${only%, }]" >> "$work/pyproject.toml"
  mkdir -p "$work/mutants" && ln -s segdex/indexcore "$work/mutants/indexcore"
  # Kafka's jars (.venv/kafka), for the tests that compare with Kafka's own tools
  ln -s "$repo/.venv" "$work/.venv" && ln -s "$repo/.venv" "$work/mutants/.venv"
  # No PYTHONPATH to the mutants: a test's subprocess started outside mutants/ imports the unmutated package (in
  # mutmut's stats pass it could not find mutmut's configuration); one started in mutants/ runs the active mutant.
}

if [ "${1:-}" = "--recheck" ]; then
  # A second pass after new tests: the same scratch copy with the repository's tests now, stats taken again, and
  # only the mutants that survived, had no test, timed out or were not run yet run (again); killed ones keep
  # their result.
  shift
  [ -d "$work/mutants" ] || { echo "no earlier run in $work" >&2; exit 2; }
  take_tests
  mapfile -t again < <(cd "$work" && "$repo/.venv/bin/python" "$repo/scripts/mutation_report.py" --out /dev/null \
    --names "survived,no tests,timeout,suspicious,not checked,check was interrupted by user")
  echo "rechecking ${#again[@]} mutants"
  run_and_report mutmut-recheck.log "$@" -- "${again[@]}"
  exit 0
fi
if [ "${1:-}" = "--names" ]; then
  # Chosen mutants (names or globs, one a line; say, an earlier report's survivors) in the existing scratch copy;
  # the others keep their status. The copy takes the repository's tests first when they changed (and mutmut times
  # them again, to know which tests reach which function).
  [ -d "$work/mutants" ] && [ -f "${2:-}" ] || { echo "usage: --names FILE, after a first run in $work" >&2; exit 2; }
  if ! diff -rq -x __pycache__ tests "$work/tests" >/dev/null; then
    take_tests
  fi
  mapfile -t chosen < <(grep -v '^[[:space:]]*$' "$2")
  echo "running ${#chosen[@]} named mutants"
  run_and_report mutmut-names.log -- "${chosen[@]}"
  exit 0
fi
if [ "${1:-}" = "--sync" ]; then
  # After changes to indexcore/ or tests/: the scratch copy takes the repository's source and tests; mutmut
  # generates the mutants of changed functions again (their results reset) and times the tests again on a first
  # mutant; then every mutant still owed runs: survived, no tests, or not checked and not settled earlier.
  shift
  if [ ! -d "$work/mutants" ]; then  # a new checkout: SEGDEX_MUTATION_EARLIER's results carry over; MODULES
    # (as for a first run) limit the copy to the earlier report's modules, else every module is mutated
    paths=()
    for m in "$@"; do p="$(module_path "$m")" || exit 2; paths+=("$p"); done
    make_scratch "${paths[@]}"
  fi
  # (into segdex/indexcore, the copy mutmut mutates, and indexcore/, the checkout's layout beside it)
  (cd indexcore && find . -name '*.py') | while read -r f; do
    for to in "$work/segdex/indexcore/$f" "$work/indexcore/$f"; do
      cmp -s "indexcore/$f" "$to" || { mkdir -p "$(dirname "$to")" && cp "indexcore/$f" "$to"; }
    done
  done
  # the code the tests run beside indexcore (not mutated; mutmut copies it into mutants/ again at each run): the
  # checkout's, so that the tests taken below meet the code they were written for
  for d in pipelines jobs scripts airflow_dags; do
    rm -rf "$work/$d" && cp -r "$d" "$work/$d"
    case "$d" in pipelines|jobs) rm -rf "$work/segdex/$d" && cp -r "$d" "$work/segdex/$d" ;; esac
  done
  take_tests
  first=$(cd "$work" && "$repo/.venv/bin/python" "$repo/scripts/mutation_report.py" --out /dev/null --names killed \
          | sed -n 1p)
  # mutmut generates the mutants and times the tests before it runs the first named one; in a new scratch copy
  # none is generated yet, so it is asked for a name none has, and fails after those steps
  (cd "$work" && "$repo/.venv/bin/mutmut" run --max-children "${SEGDEX_MUTATION_JOBS:-$(nproc)}" \
     "${first:-segdex.indexcore.no_such_module.*}" > "$work/mutmut-sync-stats.log" 2>&1) || {
    [ -z "$first" ] && grep -q "nothing matches" "$work/mutmut-sync-stats.log" || {
      tail -c 4000 "$work/mutmut-sync-stats.log" | tr '\r' '\n' | tail -30; exit 1; }; }
  mapfile -t owed < <(cd "$work" && "$repo/.venv/bin/python" "$repo/scripts/mutation_report.py" --out /dev/null \
    --pending ${SEGDEX_MUTATION_KEEP_SURVIVORS:+--keep-survivors} "${earlier[@]}")
  echo "running ${#owed[@]} mutants still owed"
  run_and_report mutmut-sync.log -- "${owed[@]}"
  exit 0
fi
paths=() globs=()
for m in "$@"; do
  p="$(module_path "$m")" || exit 2
  paths+=("$p")
  p="${p%/}"
  globs+=("segdex.indexcore.${p//\//.}.*")
done
make_scratch "${paths[@]}"
run_and_report mutmut-run.log "${paths[@]}" -- "${globs[@]}"
