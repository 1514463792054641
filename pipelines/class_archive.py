"""Build the class-data sharing archives that make an embedded Spark start in half the time (see
``spark_session.class_archive_options``): ``python -m segdex.pipelines.class_archive``, run by the set-up.

A training run starts a session whose driver and launcher JVMs dump the classes they loaded at exit
(``-XX:ArchiveClassesAtExit``), after the work segdex's commands do: Arrow data frames, SQL, a ``mapInArrow``
task, Delta's reader when its jars are present. The archives are written under temporary names and renamed
into place only when complete, so a failed or concurrent build never leaves a torn archive in use.
"""

from __future__ import annotations

import os
import subprocess
import sys

from . import spark_session


def _train(driver_out: str, launcher_out: str) -> None:
    """The training session (a child process: its JVM writes the archives when the process exits)."""
    import pyarrow as pa

    from . import spark_tasks

    spark_session.FAST_START_JVM = f"{spark_session.FAST_START_JVM} -XX:ArchiveClassesAtExit={driver_out} -Xlog:disable"
    os.environ["SPARK_LAUNCHER_OPTS"] = f"-XX:ArchiveClassesAtExit={launcher_out} -Xlog:disable"
    os.environ[spark_session.CLASS_ARCHIVE_ENV] = os.path.dirname(driver_out) + "/.none"
    spark = spark_session.get_spark(None, "segdex-class-archive", delta=True)
    df = spark.createDataFrame(pa.table({"topic": ["a", "b"], "size": [1, 2]}))
    df.createOrReplaceTempView("t")
    spark.sql("SELECT topic, sum(size) AS s FROM t GROUP BY topic ORDER BY s").collect()
    spark_tasks.run_tasks(spark, [1, 2], lambda x: x * 2, "segdex class archive")


def build(folder: str | None = None) -> bool:
    """Build both archives into ``folder`` (default: the virtualenv); False (and a message) on failure."""
    folder = folder or os.environ.get(spark_session.CLASS_ARCHIVE_ENV) or sys.prefix
    final = {name: os.path.join(folder, name)
             for name in (spark_session.DRIVER_ARCHIVE, spark_session.LAUNCHER_ARCHIVE)}
    tmp = {name: f"{path}.tmp-{os.getpid()}" for name, path in final.items()}
    try:
        command = [sys.executable, "-m", "segdex.pipelines.class_archive", "--train",
                   tmp[spark_session.DRIVER_ARCHIVE], tmp[spark_session.LAUNCHER_ARCHIVE]]
        proc = subprocess.run(command, capture_output=True, text=True, timeout=600)
        if proc.returncode != 0 or not all(os.path.isfile(p) and os.path.getsize(p) > 0 for p in tmp.values()):
            print(f"segdex: class archive not built (Spark starts without it): {proc.stderr.strip()[-500:]}",
                  file=sys.stderr)
            return False
        for name, path in tmp.items():
            os.replace(path, final[name])
        return True
    finally:
        for path in tmp.values():
            if os.path.exists(path):
                os.unlink(path)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--train":
        _train(sys.argv[2], sys.argv[3])
    else:
        sys.exit(0 if build(sys.argv[1] if len(sys.argv) > 1 else None) else 1)
