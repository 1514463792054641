"""A driver-side thread that says something every few seconds while a piece of work runs: the scan's progress,
the cleaning rounds' progress, a commit waiting on the object store."""

from __future__ import annotations

import threading
import time


class Ticker:
    """``with`` a subclass: its ``tick(elapsed_s)`` runs on a daemon thread every ``interval`` seconds until the
    block ends (the thread is joined then); ``active=False``: no thread at all (nobody to tell)."""

    def __init__(self, interval: float, name: str, active: bool = True) -> None:
        self.interval = interval
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True) if active else None

    def tick(self, elapsed_s: float) -> None:
        raise NotImplementedError

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.tick(time.monotonic() - self.started)

    def __enter__(self):
        if self._thread is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
