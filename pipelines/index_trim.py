"""Trimming over-long index files across log dirs (``segdex compact LOGDIR...``): ``index_trim.trim_log_dir`` for
each log dir, one Spark task per dir. Not Kafka's log compaction: the ``.log`` files are never touched.
"""

from __future__ import annotations

from segdex.indexcore.tools.index_trim import TrimOutcome, trim_log_dir
from segdex.pipelines.spark_tasks import run_tasks

from .engine import Engine


def trim_indexes(log_dirs: list[str], apply: bool = False, spark: Engine | None = None,
                 allow_unloadable: bool = False) -> list[TrimOutcome]:
    """``trim_log_dir`` for each log dir: one Spark task per dir when ``spark`` is given."""
    if spark is None or len(log_dirs) < 2:
        return [trim_log_dir(d, apply, allow_unloadable) for d in log_dirs]
    return run_tasks(spark, log_dirs, lambda d: trim_log_dir(d, apply, allow_unloadable), "segdex compact")
