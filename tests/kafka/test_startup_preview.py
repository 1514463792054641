"""``segdex verify``'s startup preview against Kafka's own start (``KafkaOracle load``: the real ``UnifiedLog``
creation of 4.4.0 and 3.9.2, its ``LogLoader`` lines telling which segments it recovered), and against a real
4.4.0 broker's start on a log dir holding what its load trips on (``tests.support.unloadable_cases``).

Generated partitions in two log dirs, one with ``.kafka_cleanshutdown`` and one without, in every state a broker
meets: clean, unflushed (recovery points anywhere), index files missing (all or some), a ``.txnindex`` that fails
Kafka's sanity check or that Kafka cannot read, corrupt batches, partial batches and zero-filled tails, a
checkpointed log start offset beyond the log. ``verify`` predicts each start; a copy of each partition is then
loaded by Kafka, and the preview must name its outcome: the action, the segments recovered and deleted, the log
end offset and the bytes lost.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import crc32c
import pytest

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.errors import CorruptRecordException
from segdex.indexcore.record.file_records import batches
from segdex.jobs.cli import main as segdex_main
from segdex.pipelines import reindex
from segdex.pipelines.run_context import RunRequest
from segdex.pipelines.scan import MODE_VERIFY
from tests.support.kafka_harness import KafkaBroker, KafkaInstall
from tests.support.kafka_workload import create_topics, producer
from tests.support.startup_workload import PER_DIR, STARTUP_PREVIEW_GOLDEN, T0, assert_preview_is, make_workload
from tests.support.unloadable_cases import (
    CASES,
    CHECKED,
    PARTITION,
    RECORDS,
    TOPIC,
    UNLOADABLE_GOLDEN,
    WRITING,
    log_names,
    predicted,
    start_outcome,
    tree,
    writing_command,
)

pytestmark = pytest.mark.kafka_broker

RECORD_ENV = "SEGDEX_RECORD_GOLDEN"


def _valid_offsets(log: Path) -> list[int]:
    """The offsets of a segment's valid batches, read up to its first batch that is cut short or whose CRC-32C
    does not match (where Kafka's recovery stops)."""
    data, out = log.read_bytes(), []
    try:
        for b in batches(data):
            if b.magic >= 2 and crc32c.crc32c(data[b.position + 21:b.position + b.size_in_bytes]) != b.crc:
                break  # 21: the attributes' position in a batch, where the CRC's range starts
            out.extend(range(b.base_offset, b.last_offset + 1))
    except CorruptRecordException:
        pass
    return out


def _offsets(part: Path) -> dict[int, list[int]]:
    return {int(log.name[:20]): _valid_offsets(log) for log in part.glob("*.log")}


def kafka_outcome(answer: dict, before: dict[int, int], after: dict[int, int],
                  offsets_before: dict[int, list[int]] | None = None,
                  offsets_after: dict[int, list[int]] | None = None) -> dict:
    """What Kafka's start did to a partition, in the terms of the preview's columns; with each segment's offsets
    before and after, the first and last offset the start took away: from the first segment it deleted or the
    end of the first one it cut, to the last offset of a valid batch in a deleted segment (None when the start
    only cut segments: then everything from the first offset to the cut segment's end went)."""
    if "exception" in answer:
        return {"fails": True}
    deleted = sorted(set(before) - set(after))
    lost = sum(before.values()) - sum(v for b, v in after.items() if b in before)
    offsets_before, offsets_after = offsets_before or {}, offsets_after or {}
    cut = [b for b in before if b in after and after[b] < before[b]]
    firsts = [b for b in deleted] + [max(offsets_after[b], default=b - 1) + 1 for b in cut]
    gone = [o for b in deleted for o in offsets_before.get(b, [])]  # a cut segment's tail: "to its end"
    return {"fails": False, "log_end_offset": answer["logEndOffset"], "recovered": len(answer["recovered"]),
            "deleted": len(deleted), "lost_bytes": lost,
            "action": "truncate" if lost else ("recover" if answer["recovered"] else "none"),
            "lost_offsets": [min(firsts), max(gone) if gone else None] if lost and firsts else None}


@pytest.fixture(scope="module")
def previewed(tmp_path_factory, spark):
    """Two generated log dirs (marker and none), verified once; pristine copies kept for Kafka's loads."""
    root = tmp_path_factory.mktemp("preview")
    parts, topics = make_workload(root)
    pristine = root / "pristine"
    shutil.copytree(root / "clean", pristine / "clean")
    shutil.copytree(root / "unclean", pristine / "unclean")
    summary = reindex.run(spark, MODE_VERIFY, RunRequest([str(root / "clean"), str(root / "unclean")],
                                                         str(root / "meta"), LogConfig(), topics))
    rows = {(o.partition.log_dir.rsplit("/", 1)[-1], f"{o.partition.topic}-0"): o.partition
            for o in summary.outcomes}
    return root, pristine, parts, rows, summary


def _log_sizes(part: Path) -> dict[int, int]:
    return {int(p.name[:20]): p.stat().st_size for p in part.glob("*.log")}


def test_the_workload_covers_every_startup_outcome(previewed):
    _root, _pristine, parts, rows, _summary = previewed
    kinds = {v["kind"] for v in parts.values()}
    assert {"none", "no-index", "some-index", "flip", "partial", "zeros", "txn-corrupt", "txn-version",
            "offset-back", "txn-version-no-index"} <= kinds
    assert any("InvalidOffsetException" in (r.reason or "") for r in previewed[4].segment_rows)
    actions = {(d, r.startup_action) for (d, _), r in rows.items()}
    for d in ("clean", "unclean"):
        for action in ("none", "recover", "truncate", "fail"):
            if (d, action) == ("unclean", "none"):
                continue  # without the marker the last segment is always re-read
            assert (d, action) in actions, (d, action, sorted(actions))


def test_preview_predicts_kafkas_own_start(previewed, oracle, tmp_path):
    """Kafka's own load of a copy of each partition, against the preview; Kafka's outcomes are also the ones
    recorded in tests/kafka/golden/startup_preview_kafka.json (which tests/pipelines/test_scan_startup_preview.py
    replays in the test process): ``SEGDEX_RECORD_GOLDEN=1`` writes that file from Kafka's answers instead."""
    _root, pristine, parts, rows, _summary = previewed
    outcomes = {}
    for (log_dir, name), facts in sorted(parts.items()):
        row = rows[(log_dir, name)]
        part = tmp_path / log_dir / name
        shutil.copytree(pristine / log_dir / name, part)
        before, offsets_before = _log_sizes(part), _offsets(part)
        answer = oracle.load(part, T0, log_start_offset=facts["lso"] or 0, recovery_point=facts["rp"] or 0,
                             clean=log_dir == "clean", config={"index.interval.bytes": facts["interval"]})
        kafka = kafka_outcome(answer, before, _log_sizes(part), offsets_before, _offsets(part))
        assert_preview_is(row, kafka, (log_dir, name, facts, row, answer))
        outcomes[f"{log_dir}/{name}"] = kafka
    assert sum(not k["fails"] for k in outcomes.values()) >= PER_DIR
    if os.environ.get(RECORD_ENV) == "1":
        STARTUP_PREVIEW_GOLDEN.parent.mkdir(exist_ok=True)
        STARTUP_PREVIEW_GOLDEN.write_text(json.dumps(outcomes, indent=1, sort_keys=True) + "\n")
    assert json.loads(STARTUP_PREVIEW_GOLDEN.read_text()) == outcomes


def test_the_summary_names_what_a_start_would_lose(previewed, tmp_path, capsys):
    """The CLI prints one line per partition that would lose data, and the marker in front of a corrupt log."""
    _root, pristine, _parts, rows, _summary = previewed
    losing = sorted(n for (d, n), r in rows.items() if d == "clean" and r.startup_action == "truncate")[:3]
    marked = sorted(n for (d, n), r in rows.items() if d == "clean" and "marker in front" in (r.startup_note or ""))
    assert losing and marked
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    for name in {*losing, marked[0]}:
        shutil.copytree(pristine / "clean" / name, log_dir / name)
    for name in ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint", ".kafka_cleanshutdown"):
        shutil.copy(pristine / "clean" / name, log_dir / name)
    code = segdex_main(["verify", "--no-progress", "--metadata", str(tmp_path / "meta"), str(log_dir)])
    err = capsys.readouterr().err
    assert code == 1
    for name in losing:
        r = rows[("clean", name)]
        [line] = [x for x in err.splitlines() if x.startswith(f"startup: {name}: starting the broker now")]
        assert f"{r.startup_lost_bytes:,} bytes" in line
        assert ("deletes" in line) == bool(r.startup_deleted_segments), line
    assert f"startup: {marked[0]}: clean-shutdown marker in front of" in err


@pytest.fixture(scope="module")
def unloadable_base(tmp_path_factory) -> KafkaBroker:
    """A stopped Kafka 4.4.0 broker whose log dir holds ``orders-0``: one segment of 50 records, a clean stop."""
    broker = KafkaBroker(KafkaInstall("4.4.0"), tmp_path_factory.mktemp("unloadable") / "node",
                         {"log.initial.task.delay.ms": "600000"})
    try:
        broker.start()
        create_topics(broker, {TOPIC: {}})
        p = producer(broker)
        for i in range(RECORDS):
            p.produce(TOPIC, key=b"k%d" % i, value=b"v" * 100)
        assert p.flush(30) == 0
    finally:
        broker.stop()
    assert len(log_names(broker.data_dir)) == 1
    return broker


def _start_on(base: KafkaBroker, root: Path, case: str) -> tuple[dict, dict]:
    """A copy of the base log dir with ``case`` added: segdex's prediction, then what the broker's start did. Where
    the start fails, each writing command first runs on the copy: it must change no byte and exit 1."""
    data = root / "data"
    shutil.copytree(base.data_dir, data, symlinks=True)
    CASES[case](data)
    before, ours = log_names(data), predicted(data)
    if not ours["starts"]:
        files = tree(data)
        for command in WRITING:
            code = segdex_main([*writing_command(command, root / "meta"), str(data)])
            assert (code, tree(data)) == (1, files), (case, command)
    node = base.sibling(root / "node", data)
    try:
        node.start(timeout=60)
        started = True
    except RuntimeError as e:
        started = False
        assert " at start:" in str(e) and "exited 1" in str(e), (case, str(e)[:2000])  # exits, never hangs
    finally:
        node.stop()
    return ours, start_outcome(node.log_text(), started, data, before)


def test_what_a_brokers_start_trips_on_is_what_segdex_predicts(unloadable_base, tmp_path):
    """Kafka 4.4.0's start on a log dir holding each case (``tests.support.unloadable_cases``): whether it starts,
    its fatal exception, whether ``.kafka_cleanshutdown`` survives, the segments it creates and the partition's log
    end offset, against segdex's prediction (``list_log_dir``'s unloadable entries); before a start that fails, the
    writing commands change no byte of that log dir and exit 1. Each start costs ~2-3 s: the
    ``CHECKED`` cases are started in every run and must answer what is recorded in
    tests/kafka/golden/unloadable_kafka.json (which tests/jobs/test_unloadable.py replays for every command without
    a broker); ``SEGDEX_RECORD_GOLDEN=1`` starts a broker on every case and writes that file."""
    record = os.environ.get(RECORD_ENV) == "1"
    cases = list(CASES) if record else list(CHECKED)
    outcomes = {}
    for i, case in enumerate(cases):
        ours, kafka = _start_on(unloadable_base, tmp_path / f"case-{i}", case)
        assert ours == kafka, case
        outcomes[case] = kafka
    assert any(o["starts"] for o in outcomes.values()) and not all(o["starts"] for o in outcomes.values())
    if record:
        UNLOADABLE_GOLDEN.write_text(json.dumps(outcomes, indent=1, sort_keys=True) + "\n")
    recorded = json.loads(UNLOADABLE_GOLDEN.read_text())
    assert outcomes == {c: recorded[c] for c in cases}


def test_the_stray_replicas_segdex_names_are_those_the_brokers_start_renames(unloadable_base, tmp_path):
    """Copies of ``orders-0`` that Kafka 4.4.0's metadata does not give this broker: ``ghost-0`` (a topic id the
    image does not hold), ``orders-5`` (a partition the topic does not have), ``nometa-0`` (no
    ``partition.metadata``), beside ``orders-0`` itself: segdex's ``stray_replicas`` (which verify's preview, clean and
    retention use) names exactly the dirs the broker's start loads and then renames ``<dir>.<uuid>-stray``."""
    from segdex.indexcore.metadata.metadata_image import stray_replicas

    data = tmp_path / "data"
    shutil.copytree(unloadable_base.data_dir, data, symlinks=True)
    for name in ("ghost-0", "orders-5", "nometa-0"):
        shutil.copytree(data / PARTITION, data / name)
    (data / "ghost-0" / "partition.metadata").write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\n")
    (data / "nometa-0" / "partition.metadata").unlink()
    ours = {Path(p).name for p in stray_replicas([str(data)])}
    node = unloadable_base.sibling(tmp_path / "node", data)
    try:
        node.start(timeout=60)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(list(data.glob("*-stray"))) < len(ours):
            time.sleep(0.2)  # the metadata publisher renames them once the broker has caught up
    finally:
        node.stop()
    renamed = {p.name.split(".")[0] for p in data.glob("*-stray")}
    assert ours == renamed == {"ghost-0", "orders-5", "nometa-0"}
    assert (data / PARTITION).is_dir()
