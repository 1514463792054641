"""The workload the real-broker tests drive: topics, producers (every codec, idempotent and transactional), and
what a broker serves back (records in both isolation levels, ListOffsets answers)."""

from __future__ import annotations

import random
import time
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from tests.support.kafka_harness import INDEX_SUFFIXES, KafkaBroker

MiB = 1024 * 1024
T0 = 1_700_000_000_000  # CreateTime of the first record; later ones go forward with jitter
TOPICS = {
    # topic: (topic configs, index.interval.bytes)
    "codecs": ({"segment.bytes": str(MiB), "index.interval.bytes": "512"}, 512),
    "txn": ({"segment.bytes": str(MiB), "index.interval.bytes": "1024"}, 1024),
    "appendtime": ({"segment.bytes": str(MiB), "index.interval.bytes": "4096",
                    "message.timestamp.type": "LogAppendTime"}, 4096),
}
BROKER_PROPS = {
    # no background retention, flush or checkpoint task while the test drives the broker
    "log.initial.task.delay.ms": "600000",
    "transaction.max.timeout.ms": "900000",
    # metadata snapshots every second while records come (the metadata log's tests read them)
    "metadata.log.max.snapshot.interval.ms": "1000",
}


def admin(broker: KafkaBroker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def create_topics(broker: KafkaBroker, topics: dict[str, dict[str, str]]) -> None:
    client = admin(broker)  # kept alive until the futures resolve
    futures = client.create_topics([NewTopic(t, 1, 1, config=c) for t, c in topics.items()])
    for f in futures.values():
        f.result(60)


def producer(broker: KafkaBroker, **conf) -> Producer:
    return Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5, "batch.num.messages": 40,
                     "message.timeout.ms": 60000, **conf})


class Clock:
    """CreateTime timestamps that go forward with jitter (and sometimes back), deterministic per seed."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.now = T0

    def next(self) -> int:
        self.now += self.rng.randint(0, 40)
        return self.now - self.rng.choice([0, 0, 0, 2000])


def produce_phase(broker: KafkaBroker, phase: int, clock: Clock) -> None:
    """One phase of the workload: ~1.3 MB per topic, so that segments roll."""
    rng = random.Random(phase)
    for i, codec in enumerate(["none", "gzip", "snappy", "lz4", "zstd"]):
        p = producer(broker, **{"compression.type": codec, "enable.idempotence": i % 2 == 0})
        for n in range(260):
            p.produce("codecs", key=f"{phase}-{codec}-{n}".encode(), value=rng.randbytes(rng.randint(10, 1800)),
                      timestamp=clock.next())
            p.produce("appendtime", value=rng.randbytes(rng.randint(10, 1800)), timestamp=clock.next())
        p.flush(60)
    tx = producer(broker, **{"transactional.id": f"tx-{phase}", "transaction.timeout.ms": 900000,
                             "compression.type": "lz4"})
    plain = producer(broker, **{"enable.idempotence": True})
    tx.init_transactions(60)
    for t in range(12):
        tx.begin_transaction()
        for n in range(60):
            tx.produce("txn", key=f"{phase}-{t}-{n}".encode(), value=rng.randbytes(rng.randint(10, 1800)),
                       timestamp=clock.next())
            if n % 20 == 0:
                plain.produce("txn", value=b"idempotent-" + rng.randbytes(300), timestamp=clock.next())
        tx.flush(60)
        plain.flush(60)
        if t % 3 == 1:
            tx.abort_transaction(60)
        else:
            tx.commit_transaction(60)


def leave_transaction_open(broker: KafkaBroker, clock: Clock) -> Producer:
    """A transaction whose records reached the log but whose marker never will (the broker dies next)."""
    # log_level 0: once the broker is killed, this client's reconnect attempts would fill the test output
    tx = producer(broker, **{"transactional.id": "tx-open", "transaction.timeout.ms": 900000, "log_level": 0})
    tx.init_transactions(60)
    tx.begin_transaction()
    for n in range(50):
        tx.produce("txn", key=f"open-{n}".encode(), value=b"x" * 500, timestamp=clock.next())
    tx.flush(60)
    return tx


def partition_dirs(log_dir: Path) -> dict[str, Path]:
    return {t: log_dir / f"{t}-0" for t in TOPICS}


def index_bytes(log_dir: Path) -> dict[str, bytes]:
    out = {}
    for topic, part in partition_dirs(log_dir).items():
        for f in sorted(part.iterdir()):
            if f.suffix in INDEX_SUFFIXES:
                out[f"{topic}/{f.name}"] = f.read_bytes()
    return out


def topic_config_args() -> list[str]:
    return [arg for topic, (_, interval) in TOPICS.items()
            for arg in ("--topic-config", f"{topic}:index.interval.bytes={interval}")]


def consume_all(broker: KafkaBroker, topic: str, isolation: str) -> list[tuple]:
    """Every record the broker serves from partition 0 in this isolation level: (offset, key, value, timestamp).

    Reads until librdkafka reports the partition's end (``enable.partition.eof``): its fetch position past the
    high watermark, or in ``read_committed`` past the last stable offset, aborted batches and markers included.
    """
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"check-{isolation}",
                  "enable.auto.commit": False, "isolation.level": isolation, "fetch.wait.max.ms": 50,
                  "enable.partition.eof": True})
    try:
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        out: list[tuple] = []
        deadline = time.monotonic() + 60
        while True:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic} ({isolation}): no end of partition after {len(out)} records")
            for m in c.consume(2000, timeout=0.1):
                if m.error() is not None:
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        return out
                    raise KafkaException(m.error())
                out.append((m.offset(), m.key(), m.value(), m.timestamp()))
    finally:
        c.close()


def offsets_for_times(broker: KafkaBroker, topic: str, stamps: list[int]) -> list[tuple[int, int]]:
    """ListOffsets answers (offset, timestamp): each timestamp, then earliest, latest and max-timestamp."""
    client = admin(broker)
    specs = [OffsetSpec.for_timestamp(ts) for ts in stamps] + [
        OffsetSpec.earliest(), OffsetSpec.latest(), OffsetSpec.max_timestamp()]
    out = []
    for spec in specs:  # one request each: a request holds a partition once
        for f in client.list_offsets({TopicPartition(topic, 0): spec}).values():
            info = f.result(30)
            epoch = info.leader_epoch if info.leader_epoch is not None and info.leader_epoch >= 0 else -1
            out.append((info.offset, info.timestamp, epoch))
    return out


def served(broker: KafkaBroker, stamps: list[int]) -> dict:
    return {(t, iso): consume_all(broker, t, iso) for t in TOPICS for iso in ("read_committed", "read_uncommitted")} | {
        (t, "times"): offsets_for_times(broker, t, stamps) for t in TOPICS}
