"""What a broker's start trips on in a log dir, said by every command that walks the dir, before anything changes.

Kafka 4.4.0's own starts on each case of ``tests.support.unloadable_cases`` are recorded in
tests/kafka/golden/unloadable_kafka.json (tests/kafka/test_startup_preview.py starts a real broker on them and checks
that it still answers so). Here, without a broker: ``verify``'s startup preview names each recorded start (fails
with Kafka's exception, or the log end offset a misread ``.log`` name sets); the reading commands print one
``unloadable:`` line per thing and exit 1; the writing commands (``clean --apply``, ``retention --apply``,
``recover``, ``reindex``, ``compact --apply``) change no byte of such a log dir and exit 1, unless
``--allow-unloadable``.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.log.checkpoints import write_offset_checkpoint
from segdex.indexcore.log.layout import CLEAN_SHUTDOWN_FILE, LOCK_FILE
from segdex.indexcore.tools.rebuild import rebuild
from segdex.indexcore.tools.segment_writer import build_batch, write_partition
from segdex.jobs.cli import main as segdex
from segdex.pipelines import reindex
from segdex.pipelines.run_context import MODE_VERIFY, RunContext
from segdex.pipelines.scan import scan_group
from tests.support.unloadable_cases import (
    CASES,
    LOGDIR,
    PARTITION,
    RECORDS,
    TOPIC,
    UNLOADABLE_GOLDEN,
    WRITING,
    predicted,
    tree,
    writing_command,
)

T0 = 1_600_000_000_000  # old records: retention.ms deletes them
RECORDED = json.loads(UNLOADABLE_GOLDEN.read_text())
JUNK = 'the broker will not start: java.lang.NumberFormatException: For input string: "junk"'
NOT_A_PARTITION = ("the broker will not start: org.apache.kafka.common.KafkaException: Found directory {}, "
                   "'lost+found' is not in the form of topic-partition")


def broker_like_log_dir(log_dir: Path, segments: int = 1) -> Path:
    """``orders-0`` with ``RECORDS`` records as a clean stop leaves it (index files, ``.kafka_cleanshutdown``,
    checkpoints at the log end, and no ``.lock``: the broker deletes it as it stops)."""
    batches = [build_batch(i, [(T0 + i, b"k%d" % i, b"v" * 100)]) for i in range(RECORDS)]
    write_partition(log_dir, TOPIC, 0, batches, segment_bytes=sum(map(len, batches)) // segments + 1)
    list(rebuild(str(log_dir / PARTITION), LogConfig()))
    (log_dir / LOCK_FILE).unlink()  # rebuild held the log dir's lock
    for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
        write_offset_checkpoint(log_dir / name, {(TOPIC, 0): RECORDS})
    (log_dir / "meta.properties").write_text("version=1\nnode.id=1\n")
    (log_dir / CLEAN_SHUTDOWN_FILE).write_bytes(b'{"version":0,"brokerEpoch":5}')
    return log_dir


def test_the_recording_covers_what_it_claims():
    assert set(RECORDED) == set(CASES)
    assert {o["starts"] for o in RECORDED.values()} == {True, False}
    assert any(o["logs_created"] for o in RECORDED.values())
    assert any(o["marker_kept"] and not o["starts"] for o in RECORDED.values())  # the metadata log's failure


def test_verify_predicts_every_recorded_start(tmp_path: Path):
    """One log dir per recorded case, verified together (``discover`` and ``scan_group``, what each Spark task
    runs): the partition's startup preview is Kafka's outcome, and ``list_log_dir`` predicts it whole."""
    dirs = {}
    for i, case in enumerate(RECORDED):
        log_dir = broker_like_log_dir(tmp_path / f"case-{i}")
        CASES[case](log_dir)
        dirs[str(log_dir)] = case
        assert predicted(log_dir) == RECORDED[case], case
    found = reindex.discover(list(dirs), LogConfig())
    assert not found.refused and sorted(found.listed) == sorted(dirs)
    outcomes = scan_group(found.tasks, RunContext(MODE_VERIFY, "replay", datetime.now(UTC)))
    rows = {o.partition.log_dir: o.partition for o in outcomes if (o.partition.topic, o.partition.partition) ==
            (TOPIC, 0)}
    for log_dir, case in dirs.items():
        kafka, row = RECORDED[case], rows[log_dir]
        lines = [str(u) for u in found.unloadable if u.path.startswith(log_dir + os.sep)]
        if kafka["starts"]:
            assert row.startup_action == "none" and row.startup_log_end_offset == kafka["log_end_offset"], case
            assert bool(kafka["logs_created"]) == bool(lines) == bool(row.startup_note), (case, lines, row)
            for created in kafka["logs_created"]:
                assert f"it creates an empty {created}" in row.startup_note, case
            continue
        exception = kafka["exception"].replace(LOGDIR, log_dir)
        assert row.startup_action == "fail" and f"the broker will not start: {exception}" in row.startup_note, case
        assert ("the failed start deletes .kafka_cleanshutdown" in row.startup_note) != kafka["marker_kept"], case
        assert [line for line in lines if f"the broker will not start: {exception}" in line], (case, lines)


@pytest.mark.parametrize("case", ["junk.log", "lost+found"])
@pytest.mark.parametrize("command", list(WRITING))
def test_writing_commands_change_nothing_where_the_broker_will_not_start(tmp_path: Path, capsys, command: str,
                                                                        case: str):
    """Each writing command, on a log dir it would otherwise change (old segments past retention, a missing index,
    a compacted topic, an over-long index), changes no byte there, creates no ``.lock`` either, and exits 1, with
    the ``unloadable:`` line and its refusal; the same command with ``--allow-unloadable`` then does its work."""
    log_dir = broker_like_log_dir(tmp_path / "logs", segments=2)
    (log_dir / PARTITION / "00000000000000000000.index").unlink()  # reindex and recover rebuild it
    with open(log_dir / PARTITION / "00000000000000000000.timeindex", "ab") as f:
        f.write(bytes(120))  # compact trims it
    CASES[case](log_dir)
    before = tree(log_dir)
    args = writing_command(command, tmp_path / "meta")
    code = segdex([*args, str(log_dir)])
    out, err = capsys.readouterr()
    assert code == 1, (out, err)
    assert tree(log_dir) == before and not (log_dir / LOCK_FILE).exists(), (out, err)
    line = JUNK if case == "junk.log" else NOT_A_PARTITION.format(log_dir / case)
    assert f"unloadable: {log_dir / PARTITION / case if case == 'junk.log' else log_dir / case}: {line}" in err, err
    assert "nothing was written there" in err and "--allow-unloadable" in err, err
    assert "Traceback" not in err
    code = segdex([*args, "--allow-unloadable", str(log_dir)])
    out, err = capsys.readouterr()
    assert tree(log_dir) != before, (command, out, err)
    assert "nothing was written there" not in err, err
    assert f"unloadable: {log_dir}" in err  # still said


@pytest.mark.parametrize("command", [["verify", "--no-progress"], ["clean", "--no-record"],
                                     ["retention", "--no-record"], ["compact"]])
def test_reading_commands_say_it_in_one_line(tmp_path: Path, capsys, command: list[str]):
    log_dir = broker_like_log_dir(tmp_path / "logs")
    CASES["junk.log"](log_dir)
    CASES["lost+found"](log_dir)
    before = tree(log_dir)
    extra = ["--metadata", str(tmp_path / "meta")] if command[0] == "verify" else []
    code = segdex([*command, *extra, str(log_dir)])
    out, err = capsys.readouterr()
    assert code == 1, (out, err)
    assert tree(log_dir) == before
    lines = [line for line in err.splitlines() if line.startswith("unloadable: ")]
    assert lines == [f"unloadable: {log_dir / 'lost+found'}: {NOT_A_PARTITION.format(log_dir / 'lost+found')} or "
                     f"topic-partition.uniqueId-delete (if marked for deletion). (LogManager.loadLogs reads every "
                     f"directory of a log dir as <topic>-<partition>; move it out of the log dir)",
                     f"unloadable: {log_dir / PARTITION / 'junk.log'}: {JUNK} (LogLoader.loadSegmentFiles reads an "
                     f"offset from the name of every .log file; move it out of the partition dir)"], err
    assert "misnamed" not in err  # said once, as the broker's start would meet it
