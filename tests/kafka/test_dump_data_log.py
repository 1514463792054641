"""``segdex dump --print-data-log / --offsets-decoder / --transaction-log-decoder / --max-bytes`` print what
Kafka's own ``kafka-dump-log`` (``DumpLogSegments`` of the jars the set-up fetched) prints, line for line:

- every ``.log`` of the fixtures, with ``--print-data-log``, against Kafka 4.4.0's and 3.9.2's tool (where Kafka's
  tool dies on a corrupt batch, segdex's lines up to that point are Kafka's);
- ``--max-bytes`` cut points inside and between batches;
- the records a real Kafka 4.4.0 broker wrote: keys, values and headers (text, binary, null, every codec),
  ``__consumer_offsets`` of a classic and a consumer-protocol group with offset commits, and
  ``__transaction_state`` of committed and aborted transactions.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from segdex.indexcore.tools.segment_writer import build_batch
from tests.support.cli import segdex
from tests.support.dump_compare import RECORDED, assert_same, kafka_dump, logs, segdex_dump
from tests.support.fixtures import FIXTURES, REPO_ROOT
from tests.support.kafka_harness import KafkaBroker, KafkaInstall
from tests.support.kafka_workload import create_topics, producer
from tests.support.malformed_records import legacy_wrapper_cases, short_cases, v2_header_cases, v2_record_cases

REPO = REPO_ROOT

FIXTURE_LOGS = sorted(str(p) for p in FIXTURES.glob("*/*/*.log"))


@pytest.fixture(scope="module", params=["4.4.0", "3.9.2"])
def install(request) -> KafkaInstall:
    return KafkaInstall(request.param).check()


def test_print_data_log_matches_kafka_on_every_fixture(kafka_fixtures, install):
    assert len(FIXTURE_LOGS) >= 50
    kafka = kafka_dump(install, FIXTURE_LOGS, "--print-data-log")
    ours, status = segdex_dump(FIXTURE_LOGS, "--print-data-log")
    crashed = assert_same(kafka, ours)
    assert crashed >= 1  # the corrupt fixtures: Kafka's tool dies there, segdex reports and goes on
    assert status == 1
    legacy = [line for lines in ours.values() for line in lines if " isValid: " in line]
    assert len(legacy) >= 10  # v0/v1 records: per-record CRC and validity


def test_max_bytes_matches_kafka(kafka_fixtures, install):
    files = [f for f in FIXTURE_LOGS if "corrupt" not in f and os.path.getsize(f) > 0][:12]
    for max_bytes in ("1", "70", "4096", "200000"):
        kafka = kafka_dump(install, files, "--deep-iteration", "--max-bytes", max_bytes)
        ours, status = segdex_dump(files, "--deep", "--max-bytes", max_bytes)
        assert assert_same(kafka, ours) == 0
        assert status == 0  # a cut batch is not an error with --max-bytes, and Kafka prints no trailer
        assert not any("invalid bytes" in line for lines in ours.values() for line in lines)


def test_deep_iteration_of_malformed_records_matches_kafka(tmp_path, kafka_fixtures):
    """Compressed v0/v1 wrappers whose inner messages are malformed, and v2 records whose headers are
    (tests/support/malformed_records.py): segdex's deep iteration prints Kafka 4.4's lines, and where Kafka's tool
    throws, segdex stops there with Kafka's exception and message."""
    kafka, ours, status = _deep_dumps(tmp_path, {**legacy_wrapper_cases(), **v2_header_cases(), **short_cases()})
    assert assert_same(kafka, ours) == 25 and status == 1
    for name, (_, thrown) in kafka.items():
        if thrown:
            assert ours[name][-1] == _stopped_as(thrown), name
    deep = {Path(name).parent.name: [line for line in lines if line.startswith("| ")] for name, lines in ours.items()}
    assert [line.split()[2] for line in deep["m1_zero_wrapper_offset"]] == ["0", "1", "2"]  # librdkafka's 0
    assert [line.split()[2] for line in deep["m1_last_message_cut"]] == ["1", "2"]  # the cut message is not read
    assert len(deep["m0_partial_header_after"]) == 3


def test_deep_iteration_of_v2_records_that_do_not_fit_matches_kafka(tmp_path):
    """v2 batches whose records do not fit their batch or gzip stream (``v2_record_cases``): segdex's deep iteration
    prints Kafka 4.4's lines up to where Kafka's tool throws, then Kafka's exception and message."""
    cases = v2_record_cases()
    kafka, ours, status = _deep_dumps(tmp_path, cases)
    assert assert_same(kafka, ours) == len(cases) and status == 1
    for name, (lines, thrown) in kafka.items():
        assert ours[name][:-1] == lines, name  # no record Kafka's tool did not print (a gzip batch's: none)
        assert ours[name][-1] == _stopped_as(thrown), name


def _deep_dumps(tmp_path, cases: dict[str, bytes]) -> tuple[dict, dict, int]:
    """Each case a one-segment partition under ``tmp_path``, dumped with ``--deep-iteration --print-data-log`` by
    Kafka 4.4's tool and by segdex: (Kafka's lines and exception by file, segdex's lines by file, segdex's status)."""
    files = []
    for name, data in cases.items():
        (tmp_path / name).mkdir()
        log = tmp_path / name / "00000000000000000000.log"
        log.write_bytes(data)
        files.append(str(log))
    kafka = kafka_dump(KafkaInstall("4.4.0").check(), files, "--deep-iteration", "--print-data-log")
    ours, status = segdex_dump(files, "--deep-iteration", "--print-data-log")
    return kafka, ours, status


def _stopped_as(thrown: str) -> str:
    """segdex's last line where Kafka's tool threw ``thrown`` (``Throwable.toString``: the class, then ": " and
    the message where it has one)."""
    kafka_class, colon, message = thrown.partition(": ")
    said = f"{kafka_class.rsplit('.', 1)[1]}{colon}{message}"
    return f"iterationStopped: {json.dumps(said) if ' ' in said else said}"


def test_bad_max_bytes_and_two_decoders(tmp_path):
    log = FIXTURE_LOGS[0]
    for args, message in ((["--max-bytes", "0"], "must be at least 1 byte"),
                          (["--max-bytes", "lots"], "not a whole number"),
                          (["--offsets-decoder", "--transaction-log-decoder"], "not allowed with")):
        proc = segdex("dump", *args, log, timeout=60)
        assert proc.returncode == 2 and message in proc.stderr, (args, proc.stderr)
        assert "Traceback" not in proc.stderr


@pytest.fixture(scope="module")
def broker_data(tmp_path_factory) -> Path:
    """A Kafka 4.4.0 broker's log dir after: records with text, binary and null keys/values/headers in every
    codec; a classic and a consumer-protocol consumer group committing offsets; committed and aborted
    transactions. The broker is stopped before the test reads its files."""
    install = KafkaInstall("4.4.0").check()
    broker = KafkaBroker(install, tmp_path_factory.mktemp("dumpbroker"), {"log.initial.task.delay.ms": "600000"})
    broker.start()
    rng = random.Random(14)
    try:
        create_topics(broker, {"data": {}})
        for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
            p = producer(broker, **{"compression.type": codec})
            for i in range(30):
                key = rng.choice([None, f"k-{i}".encode(), rng.randbytes(rng.randint(0, 12)),
                                  "clé ☃ \u0000\t\"q\"".encode()])
                value = rng.choice([None, b"", rng.randbytes(rng.randint(1, 40)),
                                    f"{codec} value {i} é ✓ \n next".encode()])
                headers = rng.choice([[], [("h1", b"x")], [("trace", None), ("bin", rng.randbytes(5))]])
                p.produce("data", key=key, value=value, headers=headers, timestamp=1_700_000_000_000 + i)
            p.flush(30)
        txn = producer(broker, **{"transactional.id": "tx-dump", "enable.idempotence": True})
        txn.init_transactions(30)
        for outcome in ("commit", "abort", "commit"):
            txn.begin_transaction()
            txn.produce("data", key=outcome.encode(), value=b"in a transaction")
            txn.flush(30)
            (txn.commit_transaction if outcome == "commit" else txn.abort_transaction)(30)
        for protocol in ("classic", "consumer"):
            conf = {"bootstrap.servers": broker.bootstrap, "group.id": f"g-{protocol}", "group.protocol": protocol,
                    "auto.offset.reset": "earliest", "enable.auto.commit": False}
            if protocol == "classic":
                conf["session.timeout.ms"] = 10000
            consumer = Consumer(conf)
            consumer.subscribe(["data"])
            got, deadline = 0, time.monotonic() + 60
            while got < 20 and time.monotonic() < deadline:
                msg = consumer.poll(1.0)
                if msg is not None and not msg.error():
                    got += 1
            assert got >= 20, protocol
            consumer.commit(asynchronous=False)
            consumer.commit(offsets=[TopicPartition("data", 0, 7, "meta é", 0)], asynchronous=False)
            consumer.close()
    finally:
        broker.stop()
    if os.environ.get("SEGDEX_RECORD_GOLDEN") == "1":  # the coordinator logs tests/kafka/test_dump_recorded.py reads
        for name in RECORDED_PARTITIONS:
            shutil.rmtree(RECORDED / name, ignore_errors=True)
            (RECORDED / name).mkdir(parents=True)
            for log in (broker.data_dir / name).glob("*.log"):
                shutil.copy(log, RECORDED / name / log.name)
    return broker.data_dir


RECORDED_PARTITIONS = ("__consumer_offsets-0", "__transaction_state-0", "data-0")


@pytest.mark.kafka_broker
def test_data_log_of_a_real_broker(broker_data):
    files = logs(broker_data / "data-0")
    for version in ("4.4.0", "3.9.2"):
        kafka = kafka_dump(KafkaInstall(version), files, "--print-data-log")
        ours, status = segdex_dump(files, "--print-data-log")
        assert assert_same(kafka, ours) == 0 and status == 0
    lines = [line for lines in ours.values() for line in lines]
    assert any("headerKeys: [trace,bin]" in line for line in lines)
    assert any("endTxnMarker: ABORT" in line for line in lines)
    assert any(" key: " not in line and line.startswith("| ") for line in lines)  # a null key prints no key


def decoded_like_kafka(partition: Path, decoder: str) -> str:
    """segdex's output for a partition's segments with ``decoder``, after checking it is Kafka 4.4.0's own."""
    files = logs(partition)
    kafka = kafka_dump(KafkaInstall("4.4.0"), files, decoder)
    ours, status = segdex_dump(files, decoder)
    assert assert_same(kafka, ours) == 0 and status == 0
    return "\n".join(line for lines in ours.values() for line in lines)


@pytest.mark.kafka_broker
def test_offsets_decoder_on_a_real_broker(broker_data):
    text = decoded_like_kafka(broker_data / "__consumer_offsets-0", "--offsets-decoder")
    for record_type in ('"type":"1"', '"type":"2"', '"type":"3"', '"type":"5"', '"type":"8"'):
        assert record_type in text  # offset commits, a classic group, a consumer group's records
    assert '"subscription":{"topics":["data"]' in text  # the embedded consumer protocol decoded
    assert '"metadata":"meta é' in text and "payload: <DELETE>" in text  # librdkafka adds a NUL


@pytest.mark.kafka_broker
def test_transaction_log_decoder_on_a_real_broker(broker_data):
    text = decoded_like_kafka(broker_data / "__transaction_state-0", "--transaction-log-decoder")
    for state in ("Empty", "Ongoing", "PrepareCommit", "CompleteCommit", "PrepareAbort", "CompleteAbort"):
        assert f'"transactionStatus":"{state}"' in text
    assert '"transactionalId":"tx-dump"' in text


@pytest.mark.kafka_broker
def test_dump_json_carries_keys_and_payloads(broker_data):
    import json

    files = logs(broker_data / "__consumer_offsets-0")
    proc = segdex("dump", "--json", "--offsets-decoder", *files, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    records = [r for r in rows if r["type"] == "record"]
    assert records and all("key" in r for r in records)
    commits = [json.loads(r["key"]) for r in records if r["key"].startswith('{"type":"1"')]
    assert {c["data"]["group"] for c in commits} == {"g-classic", "g-consumer"}
    assert all("_extras" not in r for r in rows)


JAVA_UTF8 = """
import java.io.*;
import java.nio.charset.StandardCharsets;
public class Utf8 {
  public static void main(String[] a) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
    PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
    for (String line; (line = in.readLine()) != null; ) {
      byte[] b = new byte[line.length() / 2];
      for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(line.substring(2 * i, 2 * i + 2), 16);
      StringBuilder hex = new StringBuilder();
      for (char c : new String(b, StandardCharsets.UTF_8).toCharArray()) hex.append(String.format("%04x", (int) c));
      out.println(hex);
    }
  }
}
"""


_JAVA_DECODED: dict[tuple[bytes, ...], list[str]] = {}


def java_decodes(samples: list[bytes], tmp_path: Path) -> list[str]:
    """Java 17's ``new String(s, UTF_8)`` of each sample, as UTF-16BE hex; kept per process like kafka_dump's."""
    key = tuple(samples)
    if key not in _JAVA_DECODED:
        (tmp_path / "Utf8.java").write_text(JAVA_UTF8)
        subprocess.run(["javac", "-d", str(tmp_path), str(tmp_path / "Utf8.java")], check=True, timeout=120)
        proc = subprocess.run(["java", "-cp", str(tmp_path), "Utf8"], input="".join(s.hex() + "\n" for s in samples),
                              capture_output=True, text=True, timeout=120, check=True)
        _JAVA_DECODED[key] = proc.stdout.splitlines()
    return _JAVA_DECODED[key]


def test_java_utf8_decoding_matches_java(tmp_path):
    """Keys and values print as Java's ``new String(bytes, UTF_8)`` reads them: Java's replacement of malformed
    bytes differs from Python's, so segdex decodes as Java does. Checked on 3,000 seeded byte strings rich in
    lead bytes, surrogates, overlongs and cut sequences."""
    from segdex.indexcore.protocol.message_format import java_utf8

    rng = random.Random(8)
    alphabet = [0x41, 0x80, 0x8F, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5,
                0xF8, 0xFF]
    samples = [bytes(rng.choice(alphabet) if rng.random() < 0.8 else rng.randrange(256)
                     for _ in range(rng.randint(1, 9))) for _ in range(3000)]
    samples += ["é✓😀".encode(), b"\xed\xa0\x80", b"\xed\xb8", b"\xf0\x9f\x98", b"\xe2\x82"]
    # every edge of the ranges: first and last of each length, surrogates' neighbours, beyond U+10FFFF, overlongs,
    # each followed by a plain byte and cut short
    edges = [b"\xc2\x80", b"\xdf\xbf", b"\xc1\xbf", b"\xe0\xa0\x80", b"\xe0\x9f\xbf", b"\xef\xbf\xbf",
             b"\xed\x9f\xbf", b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xee\x80\x80", b"\xf0\x90\x80\x80",
             b"\xf0\x8f\xbf\xbf", b"\xf4\x8f\xbf\xbf", b"\xf4\x90\x80\x80", b"\xf0\xbf\xbf\xbf",
             b"\xf0\xc0\x80\x80", b"\xf1\x80\x80\x80", b"\xf3\xbf\xbf\xbf", b"\xf5\x80\x80\x80"]
    samples += [e + tail for e in edges for tail in (b"", b"A")] + [e[:k] for e in edges for k in range(1, len(e))]
    java = java_decodes(samples, tmp_path)
    assert len(java) == len(samples)
    mismatches = [s.hex() for s, j in zip(samples, java, strict=True)
                  if java_utf8(s).encode("utf-16-be").hex() != j]
    assert mismatches == []


def test_offsets_decoder_on_records_without_their_tags_matches_kafka(tmp_path):
    """Records written before a tagged field existed (no classicMemberMetadata, no assignmentEpochs), and one
    with classicMemberMetadata given as null: Kafka 4.4.0's tool prints the first two without the field (the
    reader's empty default) and the null as null; segdex prints the same lines."""
    from tests.support.coordinator_bytes import MEMBER_KEY, TOPIC_ID, member_metadata
    from tests.support.kafka_bytes import i16, i32, s16, uv

    assignment_key = i16(8) + s16("g") + s16("m")
    assignment = i16(0) + i32(5) + i32(4) + b"\x00" + uv(2) + TOPIC_ID + uv(2) + i32(0) + uv(0) + uv(1) + uv(0)
    records = [(1_700_000_000_000, MEMBER_KEY, member_metadata(uv(0))),
               (1_700_000_000_001, assignment_key, assignment),
               (1_700_000_000_002, MEMBER_KEY, member_metadata(uv(1) + uv(0) + uv(1) + uv(0)))]
    part = tmp_path / "__consumer_offsets-0"
    part.mkdir()
    log = part / "00000000000000000000.log"
    log.write_bytes(build_batch(0, records))
    kafka = kafka_dump(KafkaInstall("4.4.0").check(), [str(log)], "--offsets-decoder")
    ours, status = segdex_dump([str(log)], "--offsets-decoder")
    assert assert_same(kafka, ours) == 0 and status == 0
    text = "\n".join(ours[str(log)])
    assert "classicMemberMetadata" in text and "assignmentEpochs" not in text  # only the explicit null shows


def test_every_coordinator_record_version_decodes_as_kafka_does(tmp_path):
    """Offset commits v0-v4 (and the legacy record type 0), group metadata v0-v4 with the consumer protocol's
    subscription and assignment v0-v3, transaction log v0-v1 (``tests.support.coordinator_versions``): Kafka
    4.4.0's decoders read every record, and segdex prints the same lines."""
    from segdex.indexcore.tools.segment_writer import write_partition
    from tests.support.coordinator_versions import group_records, transaction_records

    write_partition(tmp_path, "__consumer_offsets", 0, [build_batch(0, group_records())])
    write_partition(tmp_path, "__transaction_state", 0, [build_batch(0, transaction_records())])
    install = KafkaInstall("4.4.0").check()
    for part, option in (("__consumer_offsets-0", "--offsets-decoder"),
                         ("__transaction_state-0", "--transaction-log-decoder")):
        files = logs(tmp_path / part)
        kafka = kafka_dump(install, files, option)
        ours, status = segdex_dump(files, option)
        assert assert_same(kafka, ours) == 0 and status == 0
        lines = kafka[files[0]][0]
        assert not [line for line in lines if "Error at offset" in line or "Unknown record" in line]
        assert sum(line.startswith("| offset:") for line in lines) == len(
            group_records() if part.startswith("__consumer") else transaction_records())
