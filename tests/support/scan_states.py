"""The state array a scan kernel starts a segment with, as ``LogSegment.recover`` starts it.

Shared because both kernels are driven from the same starting state: the native kernel against its Python twin
(tests/indexcore/log/scan/test_fastscan.py) and the Python kernel on its own (tests/indexcore/log/scan/
test_python_kernel.py)."""

from __future__ import annotations

from array import array

from segdex.indexcore.log.scan.state import (
    N_SLOTS,
    S_BASE_OFFSET,
    S_END,
    S_FIRST_OFFSET,
    S_INDEX_INTERVAL,
    S_LAST_OFFSET,
    S_LEADER_EPOCH,
    S_MAX_TIMESTAMP,
    S_OFFSET_OF_MAX_TIMESTAMP,
    S_RUN_PRODUCER_ID,
)


def scan_state(size: int, base: int, interval: int, epoch: int = 0) -> array:
    """The state ``LogSegment.recover`` starts a segment with (validBytes 0, lastIndexEntry 0, no timestamp)."""
    state = array("q", [0] * N_SLOTS)
    state[S_END] = size
    state[S_BASE_OFFSET] = base
    state[S_INDEX_INTERVAL] = interval
    state[S_MAX_TIMESTAMP] = -1
    state[S_OFFSET_OF_MAX_TIMESTAMP] = base
    state[S_LAST_OFFSET] = -1
    state[S_FIRST_OFFSET] = -1
    state[S_RUN_PRODUCER_ID] = -1
    state[S_LEADER_EPOCH] = epoch
    return state
