"""Stopping a Spark run cleanly on SIGTERM or Ctrl-C (SIGINT).

While the scan runs, both signals raise ``RunInterrupted`` in the driver. The driver then cancels the Spark jobs
and stops the Spark context, which ends the executors' Python workers (in local mode the worker daemon kills its
process group), so that no task writes any more, and removes the temporary files the killed tasks left, all while
it still holds the log dirs' ``.lock``. Files already renamed into place are whole and valid (each was made
durable before its rename).

The handler itself makes no call into the JVM: the main thread was interrupted in the middle of a py4j call, and
its connection still waits for that answer (pyspark's own SIGINT handler calls ``cancelAllJobs`` there, which is
where the screens of py4j tracebacks on Ctrl-C come from). The clean-up runs in a new thread, on a connection of
its own, with py4j's loggers silenced.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

from .engine import Engine, is_local

SIGNAL_NAMES = {signal.SIGINT: "SIGINT (Ctrl-C)", signal.SIGTERM: "SIGTERM"}
STOP_TIMEOUT_S = 30.0


class RunInterrupted(BaseException):
    """The run was stopped by a signal; ``exit_status`` is the shell's 128 + signal number."""

    def __init__(self, signum: int, detail: str = "") -> None:
        super().__init__(signum)
        self.signum = signum
        self.detail = detail

    @property
    def exit_status(self) -> int:
        return 128 + self.signum

    def __str__(self) -> str:
        name = SIGNAL_NAMES.get(self.signum, f"signal {self.signum}")
        return f"interrupted by {name}" + (f": {self.detail}" if self.detail else "")


@contextlib.contextmanager
def stop_on_signals(spark: Engine) -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM cancel the Spark jobs and raise ``RunInterrupted`` (main thread
    only; elsewhere the block runs unchanged)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _frame: Any) -> None:
        for s in (signal.SIGINT, signal.SIGTERM):  # a second signal must not interrupt the clean-up
            signal.signal(s, signal.SIG_IGN)
        raise RunInterrupted(signum)

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


@contextlib.contextmanager
def ignored_signals() -> Iterator[None]:
    """SIGINT and SIGTERM ignored within the block (a clean-up that must finish)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def stop_spark(spark: Engine, timeout: float = STOP_TIMEOUT_S) -> None:
    """Cancel the jobs, wait for their tasks to end, and stop the Spark context so that no executor process
    writes on. Runs in a thread of its own (a fresh py4j connection); returns when done or after ``timeout``.
    The one-host engine (``local_engine``) kills its worker processes."""
    if is_local(spark):
        spark.stop()
        return
    import logging

    for name in ("py4j", "py4j.java_gateway", "py4j.clientserver"):
        logging.getLogger(name).disabled = True
    logging.getLogger().addHandler(logging.NullHandler())  # py4j also logs the broken call on the root logger

    def stop() -> None:
        from .spark_tasks import is_connect

        if is_connect(spark):  # Spark Connect: the server cancels this session's operations
            with contextlib.suppress(Exception):
                spark.interruptAll()
            with contextlib.suppress(Exception):
                spark.stop()
            return
        sc = spark.sparkContext
        deadline = time.monotonic() + timeout
        with contextlib.suppress(Exception):
            sc.cancelAllJobs()
        with contextlib.suppress(Exception):
            while sc.statusTracker().getActiveStageIds() and time.monotonic() < deadline:
                time.sleep(0.1)
        with contextlib.suppress(Exception):
            spark.stop()

    worker = threading.Thread(target=stop, name="segdex-stop", daemon=True)
    worker.start()
    worker.join(timeout + 10)
    time.sleep(0.2)  # the worker daemon's SIGHUP to its process group
