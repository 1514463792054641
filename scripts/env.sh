# Sourced by the scripts: a Python 3.11+ virtualenv in .venv with segdex installed (editable, dev extras).
export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}"
export PYSPARK_PYTHON="${PYSPARK_PYTHON:-$PWD/.venv/bin/python}"
segdex_venv() {
  local py
  py="$(command -v python3.11 || command -v python3)"
  if [ ! -x .venv/bin/python ]; then
    "$py" -m venv .venv
  fi
  local stamp=.venv/.segdex-installed
  if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ setup.py -nt "$stamp" ] \
      || [ -n "$(find indexcore -name '*.c' -newer "$stamp" 2>/dev/null)" ]; then
    .venv/bin/python -m pip install -q --upgrade pip setuptools wheel
    .venv/bin/python -m pip install -q -e ".[dev]"
    touch "$stamp"
  fi
}
