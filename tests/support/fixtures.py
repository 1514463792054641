"""Where Kafka's reference files are, and small helpers over them and over log dirs, shared by the tests.

``FIXTURES`` holds the segments Kafka's own code wrote (``SEGDEX_KAFKA_FIXTURES``, default
``../shared/fixtures/kafka`` beside the project); ``GOLDEN`` the recordings of Kafka's answers kept in the
repository (``tests/kafka/golden``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
FIXTURES_ENV = "SEGDEX_KAFKA_FIXTURES"
FIXTURES = Path(os.environ.get(FIXTURES_ENV, REPO_ROOT.parent / "shared" / "fixtures" / "kafka"))
GOLDEN = REPO_ROOT / "tests" / "kafka" / "golden"

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
