"""``segdex dump`` of index files in the test process, against Kafka 4.4.0's ``kafka-dump-log`` on the same files:
every offset-index, time-index and transaction-index entry of every fixture, then segdex's verification row."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from segdex.indexcore.tools.dump_log import dump
from tests.support.dump_compare import kafka_dump
from tests.support.fixtures import FIXTURES
from tests.support.kafka_harness import KafkaInstall

SUFFIXES = (".index", ".timeindex", ".txnindex")


def _kafka_entries(lines: list[str]) -> list[dict]:
    out = []
    for line in lines:
        if m := re.fullmatch(r"offset: (\d+) position: (\d+)", line):
            out.append({"type": "offsetIndexEntry", "offset": int(m[1]), "position": int(m[2])})
        elif m := re.fullmatch(r"timestamp: (-?\d+) offset: (\d+)", line):
            out.append({"type": "timeIndexEntry", "timestamp": int(m[1]), "offset": int(m[2])})
        elif m := re.fullmatch(r"version: (\d+) producerId: (-?\d+) firstOffset: (\d+) lastOffset: (\d+) "
                               r"lastStableOffset: (\d+)", line):
            out.append({"type": "abortedTxn", "version": int(m[1]), "producerId": int(m[2]),
                        "firstOffset": int(m[3]), "lastOffset": int(m[4]), "lastStableOffset": int(m[5])})
    return out


def test_index_entries_are_kafkas(tmp_path: Path):
    copies = []
    for src in sorted(FIXTURES.glob("*/recovered/*")):
        if src.suffix in SUFFIXES and src.stat().st_size:
            case_dir = tmp_path / src.parent.parent.name
            case_dir.mkdir(exist_ok=True)
            dst = case_dir / src.name
            shutil.copyfile(src, dst)  # writable: Kafka's tool opens index files for writing
            # Kafka's tool needs the .log beside: the recovered one, else the one recovery read
            case = src.parent.parent
            log = next(d / src.with_suffix(".log").name for d in (src.parent, case / "input", case / "broker")
                       if (d / src.with_suffix(".log").name).exists())
            shutil.copyfile(log, dst.with_suffix(".log"))
            copies.append(dst)
    assert len(copies) >= 40 and {c.suffix for c in copies} == set(SUFFIXES)
    kafka = kafka_dump(KafkaInstall("4.4.0").check(), [str(c) for c in copies])
    for copy in copies:
        lines, died = kafka[str(copy)]
        assert not died, copy
        rows = list(dump(str(copy)))
        *entries, verification = rows if copy.suffix != ".txnindex" else (*rows, None)
        assert entries == _kafka_entries(lines) and entries, copy
        if verification is not None:
            assert verification == {"type": "verification", "file": str(copy), "ok": True, "problems": []}, copy
    # without its .log the entries are listed and the row says they were not checked
    lonely = copies[0]
    lonely.with_suffix(".log").unlink()
    assert list(dump(str(lonely)))[-1] == {
        "type": "verification", "file": str(lonely), "ok": False,
        "problems": [f"no {lonely.with_suffix('.log').name} beside it: entries not checked against the log"]}


def test_an_index_that_does_not_fit_its_log_is_named(tmp_path: Path):
    src = FIXTURES / "multi_segment_partition_retention" / "recovered"
    shutil.copyfile(src / "00000000000000000208.index", tmp_path / "00000000000000000208.index")
    shutil.copyfile(FIXTURES / "multi_segment_partition_retention" / "broker" / "00000000000000000410.log",
                    tmp_path / "00000000000000000208.log")  # another segment's log under this name
    *_, verification = dump(str(tmp_path / "00000000000000000208.index"))
    assert verification["ok"] is False and len(verification["problems"]) == 1
    assert verification["problems"][0].startswith("offset index entry ")
