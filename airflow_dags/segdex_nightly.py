"""The ``segdex_nightly`` DAG: verify and reindex a fleet's Kafka log dirs, plan (or apply) retention, compact,
then fail the run when segments are left corrupt or unreadable.

Every Spark step is a ``spark-submit`` through the Spark provider's ``SparkSubmitOperator``; the segdex package
(``indexcore``, ``pipelines``, ``jobs``) is zipped and shipped with ``--py-files`` to any non-local master, so the
cluster needs only segdex's third-party dependencies (pyspark, pyarrow, deltalake, cramjam, google-crc32c).

Params (trigger with config to override any of them):

``log_dirs``          Kafka log dirs, or copies of them, as the Spark driver sees them
``metadata``          directory (or URI) of the Delta tables ``segments``, ``partitions``, ``runs``, ...
``spark_conn_id``     Airflow connection of type ``spark`` (host = master URL, extra ``deploy-mode``, ``queue``)
``spark_master``      when set, the master URL to use instead of the connection's (``local[4]``, ``yarn``, ...)
``spark_conf``        extra ``--conf`` settings: ``spark.executor.memory``, ``spark.executor.cores``, ...
``config``            Kafka topic config defaults for every topic (``index.interval.bytes``, ``retention.ms``, ...)
``topic_configs``     per-topic Kafka configs, ``{"orders": {"retention.ms": "259200000"}}``
``apply_retention``   delete what retention selects (renamed ``.deleted`` as Kafka does); default: only plan it
``apply_compaction``  trim bloated index files and maintain the metadata tables; false: only report
``ship_package``      ``auto`` (ship unless the master is ``local``), ``always`` or ``never`` (segdex installed)
``package``           a prebuilt ``.zip`` or pure-Python wheel to ship instead of zipping the installed sources
``pyspark_python``    Python of the driver and executors (default: this worker's interpreter)
``fail_statuses``     segment statuses that fail the quality check

Environment defaults for the params: ``SEGDEX_NIGHTLY_LOG_DIRS`` (comma separated), ``SEGDEX_METADATA``,
``SEGDEX_SPARK_CONN_ID``, ``SEGDEX_SPARK_MASTER``.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import DAG, Param, chain

from segdex.indexcore.status import FAIL_STATUSES as DEFAULT_FAIL_STATUSES

DAG_ID = "segdex_nightly"
HERE = os.path.dirname(os.path.abspath(__file__))
SPARK_APPS = os.path.join(HERE, "spark_apps")
RUN_SEGDEX_APP = os.path.join(SPARK_APPS, "run_segdex.py")
QUALITY_CHECK_APP = os.path.join(SPARK_APPS, "quality_check.py")
FAIL_STATUSES = tuple(str(s) for s in DEFAULT_FAIL_STATUSES)  # indexcore.status: one vocabulary
SHIP_MODES = ("auto", "always", "never")
# Under the params' spark_conf: Spark's INFO lines would bury segdex's report in the task log.
DEFAULT_SPARK_CONF = {"spark.log.level": "WARN"}


# ---------------------------------------------------------------------------------------------------------------
# Arguments of the segdex commands (pure functions of the params, unit-tested)
# ---------------------------------------------------------------------------------------------------------------

def _config_args(params: Mapping[str, Any]) -> list[str]:
    args: list[str] = []
    for key, value in sorted((params.get("config") or {}).items()):
        args += ["--config", f"{key}={value}"]
    for topic, configs in sorted((params.get("topic_configs") or {}).items()):
        for key, value in sorted((configs or {}).items()):
            args += ["--topic-config", f"{topic}:{key}={value}"]
    return args


def segdex_args(command: str, params: Mapping[str, Any], master: str | None = None) -> list[str]:
    """The ``segdex COMMAND ...`` argument list a task runs, from the DAG run's params.

    ``master`` (the resolved Spark master) makes retention and compact spread log dirs over Spark tasks; without
    it they work in the driver. reindex always takes spark-submit's master.
    """
    log_dirs = [str(d) for d in params["log_dirs"]]
    if not log_dirs:
        raise ValueError("params.log_dirs is empty")
    metadata = ["--metadata", str(params["metadata"])]
    spark = ["--master", master] if master else []
    if command == "reindex":
        return ["reindex", *metadata, "--no-progress", *_config_args(params), *log_dirs]
    if command == "retention":
        apply = ["--apply"] if params.get("apply_retention") else []
        return ["retention", *metadata, *apply, *spark, *_config_args(params), *log_dirs]
    if command == "compact":
        apply = ["--apply"] if params.get("apply_compaction", True) else []
        return ["compact", *metadata, *apply, *spark, *log_dirs]
    raise ValueError(f"unknown segdex command {command!r}")


def quality_check_args(params: Mapping[str, Any]) -> list[str]:
    args = ["--metadata", str(params["metadata"])]
    for log_dir in params["log_dirs"]:
        args += ["--log-dir", str(log_dir)]
    for status in params.get("fail_statuses") or FAIL_STATUSES:
        args += ["--fail-status", str(status)]
    return args


# ---------------------------------------------------------------------------------------------------------------
# Shipping the package
# ---------------------------------------------------------------------------------------------------------------

def build_package_zip(dest_dir: str) -> str:
    """Zip segdex's Python sources for ``--py-files`` (``pipelines.spark_session.package_zip``, the one place
    that packages segdex for executors); returns the zip's path."""
    from segdex.pipelines.spark_session import package_zip

    return package_zip(dest_dir)


def spark_submit_binary() -> str:
    """``$SEGDEX_SPARK_SUBMIT``, else the ``spark-submit`` beside this interpreter (pyspark's), else PATH's."""
    explicit = os.environ.get("SEGDEX_SPARK_SUBMIT")
    if explicit:
        return explicit
    beside = os.path.join(os.path.dirname(sys.executable), "spark-submit")
    if os.access(beside, os.X_OK):
        return beside
    return shutil.which("spark-submit") or "spark-submit"


# ---------------------------------------------------------------------------------------------------------------
# The operator: SparkSubmitOperator with the master/connection from params and the package shipped
# ---------------------------------------------------------------------------------------------------------------

class SegdexSparkSubmitOperator(SparkSubmitOperator):
    """``spark-submit`` of a segdex step; application args, ``--conf``, env and ``--py-files`` come from params.

    ``command`` is a segdex subcommand run through ``spark_apps/run_segdex.py`` (exit 1, "needs attention",
    passes: bad segments are rows, and the quality check decides), or ``quality_check`` for
    ``spark_apps/quality_check.py``.
    """

    template_fields: Sequence[str] = (*SparkSubmitOperator.template_fields, "spark_master", "spark_conn_id")
    ui_color = "#fcecd2"

    def __init__(self, *, command: str, spark_master: str = "{{ params.spark_master }}",
                 spark_conn_id: str = "{{ params.spark_conn_id }}", **kwargs: Any) -> None:
        application = QUALITY_CHECK_APP if command == "quality_check" else RUN_SEGDEX_APP
        kwargs.setdefault("name", f"segdex-{command.replace('_', '-')}")
        super().__init__(application=application, **kwargs)
        self.command = command
        self.spark_master = spark_master
        self.spark_conn_id = spark_conn_id

    # -- what execute() submits; split out so tests can look at the command line without running it --------------

    def prepare(self, params: Mapping[str, Any], staging_dir: str) -> None:
        """Set application args, conf, env, binary and py-files for this run's params."""
        self._conn_id = self.spark_conn_id or "spark_default"
        self._spark_binary = self._spark_binary or spark_submit_binary()
        master = self.resolved_master()
        if self.command == "quality_check":
            self.application_args = quality_check_args(params)
        else:
            self.application_args = ["--attention-ok", *segdex_args(self.command, params, master)]
        self.conf = {**DEFAULT_SPARK_CONF, **(self.conf or {}),
                     **{str(k): str(v) for k, v in (params.get("spark_conf") or {}).items()}}
        python = params.get("pyspark_python") or sys.executable
        # segdex's own zip shipping (get_spark) stays off: this operator ships, or segdex is installed.
        self.env_vars = {"PYSPARK_PYTHON": python, "PYSPARK_DRIVER_PYTHON": python, "SEGDEX_SHIP_PACKAGE": "0",
                         **(self.env_vars or {})}
        ship = params.get("ship_package") or "auto"
        if ship not in SHIP_MODES:
            raise ValueError(f"params.ship_package must be one of {SHIP_MODES}, got {ship!r}")
        if ship == "always" or (ship == "auto" and not master.startswith("local")):
            self.py_files = params.get("package") or build_package_zip(staging_dir)
        self._hook = None

    def resolved_master(self) -> str:
        return self._get_hook()._connection["master"]

    def _get_hook(self) -> SparkSubmitHook:
        hook = super()._get_hook()
        if self.spark_master:  # the param overrides the connection's master
            hook._connection["master"] = self.spark_master
            hook._is_yarn = "yarn" in self.spark_master
            hook._is_kubernetes = "k8s" in self.spark_master
            hook._should_track_driver_status = hook._resolve_should_track_driver_status()
        return hook

    def submit_command(self) -> list[str]:
        return self._get_hook()._build_spark_submit_command(self.application)

    def execute(self, context: Any) -> None:
        with tempfile.TemporaryDirectory(prefix="segdex-airflow-") as staging:
            self.prepare(context["params"], staging)
            super().execute(context)


# ---------------------------------------------------------------------------------------------------------------
# The DAG
# ---------------------------------------------------------------------------------------------------------------

def _env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name, "")
    return [v.strip() for v in value.split(",") if v.strip()] or default


PARAMS = {
    "log_dirs": Param(_env_list("SEGDEX_NIGHTLY_LOG_DIRS", ["/var/lib/kafka/data"]), type="array",
                      items={"type": "string"}, minItems=1, description="Kafka log dirs (or copies)"),
    "metadata": Param(os.environ.get("SEGDEX_METADATA", "/var/lib/segdex/metadata"), type="string", minLength=1,
                      description="directory or URI of the Delta metadata tables"),
    "spark_conn_id": Param(os.environ.get("SEGDEX_SPARK_CONN_ID", "spark_default"), type="string"),
    "spark_master": Param(os.environ.get("SEGDEX_SPARK_MASTER", ""), type="string",
                          description="overrides the connection's master when set, e.g. local[4] or yarn"),
    "spark_conf": Param({}, type="object", description='e.g. {"spark.executor.memory": "4g"}'),
    "config": Param({}, type="object", description="Kafka topic config defaults for every topic"),
    "topic_configs": Param({}, type="object", description='per topic: {"orders": {"retention.ms": "86400000"}}'),
    "apply_retention": Param(False, type="boolean", description="delete what retention selects; else plan only"),
    "apply_compaction": Param(True, type="boolean", description="trim index files and maintain tables"),
    "ship_package": Param("auto", enum=list(SHIP_MODES)),
    "package": Param("", type="string", description="prebuilt .zip or pure-Python wheel to ship"),
    "pyspark_python": Param("", type="string", description="Python of driver and executors"),
    "fail_statuses": Param(list(FAIL_STATUSES), type="array", items={"type": "string"}),
}

with DAG(
    dag_id=DAG_ID,
    description="verify + reindex Kafka log dirs, plan retention, compact, and check segment quality",
    schedule="0 2 * * *",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    dagrun_timeout=timedelta(hours=8),
    params=PARAMS,
    default_args={"owner": "segdex", "retries": int(os.environ.get("SEGDEX_NIGHTLY_RETRIES", "1")),
                  "retry_delay": timedelta(minutes=10)},
    tags=["segdex", "kafka", "spark"],
    doc_md=__doc__,
) as dag:
    reindex = SegdexSparkSubmitOperator(task_id="verify_and_reindex", command="reindex")
    retention = SegdexSparkSubmitOperator(task_id="retention", command="retention")
    compact = SegdexSparkSubmitOperator(task_id="compact", command="compact")
    # A failed check is a finding, not a flake: no retry.
    quality_check = SegdexSparkSubmitOperator(task_id="quality_check", command="quality_check", retries=0)
    chain(reindex, retention, compact, quality_check)
