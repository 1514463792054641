"""The SparkSession of a segdex job: embedded ``local[*]`` by default, or the master spark-submit/--master gives."""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from typing import Any

from segdex.indexcore.errors import NothingChangedError

PACKAGES = ("segdex.indexcore", "segdex.pipelines", "segdex.jobs")
FAST_START_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xshare:auto"
SHIP_ENV = "SEGDEX_SHIP_PACKAGE"  # 1: always ship a zip of the package to executors, 0: never; default: non-local
VERBOSE_ENV = "SEGDEX_VERBOSE"  # 1 (or `-v`): Spark's and the JVM's own log lines on the terminal
SPARK_LOG_ENV = "SEGDEX_SPARK_LOG"  # where an embedded Spark's JVM writes its log lines (default: a temp file)
# pyspark's own Python loggers that print a JSON block to stderr before an exception reaches segdex
PYSPARK_LOGGERS = ("SQLQueryContextLogger", "pyspark", "py4j")
START_SECONDS: dict[str, float] = {}  # the last session start, for the command's summary: {"spark start": s}
LOG_PATH: str | None = None  # the file this process's embedded Spark writes its log lines to, once started


def verbose() -> bool:
    return os.environ.get(VERBOSE_ENV, "").strip() not in ("", "0")


def spark_log_path() -> str:
    """The file an embedded Spark's JVM (and its Python workers) write their stderr to when not verbose."""
    path = os.environ.get(SPARK_LOG_ENV)
    if path:
        return path
    folder = os.path.join(tempfile.gettempdir(), f"segdex-{os.getuid()}")
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, f"spark-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.log")


@contextlib.contextmanager
def _jvm_stderr_to(path: str | None) -> Iterator[None]:
    """While the gateway JVM starts, file descriptor 2 points at ``path``: the JVM (which inherits it for its
    whole life, and passes it to Spark's Python workers) writes its log4j and launcher lines there instead of
    the operator's terminal. segdex's own stderr is restored right after."""
    if path is None:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.dup2(fd, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)


def quiet_pyspark_loggers() -> None:
    """pyspark logs a JSON ERROR block (``SQLQueryContextLogger``) before raising a query's exception: segdex
    reports the error in one line of its own instead, unless verbose."""
    if verbose():
        return
    for name in PYSPARK_LOGGERS:
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)


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


# Class-data sharing archives (AppCDS) of the driver JVM and of spark-class's launcher JVM: the classes a segdex
# session loads, mapped from one file instead of read from ~250 jars. Built by the set-up (``class_archive``);
# they halve the start of an embedded Spark. Absent or stale (another JVM, other jars): the JVM ignores them.
CLASS_ARCHIVE_ENV = "SEGDEX_CLASS_ARCHIVE_DIR"  # default: the virtualenv (sys.prefix)
DRIVER_ARCHIVE = "segdex-spark-driver.jsa"
LAUNCHER_ARCHIVE = "segdex-spark-launcher.jsa"


def class_archive_path(name: str) -> str:
    return os.path.join(os.environ.get(CLASS_ARCHIVE_ENV) or sys.prefix, name)


def class_archive_options(name: str) -> str:
    """JVM options that map the archive ``name`` when it exists; ``-Xlog:disable`` keeps the JVM's own warnings
    (an archive from another JDK, say) off the command's stdout."""
    path = class_archive_path(name)
    return f"-XX:SharedArchiveFile={path} -Xlog:disable" if os.path.isfile(path) else ""


DELTA_JARS_ENV = "SEGDEX_DELTA_JARS"  # a folder of Delta Lake's Spark jars (default: <venv>/delta-jars)
DELTA_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}


# segdex's Delta tables are small (a row per segment; a few files per version). Spark's defaults are sized for big
# tables: Delta's VACUUM lists a table's directories in spark.sql.sources.parallelPartitionDiscovery.parallelism
# (10,000) tasks and every snapshot is rebuilt in spark.databricks.delta.snapshotPartitions (50). On a local[2]
# session that made `segdex compact --metadata` take about 100 s per table (VACUUM 75-90 s of it) and about 8 s
# with these. An embedded session takes them; spark-submit's own configuration is left as given.
SMALL_TABLE_CONF = {
    "spark.sql.sources.parallelPartitionDiscovery.parallelism": "4",
    "spark.databricks.delta.snapshotPartitions": "4",
}


def delta_jars() -> list[str]:
    """Delta Lake's Spark jars as the set-up fetched them (scripts/delta/pom.xml), or [] when absent."""
    folder = os.environ.get(DELTA_JARS_ENV) or os.path.join(sys.prefix, "delta-jars")
    try:
        return sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".jar"))
    except FileNotFoundError:
        return []


def _delta_conf(wanted: bool = False) -> dict[str, str]:
    """With ``SEGDEX_DELTA_WRITER=spark`` an embedded session loads Delta Lake's jars and extensions, so that the
    tables are written and read through Spark; RuntimeError when the set-up did not fetch the jars. A session
    that only reads (``wanted``: ``segdex sql``, for time travel) loads them when present, unless the writer is
    forced to delta-rs."""
    from .metadata_store import WRITER_ENV

    writer = os.environ.get(WRITER_ENV, "").strip().lower()
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        return {}
    if writer != "spark":
        if not wanted or writer in ("deltalake", "embedded") or not delta_jars():
            return {}
    jars = delta_jars()
    if not jars:
        raise RuntimeError(f"{WRITER_ENV}=spark needs Delta Lake's Spark jars: run the set-up (scripts/env.sh "
                           f"fetches them with Maven) or point {DELTA_JARS_ENV} at a folder of them")
    return {"spark.jars": ",".join(jars), **DELTA_CONF}


REMOTE_ENV = "SPARK_REMOTE"  # Spark's own variable for a Spark Connect server (sc://HOST:PORT)


class SparkUnavailable(NothingChangedError):
    """The Spark Connect server named by ``--remote``/``SPARK_REMOTE`` does not answer (nothing was done)."""


CONNECT_CHECK_TIMEOUT_S = 5.0


def _check_reachable(remote: str) -> None:
    """Fail fast when nothing listens at ``remote``: the Connect client would otherwise retry for minutes."""
    import socket
    from urllib.parse import urlparse

    parsed = urlparse(remote.split(";", 1)[0])
    host, port = parsed.hostname or "localhost", parsed.port or 15002
    try:
        with socket.create_connection((host, port), timeout=CONNECT_CHECK_TIMEOUT_S):
            return
    except OSError as e:
        raise SparkUnavailable(f"no Spark Connect server answers at {host}:{port} ({remote}): "
                               f"{e.strerror or e}") from None


def get_remote_spark(remote: str, app_name: str = "segdex") -> Any:
    """A Spark Connect session on ``remote`` (``sc://HOST:PORT``): the server runs the jobs, this process only
    sends plans and Python functions. The package goes to the server's Python workers as an artifact unless
    ``SEGDEX_SHIP_PACKAGE=0`` (segdex installed there)."""
    started = time.monotonic()
    quiet_pyspark_loggers()
    _check_reachable(remote)
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.remote(remote).appName(app_name).getOrCreate()
    spark._segdex_remote = remote
    if os.environ.get(SHIP_ENV) != "0":
        spark.addArtifacts(package_zip(), pyfile=True)
    START_SECONDS.pop("engine start", None)
    START_SECONDS["spark start"] = time.monotonic() - started
    return spark


S3A_JARS_ENV = "SEGDEX_S3A_JARS"  # a folder of Hadoop's s3a jars (default: <venv>/s3a-jars)


def s3a_jars() -> list[str]:
    """Hadoop's s3a filesystem and the AWS SDK it names, as the set-up fetched them (scripts/s3a/pom.xml)."""
    folder = os.environ.get(S3A_JARS_ENV) or os.path.join(sys.prefix, "s3a-jars")
    try:
        return sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".jar"))
    except FileNotFoundError:
        return []


def s3a_conf() -> dict[str, str]:
    """What Spark needs to read ``s3://`` and ``s3a://`` tables: the s3a jars, both schemes on s3a, and the AWS
    environment as Hadoop settings (endpoint, region, path-style addressing, plain http when
    ``AWS_ALLOW_HTTP=true``). Credentials are not copied into the configuration: the AWS SDK's default chain reads
    them where delta-rs does (the environment, ``AWS_PROFILE`` and its files, the instance's role). {} without jars."""
    jars = s3a_jars()
    if not jars:
        return {}
    conf = {
        "spark.jars": ",".join(jars),
        "spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.aws.credentials.provider":
            "software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider",
    }
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        conf["spark.hadoop.fs.s3a.endpoint"] = endpoint
        if endpoint.startswith("http://"):
            conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] = "false"
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if region:
        conf["spark.hadoop.fs.s3a.endpoint.region"] = region
    return conf


def _merged(*confs: dict[str, str]) -> dict[str, str]:
    """Later settings win, except ``spark.jars``, whose lists add up."""
    out: dict[str, str] = {}
    for conf in confs:
        for key, value in conf.items():
            out[key] = f"{out[key]},{value}" if key == "spark.jars" and out.get(key) else value
    return out


def get_spark(master: str | None = None, app_name: str = "segdex", conf: dict[str, str] | None = None,
              delta: bool = False, remote: str | None = None, object_store: bool = False) -> Any:
    """A SparkSession: ``master`` if given, else what spark-submit configured, else Spark's default ``local[*]``.

    Executors of a non-local master get the package as a zip (pure-Python scan) unless ``SEGDEX_SHIP_PACKAGE=0``
    (segdex installed on the executors, which also gives them the native scan kernel). An embedded session's JVM
    writes its log lines to ``spark_log_path()`` unless verbose (``-v``, ``SEGDEX_VERBOSE=1``). ``remote`` (or
    ``SPARK_REMOTE``, when no master is given) gives a Spark Connect session instead. segdex's defaults (shuffle
    partitions, UTC session time zone, ...) give way to what spark-submit was given (``--conf``, its
    spark-defaults.conf); ``conf`` wins over both. ``object_store``: the session reads tables on object storage,
    so an embedded one loads Hadoop's s3a (``s3a_conf``).
    """
    remote = remote or (None if master else os.environ.get(REMOTE_ENV))
    if remote:
        return get_remote_spark(remote, app_name)
    started = time.monotonic()
    quiet_pyspark_loggers()
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
    from pyspark import SparkConf, SparkContext

    if "PYSPARK_GATEWAY_PORT" not in os.environ:  # not under spark-submit: embedded defaults
        defaults["spark.ui.enabled"] = os.environ.get("SEGDEX_SPARK_UI", "false")
        defaults.update(SMALL_TABLE_CONF)
        # The driver JVM only moves pickled rows: a quick-starting JVM saves seconds on every command.
        defaults["spark.driver.extraJavaOptions"] = f"{FAST_START_JVM} {class_archive_options(DRIVER_ARCHIVE)}"
        # spark-class's launcher JVM
        os.environ.setdefault("SPARK_LAUNCHER_OPTS", f"{FAST_START_JVM} {class_archive_options(LAUNCHER_ARCHIVE)}")
    else:  # under spark-submit: its --conf and spark-defaults.conf win
        SparkContext._ensure_initialized()  # the JVM spark-submit started: SparkConf() reads its properties
        launched = SparkConf()
        defaults = {key: value for key, value in defaults.items() if not launched.contains(key)}
    embedded_start = "PYSPARK_GATEWAY_PORT" not in os.environ and SparkContext._active_spark_context is None
    # Delta's jars load only with a new JVM: a running one (spark-submit, a test session) keeps its own classpath
    started_conf = _merged(_delta_conf(delta), s3a_conf() if object_store else {}) if embedded_start else {}
    for key, value in {**defaults, **started_conf, **(conf or {})}.items():
        builder = builder.config(key, value)
    global LOG_PATH
    log_path = spark_log_path() if embedded_start and not verbose() else None
    with _jvm_stderr_to(log_path):
        spark = builder.getOrCreate()
    LOG_PATH = log_path or LOG_PATH
    spark.sparkContext.setLogLevel(os.environ.get("SEGDEX_SPARK_LOG_LEVEL", "WARN"))
    effective = spark.sparkContext.master
    ship = os.environ.get(SHIP_ENV)
    if ship == "1" or (ship is None and not effective.startswith("local")):
        spark.sparkContext.addPyFile(package_zip())
    START_SECONDS.pop("engine start", None)
    START_SECONDS["spark start"] = time.monotonic() - started
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
