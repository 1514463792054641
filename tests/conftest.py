"""Shared test fixtures: Kafka's reference files and one session-wide local SparkSession."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest

from tests.support.fixtures import FIXTURES, FIXTURES_ENV, fixture_case_names
from tests.support.kafka_harness import KAFKA_VERSIONS


def pytest_sessionstart(session: pytest.Session) -> None:
    """Kafka's reference fixtures are what the fidelity tests compare against: without them the run fails,
    in CI and out of it, rather than skip the comparisons and pass on empty lists."""
    if not (FIXTURES / "MANIFEST.json").is_file():
        raise pytest.UsageError(f"Kafka fixtures not found at {FIXTURES}: set {FIXTURES_ENV} to their folder "
                                f"(../shared/fixtures/kafka beside the project)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests that take the session's SparkSession are marked ``spark``, tests that take Kafka's own code as an
    oracle (``oracle``, ``kafka44``, ``kafka39``: a JVM each) are marked ``kafka_broker``: the mutation run
    (scripts/mutation.sh) selects ``not spark and not kafka_broker``, the tests that run indexcore in the test
    process itself."""
    for item in items:
        names = getattr(item, "fixturenames", ())
        if "spark" in names:
            item.add_marker(pytest.mark.spark)
        if KAFKA_CODE.intersection(names):
            item.add_marker(pytest.mark.kafka_broker)
    # the mutation run: the quickest tests first, so that a mutant a quick test notices costs only that test
    seconds = _measured_seconds(config)
    if seconds is not None:
        items.sort(key=lambda item: seconds.get(item.nodeid, 0.0))
        return
    # the suite (xdist --dist loadscope hands modules out in this order): the longest modules first, so that no
    # worker is left with one of them at the end while the other idles; within a module the order is kept
    items.sort(key=lambda item: LONGEST_FIRST.get(item.nodeid.split("::")[0], len(LONGEST_FIRST)))


def _measured_seconds(config: pytest.Config) -> dict[str, float] | None:
    """mutmut's measured time of each test (``SEGDEX_TEST_ORDER``, scripts/mutation.sh), once it has timed them."""
    timings = os.environ.get(ORDER_ENV)
    if not timings or not os.path.exists(timings):
        return None
    if MEASURED not in config.stash:
        config.stash[MEASURED] = json.loads(Path(timings).read_text()).get("duration_by_test", {})
    return config.stash[MEASURED]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """The mutation run: a test whose mutant makes it loop ends after ``TEST_CPU_FACTOR`` times its measured CPU
    time plus ``TEST_CPU_FLOOR`` seconds, by the signal mutmut's own limit sends (SIGXCPU: counted a timeout).

    mutmut's limit is for the whole of a mutant's tests (30 times their summed time): a mutant of a module that
    hundreds of tests reach (a codec's stream) that loops in the first one held a worker for minutes."""
    seconds = _measured_seconds(item.config)
    if seconds is None:
        yield
        return
    limit = TEST_CPU_FLOOR + TEST_CPU_FACTOR * seconds.get(item.nodeid, 0.0)
    previous = signal.signal(signal.SIGPROF, lambda *_: os.kill(os.getpid(), signal.SIGXCPU))
    signal.setitimer(signal.ITIMER_PROF, limit)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


# modules of more than about 60 s each, longest first (the suite's --durations report)
LONGEST_FIRST = {path: rank for rank, path in enumerate((
    "tests/kafka/test_groups_broker.py",
    "tests/kafka/test_recover_broker.py",
    "tests/pipelines/test_metadata_store_writers.py",
    "tests/airflow_dags/test_segdex_nightly.py",
    "tests/kafka/test_broker.py",
    "tests/jobs/test_cli_quiet.py",
    "tests/pipelines/test_spark_session_connect.py",
    "tests/pipelines/test_spark_session_cluster.py",
    "tests/pipelines/test_metadata_store.py",
    "tests/jobs/test_safety.py",
))}


KAFKA_CODE = {"oracle", "kafka44", "kafka39"}  # the fixtures that run Kafka's own code in a JVM (_oracle)
ORDER_ENV = "SEGDEX_TEST_ORDER"  # mutmut's stats file (scripts/mutation.sh): run tests by their measured time
MEASURED = pytest.StashKey[dict]()
# the mutation run's limit of one test's CPU seconds: FLOOR + FACTOR times its measured time
TEST_CPU_FACTOR, TEST_CPU_FLOOR = 30, float(os.environ.get("SEGDEX_TEST_CPU_FLOOR", "10"))


@pytest.fixture(scope="session")
def kafka_fixtures() -> Path:
    if not FIXTURES.is_dir():
        pytest.skip(f"Kafka fixtures not found at {FIXTURES}; set {FIXTURES_ENV} to their folder")
    return FIXTURES


def pytest_generate_tests(metafunc):
    if "fixture_case" in metafunc.fixturenames:
        names = fixture_case_names()
        metafunc.parametrize("fixture_case", names or [pytest.param(None, marks=pytest.mark.skip(
            reason=f"Kafka fixtures not found at {FIXTURES}; set {FIXTURES_ENV}"))])


@pytest.fixture(scope="session")
def spark():
    """One real local SparkSession for the whole run."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Spark's Python workers must run this interpreter (it has crc32c, cramjam and segdex installed).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("segdex-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    yield session
    session.stop()


def _oracle(version: str, tmp_path_factory):
    """Kafka ``version``'s own code (``kafka_harness.KafkaOracle``) in a JVM of its own, closed after use."""
    from tests.support.kafka_harness import KafkaInstall, KafkaOracle

    o = KafkaOracle(KafkaInstall(version), tmp_path_factory.mktemp(f"oracle-{version}"))
    yield o
    o.close()


@pytest.fixture(scope="module", params=KAFKA_VERSIONS)
def oracle(request, tmp_path_factory):
    """Kafka's own recovery and load code, one JVM per Kafka version and module."""
    yield from _oracle(request.param, tmp_path_factory)


@pytest.fixture(scope="module")
def kafka44(tmp_path_factory):
    """Kafka 4.4.0's own code (its cleaner, load and recovery), one JVM per module."""
    yield from _oracle("4.4.0", tmp_path_factory)


@pytest.fixture(scope="module")
def kafka39(tmp_path_factory):
    """Kafka 3.9.2's own code (its Scala cleaner, load and recovery), one JVM per module."""
    yield from _oracle("3.9.2", tmp_path_factory)


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """One real S3-compatible server (s3proxy, ``tests/support/s3_harness.py``) for every S3 test of this process,
    started at first use and stopped at the end of the session. Tests keep apart by bucket (``s3_bucket``)."""
    from tests.support.s3_harness import S3Server

    server = S3Server(tmp_path_factory.mktemp("s3proxy")).start()
    yield server
    server.stop()


@pytest.fixture
def s3_bucket(s3_server, request) -> str:
    """A new bucket on the session's S3 server for this test (its name from the test's, S3's rules)."""
    import hashlib
    import re

    stem = re.sub(r"[^a-z0-9-]+", "-", request.node.name.lower()).strip("-")[:40].strip("-")
    name = f"{stem}-{hashlib.sha1(request.node.nodeid.encode()).hexdigest()[:8]}"
    return s3_server.bucket(name)


@pytest.fixture
def s3_env(s3_server, monkeypatch):
    """This process's AWS environment pointing at the session's S3 server (what a user exports)."""
    for key in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION", "AWS_CONFIG_FILE",
                "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.delenv(key, raising=False)
    env = s3_server.env()
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env
