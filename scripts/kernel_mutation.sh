#!/usr/bin/env bash
# A deliberate change to a C kernel, built and tested in a scratch copy: the kernels are out of mutmut's reach,
# so this shows by hand that their tests can fail (benchmarks/mutation/report.md, "The C kernels").
#   bash scripts/kernel_mutation.sh SOURCE OLD NEW TEST...
#   bash scripts/kernel_mutation.sh indexcore/log/_cleaner.c 'a < b' 'a <= b' tests/indexcore/log/test_cleaner.py
# SOURCE's first line holding OLD (a literal string, which must occur in it) gets NEW instead; the kernels are built
# in the copy (setup.py build_ext --inplace; the checkout's own built kernels are never touched), the copy's segdex/
# laid out as a wheel installs it, and pytest runs TEST... there against the changed kernel. Exits 0 when a test
# failed (the change was noticed), 1 when every test passed (a surviving change), 2 when the change could not be
# made or built. OLD equal to NEW is the control: the kernel as it is, built and tested the same way (exits 0 when
# every test passed). The scratch copy ($SEGDEX_KERNEL_MUTATION_DIR, default .mutation-kernel/) is left for a look.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$#" -ge 4 ] || { sed -n 2,10p "$0" >&2; exit 2; }
source="$1" old="$2" new="$3"
shift 3
repo="$PWD"
work="${SEGDEX_KERNEL_MUTATION_DIR:-$repo/.mutation-kernel}"
[ -f "$source" ] && grep -qF -- "$old" "$source" || { echo "'$old' is not in $source" >&2; exit 2; }
rm -rf "$work" && mkdir -p "$work"
# built kernels (*.so, symlinks among them) stay out: the copy builds its own, and nothing is written through a link
tar --exclude=./.venv --exclude=./bench-data --exclude=./sample --exclude=./.git --exclude=__pycache__ \
  --exclude='*.so' --exclude=./spark-warehouse --exclude=./mutants --exclude=./.mutation --exclude=./.mutation-kernel \
  -cf - . | tar -xf - -C "$work"
"$repo/.venv/bin/python" - "$work/$source" "$old" "$new" <<'PY'
import sys
path, old, new = sys.argv[1:]
lines = open(path).read().split("\n")
at = next(i for i, line in enumerate(lines) if old in line)
print(f"{path}:{at + 1}:\n  - {lines[at].strip()}")
lines[at] = lines[at].replace(old, new, 1)
print(f"  + {lines[at].strip()}")
open(path, "w").write("\n".join(lines))
PY
(cd "$work" && "$repo/.venv/bin/python" setup.py -q build_ext --inplace -t "$work/build" >"$work/build.log" 2>&1) \
  || { cat "$work/build.log" >&2; exit 2; }
built="$(find "$work/$(dirname "$source")" -maxdepth 1 -name "$(basename "$source" .c).*.so")"
[ -n "$built" ] || { cat "$work/build.log" >&2; echo "the changed kernel did not build" >&2; exit 2; }
(cd "$work" && "$repo/.venv/bin/python" scripts/import_tree.py --native "$work/wheel")  # with the built kernels
rm -rf "$work/segdex" && mv "$work/wheel/segdex" "$work/segdex" && rmdir "$work/wheel"
ln -s "$repo/.venv" "$work/.venv"  # Kafka's jars, for tests that read them
export SEGDEX_KAFKA_FIXTURES="$(cd "${SEGDEX_KAFKA_FIXTURES:-../shared/fixtures/kafka}" && pwd)"
module="segdex.$(dirname "$source" | tr / .).$(basename "$source" .c)"
# the copy's segdex/ comes first on the path (the editable install's finder comes after the path's entries)
loaded="$(cd "$work" && PYTHONPATH="$work" "$repo/.venv/bin/python" -c "import $module as m; print(m.__file__)")"
case "$loaded" in "$work"/*) echo "kernel under test: $loaded" ;;
  *) echo "the changed kernel is not the one imported ($loaded)" >&2; exit 2 ;; esac
code=0
(cd "$work" && PYTHONPATH="$work" PYTHONDONTWRITEBYTECODE=1 "$repo/.venv/bin/python" -m pytest -q -x \
  -p no:cacheprovider "$@" >"$work/pytest.log" 2>&1) || code=$?
grep -E "^(FAILED|ERROR)|^E  " "$work/pytest.log" | head -12 || true
tail -1 "$work/pytest.log"
if [ "$old" = "$new" ]; then
  [ "$code" = 0 ] && { echo "CONTROL: every test passed with the kernel as it is"; exit 0; }
  echo "CONTROL FAILED: a test fails with the kernel as it is ($work/pytest.log)" >&2; exit 1
fi
case "$code" in
  0) echo "SURVIVED: every test passed with the change"; exit 1 ;;
  1) echo "KILLED: a test failed with the change ($work/pytest.log)" ;;
  *) echo "pytest could not run the tests (exit $code): $work/pytest.log" >&2; exit 2 ;;
esac
