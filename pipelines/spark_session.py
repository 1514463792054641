"""The SparkSession of a segdex job: embedded ``local[*]`` by default, or the master spark-submit/--master gives."""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import zipfile
from typing import Any

PACKAGES = ("segdex.indexcore", "segdex.pipelines", "segdex.jobs")
FAST_START_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xshare:auto"
SHIP_ENV = "SEGDEX_SHIP_PACKAGE"  # 1: always ship a zip of the package to executors, 0: never; default: non-local


def package_roots() -> dict[str, str]:
    """Directory of each segdex package as installed for this interpreter (editable or not)."""
    roots = {}
    for pkg in PACKAGES:
        spec = importlib.util.find_spec(pkg)
        if spec is None or not spec.submodule_search_locations:
            raise RuntimeError(f"package {pkg!r} of segdex is not importable by {sys.executable}; install segdex")
        roots[pkg] = list(spec.submodule_search_locations)[0]
    return roots


def package_zip(dest_dir: str | None = None) -> str:
    """The one place that packages segdex for executors: a zip of the Python sources of segdex.indexcore,
    segdex.pipelines and segdex.jobs (subpackages included) for ``addPyFile``/``--py-files``; returns its path.
    The optional C scan kernel cannot load from a zip: executors then use the pure-Python scan (same results)."""
    dest_dir = dest_dir or tempfile.mkdtemp(prefix="segdex-pkg-")
    path = os.path.join(dest_dir, "segdex.zip")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.write(importlib.util.find_spec("segdex").origin, "segdex/__init__.py")
        for pkg, root in package_roots().items():
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
                for name in sorted(filenames):
                    if name.endswith(".py"):
                        full = os.path.join(dirpath, name)
                        z.write(full, os.path.join(*pkg.split("."), os.path.relpath(full, root)))
    return path


DELTA_JARS_ENV = "SEGDEX_DELTA_JARS"  # a folder of Delta Lake's Spark jars (default: <venv>/delta-jars)
DELTA_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}


def delta_jars() -> list[str]:
    """Delta Lake's Spark jars as the set-up fetched them (scripts/delta/pom.xml), or [] when absent."""
    folder = os.environ.get(DELTA_JARS_ENV) or os.path.join(sys.prefix, "delta-jars")
    try:
        return sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".jar"))
    except FileNotFoundError:
        return []


def _delta_conf() -> dict[str, str]:
    """With ``SEGDEX_DELTA_WRITER=spark`` an embedded session loads Delta Lake's jars and extensions, so that the
    tables are written and read through Spark; RuntimeError when the set-up did not fetch the jars."""
    from .metadata_store import WRITER_ENV

    if os.environ.get(WRITER_ENV, "").strip().lower() != "spark" or "PYSPARK_GATEWAY_PORT" in os.environ:
        return {}
    jars = delta_jars()
    if not jars:
        raise RuntimeError(f"{WRITER_ENV}=spark needs Delta Lake's Spark jars: run the set-up (scripts/env.sh "
                           f"fetches them with Maven) or point {DELTA_JARS_ENV} at a folder of them")
    return {"spark.jars": ",".join(jars), **DELTA_CONF}


def get_spark(master: str | None = None, app_name: str = "segdex", conf: dict[str, str] | None = None) -> Any:
    """A SparkSession: ``master`` if given, else what spark-submit configured, else Spark's default ``local[*]``.

    Executors of a non-local master get the package as a zip (pure-Python scan) unless ``SEGDEX_SHIP_PACKAGE=0``
    (segdex installed on the executors, which also gives them the native scan kernel).
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if master is None or master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    defaults = {
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": "4",
        "spark.python.worker.reuse": "true",
    }
    if "PYSPARK_GATEWAY_PORT" not in os.environ:  # not under spark-submit: embedded defaults
        defaults["spark.ui.enabled"] = os.environ.get("SEGDEX_SPARK_UI", "false")
        # The driver JVM only moves pickled rows: a quick-starting JVM saves seconds on every command.
        defaults["spark.driver.extraJavaOptions"] = FAST_START_JVM
        os.environ.setdefault("SPARK_LAUNCHER_OPTS", FAST_START_JVM)  # spark-class's launcher JVM
    for key, value in {**defaults, **_delta_conf(), **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("SEGDEX_SPARK_LOG_LEVEL", "WARN"))
    effective = spark.sparkContext.master
    ship = os.environ.get(SHIP_ENV)
    if ship == "1" or (ship is None and not effective.startswith("local")):
        spark.sparkContext.addPyFile(package_zip())
    return spark


def stop_active() -> None:
    """Stop the active SparkSession, if any (a clean exit for spark-submit scripts)."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        return
    session = SparkSession.getActiveSession()
    if session is not None:
        session.stop()
