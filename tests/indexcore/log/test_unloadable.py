"""``indexcore.log.unloadable`` in the test process: which names of a partition directory a broker's start trips on,
in which order it meets them, and what the preview line says.

What Kafka 4.4.0's start does with each case is recorded from a real broker (tests/kafka/golden/unloadable_kafka.json,
replayed whole by tests/jobs/test_unloadable.py); these are the rules between the recorded cases: what the load
skips because it is no regular file, a misread ``.log`` below or at a segment's base, the stage order.
"""

from __future__ import annotations

import os
from pathlib import Path

from segdex.indexcore.log.unloadable import (
    STAGE_LOG_DIR,
    STAGE_METADATA_LOG,
    STAGE_PARTITION,
    Unloadable,
    fail_notes,
    first_failure,
    partition_dir_problems,
    unloadable_refusal,
)

SEGMENT = "00000000000000000000.log"


def _partition(tmp_path: Path, *names: str) -> Path:
    part = tmp_path / "orders-0"
    part.mkdir()
    for name in (SEGMENT, "00000000000000000040.log", *names):
        (part / name).write_bytes(b"")
    return part


def test_only_regular_files_are_read_by_name(tmp_path: Path):
    """``LogLoader`` lists regular files only (``File.isFile``, which follows a symlink): a directory or FIFO named
    ``junk.log`` and a dangling link are skipped; a link to a regular file is read like one."""
    part = _partition(tmp_path)
    (part / "dir.log").mkdir()
    os.mkfifo(part / "fifo.log")
    (part / "dangling.log").symlink_to(tmp_path / "nowhere")
    (part / "linked.log").symlink_to(part / SEGMENT)
    assert [os.path.basename(u.path) for u in partition_dir_problems(str(part))] == ["linked.log"]


def test_what_the_load_parses_and_what_it_skips(tmp_path: Path):
    part = _partition(tmp_path, "junk.log.deleted", "junk.bak", "junk", "leader-epoch-checkpoint",
                      "partition.metadata", "abc.timeindex", "x.cleaned")
    problems = partition_dir_problems(str(part))
    assert [(os.path.basename(u.path), u.exception) for u in problems] == [
        ("abc.timeindex", 'java.lang.NumberFormatException: For input string: "abc"'),
        ("x.cleaned", 'java.lang.NumberFormatException: For input string: "x"')]
    assert all(u.fails and u.deletes_marker and u.stage == STAGE_PARTITION for u in problems)
    assert problems[1].hint.startswith("LogLoader.removeTempFilesAndCollectSwapFiles reads an offset")


def test_a_misread_log_name_below_the_last_base_or_at_a_base(tmp_path: Path):
    """``5.log`` beside segments 0 and 40: an empty segment at 5 between them, the log end offset as it was;
    ``40.log``: Kafka opens the segment at 40, which is there (nothing said); ``70.log``: the new last segment."""
    part = _partition(tmp_path, "5.log", "40.log", "70.log")
    problems = {os.path.basename(u.path): u for u in partition_dir_problems(str(part))}
    assert sorted(problems) == ["5.log", "70.log"]
    assert not problems["5.log"].fails and problems["5.log"].opens == "00000000000000000005.log"
    assert problems["5.log"].log_end_offset is None
    assert problems["5.log"].effect == ("the broker starts but reads it as the segment at offset 5: it creates an "
                                        "empty 00000000000000000005.log (and its index files) beside the "
                                        "partition's segments")
    assert problems["5.log"].hint == "move it out of the partition dir"
    assert problems["70.log"].log_end_offset == 70
    assert problems["70.log"].effect.endswith("and the partition's log end offset becomes 70")


def test_the_metadata_log_fails_first_and_keeps_the_marker(tmp_path: Path):
    meta = tmp_path / "__cluster_metadata-0"
    meta.mkdir()
    (meta / "junk.log").write_bytes(b"")
    [u] = partition_dir_problems(str(meta), metadata_log=True)
    assert u.stage == STAGE_METADATA_LOG and not u.deletes_marker


def _failing(path: str, stage: int) -> Unloadable:
    return Unloadable(path, f"the broker will not start: E{stage}", "hint", f"E{stage}", stage != STAGE_METADATA_LOG,
                      stage)


def test_the_failure_a_start_meets_first_and_the_preview_note():
    """The raft layer loads the metadata log before ``LogManager``, which parses every directory name before it
    loads a partition: the note names the first, counts the others, and says the marker goes (unless the metadata
    log failed, before ``loadLogs`` deleted it)."""
    misread = Unloadable("/d/orders-0/5.log", "the broker starts but ...", "hint", opens="x")
    partition, log_dir, metadata = (_failing("/d/orders-0/a.log", STAGE_PARTITION),
                                    _failing("/d/lost+found", STAGE_LOG_DIR),
                                    _failing("/d/__cluster_metadata-0/a.log", STAGE_METADATA_LOG))
    assert first_failure([misread]) is None and fail_notes([misread], True) == []
    assert first_failure([misread, partition, log_dir]) is log_dir
    assert fail_notes([partition, log_dir], False) == [
        "the broker will not start: E1 (/d/lost+found); 1 more in this log dir"]
    assert fail_notes([partition], True) == [
        "the broker will not start: E2 (/d/orders-0/a.log); the failed start deletes .kafka_cleanshutdown first: "
        "the start after the fix recovers every partition"]
    assert fail_notes([partition, metadata], True) == [
        "the broker will not start: E0 (/d/__cluster_metadata-0/a.log); 1 more in this log dir"]


def test_the_refusal_of_a_writing_command():
    """A log dir a broker will not start on, or one it misreads, is left alone; the count of lines is the count of
    what the operator has to move."""
    misread = Unloadable("/d/orders-0/5.log", "the broker starts but ...", "hint", opens="x")
    failing = _failing("/d/lost+found", STAGE_LOG_DIR)
    assert unloadable_refusal("/d", [misread]) == (
        "/d: a broker misreads it as it is (1 unloadable line); nothing was written there: move what they name out "
        "of it, or give --allow-unloadable")
    assert unloadable_refusal("/d", [misread, failing]) == (
        "/d: a broker will not start on it as it is (2 unloadable lines); nothing was written there: move what they "
        "name out of it, or give --allow-unloadable")


def test_only_live_log_names_give_the_segments_bases(tmp_path: Path):
    """The bases a misread name is compared with are those of the 20-digit ``.log`` files, read past any name that
    is no segment file (``00000000000000000001.log.bak`` sorts before segment 40): ``40.log`` opens segment 40,
    which is there; an orphan ``.index`` or a ``.log.deleted`` at 5 is no segment, so ``5.log`` opens one."""
    part = _partition(tmp_path, "00000000000000000001.log.bak", "40.log", "00000000000000000005.index",
                      "00000000000000000006.log.deleted", "5.log", "6.log")
    assert [os.path.basename(u.path) for u in partition_dir_problems(str(part))] == ["5.log", "6.log"]
