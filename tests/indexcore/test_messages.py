"""What indexcore says when it refuses something, in full: the exception, its words, the value or file it names.
An operator reads these on the command line and in status rows; a test that checked only the exception type
would let them turn into ``None``."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest

from segdex.indexcore.errors import CorruptIndexException, UsageException
from segdex.indexcore.index.transaction_index import AbortedTxn, parse_transaction_index
from segdex.indexcore.log.log_dir import LogDirLockedException, ensure_not_locked
from segdex.indexcore.tools.list_offsets import parse_target
from tests.support.fixtures import broker_lock

TXN = struct.Struct(">hqqqq")  # version, producerId, firstOffset, lastOffset, lastStableOffset


def test_transaction_index_entries_and_refusals():
    data = TXN.pack(0, 7, 10, 20, 5) + TXN.pack(0, -1, 2**62, 2**62 + 1, 0)
    assert parse_transaction_index(data) == [AbortedTxn(7, 10, 20, 5, 0), AbortedTxn(-1, 2**62, 2**62 + 1, 0, 0)]
    assert [t.version for t in parse_transaction_index(data)] == [0, 0]
    with pytest.raises(CorruptIndexException) as e:
        parse_transaction_index(data[:-3])
    assert str(e.value) == f"Unexpected end of transaction index: size {len(data) - 3} is not a multiple of 34"
    with pytest.raises(CorruptIndexException) as e:
        parse_transaction_index(TXN.pack(1, 7, 10, 20, 5))
    assert str(e.value) == "Unexpected aborted transaction version 1"


@pytest.mark.parametrize(("text", "value"), [("latest", -1), (" Earliest ", -2), ("max-timestamp", -3), ("-3", -3),
                                             ("0", 0), ("1700000000000", 1700000000000)])
def test_time_targets(text: str, value: int):
    assert parse_target(text) == value


def test_time_targets_refused_in_full():
    with pytest.raises(UsageException) as e:
        parse_target("yesterday")
    assert str(e.value) == "--time 'yesterday': not epoch milliseconds nor one of -1/latest, -2/earliest, " \
                           "-3/max-timestamp"
    with pytest.raises(UsageException) as e:
        parse_target("-4")
    assert str(e.value) == "--time -4: below -3 (only -1 latest, -2 earliest, -3 max-timestamp are special)"


def test_a_held_log_dir_is_refused_by_name(tmp_path: Path):
    ensure_not_locked(tmp_path)  # nobody holds it
    with broker_lock(tmp_path), pytest.raises(LogDirLockedException) as e:
        ensure_not_locked(tmp_path)
    assert re.fullmatch(rf"{re.escape(str(tmp_path))}: its \.lock is held by another process \(pid [0-9]+\) named "
                        rf"python[0-9.]* \(a running Kafka broker, or another segdex run\?\); stop it or work on a "
                        rf"copy of the log dir", str(e.value)), str(e.value)


def test_time_retention_notes_a_future_timestamp_only_in_the_future():
    from segdex.indexcore.retention.policy import RetentionMsBreached, SegmentFacts

    rule = RetentionMsBreached(retention_ms=100, now_ms=1_000)
    assert rule.note is None
    assert rule(SegmentFacts(0, 10, 1_000), None) == ""
    assert rule.note == "retention.ms: kept segment 0: largest timestamp 1000 is 0 ms old <= retention.ms=100"
    assert rule(SegmentFacts(5, 10, 1_001), None) == ""
    assert rule.note == ("retention.ms: kept segment 5: largest timestamp 1001 (a future timestamp) is -1 ms old "
                         "<= retention.ms=100")
    assert rule(SegmentFacts(9, 10, 899, "log mtime"), None) == \
        "largest timestamp 899 (log mtime) is 101 ms old > retention.ms=100"


def test_internal_topic_settings_are_named_as_such():
    from segdex.indexcore.config.log_config import TopicConfigResolver

    resolver = TopicConfigResolver(config={"segment.bytes": "2097152"},
                                   topic_configs={"__transaction_state": {"segment.bytes": "3145728"}})
    offsets = resolver.resolve("__consumer_offsets")  # the internal topic's settings beat --config's defaults
    assert offsets.from_internal_topic() == {"cleanup.policy": "compact", "segment.bytes": "104857600"}
    # a topic's own --topic-config beats them
    assert resolver.resolve("__transaction_state").from_internal_topic() == {"cleanup.policy": "compact"}
    assert resolver.resolve("__share_group_state").from_internal_topic() == {
        "cleanup.policy": "delete", "retention.ms": "-1", "segment.bytes": "104857600"}
    assert resolver.resolve("orders").from_internal_topic() == {}
    assert resolver.resolve("__consumer_offsets") is offsets  # resolved once per topic


def test_a_new_leader_epoch_checkpoint_takes_its_neighbours_mode(tmp_path: Path):
    import os

    from segdex.indexcore.log.checkpoints import write_leader_epoch_checkpoint

    (tmp_path / "00000000000000000000.log").write_bytes(b"")
    os.chmod(tmp_path / "00000000000000000000.log", 0o640)
    (tmp_path / "partition.metadata").write_bytes(b"version: 0\n")
    os.chmod(tmp_path / "partition.metadata", 0o604)
    write_leader_epoch_checkpoint(tmp_path / "leader-epoch-checkpoint", [(0, 0), (3, 100)])
    lec = tmp_path / "leader-epoch-checkpoint"
    assert lec.read_bytes() == b"0\n2\n0 0\n3 100\n"
    assert lec.stat().st_mode & 0o777 == 0o604  # partition.metadata comes before a .log


def test_what_is_not_a_regular_file_is_named_by_kind(tmp_path: Path):
    """A FIFO, a socket, a device or a directory where a segment file belongs: refused without blocking, by kind."""
    import os
    import socket

    from segdex.indexcore.fs.file_access import (
        NotRegularFileException,
        check_regular,
        is_regular,
        open_regular,
        open_regular_fd,
    )

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    sock_path = tmp_path / "sock"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(sock_path))
    kinds = {fifo: "a FIFO", sock_path: "a socket", Path("/dev/null"): "a character device", tmp_path: "a directory"}
    try:
        for path, kind in kinds.items():
            # (a socket cannot even be opened: ENXIO, an unreadable file)
            for refuse in (check_regular,) if kind == "a socket" else (check_regular, open_regular_fd, open_regular):
                with pytest.raises(NotRegularFileException) as e:
                    refuse(path)
                assert (e.value.path, e.value.cause) == (str(path), f"cannot read: {kind}, not a regular file")
                assert str(e.value) == f"{path}: cannot read: {kind}, not a regular file"
            assert not is_regular(path)
    finally:
        sock.close()
    regular = tmp_path / "00000000000000000000.log"
    regular.write_bytes(b"abc")
    check_regular(regular)
    assert is_regular(regular) and not is_regular(tmp_path / "missing")
    with pytest.raises(OSError):
        open_regular_fd(sock_path)
    with open_regular(regular) as f:
        assert f.read() == b"abc"
    with open_regular(regular, encoding="utf-8") as f:
        assert f.read() == "abc"


def test_small_pieces_in_full(tmp_path: Path):
    """The odds and ends a row or a line is made of: a Reason's text and notes, a ListOffsets answer's row, a log
    dir's log start offsets, a segment file's base offset."""
    from segdex.indexcore.log.layout import base_offset_of
    from segdex.indexcore.status import Reason
    from segdex.indexcore.tools.list_offsets import OffsetAnswer, log_start_offsets

    assert str(Reason("bad", "/d/x.log")) == "/d/x.log: bad" and str(Reason("bad")) == "bad"
    assert Reason("bad", "/d/x.log", 7).joined("kept") == Reason("bad; kept", "/d/x.log", 7)
    assert Reason("", "/d/x.log").joined("kept") == Reason("kept", "/d/x.log")
    assert OffsetAnswer("t", 1, 5, 99, 2).as_dict() == {"topic": "t", "partition": 1, "offset": 5, "timestamp": 99,
                                                        "leader_epoch": 2}
    assert OffsetAnswer("t", 1, error="why").as_dict() == {"topic": "t", "partition": 1, "offset": -1,
                                                           "timestamp": -1, "leader_epoch": -1, "error": "why"}
    assert log_start_offsets(tmp_path) == {}
    (tmp_path / "log-start-offset-checkpoint").write_text("0\n1\nt 3 17\n")
    assert log_start_offsets(tmp_path) == {("t", 3): 17}
    assert base_offset_of(tmp_path / "t-0" / "00000000000000001234.timeindex") == 1234


def test_leftover_files_a_load_acts_on(tmp_path: Path):
    """``LogLoader``'s passes over leftovers, file by file, sorted by name: ``.deleted`` and ``.cleaned`` go, a
    ``.swap`` at or above the lowest ``.cleaned`` offset goes, another ``.swap`` is completed (the segments change),
    an index file without its ``.log`` is an orphan; live files are not findings."""
    from segdex.indexcore.log.log_dir import PartitionFinding, partition_findings

    part = tmp_path / "t-0"
    part.mkdir()
    names = ["00000000000000000000.log", "00000000000000000000.index", "00000000000000000010.log.deleted",
             "00000000000000000020.log.cleaned", "00000000000000000030.log.swap", "00000000000000000005.log.swap",
             "00000000000000000020.log.swap", "00000000000000000040.timeindex", "00000000000000000050.txnindex",
             "leader-epoch-checkpoint", "00000000000000000060.snapshot"]
    for name in names:
        (part / name).write_bytes(b"")
    (part / "00000000000000000070.index.deleted").write_bytes(b"")

    def at(name: str) -> str:
        return str(part / name)

    swap_msg = ("left by an interrupted log cleaning or split: Kafka completes the swap at load (deletes the live "
                "segments it replaces, renames it without .swap), so this partition's segments will change")
    split_msg = ("part of an incomplete segment split (at or above the .cleaned offset 20): Kafka deletes it at "
                 "load")
    orphan = "no .log with its base offset: Kafka deletes this orphaned index file when it loads the partition"
    assert partition_findings(part) == [
        PartitionFinding("swap", at("00000000000000000005.log.swap"), swap_msg, True),
        PartitionFinding("deleted", at("00000000000000000010.log.deleted"),
                         "Kafka deletes it when it loads the partition", False),
        PartitionFinding("cleaned", at("00000000000000000020.log.cleaned"),
                         "left by an interrupted log cleaning: Kafka deletes it when it loads the partition", False),
        PartitionFinding("swap", at("00000000000000000020.log.swap"), split_msg, False),
        PartitionFinding("swap", at("00000000000000000030.log.swap"), split_msg, False),
        PartitionFinding("orphan_index", at("00000000000000000040.timeindex"), orphan, True),
        PartitionFinding("orphan_index", at("00000000000000000050.txnindex"), orphan, True),
        PartitionFinding("deleted", at("00000000000000000070.index.deleted"),
                         "Kafka deletes it when it loads the partition", False),
    ]


def test_index_sanity_checks_at_their_edges():
    """``OffsetIndex.sanityCheck`` / ``TimeIndex.sanityCheck`` (plus ordering) at each boundary, words in full."""
    from segdex.indexcore.index import offset_index, time_index

    def off(*entries: tuple[int, int]) -> bytes:
        return b"".join(struct.pack(">ii", rel, pos) for rel, pos in entries)

    def tim(*entries: tuple[int, int]) -> bytes:
        return b"".join(struct.pack(">qi", ts, rel) for ts, rel in entries)

    for good in (off((5, 10), (6, 11)), off((-3, 10), (0, 30)), off((-2, 4), (3, 8))):
        offset_index.sanity_check(good, 100)
    for bad, why in ((off((5, 10))[:-4] + b"\0" * 8, "Index file has size 12 which is not a multiple of 8"),
                     (off((5, 10), (-1, 20)), "Corrupt index found, index file has non-zero size but the last offset "
                                               "is 99 which is less than the base offset 100"),
                     (off((5, 10), (5, 20)), "Index entries out of order: (105, 10) then (105, 20)"),
                     (off((5, 10), (6, 10)), "Index entries out of order: (105, 10) then (106, 10)")):
        with pytest.raises(CorruptIndexException) as e:
            offset_index.sanity_check(bad, 100)
        assert str(e.value) == why
    for good in (tim((1000, 0)), tim((1000, -2), (1001, 3)), tim((1000, 4), (1001, 4))):
        time_index.sanity_check(good, 100)
    for bad, why in ((tim((1000, 1)) + b"\0", "Time index file has size 13 which is not a multiple of 12"),
                     (tim((1000, -1)), "Corrupt time index found, its last offset 99 is below the base offset 100"),
                     (tim((1000, 4), (1000, 5)), "Time index entries out of order: (1000, 104) then (1000, 105)"),
                     (tim((1000, 4), (1001, 3)), "Time index entries out of order: (1000, 104) then (1001, 103)")):
        with pytest.raises(CorruptIndexException) as e:
            time_index.sanity_check(bad, 100)
        assert str(e.value) == why
