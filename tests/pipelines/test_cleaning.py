"""``pipelines.cleaning``'s own choices (its runs are tested through the command: tests/jobs/test_clean*.py)."""

from __future__ import annotations

import os

from segdex.pipelines.cleaning import round_threads


def test_each_partition_round_takes_its_share_of_the_cores(monkeypatch):
    monkeypatch.delenv("SEGDEX_CLEAN_THREADS", raising=False)
    cores = len(os.sched_getaffinity(0))
    assert round_threads(1) == cores  # a lone partition: every core
    assert round_threads(0) == cores
    assert round_threads(2) == max(1, cores // 2)
    assert round_threads(cores + 1) == 1  # the engine already runs a task per core
    monkeypatch.setenv("SEGDEX_CLEAN_THREADS", "3")
    assert round_threads(1) is None  # the Cleaner reads it
