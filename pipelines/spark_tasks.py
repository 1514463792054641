"""Work items run as Spark tasks through DataFrame operations only, so that the same code serves classic Spark
and Spark Connect (``--remote sc://...``), which serves no RDDs, no SparkContext and no accumulators.

``run_tasks`` runs ``fn(item)`` for each item in a task of its own: ``spark.range(n, numPartitions=n)`` gives one
row per task, and ``mapInArrow`` maps the row's index to its item (the items travel pickled inside the function,
as any closure does). Each task's results come back pickled in one binary cell, in item order.

Progress comes from the tasks as they go, not only when one ends: a task calls ``report(segments, bytes)`` and
a ``ProgressSender`` sends small UDP datagrams to the driver's ``ProgressChannel`` (fire-and-forget: a lost
datagram costs a progress tick, never a result; the results themselves come back through Spark).
"""

from __future__ import annotations

import os
import pickle
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pyarrow as pa

from .engine import Engine, is_local

# token (8 bytes, one per run), segments done since the last datagram, bytes done since the last datagram
PROGRESS_DATAGRAM = struct.Struct(">8sqq")
SEND_INTERVAL_S = 0.2  # a task sends at most five datagrams a second (and one when it ends)

_REPORT: Callable[[int, int], None] | None = None  # the running task's progress sink (executor side)


def report(segments: int, nbytes: int) -> None:
    """Progress of the current task (no-op outside a task run by ``run_tasks`` with a channel)."""
    if _REPORT is not None:
        _REPORT(segments, nbytes)


def is_connect(spark: Engine) -> bool:
    """Whether ``spark`` is a Spark Connect session (a client of a remote Spark)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


class ProgressSender:
    """The executor side of the progress channel: adds up a task's progress and sends it at most every
    ``SEND_INTERVAL_S``; never raises (an unreachable driver only loses progress ticks)."""

    def __init__(self, address: tuple[str, int], token: bytes) -> None:
        self.address, self.token = address, token
        self._segments = self._bytes = 0
        self._last = 0.0
        self._sock: socket.socket | None = None

    def __call__(self, segments: int, nbytes: int) -> None:
        self._segments += segments
        self._bytes += nbytes
        if time.monotonic() - self._last >= SEND_INTERVAL_S:
            self.flush()

    def flush(self) -> None:
        if not (self._segments or self._bytes):
            return
        try:
            if self._sock is None:
                self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            self._sock.sendto(PROGRESS_DATAGRAM.pack(self.token, self._segments, self._bytes), self.address)
        except OSError:
            pass
        self._segments = self._bytes = 0
        self._last = time.monotonic()

    def close(self) -> None:
        self.flush()
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __getstate__(self) -> dict:
        return {"address": self.address, "token": self.token}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["address"], state["token"])


class ProgressChannel:
    """The driver side: a UDP socket on ``host`` that adds up what the tasks of one run send."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.token = os.urandom(8)
        self.segments = self.bytes = 0
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock.bind((host, 0))
        self._sock.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="segdex-progress-channel", daemon=True)

    @property
    def sender(self) -> ProgressSender:
        return ProgressSender(self._sock.getsockname(), self.token)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                data = self._sock.recv(64)
            except TimeoutError:
                continue
            except OSError:
                return
            if len(data) == PROGRESS_DATAGRAM.size:
                token, segments, nbytes = PROGRESS_DATAGRAM.unpack(data)
                if token == self.token:
                    self.segments += segments
                    self.bytes += nbytes

    def __enter__(self) -> ProgressChannel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(2)
        self._sock.close()


def parallelism(spark: Engine) -> int:
    """How many tasks the session runs at once (``defaultParallelism``; through Spark Connect, the session's
    ``spark.default.parallelism`` or this machine's cores)."""
    if is_local(spark):
        return spark.workers
    if not is_connect(spark):
        return max(1, spark.sparkContext.defaultParallelism)
    try:
        return max(1, int(spark.conf.get("spark.default.parallelism")))
    except Exception:
        return max(1, os.cpu_count() or 1)


def driver_host(spark: Engine) -> str | None:
    """The address executors can reach this process at, for the progress channel: 127.0.0.1 for a local master
    or a Spark Connect server on this machine, the driver's host for a cluster; None when unknown (no channel)."""
    if is_local(spark):
        return "127.0.0.1"
    if is_connect(spark):
        remote = os.environ.get("SPARK_REMOTE", "") or getattr(spark, "_segdex_remote", "") or ""
        return "127.0.0.1" if any(h in remote for h in ("//127.0.0.1", "//localhost")) else None
    try:
        master = spark.conf.get("spark.master", "local")
        if master.startswith("local"):
            return "127.0.0.1"
        return spark.conf.get("spark.driver.host", None)
    except Exception:
        return None


def run_tasks(spark: Engine, items: Sequence[Any], fn: Callable[[Any], Any], description: str | None = None,
              sender: ProgressSender | None = None) -> list[Any]:
    """``[fn(item) for item in items]``, each call in a Spark task of its own; results in item order.

    ``fn`` and the items are pickled into the tasks; a task's exception fails the job (Spark's own error)."""
    items = list(items)
    if not items:
        return []
    if is_local(spark):  # the one-host engine: the same function, no JVM
        return spark.run_tasks(items, fn, sender)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        # this function travels by value: the module is imported by name for the sink ``report`` reads
        from segdex.pipelines import spark_tasks as module

        for batch in batches:
            for index in batch.column(0).to_pylist():
                module._REPORT = sender
                try:
                    result = fn(items[index])
                finally:
                    module._REPORT = None
                    if sender is not None:
                        sender.close()
                yield pa.RecordBatch.from_arrays([pa.array([index]), pa.array([pickle.dumps(result)])],
                                                 names=["index", "result"])

    if description and not is_connect(spark):
        spark.sparkContext.setJobDescription(description)
    df = spark.range(0, len(items), 1, len(items)).mapInArrow(run, "index LONG, result BINARY")
    rows = df.collect()
    out: list[Any] = [None] * len(items)
    for row in rows:
        out[row["index"]] = pickle.loads(row["result"])
    return out
