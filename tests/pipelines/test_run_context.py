"""``RunContext``: one frozen value per run, one scan class per command."""

from __future__ import annotations

import dataclasses
import pickle
from datetime import UTC, datetime

import pytest

from segdex.pipelines.run_context import MODE_RECOVER, MODE_REINDEX, MODE_VERIFY, RunContext
from segdex.pipelines.scan import SCANS, RecoverScan, ReindexScan, VerifyScan

AT = datetime(2026, 11, 26, tzinfo=UTC)


def test_the_context_is_frozen_picklable_and_knows_whether_it_writes():
    ctx = RunContext(MODE_REINDEX, "r1", AT, native=False)
    assert pickle.loads(pickle.dumps(ctx)) == ctx
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.run_id = "r2"  # type: ignore[misc]
    assert ctx.writing and RunContext(MODE_RECOVER, "r", AT).writing and not RunContext(MODE_VERIFY, "r", AT).writing


def test_an_unknown_command_is_refused():
    with pytest.raises(ValueError, match="command must be one of verify, reindex, recover, got 'rebuild'"):
        RunContext("rebuild", "r", AT)


def test_each_command_has_its_scan():
    assert SCANS == {MODE_VERIFY: VerifyScan, MODE_REINDEX: ReindexScan, MODE_RECOVER: RecoverScan}
    assert not VerifyScan.writes and ReindexScan.writes and RecoverScan.writes
