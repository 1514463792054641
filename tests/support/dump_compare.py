"""Kafka's own ``kafka-dump-log`` (``DumpLogSegments`` from the jars the set-up fetched) and ``segdex dump`` run over
the same files, and the comparison of their output line for line; the broker logs recorded for it.

Shared because three modules compare ``segdex dump`` with Kafka's tool: tests/kafka/test_dump_data_log.py (fixtures
and a live broker's logs), tests/kafka/test_dump_recorded.py (the logs recorded in ``RECORDED``) and
tests/kafka/test_dump_index.py (index files). ``kafka_dump`` keeps Kafka's answers per process, so every module
asking the same question gets them from one cache."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.support.cli import segdex_here
from tests.support.fixtures import GOLDEN
from tests.support.kafka_harness import KafkaInstall

DUMP_CLASS = {3: "kafka.tools.DumpLogSegments", 4: "org.apache.kafka.tools.DumpLogSegments"}
UTF8 = ["-Dstdout.encoding=UTF-8", "-Dfile.encoding=UTF-8"]
RECORDED = GOLDEN / "broker_logs"


def kafka_dump(install: KafkaInstall, files: list[str], *options: str) -> dict[str, tuple[list[str], str | bool]]:
    """Kafka's tool over ``files``: per file its stdout lines and whether the tool died on it (False, or the
    exception it threw: ``class: message``). The tool stops
    the whole run at a file it cannot read, so it is started again after that file. Kept per process: the same
    question gets Kafka's same answer (a mutation run's forked tests ask it again for every mutant)."""
    key = (install.version, tuple(files), options)
    if key not in _KAFKA_ANSWERS:
        _KAFKA_ANSWERS[key] = _kafka_dump(install, files, *options)
    return _KAFKA_ANSWERS[key]


_KAFKA_ANSWERS: dict[tuple, dict[str, tuple[list[str], str | bool]]] = {}


def _kafka_dump(install: KafkaInstall, files: list[str], *options: str) -> dict[str, tuple[list[str], str | bool]]:
    out: dict[str, tuple[list[str], str | bool]] = {}
    pending = list(files)
    while pending:
        cmd = install.java(DUMP_CLASS[install.family], *options, "--files", ",".join(pending))
        cmd[1:1] = UTF8
        proc = subprocess.run(cmd, capture_output=True, timeout=600)
        text = proc.stdout.decode("utf-8")
        if install.family == 3:  # Kafka 3.x printed a stray brace after a legacy record's crc; 4.x does not
            text = re.sub(r"(isValid: (?:true|false) crc: \d+)\}", r"\1", text)
        chunks = text.split("Dumping ")[1:]
        for chunk in chunks:
            name, _, body = chunk.partition("\n")
            out[name] = (body.split("\n")[:-1] if body.endswith("\n") else body.split("\n"), False)
        done = len(chunks)
        if proc.returncode == 0:
            assert done == len(pending), proc.stderr.decode()[-2000:]
            break
        assert done >= 1, proc.stderr.decode()[-2000:]
        crashed = pending[done - 1]
        lines, _ = out[crashed]
        thrown = re.search(r'Exception in thread "main" ([\w.$]+)(: .*)?', proc.stderr.decode())
        # drop a half-printed line; say what the tool threw
        out[crashed] = (lines if text.endswith("\n") else lines[:-1],
                        thrown.group(1) + (thrown.group(2) or "") if thrown else "died")
        pending = pending[done:]
    return out


def segdex_dump(files: list[str], *options: str) -> tuple[dict[str, list[str]], int]:
    """``segdex dump`` in this process (its command line is tested by subprocess in
    tests/kafka/test_dump_data_log.py): per file its lines."""
    proc = segdex_here("dump", *options, *files)
    out: dict[str, list[str]] = {}
    for chunk in proc.stdout.split("Dumping ")[1:]:
        name, _, body = chunk.partition("\n")
        out[name] = body.split("\n")[:-1]
    return out, proc.returncode


def assert_same(kafka: dict[str, tuple[list[str], str | bool]], ours: dict[str, list[str]]) -> int:
    """Every file: segdex's lines are Kafka's; where Kafka died, Kafka's lines are the start of segdex's."""
    assert set(kafka) == set(ours)
    crashed = 0
    for name, (lines, died) in kafka.items():
        if died:
            crashed += 1
            assert ours[name][:len(lines)] == lines, name
            assert len(ours[name]) > len(lines), name  # segdex says what stopped it
        else:
            assert ours[name] == lines, name
    return crashed


def logs(partition: Path) -> list[str]:
    return sorted(str(p) for p in partition.glob("*.log"))
