"""Shared test fixtures: Kafka's reference files and one session-wide local SparkSession."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from kafka_harness import KAFKA_VERSIONS

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES_ENV = "SEGDEX_KAFKA_FIXTURES"
FIXTURES = Path(os.environ.get(FIXTURES_ENV, REPO_ROOT.parent / "shared" / "fixtures" / "kafka"))


def pytest_sessionstart(session: pytest.Session) -> None:
    """Kafka's reference fixtures are what the fidelity tests compare against: without them the run fails,
    in CI and out of it, rather than skip the comparisons and pass on empty lists."""
    if not (FIXTURES / "MANIFEST.json").is_file():
        raise pytest.UsageError(f"Kafka fixtures not found at {FIXTURES}: set {FIXTURES_ENV} to their folder "
                                f"(../shared/fixtures/kafka beside the project)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests that take the session's SparkSession are marked ``spark``, tests that take Kafka's recovery code as
    an oracle are marked ``kafka_broker``: the mutation run (scripts/mutation.sh) selects ``not spark and not
    kafka_broker``, the tests that run indexcore in the test process itself."""
    for item in items:
        names = getattr(item, "fixturenames", ())
        if "spark" in names:
            item.add_marker(pytest.mark.spark)
        if "oracle" in names:
            item.add_marker(pytest.mark.kafka_broker)
    # the mutation run: the quickest tests first, so that a mutant a quick test notices costs only that test
    timings = os.environ.get(ORDER_ENV)
    if timings and os.path.exists(timings):
        seconds = json.loads(Path(timings).read_text()).get("duration_by_test", {})
        items.sort(key=lambda item: seconds.get(item.nodeid, 0.0))


ORDER_ENV = "SEGDEX_TEST_ORDER"  # mutmut's stats file (scripts/mutation.sh): run tests by their measured time


def fixture_case_names() -> list[str]:
    """Every case folder of the Kafka fixtures (empty when they are absent)."""
    if not FIXTURES.is_dir():
        return []
    return sorted(p.name for p in FIXTURES.iterdir() if (p / "case.json").is_file())


def load_case(name: str) -> dict:
    return json.loads((FIXTURES / name / "case.json").read_text())


def log_start_offset(log_dir: str | os.PathLike, topic: str, partition: int = 0) -> int | None:
    """A partition's log start offset as a broker loads it: the larger of its ``log-start-offset-checkpoint``
    entry and its first segment's base offset. Kafka checkpoints an entry only while the log start offset
    lies above the first segment's base (``LogManager.checkpointLogStartOffsetsInDir``)."""
    from segdex.indexcore.log.checkpoints import read_offset_checkpoint
    path = Path(log_dir) / "log-start-offset-checkpoint"
    entry = read_offset_checkpoint(path).get((topic, partition)) if path.exists() else None
    bases = sorted(int(p.name[:20]) for p in (Path(log_dir) / f"{topic}-{partition}").glob("*.log"))
    if not bases:
        return entry
    return max(entry, bases[0]) if entry is not None else bases[0]  # as LogLoader takes it


_HOLD_LOCK = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.lockf(fd, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(60)
"""


@contextmanager
def broker_lock(log_dir: str | os.PathLike) -> Iterator[None]:
    """Hold ``<log_dir>/.lock`` from another process, as a running broker does (a POSIX lock)."""
    holder = subprocess.Popen([sys.executable, "-c", _HOLD_LOCK, os.path.join(log_dir, ".lock")],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        yield
    finally:
        holder.kill()
        holder.wait()


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


@pytest.fixture(scope="module", params=KAFKA_VERSIONS)
def oracle(request, tmp_path_factory):
    """Kafka's own recovery and load code (``kafka_harness.KafkaOracle``), one JVM per Kafka version and module."""
    from kafka_harness import KafkaInstall, KafkaOracle

    o = KafkaOracle(KafkaInstall(request.param), tmp_path_factory.mktemp(f"oracle-{request.param}"))
    yield o
    o.close()
