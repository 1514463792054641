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


def spark_if_master(master: str | None, command: str) -> Any:
    """A SparkSession when ``--master`` was given, else None (the command then runs in this process)."""
    if not master:
        return None
    from pipelines.spark_session import get_spark

    return get_spark(master, f"segdex-{command}")
