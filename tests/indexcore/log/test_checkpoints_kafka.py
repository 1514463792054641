"""Checkpoint files read as Kafka 4.4's broker reads them (``CheckpointFile.CheckpointReadBuffer.read`` through
``OffsetCheckpointFile`` and ``LeaderEpochCheckpointFile``): the same entries, or a refusal where Kafka's read
throws. Kafka's answers are kept in ``checkpoint_reads.json`` and compared in the test process too."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from segdex.indexcore.log.checkpoints import (
    CorruptCheckpointException,
    read_leader_epoch_checkpoint,
    read_offset_checkpoint,
)
from tests.support.fixtures import GOLDEN

ANSWERS = GOLDEN / "checkpoint_reads.json"  # by kind, then case: Kafka's entries, or the exception its read threw
# (name, bytes) of each kind's cases: line ends as BufferedReader.readLine ends lines; no count line; the version
# and count lines and the numbers as Integer.parseInt/Long.parseLong read them; fields split by Java's \s+
SHARED = {
    "empty": b"", "version only": b"0\n", "version only, no line end": b"0", "blank version": b" 0\n0\n",
    "version +0": b"+0\n0\n", "version 00": b"00\n0\n", "version 1": b"1\n0\n", "count with a blank": b"0\n 0\n",
    "count 0_0": b"0\n0_0\n", "no line end after the count": b"0\n0", "an empty line": b"0\n0\n\n",
    "count too high": b"0\n2\n", "arabic-indic zero": "0\n\u0660\n".encode(), "a BOM": b"\xef\xbb\xbf0\n0\n",
    "not UTF-8": b"0\n0\n\xff\n", "NUL version": b"\x000\n0\n",
}
EPOCH = {
    "crlf": b"0\r\n2\r\n0 0\r\n3 120\r\n", "cr only": b"0\r2\r0 0\r3 120\r", "tab": b"0\n1\n3\t120\n",
    "leading blank": b"0\n1\n 3 120\n", "trailing blanks": b"0\n1\n3 120  \n",
    "no-break space": "0\n1\n3\u00a0120\n".encode(), "unit separator": b"0\n1\n3\x1f120\n",
    "three fields": b"0\n1\n3 120 7\n", "epoch past int": b"0\n1\n2147483648 5\n",
    "offset past long": b"0\n1\n3 9223372036854775808\n", "negative": b"0\n1\n-3 -120\n", "plus": b"0\n1\n+3 +120\n",
    "underscore": b"0\n1\n3 1_20\n", "vertical tab": b"0\n1\n3\x0b120\n", "form feed line": b"0\n1\n3 120\x0c\n",
    "fewer entries": b"0\n2\n3 120\n", "more entries": b"0\n1\n3 120\n4 130\n",
}
OFFSETS = {
    "two entries": b"0\n2\norders 0 42\nmy-topic 12 7\n", "crlf": b"0\r\n1\r\nt 0 5\r\n", "tab": b"0\n1\nt\t0\t5\n",
    "leading blank": b"0\n1\n t 0 5\n", "partition past int": b"0\n1\nt 2147483648 5\n", "negative": b"0\n1\nt -1 -5\n",
    "two fields": b"0\n1\nt 0\n", "letters": b"0\n1\nt x 5\n", "no-break space": "0\n1\nt 0\u00a05\n".encode(),
    "unicode topic": "0\n1\nt\u00e9 0 5\n".encode(), "same partition twice": b"0\n2\nt 0 5\nt 0 6\n",
    "offset past long": b"0\n1\nt 0 9223372036854775808\n", "offset at long's end": b"0\n1\nt 0 9223372036854775807\n",
}
CASES = {"epoch": {**SHARED, **EPOCH}, "offsets": {**SHARED, **OFFSETS}}


def _segdex(kind: str, path: Path) -> list | None:
    """segdex's entries as Kafka's answers give them; None where segdex refuses the file."""
    try:
        if kind == "epoch":
            return [list(e) for e in read_leader_epoch_checkpoint(path)]
        return sorted([t, p, o] for (t, p), o in read_offset_checkpoint(path).items())
    except CorruptCheckpointException:
        return None


def _write(tmp_path: Path, kind: str, name: str) -> Path:
    path = tmp_path / kind / name.replace(" ", "-")
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(CASES[kind][name])
    return path


def test_kafkas_answers_are_the_recorded_ones(kafka44, tmp_path: Path):
    """Kafka 4.4's reads of every case: its answers are the ones kept (``SEGDEX_RECORD_GOLDEN=1`` records them)."""
    answers = {kind: {name: kafka44.checkpoint(kind, _write(tmp_path, kind, name)) for name in cases}
               for kind, cases in CASES.items()}
    answers = json.loads(json.dumps(answers).replace(str(tmp_path), "{dir}"))
    if os.environ.get("SEGDEX_RECORD_GOLDEN") == "1":
        ANSWERS.write_text(json.dumps(answers, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    assert answers == json.loads(ANSWERS.read_text())


@pytest.mark.parametrize("kind", sorted(CASES))
def test_every_checkpoint_is_read_as_kafka_reads_it(kind: str, tmp_path: Path):
    """Each case: segdex reads Kafka's entries, or refuses the file where Kafka's read throws."""
    kept = json.loads(ANSWERS.read_text())[kind]
    differ = {}
    for name in CASES[kind]:
        kafkas = kept[name] if isinstance(kept[name], list) else None
        ours = _segdex(kind, _write(tmp_path, kind, name))
        if ours != kafkas:
            differ[name] = f"segdex {ours}, Kafka {kept[name]}"
    assert not differ, differ
    assert sum(isinstance(a, list) for a in kept.values()) >= 8  # reads, not only refusals
