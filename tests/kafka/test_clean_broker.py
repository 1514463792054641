"""``segdex clean --apply --until-clean`` against Kafka 4.4.0's own log cleaner on a real broker's log dir.

A broker with its cleaner off grows a compacted topic and ``__consumer_offsets`` (``tests.support.clean_workload``:
overwrites, tombstones, committed and aborted transactions; commits from many groups, groups deleted,
transactional offset commits) and stops cleanly. Its log dir is copied twice. On copy B a broker runs its own
cleaner (a 1% dirty ratio, a short backoff) until its ``cleaner-offset-checkpoint`` stops moving; on copy A
``segdex clean --apply --until-clean`` runs with the same cleaner settings (the smallest dedupe buffer Kafka takes:
``prices-1`` needs more than one round), then a broker starts there with its cleaner on. The test proves that:

- segdex removes from each partition the bytes Kafka's cleaner removes (most of them), leaves the same segments
  (base offsets and sizes), and writes the checkpoint Kafka's cleaner writes;
- both brokers serve the same records of the compacted topic, so the same latest value per key (the one the
  workload wrote last), and ``kafka-consumer-groups --describe`` prints the same committed offsets on both, the
  deleted groups on neither;
- the broker on segdex's copy starts with no recovery of any segment, and its cleaner meets no error and finds
  nothing left to clean.

The group coordinator's load of ``__consumer_offsets`` is printed before cleaning (copy B's start, its cleaner held
back by ``log.cleaner.min.compaction.lag.ms`` until the load is done) and after (copy A's start): its time, records
and bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from segdex.indexcore.log.checkpoints import read_offset_checkpoint
from tests.support.clean_workload import (
    COMPACTED,
    COMPACTED_PARTITIONS,
    OFFSETS_TOPIC,
    TXN_ABORTED,
    CleanWorkload,
    deleted_groups,
    grow,
)
from tests.support.cli import segdex_here
from tests.support.group_workload import GROUP_TOOL, _admin, run_tools
from tests.support.kafka_harness import KafkaBroker, KafkaInstall

pytestmark = pytest.mark.kafka_broker

VERSION = "4.4.0"
DEDUPE_BUFFER = 1024 * 1024 + 1024  # Kafka takes more than 1 MiB: 39,359 keys a round, fewer than prices-1 holds
CLEANER_PROPS = {
    "log.cleaner.enable": "true",
    "log.cleaner.min.cleanable.ratio": "0.01",
    "log.cleaner.backoff.ms": "100",
    "log.cleaner.dedupe.buffer.size": str(DEDUPE_BUFFER),
    "log.roll.ms": "604800000",  # Kafka's default (the workload rolled a segment a second)
}
# copy B's broker loads __consumer_offsets before its cleaner may touch it: nothing is cleanable until the lag is
# set back to 0 (a dynamic broker setting)
HOLD_LAG = {"log.cleaner.min.compaction.lag.ms": str(24 * 3600 * 1000)}
CLEANED = [(COMPACTED, p) for p in range(COMPACTED_PARTITIONS)] + [(OFFSETS_TOPIC, 0)]
STABLE_S = 2.0  # the checkpoint unchanged this long (20 backoffs) means the cleaner is done
CLEANER_TIMEOUT_S = 60.0
A_CLEANER_S = 5.0  # how long copy A's broker runs its cleaner at least
_LOADED = re.compile(rf"Finished loading of metadata from {OFFSETS_TOPIC}-0 with epoch \d+ in (\d+)ms where (\d+)ms "
                     r"was spent in the scheduler\. Loaded (\d+) records which total to (\d+) bytes")
# Kafka 4.4's LogLoader and LogSegment lines when a load recovers a segment, rebuilds an index, completes or rolls
# back a cleaning's swap, deletes leftovers, or cuts a log
RECOVERY_LINES = ("Recovering unflushed segment", "recovering segment and rebuilding index files",
                  "from interrupted swap operation", "Recovering file", "compacted but has not been deleted yet",
                  "Deleting invalid swap file", "Deleting stray", "orphaned index file",
                  "Found invalid offset during recovery", "Corruption found in segment",
                  "Deleting all segments because logEndOffset", "Found invalid messages in log segment",
                  "invalid bytes at the end of segment")
_PRODUCER_STATE = re.compile(r"partition=(\S+), dir=\S+\] (Reloading from producer snapshot and rebuilding producer "
                             r"state from offset|Loading producer state till offset) (\d+)")
CLEANER_ERRORS = ("uncleanable", "Error due to", "LogCleaningException", "due to error", "exception during cleaning")


def segments(log_dir: Path) -> dict[tuple[str, int], list[tuple[int, int]]]:
    """The live segments of each cleaned partition: (base offset, ``.log`` bytes); files renamed ``.deleted``
    (Kafka's cleaner leaves them for ``file.delete.delay.ms``) left out."""
    return {(t, p): sorted((int(f.name[:20]), f.stat().st_size) for f in (log_dir / f"{t}-{p}").glob("*.log"))
            for t, p in CLEANED}


def log_bytes(layout: dict[tuple[str, int], list[tuple[int, int]]]) -> dict[tuple[str, int], int]:
    return {tp: sum(size for _base, size in segs) for tp, segs in layout.items()}


def cleaner_checkpoint(log_dir: Path) -> dict[tuple[str, int], int]:
    path = log_dir / "cleaner-offset-checkpoint"
    return read_offset_checkpoint(path) if path.exists() else {}


def load_time(broker: KafkaBroker, timeout: float = 60.0) -> dict[str, int]:
    """The group coordinator's load of ``__consumer_offsets-0`` at this broker's (last) start, from its log."""
    deadline = time.monotonic() + timeout
    while True:
        text = broker.log_text()
        found = _LOADED.findall(text[text.rindex("----- start"):])
        if found:
            ms, scheduler_ms, records, size = map(int, found[-1])
            return {"ms": ms, "scheduler_ms": scheduler_ms, "records": records, "bytes": size}
        if time.monotonic() > deadline:
            raise AssertionError(f"no coordinator load of {OFFSETS_TOPIC}-0 logged in {timeout}s:\n{broker.tail()}")
        time.sleep(0.1)


def release_cleaner(broker: KafkaBroker) -> None:
    """``log.cleaner.min.compaction.lag.ms`` back to 0 for every topic (a dynamic broker setting)."""
    client = _admin(broker)
    resource = ConfigResource(ResourceType.BROKER, broker.properties()["node.id"], incremental_configs=[
        ConfigEntry(name, "0", incremental_operation=AlterConfigOpType.SET) for name in HOLD_LAG])
    for f in client.incremental_alter_configs([resource]).values():
        f.result(60)


def wait_cleaned(log_dir: Path, timeout: float = CLEANER_TIMEOUT_S) -> dict[tuple[str, int], int]:
    """Kafka's cleaner done: the checkpoint holds every compacted partition and has not moved for ``STABLE_S``."""
    deadline = time.monotonic() + timeout
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        now = cleaner_checkpoint(log_dir)
        if now != last:
            last, since = now, time.monotonic()
        elif set(CLEANED) <= set(now) and time.monotonic() - since >= STABLE_S:
            return now
        time.sleep(0.1)
    raise AssertionError(f"Kafka's cleaner did not settle in {timeout}s: checkpoint {last}")


def latest_values(broker: KafkaBroker) -> tuple[dict[tuple[int, bytes], bytes], list[tuple]]:
    """A ``read_committed`` consumer from the beginning of the compacted topic to its end: the latest value per key
    (tombstoned keys dropped) and every record served (partition, offset, key, value)."""
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "segdex-check", "enable.auto.commit": False,
                  "isolation.level": "read_committed", "enable.partition.eof": True, "fetch.wait.max.ms": 50})
    served: list[tuple] = []
    try:
        c.assign([TopicPartition(COMPACTED, p, 0) for p in range(COMPACTED_PARTITIONS)])
        at_end: set[int] = set()
        deadline = time.monotonic() + 60
        while len(at_end) < COMPACTED_PARTITIONS:
            if time.monotonic() > deadline:
                raise AssertionError(f"{COMPACTED}: not read to its end in 60s ({len(served)} records)")
            for m in c.consume(1000, timeout=0.5):
                if m.error() and m.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add(m.partition())
                elif m.error():
                    raise KafkaException(m.error())
                else:
                    served.append((m.partition(), m.offset(), m.key(), m.value()))
    finally:
        c.close()
    last: dict[tuple[int, bytes], bytes | None] = {}
    for part, _offset, key, value in served:
        last[(part, key)] = value
    return {k: v for k, v in last.items() if v is not None}, served


def describe_rows(stdout: str) -> dict[str, dict[tuple[str, int], tuple[str, str, str]]]:
    """``kafka-consumer-groups --describe --all-groups``: per group, (topic, partition) -> (current offset, log
    end offset, lag)."""
    rows: dict[str, dict[tuple[str, int], tuple[str, str, str]]] = {}
    for line in stdout.splitlines():
        cols = line.split()
        if len(cols) < 6 or cols[0] == "GROUP":
            continue
        rows.setdefault(cols[0], {})[(cols[1], int(cols[2]))] = (cols[3], cols[4], cols[5])
    return rows


def _segdex_clean(a: KafkaBroker, quarantine: Path, now_ms: int) -> tuple[int, str, str]:
    # no --topic-config: the compacted topic's configs are read from the broker's metadata log
    proc = segdex_here("clean", "--apply", "--until-clean", "--no-progress", "--no-record", "--now", str(now_ms),
                       "--quarantine", str(quarantine), "--broker-config", str(a.write_properties()), str(a.data_dir))
    (quarantine.parent / "segdex-clean.out").write_text(proc.stdout + proc.stderr)
    return proc.returncode, proc.stdout, proc.stderr


def _serve(a: KafkaBroker, b: KafkaBroker, root: Path) -> dict:
    """What both brokers serve: the compacted topic, and Kafka's own ``kafka-consumer-groups --describe``."""
    commands = {name: [GROUP_TOOL, "--bootstrap-server", broker.bootstrap, "--describe", "--all-groups"]
                for name, broker in (("a", a), ("b", b))}
    tools = run_tools(a.install, a.bootstrap, [], root, parallel=2, only=commands)
    for name, (out, err) in tools.items():
        (root / f"describe-{name}.txt").write_text(out + err)
    return {"describe": tools, "latest": {"a": latest_values(a), "b": latest_values(b)}}


def run_scenario(install: KafkaInstall, root: Path) -> dict:
    """The module doc's scenario; every broker it starts is stopped (killed on a failure) before it returns."""
    t0 = time.monotonic()
    work: CleanWorkload = grow(install, root)
    grown = work.data_dir
    got: dict = {"work": work, "grown_segments": segments(grown),
                 "grown_checkpoint": cleaner_checkpoint(grown), "marker": (grown / ".kafka_cleanshutdown").exists()}
    a_dir, b_dir = work.broker.copy_data(root / "a" / "data"), work.broker.copy_data(root / "b" / "data")
    on_b = work.broker.sibling(root / "b", b_dir, {**CLEANER_PROPS, **HOLD_LAG})
    on_a = work.broker.sibling(root / "a", a_dir, CLEANER_PROPS)
    try:
        on_b.start()
        got["load_before"] = load_time(on_b)
        got["b_checkpoint_held"] = cleaner_checkpoint(b_dir)
        release_cleaner(on_b)
        # segdex on copy A while Kafka's cleaner works on copy B
        got["now_ms"] = int(time.time() * 1000)
        t = time.monotonic()
        got["quarantine"] = root / "quarantine"
        got["segdex"] = _segdex_clean(on_a, got["quarantine"], got["now_ms"])
        got["segdex_s"] = time.monotonic() - t
        got["a_segments"] = segments(a_dir)
        got["a_checkpoint"] = cleaner_checkpoint(a_dir)
        got["b_checkpoint"] = wait_cleaned(b_dir)
        got["b_segments"] = segments(b_dir)
        a_started = time.monotonic()
        on_a.start()
        got["load_after"] = load_time(on_a)
        got |= _serve(on_a, on_b, root)
        time.sleep(max(0.0, A_CLEANER_S - (time.monotonic() - a_started)))
        got["a_checkpoint_later"] = cleaner_checkpoint(a_dir)
        on_a.stop()
        on_b.stop()
    finally:
        on_a.kill()
        on_b.kill()
    got["a_log"], got["b_log"], got["a_dir"], got["b_dir"] = on_a.log_text(), on_b.log_text(), str(a_dir), str(b_dir)
    got["seconds"] = time.monotonic() - t0
    print(f"\nclean-broker scenario: {got['seconds']:.1f} s (grow {work.timings}, segdex {got['segdex_s']:.1f} s)")
    return got


@pytest.fixture(scope="module")
def scenario(tmp_path_factory) -> dict:
    return run_scenario(KafkaInstall(VERSION), tmp_path_factory.mktemp("clean-broker"))


def test_the_grown_dir_has_much_to_clean(scenario):
    """Several segments in each compacted partition, a clean stop, and no cleaning ever done there."""
    assert scenario["marker"]
    assert all(len(segs) >= 3 for segs in scenario["grown_segments"].values()), scenario["grown_segments"]
    assert scenario["grown_checkpoint"] == {}
    assert scenario["b_checkpoint_held"] == {}  # copy B's load of __consumer_offsets came before any cleaning


def test_segdex_removes_the_bytes_kafkas_cleaner_removes(scenario):
    code, out, err = scenario["segdex"]
    assert code == 0, (out, err)
    before = log_bytes(scenario["grown_segments"])
    ours, kafkas = log_bytes(scenario["a_segments"]), log_bytes(scenario["b_segments"])
    removed = {f"{t}-{p}": (before[(t, p)] - ours[(t, p)], before[(t, p)] - kafkas[(t, p)]) for t, p in CLEANED}
    print(f"\nbytes removed (segdex, Kafka's cleaner) of {before}: {removed}")
    checkpoint = scenario["a_checkpoint"]
    for tp in CLEANED:
        # below the checkpoint (the active segment is never cleaned), the topic keeps a value per key (and
        # prices-1 its 45,000 small keys), __consumer_offsets a few hundred offsets of MBs of commits
        cleaned_before = sum(size for base, size in scenario["grown_segments"][tp] if base < checkpoint.get(tp, 0))
        cleaned_after = sum(size for base, size in scenario["a_segments"][tp] if base < checkpoint.get(tp, 0))
        assert cleaned_after < cleaned_before * (0.4 if tp[0] == COMPACTED else 0.1), (tp, out)
    assert ours == kafkas, (removed, out)
    assert re.search(rf"{COMPACTED}-1: cleaned: .*; [2-9] rounds: ", out), out  # the offset map filled: --until-clean
    # the topic's tombstones were in the cleaned range (kept until their delete horizon, stamped now)
    assert re.search(rf"{COMPACTED}-0: cleaned: .* \(tombstones: \d+ removed, [1-9]\d* kept[;)]", out), out
    # and the aborted transaction's records went, counted apart
    assert re.search(rf"{COMPACTED}-0: cleaned: .*; aborted transactions' records: [1-9][\d,]* removed\)", out), out
    # what the rounds replaced, kept: prices-1's rounds in one manifest, each original file once (a round's output
    # a later round replaced is not kept), its restore lines the dir as it was before the run
    manifests = {m.parent.name: json.loads(m.read_text()) for m in scenario["quarantine"].rglob("manifest.json")}
    m = manifests[f"{COMPACTED}-1"]
    sources = [p["source"] for p in m["pieces"]]
    assert m["earlier"] == [] and len(sources) == len(set(sources)), m
    grown = {base for base, _ in scenario["grown_segments"][(COMPACTED, 1)]}
    assert {int(os.path.basename(s)[:20]) for s in sources if s.endswith(".log")} <= grown
    assert m["restore"][-1].startswith("cp -p ") and any(r.startswith("rm -f ") for r in m["restore"])


def test_segdex_leaves_the_segments_kafkas_cleaner_leaves(scenario):
    """Kafka groups the cleaned segments by the topic's ``segment.bytes``; ``__consumer_offsets`` was created with
    ``offsets.topic.segment.bytes`` from the broker's config (1 MiB here, segdex reads it from ``--broker-config``)."""
    ours, kafkas = scenario["a_segments"], scenario["b_segments"]
    differ = [tp for tp in CLEANED if ours[tp] != kafkas[tp]]
    assert not differ, "\n".join([f"{t}-{p}: (base offset, bytes) segdex {ours[(t, p)]}, Kafka {kafkas[(t, p)]}"
                                  for t, p in differ] + [scenario["segdex"][1]])


def test_segdex_writes_the_checkpoint_kafkas_cleaner_writes(scenario):
    assert set(CLEANED) <= set(scenario["a_checkpoint"])
    assert scenario["a_checkpoint"] == scenario["b_checkpoint"]


def test_both_brokers_serve_the_same_latest_value_per_key(scenario):
    work = scenario["work"]
    (latest_a, served_a), (latest_b, served_b) = scenario["latest"]["a"], scenario["latest"]["b"]
    assert latest_a == work.latest
    assert latest_b == work.latest
    assert not set(latest_a) & work.tombstoned
    # the very records: the same kept, at the same offsets. A consumer interleaves its partitions' fetches as they
    # come back, so each partition's records are compared in offset order, and a difference is shown by offset
    by_a, by_b = per_partition(served_a), per_partition(served_b)
    assert by_a.keys() == by_b.keys()
    differ = {p: first_difference(by_a[p], by_b[p]) for p in by_a if by_a[p] != by_b[p]}
    assert not differ, differ


def per_partition(served: list[tuple]) -> dict[int, list[tuple[int, bytes, str]]]:
    """The records served, per partition in offset order: (offset, key, the value's sha256)."""
    out: dict[int, list[tuple[int, bytes, str]]] = {}
    for part, offset, key, value in sorted(served, key=lambda r: (r[0], r[1])):
        out.setdefault(part, []).append((offset, key, "null" if value is None else hashlib.sha256(value).hexdigest()))
    return out


def first_difference(a: list[tuple], b: list[tuple]) -> str:
    """Where two partitions' records first differ, and how many each served."""
    i = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return f"{len(a)} records on A, {len(b)} on B; first difference at #{i}: A {a[i:i + 1]}, B {b[i:i + 1]}"


def _no_members(stderr: str) -> set[str]:
    """The groups ``--describe`` says have no active members (Empty groups)."""
    return set(re.findall(r"Consumer group '([^']+)' has no active members\.", stderr))


def test_both_brokers_hold_the_same_committed_offsets(scenario):
    work = scenario["work"]
    (out_a, err_a), (out_b, err_b) = scenario["describe"]["a"], scenario["describe"]["b"]
    assert "[exit code" not in err_a + err_b, (err_a, err_b)
    rows_a, rows_b = describe_rows(out_a), describe_rows(out_b)
    assert rows_a == rows_b
    committed = {g: {tp: int(r[0]) for tp, r in rows.items() if r[0] != "-"} for g, rows in rows_a.items()}
    holding = {g: o for g, o in work.expected.items() if o}
    assert committed == holding
    assert not set(rows_a) & set(deleted_groups())
    # every group without members; and txn-aborted, an empty group without offsets, where a broker loaded its
    # aborted offset commits: B did before its cleaner removed them, A does when they are still in the active segment
    assert _no_members(err_a) - {TXN_ABORTED} == set(holding)
    assert _no_members(err_b) == set(holding) | {TXN_ABORTED}


def _start_lines(text: str) -> list[str]:
    """The last start's lines up to "Kafka Server started", but the KRaft metadata log's (always re-read), without
    their timestamps."""
    text = text[text.rindex("----- start"):]
    return [line.split("] ", 1)[-1] for line in text[:text.index("Kafka Server started")].splitlines()
            if "__cluster_metadata" not in line]


def _kinds(lines: list[str], log_dir: str) -> set[str]:
    """The kinds of lines the log layer wrote at a start (numbers and the log dir's path left out)."""
    return {re.sub(r"\d+", "N", line.replace(log_dir, "DIR")) for line in lines if "storage.internals.log" in line}


def test_segdex_copy_starts_with_no_recovery_and_no_cleaner_error(scenario):
    a_dir = scenario["a_dir"]
    start = _start_lines(scenario["a_log"])
    assert any("Skipping recovery of" in line and a_dir in line for line in start), start
    assert any(f"partition={OFFSETS_TOPIC}-0" in line for line in start)  # the log names the partitions it loads
    recovered = [line for line in start if any(needle in line for needle in RECOVERY_LINES)]
    assert not recovered
    # the same kinds of lines as the start of copy B, an uncleaned copy of the same clean stop; producer state
    # read from the snapshots at the same offsets, none rebuilt from the segments
    b_start = _start_lines(scenario["b_log"])
    assert _kinds(start, a_dir) == _kinds(b_start, scenario["b_dir"])
    producer_state = sorted(_PRODUCER_STATE.findall("\n".join(start)))  # the logs load in parallel
    assert producer_state and producer_state == sorted(_PRODUCER_STATE.findall("\n".join(b_start)))
    errors = [line for line in scenario["a_log"].splitlines() if any(needle in line for needle in CLEANER_ERRORS)
              or "] ERROR " in line and ("storage.internals.log" in line or "coordinator" in line)]
    assert not errors
    # the broker's own cleaner ran for seconds with a 1% dirty ratio and found nothing left to clean
    assert scenario["a_checkpoint_later"] == scenario["a_checkpoint"]
    assert "Beginning cleaning of log" not in scenario["a_log"]
    assert "Beginning cleaning of log" in scenario["b_log"]  # the needle is the one Kafka's cleaner logs


def test_group_coordinator_load_time_before_and_after(scenario):
    before, after = scenario["load_before"], scenario["load_after"]
    report = (f"{OFFSETS_TOPIC}-0 load: before cleaning {before['ms']} ms ({before['records']} records, "
              f"{before['bytes']} bytes), after segdex clean {after['ms']} ms ({after['records']} records, "
              f"{after['bytes']} bytes)")
    print(f"\n{report}")
    # what is left: the cleaned segments' few records and the active segment, which no cleaner touches
    assert after["records"] < before["records"] / 2, report
    assert after["bytes"] < before["bytes"] / 2, report
