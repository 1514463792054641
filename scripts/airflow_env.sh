# Sourced after scripts/env.sh: the `airflow` extra (Airflow 3 + the Spark provider) in the same .venv as segdex,
# and a local Airflow home for trying the segdex_nightly DAG.
#
#   source scripts/env.sh && segdex_venv
#   source scripts/airflow_env.sh && segdex_airflow_extra   # installs apache-airflow into .venv when missing
#   segdex_airflow_home                                      # AIRFLOW_HOME=.airflow, DAGs from airflow_dags/
#   .venv/bin/airflow dags test segdex_nightly -c '{"log_dirs": ["sample/kafka-logs"], "spark_master": "local[2]"}'
#
# pyspark 4.2.0 and Airflow 3 coexist in one venv: the Spark provider is kept below 6.0, whose pyspark-client
# dependency would write into the same pyspark/ package (see pyproject.toml).

segdex_airflow_extra() {
  local stamp=.venv/.segdex-airflow-installed
  if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] \
      || ! .venv/bin/python -c 'import importlib.metadata as m; m.version("apache-airflow-providers-apache-spark")' 2>/dev/null; then
    segdex_pip_install_editable ".[dev,airflow]"
    touch "$stamp"
  fi
}

segdex_airflow_home() {
  export AIRFLOW_HOME="${AIRFLOW_HOME:-$PWD/.airflow}"
  export AIRFLOW__CORE__DAGS_FOLDER="${AIRFLOW__CORE__DAGS_FOLDER:-$PWD/airflow_dags}"
  export AIRFLOW__CORE__LOAD_EXAMPLES="${AIRFLOW__CORE__LOAD_EXAMPLES:-False}"
  mkdir -p "$AIRFLOW_HOME"
  if [ ! -f "$AIRFLOW_HOME/airflow.db" ]; then
    .venv/bin/airflow db migrate >/dev/null
  fi
}
