"""Maintenance of the metadata Delta tables (``segdex compact --metadata``): compact their small files (``OPTIMIZE``
/ delta-rs ``optimize.compact``) and vacuum files no version newer than the retention needs.

The retention is never below Delta's own default of 7 days unless the caller says ``allow_unsafe`` (readers of
older versions, and writers still running, need those files). Not Kafka's log compaction: that is the log cleaner.
"""

from __future__ import annotations

from typing import Any

from segdex.indexcore.errors import SegdexError
from segdex.pipelines import metadata_store as ms

from .engine import Engine

SAFE_RETENTION_HOURS = 168  # Delta's default delta.deletedFileRetentionDuration (7 days)


class MaintenanceError(SegdexError):
    """A maintenance request that would be unsafe, or a table that cannot be maintained."""


def maintain_table(spark: Engine, path: str, name: str, retention_hours: int = SAFE_RETENTION_HOURS,
                   allow_unsafe: bool = False, dry_run: bool = False) -> dict[str, Any]:
    """Compact the small files of table ``path/name`` and vacuum files older than ``retention_hours``.

    Returns ``{table, files_before, files_after, vacuumed, version}``. Through Spark when the session has
    Delta loaded, else with delta-rs, each commit through ``MetadataStore.commit_once``: on object storage other
    brokers' runs keep merging meanwhile, and a compaction that lost the race to one of them is done again on
    the table as it now is (it adds no row, so doing it again is safe).
    """
    if retention_hours < SAFE_RETENTION_HOURS and not allow_unsafe:
        raise MaintenanceError(
            f"vacuum retention {retention_hours} h is below the safe {SAFE_RETENTION_HOURS} h: readers of older "
            f"versions and running writers could lose files (allow_unsafe to force)")
    store = ms.MetadataStore(path, spark)
    uri = store.uri(name)
    if ms.spark_has_delta(spark) and not dry_run:
        return _maintain_spark(spark, uri, name, retention_hours, allow_unsafe)
    if not store.exists(name):
        raise MaintenanceError(f"{uri}: no Delta table")
    before = len(store.open(name).file_uris())
    if not dry_run and before > 1:
        store.commit_once(name, lambda props: store.open(name).optimize.compact(commit_properties=props))
    vacuumed: list[str] = []

    def vacuum(props: Any) -> None:
        vacuumed[:] = store.open(name).vacuum(retention_hours=retention_hours, dry_run=dry_run,
                                              enforce_retention_duration=not allow_unsafe, commit_properties=props)

    if dry_run:
        vacuum(None)
    else:
        store.commit_once(name, vacuum)
    dt = store.open(name)
    return {"table": name, "files_before": before, "files_after": len(dt.file_uris()),
            "vacuumed": len(vacuumed), "version": dt.version()}


# Delta Lake 4.x on Spark ignores a VACUUM retention other than 0 hours and takes the table's
# delta.deletedFileRetentionDuration instead (7 days by default) while this is on: --vacuum-hours 720 would delete
# files younger than the 30 days asked for. segdex's retention is the one the operator gave.
RETENTION_WINDOW_IGNORE = "spark.databricks.delta.vacuum.retentionWindowIgnore.enabled"
RETENTION_CHECK = "spark.databricks.delta.retentionDurationCheck.enabled"


def _maintain_spark(spark: Engine, uri: str, name: str, retention_hours: int, allow_unsafe: bool) -> dict[str, Any]:
    """OPTIMIZE and VACUUM through Delta Lake on Spark's Python API (the table's path is never pasted into SQL),
    vacuuming with ``retention_hours`` itself. The files vacuumed and the version come from the commit's history
    (``VACUUM END``'s ``numDeletedFiles``)."""
    from delta.tables import DeltaTable as SparkDeltaTable

    table = SparkDeltaTable.forPath(spark, uri)
    before = table.detail().collect()[0]["numFiles"]
    table.optimize().executeCompaction()
    settings = {RETENTION_WINDOW_IGNORE: "false", **({RETENTION_CHECK: "false"} if allow_unsafe else {})}
    saved = {key: spark.conf.get(key, None) for key in settings}
    try:
        for key, value in settings.items():
            spark.conf.set(key, value)
        table.vacuum(float(retention_hours))
    finally:
        for key, value in saved.items():
            spark.conf.unset(key) if value is None else spark.conf.set(key, value)
    table = SparkDeltaTable.forPath(spark, uri)
    after = table.detail().collect()[0]["numFiles"]
    last = table.history(1).collect()[0]
    vacuumed = (last["operationMetrics"] or {}).get("numDeletedFiles") if last["operation"] == "VACUUM END" else None
    return {"table": name, "files_before": before, "files_after": after,
            "vacuumed": None if vacuumed is None else int(vacuumed), "version": last["version"]}


def maintain_tables(spark: Engine, path: str, retention_hours: int = SAFE_RETENTION_HOURS, allow_unsafe: bool = False,
                    dry_run: bool = False, names: list[str] | None = None) -> list[dict[str, Any]]:
    """``maintain_table`` for every Delta table under ``path`` (or ``names``)."""
    return [maintain_table(spark, path, n, retention_hours, allow_unsafe, dry_run)
            for n in (names if names is not None else ms.table_names(path))]
