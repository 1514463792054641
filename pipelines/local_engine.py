"""The one-host engine: the scan's tasks in a pool of this machine's processes, without a JVM.

An embedded ``verify``/``reindex``/``recover`` on one host spends most of its time starting Spark, not scanning:
on a 256 MiB dir of 16 segments (2 cores), Spark's start took 2.7-3.0 s and its first job 3.0 s (0.4 s once warm)
for a scan that takes 0.08 s in a pool of two forked processes. ``LocalEngine`` runs the very task functions
Spark's Python workers run (``spark_tasks.run_tasks`` hands them over), so both paths are one code: the tasks,
their results, the progress channel, the metadata written (delta-rs) and the clean-up on a signal.

It is the embedded default: chosen when nothing asks for Spark (``wants_local_engine``): no
``--master``/``--remote``/``SPARK_REMOTE``, not under ``spark-submit``, Delta not written through Spark, and
``SEGDEX_ENGINE`` not ``spark``. ``SEGDEX_ENGINE=spark`` gives the embedded ``local[*]`` Spark session instead.

Workers are forked when the engine is made, before the driver starts any thread, so that they are plain copies
of a single-threaded process. They ignore SIGINT: the driver decides what a Ctrl-C stops (``interrupts``), and
``stop`` ends them.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import signal
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, wait
from typing import Any

from .engine import Engine, is_local

ENGINE_ENV = "SEGDEX_ENGINE"  # local | spark (default: local where nothing asks for Spark)


def wants_local_engine(master: str | None, remote: str | None) -> bool:
    """Whether a command's run takes the one-host engine (see the module doc)."""
    from .metadata_store import writer_is_spark
    from .spark_session import REMOTE_ENV

    choice = os.environ.get(ENGINE_ENV, "").strip().lower()
    if choice == "spark" or master or remote or os.environ.get(REMOTE_ENV) or writer_is_spark():
        return False
    if "PYSPARK_GATEWAY_PORT" in os.environ:  # spark-submit started this process
        return False
    return choice in ("local", "")


def get_engine(master: str | None = None, app_name: str = "segdex", remote: str | None = None) -> Any:
    """What runs a scan's tasks: the one-host engine when ``wants_local_engine``, else ``get_spark``'s session."""
    from .spark_session import START_SECONDS, get_spark

    if not wants_local_engine(master, remote):
        return get_spark(master, app_name, remote=remote)
    from .lazy_pandas import defer_pandas

    started = time.monotonic()
    engine = LocalEngine()
    defer_pandas()  # no Spark here, so no pandas for pyarrow to look for (after the fork: workers need neither)
    START_SECONDS.pop("spark start", None)
    START_SECONDS["engine start"] = time.monotonic() - started
    return engine


def close_engine(engine: Engine) -> None:
    """The end of a command's run: the one-host engine's workers finish and exit (a Spark session is left as
    is: spark-submit and the tests own theirs)."""
    if is_local(engine):
        engine.close()


def _worker_init(parent: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with(parent)


def _die_with(parent: int) -> None:
    """The kernel kills this worker when the driver dies (``PR_SET_PDEATHSIG``): a driver killed with SIGKILL (or
    the OOM killer) leaves no worker waiting forever on its queue."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: workers end when their queue is closed, as before
        return
    if os.getppid() != parent:  # the driver died before the line above took effect
        os._exit(1)


def _noop() -> None:
    return None


def _call(blob: bytes, item: Any, sender: Any) -> bytes:
    """In a worker: the task function on one item, its result pickled (as a Spark task returns it)."""
    from . import spark_tasks

    fn = pickle.loads(blob)
    spark_tasks._REPORT = sender
    try:
        return pickle.dumps(fn(item))
    finally:
        spark_tasks._REPORT = None
        if sender is not None:
            sender.close()


def _dumps(fn: Callable[[Any], Any]) -> bytes:
    try:
        return pickle.dumps(fn)
    except (pickle.PicklingError, AttributeError, TypeError):  # a closure: as Spark ships it
        from pyspark import cloudpickle

        return cloudpickle.dumps(fn)


class LocalEngine:
    """``workers`` processes (default: this machine's cores), forked now; ``run_tasks`` runs task functions on
    them, results in item order."""

    is_local_engine = True
    master = "local processes"

    def __init__(self, workers: int | None = None) -> None:
        self.workers = max(1, workers or os.cpu_count() or 1)
        self._pool: ProcessPoolExecutor | None = None
        if self.workers > 1:
            self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("fork"),
                                             initializer=_worker_init, initargs=(os.getpid(),))
            wait([self._pool.submit(_noop) for _ in range(self.workers)])  # fork them all now

    def run_tasks(self, items: Sequence[Any], fn: Callable[[Any], Any], sender: Any = None) -> list[Any]:
        """``[fn(item) for item in items]``, one item per task; a task's exception is raised here."""
        if not items:
            return []
        blob = _dumps(fn)
        if self._pool is None or len(items) == 1:
            return [pickle.loads(_call(blob, item, sender)) for item in items]
        futures = [self._pool.submit(_call, blob, item, sender) for item in items]
        return [pickle.loads(f.result()) for f in futures]

    def close(self) -> None:
        """Let the workers finish and exit (the end of a run): nothing is left for the interpreter's exit."""
        pool, self._pool = self._pool, None
        if pool is not None:
            with contextlib.suppress(OSError):
                pool.shutdown(wait=True, cancel_futures=True)

    def stop(self) -> None:
        """End the workers now (a task still running is killed: its temporaries are the caller's to remove)."""
        pool = self._pool
        if pool is None:
            return
        for p in list((getattr(pool, "_processes", None) or {}).values()):
            if p.is_alive():
                p.kill()
        self.close()

    def __enter__(self) -> LocalEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
