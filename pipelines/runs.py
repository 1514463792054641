"""Run identifiers: one format for every command that records a run (reindex, verify, retention, ...)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime


def new_run_id(command: str) -> str:
    """``<command>-<UTC yyyymmddThhmmss>-<8 hex>``: sorts by time, says what ran, unique across hosts."""
    return f"{command}-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
