"""spark-submit application of the nightly DAG: the data-quality check, a SQL assertion on the metadata tables.

    spark-submit [...] quality_check.py --metadata PATH --log-dir DIR [--log-dir DIR...] [--fail-status S...]

Fails (exit 1) when, for the checked log dirs, the ``segments`` table holds a segment whose status is one of the
fail statuses (default: corrupt_log_tail, unreadable, error: a ``.log`` that segdex does not repair, or could
not read), or when a log dir has no segment at all (refused because a broker holds its lock, or unreadable).
Prints every offending row. Exit 0 when the assertion holds, 2 when the tables are missing.
"""

from __future__ import annotations

import argparse
import os
import sys

from segdex.indexcore.status import FAIL_STATUSES  # the package comes with spark-submit's --py-files

DEFAULT_FAIL_STATUSES = tuple(str(s) for s in FAIL_STATUSES)

# The assertion: both queries must return no rows.
BAD_SEGMENTS_SQL = """
SELECT s.log_dir, s.topic, s.`partition`, s.base_offset, s.status, s.reason
FROM segments s
JOIN segdex_qc_log_dirs d ON s.log_dir = d.log_dir
JOIN segdex_qc_fail_statuses f ON s.status = f.status
ORDER BY s.log_dir, s.topic, s.`partition`, s.base_offset
"""

EMPTY_LOG_DIRS_SQL = """
SELECT d.log_dir
FROM segdex_qc_log_dirs d
LEFT ANTI JOIN segments s ON s.log_dir = d.log_dir
ORDER BY d.log_dir
"""


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="quality_check.py", description=__doc__.splitlines()[0])
    p.add_argument("--metadata", required=True, metavar="PATH")
    p.add_argument("--log-dir", action="append", required=True, dest="log_dirs", metavar="DIR")
    p.add_argument("--fail-status", action="append", dest="fail_statuses", metavar="STATUS")
    return p.parse_args(argv)


def check(spark, metadata: str, log_dirs: list[str], fail_statuses: list[str]) -> tuple[list, list]:
    """(offending segment rows, log dirs without any segment row)."""
    from segdex.pipelines import metadata_store

    metadata_store.register_views(spark, metadata, ["segments"])
    # log_dir is recorded as its real path (a log dir seen through a symlink is one log dir)
    spark.createDataFrame([(os.path.realpath(d),) for d in log_dirs], "log_dir string") \
        .createOrReplaceTempView("segdex_qc_log_dirs")
    spark.createDataFrame([(s,) for s in fail_statuses], "status string") \
        .createOrReplaceTempView("segdex_qc_fail_statuses")
    return spark.sql(BAD_SEGMENTS_SQL).collect(), spark.sql(EMPTY_LOG_DIRS_SQL).collect()


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    fail_statuses = args.fail_statuses or list(DEFAULT_FAIL_STATUSES)
    from segdex.pipelines import metadata_store

    if "://" not in args.metadata and "segments" not in metadata_store.table_names(args.metadata):
        print(f"quality check: no segments table in {args.metadata}", file=sys.stderr)
        return 2
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName("segdex-quality-check").getOrCreate()
    try:
        bad, empty = check(spark, args.metadata, args.log_dirs, fail_statuses)
    finally:
        spark.stop()
    for r in bad:
        print(f"FAIL {r.log_dir}/{r.topic}-{r.partition} segment {r.base_offset}: {r.status}: {r.reason}",
              file=sys.stderr)
    for r in empty:
        print(f"FAIL {r.log_dir}: no segment recorded (refused, unreadable, or empty log dir)", file=sys.stderr)
    if bad or empty:
        print(f"quality check failed: {len(bad)} segment(s) with status in {sorted(fail_statuses)}, "
              f"{len(empty)} log dir(s) without segments", file=sys.stderr)
        return 1
    print(f"quality check passed: no segment with status in {sorted(fail_statuses)} in {len(args.log_dirs)} "
          f"log dir(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
