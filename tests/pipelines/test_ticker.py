"""``Ticker``: a thread that ticks while a ``with`` block runs, and is gone when it ends."""

from __future__ import annotations

import threading
import time

from segdex.pipelines.ticker import Ticker


class Counting(Ticker):
    def __init__(self, interval: float, active: bool = True) -> None:
        super().__init__(interval, "segdex-test-ticker", active)
        self.ticks: list[float] = []

    def tick(self, elapsed_s: float) -> None:
        self.ticks.append(elapsed_s)


def test_ticks_every_interval_while_the_block_runs_then_stops():
    with Counting(0.02) as ticker:
        time.sleep(0.15)
    after = len(ticker.ticks)
    time.sleep(0.06)
    assert after >= 3 and len(ticker.ticks) == after  # no tick once the block ended
    assert ticker.ticks == sorted(ticker.ticks) and ticker.ticks[0] >= 0.02
    assert not [t for t in threading.enumerate() if t.name == "segdex-test-ticker"]


def test_an_inactive_ticker_starts_no_thread():
    with Counting(0.01, active=False) as ticker:
        time.sleep(0.05)
        assert not [t for t in threading.enumerate() if t.name == "segdex-test-ticker"]
    assert ticker.ticks == []
