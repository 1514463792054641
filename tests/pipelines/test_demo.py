"""``segdex demo`` end to end on the shared SparkSession."""

from __future__ import annotations

import io

import pytest

from segdex.jobs.demo import demo as run_demo
from segdex.pipelines import demo


def test_demo_generates_reindexes_and_queries(tmp_path, spark):
    out = io.StringIO()
    assert run_demo(spark, str(tmp_path / "sample"), out) == 0
    text = out.getvalue()
    logs = tmp_path / "sample" / "kafka-logs"
    assert len({p.parent.name.rsplit("-", 1)[0] for p in logs.glob("*/*.log")}) >= 3  # several topics
    assert len(list(logs.glob("*/*.log"))) == len(list(logs.glob("*/*.timeindex"))) > 20
    assert "payments" in text and "(4 rows)" in text and "corrupt_log_tail" in text
    assert "reindex" in text and "verify" in text
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "keep.txt").write_text("x")
    with pytest.raises(FileExistsError):
        demo.prepare(tmp_path / "other")
    assert (tmp_path / "other" / "keep.txt").exists()
