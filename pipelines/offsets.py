"""``segdex offsets`` over many partitions: ``indexcore.list_offsets`` fanned out, one Spark task per partition
dir when a SparkSession is given (a log dir of thousands of partitions), else a loop in this process."""

from __future__ import annotations

import os

from segdex.indexcore.errors import SegdexError
from segdex.indexcore.log.layout import parse_partition_dir_name
from segdex.indexcore.tools.list_offsets import OffsetAnswer, list_offset
from segdex.pipelines.spark_tasks import run_tasks

from .engine import Engine


def answer(path: str, target: int, log_start_offset: int | None) -> OffsetAnswer:
    """One partition's answer; unreadable or unrecoverable input becomes an answer with ``error``."""
    try:
        return list_offset(path, target, log_start_offset=log_start_offset)
    except (OSError, SegdexError) as e:
        tp = parse_partition_dir_name(os.path.basename(os.path.normpath(path)))
        return OffsetAnswer(tp.topic, tp.partition, error=f"{getattr(e, 'strerror', None) or e}")


def list_offsets(work: list[tuple[str, int | None]], target: int, spark: Engine | None = None) -> list[OffsetAnswer]:
    """Answers for (partition dir, log start offset) pairs, sorted by topic and partition."""
    if spark is None or len(work) < 2:
        answers = [answer(path, target, start) for path, start in work]
    else:
        answers = run_tasks(spark, work, lambda item: answer(item[0], target, item[1]), "segdex offsets")
    return sorted(answers, key=lambda a: (a.topic, a.partition))
