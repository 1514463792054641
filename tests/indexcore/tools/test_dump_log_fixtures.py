"""``segdex dump --json`` against Kafka's own batch facts, field by field, for every ``.log`` of every fixture
(issue 15, point 5): each batch row must equal the line Kafka's ``FileRecords.batches()`` iteration wrote in
``<segment>.batches.json``, and segdex must stop where Kafka's iterator stopped, with the same exception."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from tests.support.cli import segdex
from tests.support.fixtures import FIXTURES, REPO_ROOT

REPO = REPO_ROOT


def expected_batches() -> dict[str, list[dict]]:
    out = {}
    for facts in sorted(FIXTURES.glob("*/*/*.batches.json")):
        log = facts.with_name(facts.name.replace(".batches.json", ".log"))
        if log.exists():
            out[str(log)] = json.loads(facts.read_text())
    return out


def test_dump_json_matches_every_fixture_batch(kafka_fixtures):
    expected = expected_batches()
    assert len(expected) >= 50
    proc = segdex("dump", "--json", *expected, timeout=300)
    got: dict[str, list[dict]] = defaultdict(list)
    for line in proc.stdout.splitlines():
        row = json.loads(line)
        got[row.pop("file")].append(row)
    stopped = 0
    for log, batches in expected.items():
        rows = got[log]
        want = [b for b in batches if "iterationStopped" not in b]
        have = [{k: v for k, v in r.items() if k != "type"} for r in rows if r["type"] == "batch"]
        assert have == want, log
        errors = [r for r in rows if r["type"] == "error"]
        kafka_stop = [b["iterationStopped"] for b in batches if "iterationStopped" in b]
        if kafka_stop:
            stopped += 1
            kafka_class, kafka_message = kafka_stop[0].split(": ", 1)
            [error] = errors
            ours_class, ours_message = error["iterationStopped"].split(": ", 1)
            assert ours_class == kafka_class.rsplit(".", 1)[-1], log
            assert kafka_message.startswith(ours_message), log
        else:
            assert not errors, (log, errors)
        end = want[-1]["position"] + want[-1]["sizeInBytes"] if want else 0
        partial = [r for r in rows if r["type"] == "partialBatch"]
        size = Path(log).stat().st_size
        if not kafka_stop and end < size:  # Kafka's iterator stopped quietly at a partial batch
            assert [(r["position"], r["trailingBytes"]) for r in partial] == [(end, size - end)], log
        else:
            assert not partial, log
    assert stopped >= 1
    assert proc.returncode == 1  # the stopped iteration needs attention
