"""Round trips through a real Apache Kafka broker (KRaft, single node), on the newest 4.x and 3.9.x releases.

Real clients (confluent-kafka) write what producers write: every codec, idempotent and transactional producers
with commits and aborts (and one transaction left open at a crash), several leader epochs (restarts), a
LogAppendTime topic, 1 MiB segments and small ``index.interval.bytes`` so that segments roll. Then:

- a clean stop: ``segdex verify`` finds every segment of those topics ``ok``;
- a ``kill -9`` and lost index files: the broker's own recovery on one copy and ``segdex reindex`` on another
  write byte-identical index files, and a broker started on segdex's copy serves the same records (both
  isolation levels) and the same ``offsets_for_times`` answers;
- retention: the broker's own deletion (retention.ms, retention.bytes, deleteRecords) and ``segdex retention
  --apply`` on a copy of the same dir leave the same segments and the same log start offsets.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

from segdex.indexcore.config.topic_configs_file import read_topic_configs
from segdex.indexcore.config.topic_configs_live import describe_topics
from segdex.indexcore.log.checkpoints import read_offset_checkpoint
from segdex.indexcore.tools.list_offsets import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP, list_offset
from segdex.jobs.cli import main as cli
from segdex.pipelines.metadata_store import MetadataStore
from tests.support.kafka_harness import KAFKA_VERSIONS, KafkaBroker, KafkaInstall, delete_index_files
from tests.support.kafka_workload import (
    BROKER_PROPS,
    T0,
    TOPICS,
    Clock,
    MiB,
    admin,
    create_topics,
    index_bytes,
    leave_transaction_open,
    partition_dirs,
    produce_phase,
    producer,
    served,
    topic_config_args,
)

pytestmark = pytest.mark.kafka_broker


@pytest.fixture(scope="module", params=KAFKA_VERSIONS)
def produced(request, tmp_path_factory):
    """A broker's log dir after three phases of production (two restarts: three leader epochs): a copy taken
    after a clean stop, and the dir as a ``kill -9`` left it with one transaction open."""
    install = KafkaInstall(request.param)
    root = tmp_path_factory.mktemp(f"kafka-{request.param}")
    broker = KafkaBroker(install, root / "node", BROKER_PROPS)
    clock = Clock(1)
    try:
        broker.start()
        create_topics(broker, {t: c for t, (c, _) in TOPICS.items()})
        produce_phase(broker, 1, clock)
        broker.stop()
        restarted = active_segments(broker.data_dir)
        broker.start()
        produce_phase(broker, 2, clock)
        broker.stop()
        restarted |= active_segments(broker.data_dir)
        clean = broker.copy_data(root / "clean")
        broker.start()
        produce_phase(broker, 3, clock)
        open_tx = leave_transaction_open(broker, clock)
        broker.kill()
        open_tx.purge()
        del open_tx
        crashed = broker.copy_data(root / "crashed")
    finally:
        broker.kill()
    yield {"install": install, "root": root, "broker": broker, "clean": clean, "crashed": crashed,
           "clock": clock, "restarted": restarted}


def active_segments(log_dir: Path) -> set[tuple[str, int]]:
    """(topic, base offset) of each topic's last segment: the one a restart reopens."""
    return {(t, max(int(p.name[:-4]) for p in part.glob("*.log"))) for t, part in partition_dirs(log_dir).items()}


def test_workload_covers_what_it_claims(produced):
    """The log dirs hold what the tests below rely on: rolled segments, three leader epochs, aborted
    transactions in .txnindex files, an unclean end."""
    crashed = produced["crashed"]
    for topic, part in partition_dirs(crashed).items():
        assert len(list(part.glob("*.log"))) >= 3, topic
        epochs = (part / "leader-epoch-checkpoint").read_text().split("\n")
        assert int(epochs[1]) >= 3, (topic, epochs)
    assert any(f.stat().st_size for f in (crashed / "txn-0").glob("*.txnindex"))
    assert not (crashed / ".kafka_cleanshutdown").exists()
    assert (produced["clean"] / ".kafka_cleanshutdown").exists()


def test_clean_stop_verifies_ok(produced, tmp_path, spark):
    """What a broker left at a clean stop verifies clean (exit 0), the metadata log included. Every segment
    the broker wrote in one go is `ok`: segdex and Kafka agree on every index byte. A segment that was active
    across a restart is `equivalent` (valid, other bytes): after a restart the broker counts
    index.interval.bytes from the reopened segment's end, where a rebuild counts from its last entry."""
    meta = tmp_path / "meta"
    code = cli(["verify", "--no-progress", "--metadata", str(meta), *topic_config_args(), str(produced["clean"])])
    rows = MetadataStore(str(meta), spark).read("segments", ["topic", "base_offset", "status", "reason"]).to_pylist()
    assert code == 0, [r for r in rows if r["status"] not in ("ok", "equivalent")]
    ours = [r for r in rows if r["topic"] in TOPICS]
    assert len(ours) >= 9
    for r in ours:
        if (r["topic"], r["base_offset"]) in produced["restarted"]:
            assert r["status"] in ("ok", "equivalent"), r
            assert r["status"] == "ok" or "entries differ from a rebuild but are valid" in r["reason"], r
        else:
            assert r["status"] == "ok", r
    assert sum(r["status"] == "ok" for r in ours) >= len(ours) - len(produced["restarted"])


def test_reindex_after_kill_equals_broker_recovery_and_serves_the_same(produced, tmp_path, spark):
    """kill -9, index files lost: the broker's recovery (copy A) and `segdex reindex` (copy B) write the same
    bytes; a broker on segdex's copy serves the same records and offsets_for_times answers."""
    broker: KafkaBroker = produced["broker"]
    a = _copy(produced["crashed"], tmp_path / "a" / "data")
    b = _copy(produced["crashed"], tmp_path / "b" / "data")
    assert delete_index_files(a, set(TOPICS)) == delete_index_files(b, set(TOPICS)) > 9
    logs_before = {p.name: p.read_bytes() for part in partition_dirs(b).values() for p in part.glob("*.log")}

    meta = tmp_path / "meta"
    code = cli(["reindex", "--no-progress", "--metadata", str(meta), *topic_config_args(), str(b)])
    assert code in (0, 1)
    assert {p.name: p.read_bytes() for part in partition_dirs(b).values() for p in part.glob("*.log")} == logs_before
    rng = random.Random(11)
    stamps = [T0 - 1, T0 + 5_000, T0 + 20_000, T0 + 10**9] + sorted(
        rng.randint(T0, produced["clock"].now + 1000) for _ in range(8))

    on_a = broker.sibling(tmp_path / "a", a)
    on_a.start()
    try:
        from_a = served(on_a, stamps)
    finally:
        on_a.stop()
    recovered_by_kafka = index_bytes(a)
    assert "Recovering unflushed segment" in on_a.log_text() or "rebuilding index files" in on_a.log_text()
    written_by_segdex = index_bytes(b)
    assert sorted(recovered_by_kafka) == sorted(written_by_segdex)
    for name, data in recovered_by_kafka.items():
        assert written_by_segdex[name] == data, name

    on_b = broker.sibling(tmp_path / "b", b)
    on_b.start()
    try:
        from_b = served(on_b, stamps)
    finally:
        on_b.stop()
    for key, records in from_a.items():
        assert from_b[key] == records, key
    assert len(from_a[("txn", "read_uncommitted")]) > len(from_a[("txn", "read_committed")]) > 0
    times = from_a[("codecs", "times")]
    assert times[0][0] == 0 and all(o > 0 for o, _, _ in times[1:3]) and times[3] == (-1, -1, -1), times
    # segdex offsets, from segdex's copy alone, answers what the broker answers (offset, timestamp, epoch); only
    # LATEST's epoch differs: a running broker answers with the epoch it became leader in at its own start
    targets = [*stamps, EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP]
    latest = targets.index(LATEST_TIMESTAMP)
    for topic in TOPICS:
        ours = [(a.offset, a.timestamp, a.leader_epoch) for a in (list_offset(b / f"{topic}-0", t) for t in targets)]
        theirs = from_a[(topic, "times")]
        assert ours[:latest] + ours[latest + 1:] == theirs[:latest] + theirs[latest + 1:], topic
        assert ours[latest][:2] == theirs[latest][:2] and 0 <= ours[latest][2] <= theirs[latest][2], topic


def _copy(src: Path, dest: Path) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(src, dest, symlinks=True)
    return dest


RETENTION_TOPICS = {"by_time": "retention.ms", "by_size": "retention.bytes", "by_records": "deleteRecords"}


def live_segments(part: Path) -> list[int]:
    return sorted(int(p.name[:-4]) for p in part.glob("*.log"))


def log_start_offsets(log_dir: Path) -> dict[str, int]:
    path = log_dir / "log-start-offset-checkpoint"
    if not path.exists():
        return {}
    return {t: offset for (t, _p), offset in read_offset_checkpoint(path).items() if t in RETENTION_TOPICS}


def test_retention_matches_the_brokers_own_deletion(produced, tmp_path):
    """The broker deletes by retention.ms, retention.bytes and deleteRecords; segdex retention --apply on a
    copy taken before does the same: the same live segments, the same log start offsets."""
    install = produced["install"]
    broker = KafkaBroker(install, tmp_path / "node", BROKER_PROPS)
    now = int(time.time() * 1000)
    day = 86_400_000
    try:
        broker.start()
        create_topics(broker, {t: {"segment.bytes": str(MiB), "retention.ms": "-1", "retention.bytes": "-1",
                                   "file.delete.delay.ms": "0"} for t in RETENTION_TOPICS})
        rng = random.Random(5)
        p = producer(broker, **{"enable.idempotence": True})
        for n in range(4000):  # ~4 MB per topic: 4+ segments; the first half 10 days old
            ts = now - 10 * day + n if n < 2000 else now - 60_000 + n
            for t in RETENTION_TOPICS:
                p.produce(t, value=rng.randbytes(900), timestamp=ts)
        p.flush(60)
        client = admin(broker)
        for f in client.delete_records([TopicPartition("by_records", 0, 1500)]).values():
            f.result(60)
        configs = {"by_time": ("retention.ms", str(3 * day)), "by_size": ("retention.bytes", str(2 * MiB))}
        for topic, (key, value) in configs.items():
            resource = ConfigResource("topic", topic, incremental_configs=[
                ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)])
            for f in client.incremental_alter_configs([resource]).values():
                f.result(60)
        broker.stop()
        before = {t: live_segments(broker.data_dir / f"{t}-0") for t in RETENTION_TOPICS}
        assert all(len(s) >= 4 for s in before.values()), before
        copy = _copy(broker.data_dir, tmp_path / "copy" / "data")

        # the broker's own retention, as soon as it runs
        broker.extra.update({"log.initial.task.delay.ms": "0", "log.retention.check.interval.ms": "300"})
        broker.start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            after = {t: live_segments(broker.data_dir / f"{t}-0") for t in RETENTION_TOPICS}
            if all(after[t] != before[t] for t in RETENTION_TOPICS):
                break
            time.sleep(0.5)
        time.sleep(2)  # one more retention pass: nothing else may go
        broker.stop()
    finally:
        broker.kill()
    kafka_live = {t: live_segments(broker.data_dir / f"{t}-0") for t in RETENTION_TOPICS}
    assert all(kafka_live[t] != before[t] for t in RETENTION_TOPICS), (before, kafka_live)

    code = cli(["retention", "--apply", "--no-record", "--now", str(int(time.time() * 1000)),
                "--topic-config", f"by_time:retention.ms={3 * day}", "--topic-config",
                f"by_size:retention.bytes={2 * MiB}", "--config", "retention.ms=-1", str(copy)])
    assert code == 0
    segdex_live = {t: live_segments(copy / f"{t}-0") for t in RETENTION_TOPICS}
    assert segdex_live == kafka_live
    kafka_lso, segdex_lso = log_start_offsets(broker.data_dir), log_start_offsets(copy)
    assert segdex_lso == kafka_lso
    assert kafka_lso["by_records"] == 1500
    assert json.dumps(segdex_lso)  # plain ints


def test_broker_level_settings_read_from_its_server_properties(produced, tmp_path, spark):
    """A broker whose log.index.interval.bytes (700) and log.retention.hours live in its server.properties only:
    `verify --broker-config` on that very file (log.dirs included, no LOGDIR) finds its segments `ok`; without it,
    on Kafka's default interval, the same valid files are merely `equivalent`."""
    broker = KafkaBroker(produced["install"], tmp_path / "node",
                         {**BROKER_PROPS, "log.index.interval.bytes": "700", "log.retention.hours": "1000",
                          "log.segment.bytes": str(MiB)})
    try:
        broker.start()
        create_topics(broker, {"plain": {}})
        rng = random.Random(3)
        p = producer(broker, **{"batch.num.messages": 1, "linger.ms": 0})  # batches far below 700 bytes
        for _ in range(5000):
            p.produce("plain", value=rng.randbytes(rng.randint(50, 300)))
        p.flush(60)
        broker.stop()
    finally:
        broker.kill()
    server_properties = tmp_path / "node" / "server.properties"
    assert "log.index.interval.bytes=700" in server_properties.read_text()

    def statuses(meta: Path, *args: str) -> set[str]:
        code = cli(["verify", "--no-progress", "--metadata", str(meta), *args])
        assert code == 0
        rows = MetadataStore(str(meta), spark).read("segments", ["topic", "status"]).to_pylist()
        return {r["status"] for r in rows if r["topic"] == "plain"}

    assert statuses(tmp_path / "m1", "--broker-config", str(server_properties)) == {"ok"}
    assert statuses(tmp_path / "m2", str(broker.data_dir)) == {"equivalent"}
    assert len(list((broker.data_dir / "plain-0").glob("*.log"))) >= 2


def describe_topic_configs(broker: KafkaBroker, *extra: str) -> str:
    """What `kafka-configs.sh --bootstrap-server ... --entity-type topics --describe` prints (Kafka 3.9.2's
    ConfigCommand, the release whose core jar carries it; 4.x moved it to kafka-tools)."""
    tool = KafkaInstall("3.9.2")
    logs = broker.root / "tools-log"  # as kafka-run-class.sh's tools-log4j: warnings to stderr, stdout clean
    logs.mkdir(exist_ok=True)
    (logs / "log4j.properties").write_text(
        "log4j.rootLogger=WARN, stderr\nlog4j.appender.stderr=org.apache.log4j.ConsoleAppender\n"
        "log4j.appender.stderr.layout=org.apache.log4j.PatternLayout\n"
        "log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n\nlog4j.appender.stderr.Target=System.err\n")
    (logs / "log4j2.properties").write_text(
        "status = warn\nappender.err.type = Console\nappender.err.name = ERR\nappender.err.target = SYSTEM_ERR\n"
        "appender.err.layout.type = PatternLayout\nappender.err.layout.pattern = [%d] %p %m (%c)%n\n"
        "rootLogger.level = WARN\nrootLogger.appenderRef.err.ref = ERR\n")
    proc = subprocess.run(tool.java("kafka.admin.ConfigCommand", "--bootstrap-server", broker.bootstrap,
                                    "--entity-type", "topics", "--describe", *extra, log_config=logs),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_topic_configs_read_from_kafka_configs_describe(produced, tmp_path, spark):
    """A topic whose index.interval.bytes (700) is a topic override and whose retention.ms was changed with the
    Admin API: `kafka-configs --describe` saved to a file, with and without --all, is read back by
    `--topic-configs`; verify then finds the topic's segments `ok`, as it does with no flag at all (the broker's
    metadata log holds the topic's configs)."""
    broker = KafkaBroker(produced["install"], tmp_path / "node", {**BROKER_PROPS, "log.segment.bytes": str(MiB)})
    try:
        broker.start()
        create_topics(broker, {"plain": {"index.interval.bytes": "700"}})
        resource = ConfigResource("topic", "plain", incremental_configs=[
            ConfigEntry("retention.ms", "123456789", incremental_operation=AlterConfigOpType.SET)])
        client = admin(broker)  # kept alive until the futures resolve
        for f in client.incremental_alter_configs([resource]).values():
            f.result(60)
        rng = random.Random(4)
        p = producer(broker, **{"batch.num.messages": 1, "linger.ms": 0})
        for _ in range(5000):
            p.produce("plain", value=rng.randbytes(rng.randint(50, 300)))
        p.flush(60)
        dynamic, everything = describe_topic_configs(broker), describe_topic_configs(broker, "--all")
        broker.stop()
    finally:
        broker.kill()
    assert "Dynamic configs for topic plain are:" in dynamic and "All configs for topic plain are:" in everything
    files = {}
    for name, text in (("dynamic", dynamic), ("all", everything)):
        files[name] = tmp_path / f"{name}.txt"
        files[name].write_text(text)
        described = read_topic_configs(files[name])["plain"]
        assert described.values["index.interval.bytes"] == "700"
        assert described.values["retention.ms"] == "123456789"
        assert described.sources["retention.ms"] == "DYNAMIC_TOPIC_CONFIG"
    described_all = read_topic_configs(files["all"])["plain"]
    # --all also carries the brokers' settings, with their source; Kafka's defaults are not taken as given
    assert described_all.values["segment.bytes"] == str(MiB)
    assert described_all.sources["segment.bytes"] == "STATIC_BROKER_CONFIG"
    assert "file.delete.delay.ms" not in described_all.values

    def statuses(meta: Path, *args: str) -> set[str]:
        code = cli(["verify", "--no-progress", "--metadata", str(meta), *args, str(broker.data_dir)])
        assert code == 0
        rows = MetadataStore(str(meta), spark).read("segments", ["topic", "status"]).to_pylist()
        return {r["status"] for r in rows if r["topic"] == "plain"}

    assert statuses(tmp_path / "m1", "--topic-configs", str(files["dynamic"])) == {"ok"}
    assert statuses(tmp_path / "m2", "--topic-configs", str(files["all"])) == {"ok"}
    assert statuses(tmp_path / "m3") == {"ok"}  # no flag: the metadata log's topic configs
    assert len(list((broker.data_dir / "plain-0").glob("*.log"))) >= 2

    # the same configs read live (Admin API) while the broker serves again; segdex works on a copy of its dir
    copy = tmp_path / "copy"
    shutil.copytree(broker.data_dir, copy)
    client_props = tmp_path / "client.properties"
    client_props.write_text("security.protocol=PLAINTEXT\nclient.id=segdex-test\n")
    try:
        broker.start()
        live = describe_topics(broker.bootstrap, ["plain", "not-a-topic"])
        code = cli(["verify", "--no-progress", "--metadata", str(tmp_path / "m4"), "--bootstrap-server",
                    broker.bootstrap, "--command-config", str(client_props), str(copy)])
    finally:
        broker.stop()
    assert set(live) == {"plain"}
    assert live["plain"].values == {**{k: v for k, v in described_all.values.items()}}
    assert live["plain"].sources["index.interval.bytes"] == "DYNAMIC_TOPIC_CONFIG"
    assert code == 0
    rows = MetadataStore(str(tmp_path / "m4"), spark).read("segments", ["topic", "status"]).to_pylist()
    assert {r["status"] for r in rows if r["topic"] == "plain"} == {"ok"}


def test_metadata_log_dump_and_image_are_kafkas(produced, tmp_path, spark):
    """The broker's replica of the metadata log (three starts, three topics created with configs, snapshots
    every second): ``segdex dump --cluster-metadata-decoder`` prints what the release's own ``kafka-dump-log``
    prints for every segment and snapshot (3.9 prints a leader change as its type only, 4.x decoded); the image
    replayed from the latest snapshot and the log after it holds each topic under the id the broker wrote into
    its partition dir, with the configs it was created with; ``verify`` with no config flag takes them, naming
    the metadata log as their source."""
    from segdex.indexcore.metadata.metadata_image import load_metadata_image
    from tests.support.dump_compare import assert_same, kafka_dump, segdex_dump

    part = produced["clean"] / "__cluster_metadata-0"
    files = sorted(str(p) for p in part.iterdir() if p.suffix in (".log", ".checkpoint"))
    assert any(f.endswith(".checkpoint") for f in files) and any(f.endswith(".log") for f in files)
    kafka = kafka_dump(produced["install"], files, "--cluster-metadata-decoder")
    ours, status = segdex_dump(files, "--cluster-metadata-decoder")
    if produced["install"].family == 3:
        ours = {f: [re.sub(r" LeaderChange: \{.*\}$", " controlType: LEADER_CHANGE(2)", line) for line in lines]
                for f, lines in ours.items()}
    assert assert_same(kafka, ours) == 0 and status == 0
    payloads = " ".join(line for lines in ours.values() for line in lines)
    assert "TOPIC_RECORD" in payloads and "SnapshotHeader" in payloads and "SnapshotFooter" in payloads

    image = load_metadata_image(str(part))
    assert image.stopped is None and image.snapshot is not None and image.features["metadata.version"] > 0
    for topic, (configs, _interval) in TOPICS.items():
        on_disk = (produced["clean"] / f"{topic}-0" / "partition.metadata").read_text()
        found = image.topic(topic)
        assert found is not None and f"topic_id: {found.topic_id}" in on_disk, (topic, on_disk)
        assert image.topic_configs(topic) == configs
        assert found.partitions[0].replicas == [1] and found.partitions[0].leader_epoch >= 2
    assert image.brokers[1].endpoints[0][1] == "127.0.0.1"

    meta = tmp_path / "meta"
    assert cli(["verify", "--no-progress", "--metadata", str(meta), str(produced["clean"])]) == 0
    rows = MetadataStore(str(meta), spark).read("topic_configs").to_pylist()
    sources = {(r["topic"], r["config"]): (r["value"], r["source"]) for r in rows}
    for topic, (_configs, interval) in TOPICS.items():
        value, source = sources[(topic, "index.interval.bytes")]
        assert value == str(interval) and source == f"metadata log (offset {image.offset})", (topic, source)
