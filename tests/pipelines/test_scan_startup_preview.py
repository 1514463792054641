"""``segdex verify``'s startup preview in the test process, against Kafka's recorded starts.

tests/kafka/test_startup_preview.py loads every partition of its seeded workload with Kafka's own code (4.4.0 and
3.9.2) and checks that Kafka still answers what tests/kafka/golden/startup_preview_kafka.json holds. Here the same
workload is
discovered and verified without Spark (``reindex.discover`` and ``scan.scan_group``, what each Spark task runs)
and every preview must name the recorded outcome; indexcore's startup_preview is then within a mutation run's
reach (scripts/mutation.sh)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from segdex.indexcore.config.log_config import LogConfig
from segdex.pipelines import reindex
from segdex.pipelines.run_context import MODE_VERIFY, RunContext
from segdex.pipelines.scan import scan_group
from tests.support.startup_workload import PER_DIR, STARTUP_PREVIEW_GOLDEN, assert_preview_is, make_workload


def test_preview_names_kafkas_recorded_start(tmp_path: Path):
    parts, topics = make_workload(tmp_path)
    found = reindex.discover([str(tmp_path / "clean"), str(tmp_path / "unclean")], LogConfig(), topics)
    assert not found.refused
    outcomes = scan_group(found.tasks, RunContext(MODE_VERIFY, "replay", datetime.now(UTC)))
    rows = {f"{Path(o.partition.log_dir).name}/{o.partition.topic}-0": o.partition for o in outcomes}
    recorded = json.loads(STARTUP_PREVIEW_GOLDEN.read_text())
    assert sorted(rows) == sorted(recorded) == sorted(f"{d}/{n}" for d, n in parts)
    previews = {f"{Path(o.partition.log_dir).name}/{o.partition.topic}-0": o.startup for o in outcomes}
    for key, kafka in sorted(recorded.items()):
        assert_preview_is(rows[key], kafka, (key, rows[key], kafka))
        if kafka["fails"]:
            continue
        # the offsets a start takes away, as the command line names them: from the log end it leaves to the last
        # valid batch's last offset (None when the bytes cut held no valid batch)
        lost, want = previews[key].lost_offsets, kafka["lost_offsets"]
        assert (lost is None) == (want is None), (key, lost, kafka)
        if want is not None:
            assert lost[0] == want[0], (key, lost, kafka)  # where the loss starts
            # where it ends: only a deleted segment's batches count, up to the first one Kafka's recovery would
            # refuse, which a CRC-only reading (want[1]) may pass: at most that, and never past it
            assert (lost[1] is None) == (want[1] is None), (key, lost, kafka)
            assert lost[1] is None or lost[0] <= lost[1] <= want[1], (key, lost, kafka)
    assert sum(k.get("lost_offsets") is not None for k in recorded.values()) >= 15  # of 72: the recording covers losses
    assert any(k["lost_offsets"][1] is None for k in recorded.values() if k.get("lost_offsets"))
    assert sum(not k["fails"] for k in recorded.values()) >= PER_DIR
    assert {k["action"] for k in recorded.values() if not k["fails"]} == {"none", "recover", "truncate"}
    assert any(k["fails"] for k in recorded.values())
