"""Under spark-submit, the operator's configuration wins over segdex's session defaults: a nightly submitted with
``--conf spark.sql.shuffle.partitions=400`` over a fleet must not run with segdex's 4. What was not given keeps
segdex's default (UTC session time zone)."""

from __future__ import annotations

import json
import sys

import pytest

from tests.support.fixtures import REPO_ROOT
from tests.support.spark_cluster import HOST, spark_submit

REPO = REPO_ROOT

PROBE = """
import json
from segdex.pipelines.spark_session import get_spark
spark = get_spark(None, "segdex-conf-probe")
print("CONF " + json.dumps({{k: spark.conf.get(k) for k in
    ("spark.sql.shuffle.partitions", "spark.sql.session.timeZone", "spark.ui.showConsoleProgress")}}))
spark.stop()
"""


@pytest.mark.spark
def test_spark_submit_conf_wins_over_segdex_defaults(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE.format(repo=str(REPO)))
    proc = spark_submit(["--master", "local[1]", "--conf", "spark.sql.shuffle.partitions=123",
                         "--conf", "spark.ui.showConsoleProgress=true", str(probe)],
                        env={"SPARK_LOCAL_IP": HOST, "PYSPARK_PYTHON": sys.executable,
                             "PYSPARK_DRIVER_PYTHON": sys.executable}, timeout_s=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("CONF "))
    assert json.loads(line[5:]) == {"spark.sql.shuffle.partitions": "123", "spark.sql.session.timeZone": "UTC",
                                    "spark.ui.showConsoleProgress": "true"}
