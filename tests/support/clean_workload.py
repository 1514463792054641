"""A compacted topic and ``__consumer_offsets`` grown on a real broker with its log cleaner off, for the test of
``segdex clean`` against Kafka's own cleaner (tests/kafka/test_clean_broker.py).

``grow`` drives one broker (``GROW_PROPS``: ``log.cleaner.enable=false``; segments of at most 1 MiB, the least
Kafka 4.x takes, for ``__consumer_offsets`` too, and rolled every second) with real clients (confluent-kafka), then
stops it cleanly. It leaves, in one log dir:

- ``prices`` (``cleanup.policy=compact``, 2 partitions): ``KEYS`` keys per partition overwritten many times with
  large values by plain, idempotent and compressed (lz4, zstd, gzip) producers, a committed and an aborted
  transaction (``tx-prices``), tombstones, keys deleted and written again; on partition 1 also ``BULK_KEYS`` small
  keys written twice, more than one round of a 1 MiB offset map holds. Its last records come seconds after the
  others, in a segment of their own: everything before them is cleanable. ``latest`` is what a
  ``read_committed`` consumer must see last per key, ``tombstoned`` the keys whose last record is a tombstone;
- ``positions`` (8 partitions, no records): the partitions the groups commit offsets for;
- ``__consumer_offsets`` (one partition, several MB): ``SIMPLE`` assign-only groups committing ``COMMITS`` times
  each (with large offset metadata), most of them again later, the others deleted; classic groups of two members
  (subscribed, committed, closed; one deleted); a consumer-protocol group (committed, closed); offsets committed
  in transactions by ``tx-offsets`` for ``txn-group`` (every third transaction aborted), and only in an aborted one
  for ``txn-aborted``. The transactions and the deletions come last.

``expected`` is each group's committed offsets ({} for the deleted groups and ``txn-aborted``), checked against
what the broker answered before its stop.
"""

from __future__ import annotations

import random
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import TopicPartition
from confluent_kafka.admin import NewTopic

from tests.support.group_workload import (
    CONSUMER_PROTOCOL_PROPS,
    _admin,
    _commit,
    _consumer,
    _end_transaction,
    _tx_producer,
    _wait_assigned,
    committed_offsets,
)
from tests.support.kafka_harness import KafkaBroker, KafkaInstall
from tests.support.kafka_workload import producer

MiB = 1024 * 1024
COMPACTED = "prices"
COMPACTED_PARTITIONS = 2
KEYS = 300  # per partition of the compacted topic, large values overwritten many times
BULK_KEYS = 45_000  # small keys of partition 1, written twice: more than a 1 MiB offset map holds (~39,300)
POSITIONS = "positions"
POSITION_PARTITIONS = 8
OFFSETS_TOPIC = "__consumer_offsets"

SIMPLE = 24  # assign-only groups
COMMITS = 24  # commits per simple group, each of every positions partition
DELETED_SIMPLE = 8  # of which deleted at the end
CLASSIC = 3  # subscribed classic groups of two members; the last one deleted
METADATA_BYTES = 400  # offset metadata per committed offset: __consumer_offsets grows past several segments
TX_OFFSETS_ROUNDS = 9  # transactions of tx-offsets; every third aborted
TXN_GROUP, TXN_ABORTED = "txn-group", "txn-aborted"
MODERN_GROUP = "modern-group"

GROW_PROPS: dict[str, str] = {
    "log.cleaner.enable": "false",
    "offsets.topic.segment.bytes": str(MiB),  # the smallest segment.bytes Kafka 4.x accepts
    "log.roll.ms": "1000",  # and a segment a second, for every topic
    "transaction.max.timeout.ms": "900000",
    **CONSUMER_PROTOCOL_PROPS,
}
TOPIC_CONFIG = {"cleanup.policy": "compact", "segment.bytes": str(MiB)}


def simple_group(n: int) -> str:
    return f"simple-{n:02d}"


def classic_group(n: int) -> str:
    return f"classic-{n}"


def deleted_groups() -> list[str]:
    return [simple_group(n) for n in range(SIMPLE - DELETED_SIMPLE, SIMPLE)] + [classic_group(CLASSIC - 1)]


@dataclass
class CleanWorkload:
    """What ``grow`` wrote, with the broker stopped (cleanly: its dir holds ``.kafka_cleanshutdown``).

    ``latest`` maps (partition, key) to the value a ``read_committed`` consumer sees last for it, tombstoned keys
    left out; ``tombstoned`` the keys whose last record is a tombstone; ``expected`` each group's committed offsets
    ({} for the deleted groups)."""

    install: KafkaInstall
    root: Path
    broker: KafkaBroker
    latest: dict[tuple[int, bytes], bytes]
    tombstoned: set[tuple[int, bytes]]
    expected: dict[str, dict[tuple[str, int], int]]
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def data_dir(self) -> Path:
        return self.broker.data_dir


class _Prices:
    """The compacted topic's records, produced in order per partition, and what a consumer sees last per key."""

    def __init__(self, broker: KafkaBroker) -> None:
        self.broker = broker
        self.rng = random.Random(27)
        self.last: dict[tuple[int, bytes], bytes | None] = {}

    def key(self, p: int, k: int) -> bytes:
        return f"p{p}-key-{k:04d}".encode()

    def value(self, tag: str) -> bytes:
        return tag.encode() + b":" + self.rng.randbytes(self.rng.randint(300, 1400))

    def overwrite(self, passes: int, tag: str, keys: range = range(KEYS), **conf) -> None:
        p = producer(self.broker, **conf)
        for n in range(passes):
            for part in range(COMPACTED_PARTITIONS):
                for k in keys:
                    self._send(p, part, k, self.value(f"{tag}-{n}"))
        if p.flush(60):
            raise RuntimeError(f"{tag}: records not delivered")

    def _send(self, p, part: int, k: int, value: bytes | None, record: bool = True) -> None:
        p.produce(COMPACTED, key=self.key(part, k), value=value, partition=part)
        if record:
            self.last[(part, self.key(part, k))] = value

    def bulk(self, tag: str, **conf) -> None:
        """``BULK_KEYS`` keys with small values on partition 1."""
        p = producer(self.broker, **{"batch.num.messages": 500, **conf})
        for k in range(BULK_KEYS):
            key = f"p1-bulk-{k:06d}".encode()
            value = f"{tag}-{k}".encode()
            p.produce(COMPACTED, key=key, value=value, partition=1)
            self.last[(1, key)] = value
            if k % 10_000 == 0:
                p.poll(0)
        if p.flush(60):
            raise RuntimeError(f"{tag}: records not delivered")

    def tombstones(self, keys: list[int]) -> None:
        p = producer(self.broker, **{"enable.idempotence": True})
        for part in range(COMPACTED_PARTITIONS):
            for k in keys:
                self._send(p, part, k, None)
        if p.flush(60):
            raise RuntimeError("tombstones not delivered")

    def transactions(self) -> None:
        """tx-prices: a committed transaction over a third of the keys, then an aborted one over another third
        (its values never served)."""
        p = _tx_producer(self.broker, "tx-prices", **{"compression.type": "lz4"})
        for commit, keys in ((True, range(0, KEYS, 3)), (False, range(1, KEYS, 3))):
            p.begin_transaction()
            for part in range(COMPACTED_PARTITIONS):
                for k in keys:
                    self._send(p, part, k, self.value("committed" if commit else "ABORTED"), record=commit)
            _end_transaction(p, commit)

    def run(self) -> None:
        self.bulk("bulk-lz4", **{"compression.type": "lz4"})
        self.overwrite(7, "plain")
        self.overwrite(3, "lz4", **{"compression.type": "lz4", "enable.idempotence": True})
        self.transactions()
        self.bulk("bulk")
        self.overwrite(1, "zstd", **{"compression.type": "zstd"})
        self.tombstones(list(range(0, KEYS, 7)))
        self.overwrite(1, "gzip", range(0, KEYS, 14), **{"compression.type": "gzip"})  # half of them back

    def tail(self) -> None:
        """The last records, seconds after the others: they roll a segment, and all the above is cleanable."""
        self.overwrite(1, "tail", range(KEYS // 2), **{"enable.idempotence": True})

    def latest(self) -> tuple[dict[tuple[int, bytes], bytes], set[tuple[int, bytes]]]:
        return ({k: v for k, v in self.last.items() if v is not None},
                {k for k, v in self.last.items() if v is None})


def _metadata(group: str, n: int) -> str:
    return (f"{group}/{n}/" * (METADATA_BYTES // 8))[:METADATA_BYTES]


def _position_offsets(base: int) -> dict[tuple[str, int], int]:
    return {(POSITIONS, p): base + 7 * p for p in range(POSITION_PARTITIONS)}


def _simple_commits(broker: KafkaBroker, group: str, seed: int) -> dict[tuple[str, int], int]:
    """``COMMITS`` commits of every positions partition, pipelined, the last one synchronous; what it left."""
    c = _consumer(broker, group)
    try:
        c.assign([TopicPartition(POSITIONS, p) for p in range(POSITION_PARTITIONS)])
        for n in range(COMMITS):
            offsets = _position_offsets(seed * 1000 + n * 10)
            tps = [TopicPartition(t, p, o, metadata=_metadata(group, n)) for (t, p), o in sorted(offsets.items())]
            if n < COMMITS - 1:
                c.commit(offsets=tps, asynchronous=True)
            else:
                result = c.commit(offsets=tps, asynchronous=False)
                if any(tp.error for tp in result):
                    raise RuntimeError(f"{group}: commit failed: {result}")
        return offsets
    finally:
        c.close()


def _subscribed_commits(broker: KafkaBroker, group: str, seed: int, modern: bool = False) -> dict[tuple[str, int], int]:
    """Two members subscribed to positions, settled; each commits its partitions three times; both close."""
    members = [_consumer(broker, group, modern=modern) for _ in range(2)]
    try:
        for c in members:
            c.subscribe([POSITIONS])
        _wait_assigned(members, POSITION_PARTITIONS)
        offsets: dict[tuple[str, int], int] = {}
        for n in range(3):
            offsets = _position_offsets(seed * 1000 + n * 10)
            for c in members:
                mine = {(tp.topic, tp.partition) for tp in c.assignment()}
                _commit(c, {tp: o for tp, o in offsets.items() if tp in mine}, [o for o in members if o is not c])
        return offsets
    finally:
        for c in members:
            c.close()


def _tx_offsets(broker: KafkaBroker) -> dict[str, dict[tuple[str, int], int]]:
    """tx-offsets: ``TX_OFFSETS_ROUNDS`` transactions committing txn-group's offsets (every third aborted), then
    one aborted transaction for txn-aborted; the offsets the committed ones left."""
    p = _tx_producer(broker, "tx-offsets")
    kept: dict[str, dict[tuple[str, int], int]] = {TXN_GROUP: {}, TXN_ABORTED: {}}
    for n in range(TX_OFFSETS_ROUNDS + 1):
        group = TXN_GROUP if n < TX_OFFSETS_ROUNDS else TXN_ABORTED
        commit = group == TXN_GROUP and n % 3 != 2
        offsets = _position_offsets(70_000 + n * 10)
        meta = _consumer(broker, group)  # its group metadata only: generation -1, no member
        try:
            p.begin_transaction()
            p.send_offsets_to_transaction([TopicPartition(t, q, o) for (t, q), o in sorted(offsets.items())],
                                          meta.consumer_group_metadata(), 60)
            _end_transaction(p, commit)
        finally:
            meta.close()
        if commit:
            kept[group] = offsets
    return kept


def _delete(broker: KafkaBroker, groups: list[str]) -> None:
    client = _admin(broker)
    for f in client.delete_consumer_groups(groups, request_timeout=30).values():
        f.result(60)


def _groups(broker: KafkaBroker) -> dict[str, dict[tuple[str, int], int]]:
    """Every group of the workload and the offsets it must keep; groups run side by side, each with its own
    clients. The transactional commits and the deletions come last: with segments rolled every second, the active
    segment (which no cleaner touches) holds little else."""
    want: dict[str, dict[tuple[str, int], int]] = {}
    with ThreadPoolExecutor(4) as pool:
        first = {simple_group(n): pool.submit(_simple_commits, broker, simple_group(n), n + 1) for n in range(SIMPLE)}
        first |= {classic_group(n): pool.submit(_subscribed_commits, broker, classic_group(n), 100 + n)
                  for n in range(CLASSIC)}
        first[MODERN_GROUP] = pool.submit(_subscribed_commits, broker, MODERN_GROUP, 200, modern=True)
        want |= {g: f.result() for g, f in first.items()}
        # the groups that stay commit again: their first offsets superseded
        again = {simple_group(n): pool.submit(_simple_commits, broker, simple_group(n), 300 + n)
                 for n in range(SIMPLE - DELETED_SIMPLE)}
        want |= {g: f.result() for g, f in again.items()}
    want |= _tx_offsets(broker)
    _delete(broker, deleted_groups())
    for g in deleted_groups():
        want[g] = {}
    return want


def grow(install: KafkaInstall, root: Path) -> CleanWorkload:
    """The workload of the module doc on a fresh broker in ``root/grow``, stopped cleanly at the end (killed on
    any other way out)."""
    broker = KafkaBroker(install, Path(root) / "grow", GROW_PROPS)
    timings: dict[str, float] = {}
    t0 = time.monotonic()
    try:
        broker.start()
        timings["started_s"] = time.monotonic() - t0
        client = _admin(broker)
        for f in client.create_topics([NewTopic(COMPACTED, COMPACTED_PARTITIONS, 1, config=TOPIC_CONFIG),
                                       NewTopic(POSITIONS, POSITION_PARTITIONS, 1)]).values():
            f.result(60)
        prices = _Prices(broker)
        prices.run()
        timings["prices_s"] = time.monotonic() - t0 - timings["started_s"]
        want = _groups(broker)
        timings["groups_s"] = time.monotonic() - t0 - timings["started_s"] - timings["prices_s"]
        prices.tail()
        got = {g: committed_offsets(broker, g) for g in want}
        if got != want:
            raise RuntimeError(f"the broker holds {got}, the workload committed {want}")
        del client
        broker.stop()
    finally:
        broker.kill()
    timings["total_s"] = time.monotonic() - t0
    latest, tombstoned = prices.latest()
    return CleanWorkload(install=install, root=Path(root), broker=broker, latest=latest, tombstoned=tombstoned,
                         expected=want, timings=timings)
