"""Argument checks and Spark start-up shared by the ``segdex`` subcommands."""

from __future__ import annotations

import os
import sys
from typing import Any


def report_missing_log_dirs(command: str, log_dirs: list[str]) -> bool:
    """Print a line for each LOGDIR that is not a directory; True when any is (a usage error: exit 2)."""
    missing = [d for d in log_dirs if not os.path.isdir(d)]
    for d in missing:
        print(f"segdex {command}: {d}: not a directory (no such log dir)", file=sys.stderr)
    return bool(missing)


def check_log_dirs(command: str, log_dirs: list[str]) -> bool:
    """Print a line for each LOGDIR that is missing or is a partition directory rather than a log dir; True when
    any is (a usage error: exit 2)."""
    from segdex.indexcore.log_dir import describe_dir

    if report_missing_log_dirs(command, log_dirs):
        return True
    bad = False
    for d in log_dirs:
        if describe_dir(d) == "partition_dir":
            parent = os.path.dirname(os.path.abspath(d))
            print(f"segdex {command}: {d}: a partition directory, not a log dir: give its log dir ({parent})"
                  + (", or use `segdex rebuild` for one partition" if command in ("reindex", "verify") else ""),
                  file=sys.stderr)
            bad = True
    return bad


def spark_if_master(master: str | None, command: str) -> Any:
    """A SparkSession when ``--master`` was given, else None (the command then runs in this process)."""
    if not master:
        return None
    from segdex.pipelines.spark_session import get_spark

    return get_spark(master, f"segdex-{command}")


def print_log_dir_outcome(outcome: Any, apply: bool) -> None:
    """The log-dir level lines of retention and compact: refusal, skipped and stray directories, temporaries of
    an interrupted run that were removed."""
    if outcome.error:
        print(f"{outcome.log_dir}: {'refused' if apply else 'warning'}: {outcome.error}", file=sys.stderr)
    for path, why in outcome.skipped:
        print(f"{path}: skipped: {why}")
    for path, why in outcome.stray:
        print(f"stray: {path}: {why}", file=sys.stderr)
    for path in outcome.removed_temporaries:
        print(f"removed: {path}: temporary file left by an interrupted segdex run", file=sys.stderr)
