"""Kafka's fixture cases as the recovery tests load them: each case's topic config as its broker had it, the clock
at which ``v2_txn_two_producers``' producers are still live, and the index files compared with ``recovered/``.

Shared because ``segdex recover`` (tests/jobs/test_recover.py, through Spark) and ``LogLoader`` in the test
process (tests/indexcore/log/test_log_loader.py) recover the same fixture cases and must agree with the same
files Kafka left."""

from __future__ import annotations

from segdex.indexcore.config.log_config import LogConfig

INDEX_SUFFIXES = (".index", ".timeindex", ".txnindex")
TXN_CASE_NOW = 1700034646400 + 60_000  # v2_txn_two_producers' clock: its producers are live then


def case_log_config(case: dict) -> LogConfig:
    """A fixture case's topic config as the broker that wrote it had it (index settings, message format)."""
    over = {k: str(case["topic_config"][k]) for k in ("index.interval.bytes", "segment.index.bytes")}
    if case["params"].get("topic_message_format_version"):
        over["message.format.version"] = case["params"]["topic_message_format_version"]
    return LogConfig().with_overrides(over)
