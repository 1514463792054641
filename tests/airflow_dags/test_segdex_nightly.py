"""The ``segdex_nightly`` DAG (needs the ``airflow`` extra): DagBag loads it with no import errors, its tasks and
params, the spark-submit command lines it builds, and two whole runs with ``dag.test()`` on a generated sample
log dir (Spark in local mode, a SQLite Airflow database in a temporary AIRFLOW_HOME): one clean, one with a
corrupted segment that the quality check must fail. Then its reindex task alone against a real Spark standalone
master and worker (``spark_cluster.StandaloneCluster``), the package shipped to the executor as a zip.

Airflow reads AIRFLOW_HOME when it is first imported, so nothing here imports it before the ``airflow_env``
fixture has set the environment.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest

from tests.support.fixtures import REPO_ROOT
from tests.support.spark_cluster import StandaloneCluster

REPO = REPO_ROOT
DAGS = REPO / "airflow_dags"
DAG_ID = "segdex_nightly"
TASKS = {"verify_and_reindex", "retention", "compact", "quality_check"}
CONN_ID = "segdex_test_spark"

pytestmark = [pytest.mark.spark, pytest.mark.skipif(
    importlib.util.find_spec("airflow") is None,
    reason="Airflow is not installed: pip install -e '.[airflow]' (scripts/test.sh installs it)")]


@pytest.fixture(scope="module")
def airflow_env():
    """A temporary AIRFLOW_HOME with a migrated SQLite database, set before Airflow is first imported (once)."""
    if "airflow" in sys.modules:
        pytest.fail("airflow was imported before the airflow_env fixture set AIRFLOW_HOME")
    home = tempfile.mkdtemp(prefix="segdex-airflow-home-")
    env = {
        "AIRFLOW_HOME": home,
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db",
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        # A connection of type spark whose host is the master URL, as configured in the UI.
        f"AIRFLOW_CONN_{CONN_ID.upper()}": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        "SEGDEX_NIGHTLY_RETRIES": "0",  # a failing task fails the test run now, not after a retry delay
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
    }
    saved = {k: os.environ.get(k) for k in env}
    root = logging.getLogger()
    saved_logging = (root.handlers[:], root.level)
    os.environ.update(env)
    try:
        subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], check=True, capture_output=True,
                       text=True, timeout=600)
        yield home
    finally:
        # Airflow points the root logger at the stream pytest captured; later loggers (py4j's at exit) must not.
        root.handlers[:], _ = saved_logging
        root.setLevel(saved_logging[1])
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="module")
def dagbag(airflow_env):
    from airflow.models import DagBag

    return DagBag(dag_folder=str(DAGS))


@pytest.fixture(scope="module")
def dag(dagbag):
    return dagbag.dags[DAG_ID]


@pytest.fixture(scope="module")
def nightly(dag):
    """The DAG file's module (its helpers), as the DagBag loaded it."""
    return sys.modules[type(dag.get_task("verify_and_reindex")).__module__]


# ---------------------------------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------------------------------

def test_dagbag_loads_with_no_import_errors(dagbag):
    assert dagbag.import_errors == {}
    assert DAG_ID in dagbag.dags
    # the spark-submit applications are not DAG files (.airflowignore)
    assert sorted(Path(s.file).name for s in dagbag.dagbag_stats) == ["segdex_fleet.py", "segdex_nightly.py"]


def test_tasks_params_and_schedule(dag):
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    assert {t.task_id for t in dag.tasks} == TASKS
    assert all(isinstance(t, SparkSubmitOperator) for t in dag.tasks)
    order = ["verify_and_reindex", "retention", "compact", "quality_check"]
    for up, down in zip(order, order[1:], strict=False):
        assert dag.get_task(down).upstream_task_ids == {up}
    assert dag.get_task("quality_check").retries == 0
    assert dag.max_active_runs == 1 and not dag.catchup
    assert dag.schedule == "0 2 * * *"  # nightly
    params = dag.params.dump()
    assert params["apply_retention"] is False  # retention is planned, not applied, unless asked
    assert params["apply_compaction"] is True
    assert set(params) >= {"log_dirs", "metadata", "spark_conn_id", "spark_master", "topic_configs",
                           "config", "spark_conf", "fail_statuses"}


# ---------------------------------------------------------------------------------------------------------------
# What the tasks submit (no Spark started)
# ---------------------------------------------------------------------------------------------------------------

PARAMS = {
    "log_dirs": ["/data/kafka-1", "/data/kafka-2"],
    "metadata": "/meta",
    "config": {"index.interval.bytes": 4096},
    "topic_configs": {"orders": {"retention.ms": "-1", "retention.bytes": "1000"}},
    "apply_retention": False,
    "apply_compaction": True,
    "spark_conn_id": CONN_ID,
    "spark_master": "",
    "spark_conf": {"spark.executor.memory": "6g", "spark.executor.cores": 4},
    "ship_package": "auto",
    "package": "",
    "pyspark_python": "",
    "fail_statuses": ["corrupt_log_tail", "unreadable"],
}


def test_segdex_arguments(nightly):
    assert nightly.segdex_args("reindex", PARAMS, "local[2]") == [
        "reindex", "--metadata", "/meta", "--no-progress", "--config", "index.interval.bytes=4096",
        "--topic-config", "orders:retention.bytes=1000", "--topic-config", "orders:retention.ms=-1",
        "/data/kafka-1", "/data/kafka-2"]
    retention = nightly.segdex_args("retention", PARAMS, "yarn")
    assert retention[:4] == ["retention", "--metadata", "/meta", "--master"] and "--apply" not in retention
    assert "--apply" in nightly.segdex_args("retention", {**PARAMS, "apply_retention": True})
    assert nightly.segdex_args("compact", PARAMS) == ["compact", "--metadata", "/meta", "--apply",
                                                     "/data/kafka-1", "/data/kafka-2"]
    assert "--apply" not in nightly.segdex_args("compact", {**PARAMS, "apply_compaction": False})
    assert nightly.quality_check_args(PARAMS) == [
        "--metadata", "/meta", "--log-dir", "/data/kafka-1", "--log-dir", "/data/kafka-2",
        "--fail-status", "corrupt_log_tail", "--fail-status", "unreadable"]
    with pytest.raises(ValueError):
        nightly.segdex_args("reindex", {**PARAMS, "log_dirs": []})


def _prepared(dag, task_id, params, tmp_path):
    import copy

    task = copy.deepcopy(dag.get_task(task_id))
    task.spark_conn_id = params["spark_conn_id"]  # what rendering "{{ params... }}" gives at run time
    task.spark_master = params["spark_master"]
    task.prepare(params, str(tmp_path))
    return task, task.submit_command()


def _opt(cmd, name):
    """Values of a spark-submit option (before the application file)."""
    app = next(i for i, a in enumerate(cmd) if a.endswith(".py"))
    return [cmd[i + 1] for i, a in enumerate(cmd[:app]) if a == name]


def test_submit_command_from_connection_without_shipping_in_local_mode(dag, nightly, tmp_path):
    task, cmd = _prepared(dag, "verify_and_reindex", PARAMS, tmp_path)
    assert cmd[0].endswith("spark-submit") and os.access(cmd[0], os.X_OK)
    assert _opt(cmd, "--master") == ["local[2]"]  # the connection's host
    assert "--py-files" not in cmd  # auto: nothing to ship to a local master
    assert "spark.executor.memory=6g" in _opt(cmd, "--conf") and "spark.executor.cores=4" in _opt(cmd, "--conf")
    assert "spark.log.level=WARN" in _opt(cmd, "--conf")
    i = cmd.index(nightly.RUN_SEGDEX_APP)
    assert cmd[i + 1:i + 3] == ["--attention-ok", "reindex"]
    assert task.env_vars["PYSPARK_PYTHON"] == sys.executable


def test_submit_command_ships_the_package_to_a_cluster_master(dag, nightly, tmp_path):
    params = {**PARAMS, "spark_master": "spark://master.example:7077"}
    _, cmd = _prepared(dag, "compact", params, tmp_path)
    assert _opt(cmd, "--master") == ["spark://master.example:7077"]  # the param overrides the connection
    (zip_path,) = _opt(cmd, "--py-files")
    names = set(zipfile.ZipFile(zip_path).namelist())
    assert {"segdex/__init__.py", "segdex/indexcore/__init__.py", "segdex/indexcore/log/log_segment.py",
            "segdex/indexcore/log/scan/python_kernel.py", "segdex/pipelines/reindex.py", "segdex/jobs/cli.py",
            "segdex/jobs/compact.py"} <= names
    i = cmd.index(nightly.RUN_SEGDEX_APP)
    assert cmd[i + 1:] == ["--attention-ok", "compact", "--metadata", "/meta", "--apply", "--master",
                           "spark://master.example:7077", "/data/kafka-1", "/data/kafka-2"]
    _, cmd = _prepared(dag, "quality_check", {**params, "package": "/dist/segdex.zip"}, tmp_path)
    assert _opt(cmd, "--py-files") == ["/dist/segdex.zip"]
    assert cmd[cmd.index(nightly.QUALITY_CHECK_APP) + 1:] == nightly.quality_check_args(params)


def test_run_segdex_passes_attention_only_when_told(monkeypatch, capsys):
    """The wrapper turns segdex's exit 1 (bad segments recorded) into 0 with --attention-ok, nothing else."""
    from segdex.jobs import cli as segdex_cli

    spec = importlib.util.spec_from_file_location("run_segdex", DAGS / "spark_apps" / "run_segdex.py")
    app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(app)
    calls = []
    for status in (0, 1, 2, 3):
        monkeypatch.setattr(segdex_cli, "main", lambda argv, s=status: calls.append(argv) or s)
        assert app.main(["--attention-ok", "reindex", "/x"]) == (0 if status <= 1 else status)
        assert app.main(["reindex", "/x"]) == status
    assert calls == [["reindex", "/x"]] * 8


# ---------------------------------------------------------------------------------------------------------------
# Whole runs
# ---------------------------------------------------------------------------------------------------------------

def _sample(root: Path) -> Path:
    from segdex.pipelines.sample_logdir import generate_sample

    log_dir = root / "kafka-logs"
    generate_sample(log_dir, batches_per_partition=240, segment_bytes=48 * 1024)
    return log_dir


def _run(dag, log_dir: Path, metadata: Path, **params):
    conf = {"log_dirs": [str(log_dir)], "metadata": str(metadata), "spark_conn_id": CONN_ID,
            "spark_conf": {"spark.ui.enabled": "false", "spark.driver.memory": "1g",
                           "spark.sql.shuffle.partitions": "2"}, **params}
    dr = dag.test(run_conf=conf)
    return dr, {ti.task_id: ti.state for ti in dr.get_task_instances()}


def _keys(logs: list[Path]) -> set[tuple[str, int, int]]:
    """(topic, partition, base offset) of segment files."""
    return {(p.parent.name.rsplit("-", 1)[0], int(p.parent.name.rsplit("-", 1)[1]), int(p.stem)) for p in logs}


def _table(metadata: Path, name: str) -> list[dict]:
    from segdex.pipelines import metadata_store

    return metadata_store.read_arrow(str(metadata), name).to_pylist()


def test_nightly_run_fills_the_tables_and_passes_the_quality_check(dag, tmp_path):
    log_dir = _sample(tmp_path)
    logs = sorted(log_dir.glob("*-*/*.log"))
    assert logs and not list(log_dir.glob("*-*/*.index"))  # the sample lost its index files
    metadata = tmp_path / "metadata"
    dr, states = _run(dag, log_dir, metadata, ship_package="always",  # the cluster path: --py-files zip
                      config={"retention.bytes": "1"},  # every topic: every segment would go...
                      topic_configs={"orders": {"retention.bytes": "-1", "retention.ms": "-1"}})  # ...but orders
    assert states == dict.fromkeys(TASKS, "success"), states
    assert dr.state == "success"

    segments = _table(metadata, "segments")
    assert len(segments) == len(logs)
    assert {r["log_dir"] for r in segments} == {str(log_dir)}
    assert {(r["topic"], r["partition"], r["base_offset"]) for r in segments} == _keys(logs)
    assert {r["status"] for r in segments} <= {"ok", "missing", "equivalent"}
    for log in logs:  # reindex rebuilt them
        assert log.with_suffix(".index").is_file() and log.with_suffix(".timeindex").is_file()
    partitions = _table(metadata, "partitions")
    assert len(partitions) == len({log.parent for log in logs})
    runs = [r for r in _table(metadata, "runs") if r["command"] == "reindex"]
    assert [(r["exit_status"], r["segments"], r["log_dirs"]) for r in runs] == [(0, len(logs),
                                                                                json.dumps([str(log_dir)]))]

    # retention was planned, not applied: nothing renamed; orders (unlimited retention) keeps every segment
    actions = _table(metadata, "retention_actions")
    assert actions and {r["status"] for r in actions} == {"planned"}
    deletes = {(r["topic"], r["partition"], r["base_offset"]) for r in actions if r["action"] == "delete"}
    # retention.bytes=1 takes every segment, the active one too (Kafka rolls an empty one), all below the HW
    assert deletes == {k for k in _keys(logs) if k[0] != "orders"}
    assert not list(log_dir.rglob("*.deleted")) and sorted(log_dir.glob("*-*/*.log")) == logs


def test_corrupt_segment_fails_the_run_at_the_quality_check(dag, tmp_path):
    log_dir = _sample(tmp_path)
    victim = sorted((log_dir / "orders-0").glob("*.log"))[0]  # a closed segment, several batches
    data = bytearray(victim.read_bytes())
    middle = len(data) // 2
    data[middle] ^= 0xFF
    victim.write_bytes(bytes(data))
    metadata = tmp_path / "metadata"
    dr, states = _run(dag, log_dir, metadata, spark_master="local[2]")
    assert dr.state == "failed"
    # reindex, retention and compact record the bad segment and go on; the check fails the run
    assert states == {"verify_and_reindex": "success", "retention": "success", "compact": "success",
                      "quality_check": "failed"}, states
    bad = [r for r in _table(metadata, "segments") if r["status"] not in ("ok", "missing", "equivalent")]
    assert [(r["topic"], r["partition"], r["base_offset"], r["status"]) for r in bad] == [
        ("orders", 0, int(victim.stem), "corrupt_log_tail")]
    assert victim.read_bytes() == bytes(data)  # segdex changed no byte of the .log


# ---------------------------------------------------------------------------------------------------------------
# The reindex task on a real Spark standalone cluster
# ---------------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory):
    with StandaloneCluster(tmp_path_factory.mktemp("spark-cluster")) as cluster:
        yield cluster


def _index_files(log_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(log_dir)): p.read_bytes() for p in sorted(log_dir.glob("*-*/*"))
            if p.suffix in (".index", ".timeindex", ".txnindex", ".snapshot")}


def test_reindex_task_on_a_standalone_cluster(dag, spark_cluster, tmp_path):
    """The DAG's verify_and_reindex task, pointed at a spark:// master by the ``spark_master`` param, runs its
    spark-submit on the cluster (the package zipped and shipped with --py-files) and leaves the index files
    Kafka's recovery writes (``segdex rebuild``, no Spark, on a copy) and a row per segment."""
    from segdex.indexcore.config.log_config import LogConfig
    from segdex.indexcore.tools.rebuild import rebuild

    log_dir = _sample(tmp_path)
    logs = sorted(log_dir.glob("*-*/*.log"))
    assert logs and not _index_files(log_dir)
    reference = tmp_path / "reference"
    shutil.copytree(log_dir, reference)
    for partition in sorted(p for p in reference.iterdir() if p.is_dir()):
        list(rebuild(str(partition), LogConfig()))
    expected = _index_files(reference)
    assert len(expected) > 2 * len(logs)  # .index and .timeindex of each segment, the aborted transactions' .txnindex

    before = set(spark_cluster.completed_apps())
    reindex_only = dag.partial_subset(task_ids=["verify_and_reindex"], include_upstream=False)
    assert [t.task_id for t in reindex_only.tasks] == ["verify_and_reindex"]
    metadata = tmp_path / "metadata"
    dr, states = _run(reindex_only, log_dir, metadata, spark_master=spark_cluster.master_url,
                      spark_conf={"spark.ui.enabled": "false", "spark.driver.memory": "512m",
                                  "spark.executor.memory": "512m"})
    assert states == {"verify_and_reindex": "success"}, states
    assert dr.state == "success"

    # it ran on the cluster: one application, finished, whose executor fetched the zip and ran the scan tasks
    (app_id,) = set(spark_cluster.completed_apps()) - before
    app = spark_cluster.completed_apps()[app_id]
    assert app["name"] == "segdex-reindex" and app["state"] == "FINISHED", app
    executors = "\n".join(spark_cluster.executor_logs(app_id).values())
    assert re.search(r"Fetching spark://\S+/files/segdex\.zip", executors), executors[-3000:]
    assert re.search(r"Finished task \d+\.\d+ in stage", executors)

    # and did the work: Kafka's index bytes for every segment, a row per segment, one clean reindex run
    assert _index_files(log_dir) == expected
    segments = _table(metadata, "segments")
    assert {(r["topic"], r["partition"], r["base_offset"]) for r in segments} == _keys(logs)
    assert {r["status"] for r in segments} == {"ok"}  # the state after the run
    runs = [r for r in _table(metadata, "runs") if r["command"] == "reindex"]
    assert [(r["exit_status"], r["segments"], r["count_missing"], r["files_failed"]) for r in runs] == [
        (0, len(logs), len(logs), 0)]
    assert runs[0]["files_written"] == len(expected)


# ---------------------------------------------------------------------------------------------------------------
# The fleet DAG (segdex_fleet.py): one mapped reindex task per broker, then maintenance and the fleet check
# ---------------------------------------------------------------------------------------------------------------

FLEET_ID = "segdex_fleet"
CLUSTER = "fleet-cluster-7Q"


@pytest.fixture(scope="module")
def fleet_dag(dagbag):
    return dagbag.dags[FLEET_ID]


@pytest.fixture(scope="module")
def fleet(fleet_dag):
    return sys.modules[fleet_dag.get_task("check").python_callable.__module__]


def _broker_dir(root: Path, broker_id: int) -> Path:
    """A sample log dir standing for broker ``broker_id`` of one cluster (its own meta.properties)."""
    from segdex.pipelines.sample_logdir import generate_sample

    log_dir = root / f"broker-{broker_id}" / "kafka-logs"
    generate_sample(log_dir, batches_per_partition=120, segment_bytes=48 * 1024)
    (log_dir / "meta.properties").write_text(f"version=1\ncluster.id={CLUSTER}\nnode.id={broker_id}\n")
    return log_dir


def test_fleet_dag_shape_and_helpers(fleet_dag, fleet, tmp_path):
    assert {t.task_id for t in fleet_dag.tasks} == {"brokers", "reindex_broker", "maintenance", "check"}
    assert fleet_dag.get_task("maintenance").upstream_task_ids == {"reindex_broker"}
    assert fleet_dag.get_task("check").upstream_task_ids == {"brokers", "maintenance"}
    assert fleet_dag.get_task("check").trigger_rule == "all_done"  # a failed broker is named, not skipped
    assert fleet_dag.get_task("check").retries == 0
    with pytest.raises(ValueError, match="listed twice"):
        fleet.normalize_brokers([{"broker_id": 1, "log_dirs": ["/a"]}, {"broker_id": "1", "log_dirs": ["/b"]}])
    with pytest.raises(ValueError, match="broker 4: no log_dirs"):
        fleet.normalize_brokers([{"broker_id": 4, "log_dirs": []}])
    with pytest.raises(ValueError, match="no brokers"):
        fleet.normalize_brokers([])
    log_dir = tmp_path / "d"
    log_dir.mkdir()
    (log_dir / "meta.properties").write_text(f"version=1\ncluster.id={CLUSTER}\nnode.id=5\n")
    assert fleet.wrong_log_dirs({"broker_id": 5, "log_dirs": [str(log_dir)]}) == []
    assert fleet.wrong_log_dirs({"broker_id": 6, "log_dirs": [str(log_dir)]}) == [str(log_dir)]  # wrong host


def test_fleet_dag_with_a_worker_queue_per_host(fleet, monkeypatch):
    """SEGDEX_FLEET_QUEUE_PER_HOST=1: one task per broker of the Variable, on its host's queue (parsed, not run)."""
    from airflow.models import DagBag

    listed = [{"broker_id": b, "host": f"kafka-{b}.example", "log_dirs": ["/var/lib/kafka/data"]} for b in (4, 7)]
    monkeypatch.setenv(fleet.QUEUE_PER_HOST_ENV, "1")
    monkeypatch.setenv(f"AIRFLOW_VAR_{fleet.BROKERS_VARIABLE.upper()}", json.dumps(listed))
    bag = DagBag(dag_folder=str(DAGS / "segdex_fleet.py"))
    assert bag.import_errors == {}
    dag = bag.dags[FLEET_ID]
    tasks = {t.task_id: t for t in dag.tasks if t.task_id.startswith("reindex_broker")}
    assert {i: t.queue for i, t in tasks.items()} == {"reindex_broker_4": "kafka-4.example",
                                                     "reindex_broker_7": "kafka-7.example"}
    assert dag.get_task("maintenance").upstream_task_ids == set(tasks)
    monkeypatch.setenv(f"AIRFLOW_VAR_{fleet.BROKERS_VARIABLE.upper()}", json.dumps([{**listed[0], "host": ""}]))
    bag = DagBag(dag_folder=str(DAGS / "segdex_fleet.py"))
    assert "broker(s) [4] have no host" in "".join(bag.import_errors.values())


def test_fleet_run_three_brokers_one_corrupt(fleet_dag, fleet, tmp_path, monkeypatch, capfd, s3_env, s3_bucket):
    """Three log dirs stand for three brokers of one cluster; broker 2 has a byte flipped in a closed segment.
    Every broker's mapped task writes its rows into the one set of tables on the session's real S3 server
    (s3proxy; the AWS settings in the workers' environment); the fleet check fails naming broker 2. The brokers
    come from the Airflow Variable (as on the schedule), here set through its environment form."""
    dirs = {b: _broker_dir(tmp_path, b) for b in (1, 2, 3)}
    victim = sorted((dirs[2] / "orders-0").glob("*.log"))[0]
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    victim.write_bytes(bytes(data))
    brokers = [{"broker_id": b, "host": f"kafka-{b}", "log_dirs": [str(d)]} for b, d in dirs.items()]
    monkeypatch.setenv(f"AIRFLOW_VAR_{fleet.BROKERS_VARIABLE.upper()}", json.dumps(brokers))
    metadata = f"s3://{s3_bucket}/segdex"
    dr = fleet_dag.test(run_conf={"metadata": metadata})  # params.brokers empty: the Variable's list
    log = "".join(capfd.readouterr())
    assert "fleet check failed for broker(s) [2]:" in log and "fleet check passed" not in log
    assert s3_env["AWS_SECRET_ACCESS_KEY"] not in log
    assert sorted(ti.rendered_map_index for ti in dr.get_task_instances() if ti.task_id == "reindex_broker") == [
        "broker 1", "broker 2", "broker 3"]
    states = {(ti.task_id, ti.map_index): ti.state for ti in dr.get_task_instances()}
    assert states == {("brokers", -1): "success", ("reindex_broker", 0): "success",
                      ("reindex_broker", 1): "success", ("reindex_broker", 2): "success",
                      ("maintenance", -1): "success", ("check", -1): "failed"}, states
    assert dr.state == "failed"

    segments = _table(metadata, "segments")
    for b, d in dirs.items():
        mine = [r for r in segments if r["broker_id"] == b]
        assert {(r["topic"], r["partition"], r["base_offset"]) for r in mine} == _keys(list(d.glob("*-*/*.log")))
        assert {(r["cluster_id"], r["log_dir"]) for r in mine} == {(CLUSTER, str(d))}
    assert len(segments) == sum(len(list(d.glob("*-*/*.log"))) for d in dirs.values())  # each row once
    runs = [r for r in _table(metadata, "runs") if r["command"] == "reindex"]
    assert sorted((r["broker_id"], r["exit_status"]) for r in runs) == [(1, 0), (2, 1), (3, 0)]

    # the check, on the same tables: broker 2 is named, alone, with its segment; without it the fleet passes
    with pytest.raises(fleet.FleetCheckFailed) as failed:
        fleet.fleet_check(str(metadata), brokers, fleet.FAIL_STATUSES, since=dr.start_date)
    assert "broker(s) [2]" in str(failed.value)
    assert f"orders-0 segment {int(victim.stem)}: corrupt_log_tail" in str(failed.value)
    counts = fleet.fleet_check(str(metadata), [brokers[0], brokers[2]], fleet.FAIL_STATUSES, since=dr.start_date)
    assert {b: c["segments"] for b, c in counts.items()} == {
        b: len(list(dirs[b].glob("*-*/*.log"))) for b in (1, 3)}
    # a broker with no run in this fleet run is named too
    with pytest.raises(fleet.FleetCheckFailed, match="broker 9: no reindex run"):
        fleet.fleet_check(str(metadata), [{"broker_id": 9, "log_dirs": ["/nowhere"]}], fleet.FAIL_STATUSES)
