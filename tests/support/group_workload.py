"""Consumer groups and transactions on a real broker, for the tests that read ``__consumer_offsets`` and
``__transaction_state`` offline: one broker, real clients (confluent-kafka), then Kafka's own tools' view of
what it holds (``kafka-consumer-groups``, ``kafka-transactions``), then a ``kill -9`` with everything live.

``run_group_workload`` leaves, in one log dir (three ``__consumer_offsets`` partitions, two
``__transaction_state`` partitions):

- data topics ``orders`` (3 partitions), ``events`` (2), ``audit`` (3), ``ledger`` (2) and ``txdata`` (1), with
  known record counts;
- ``classic-live``: two classic consumers, subscribed and polling at the kill (Stable, two members), one to
  ``orders`` and ``events``, the other to ``audit`` and ``ledger`` (``LIVE_SUBSCRIPTIONS``): each holds five
  partitions, the same partition number on two topics (the order of a member's rows, and of members holding as
  many partitions, is Kafka's to match);
- ``classic-empty``: a classic consumer that committed and closed (Empty, offsets kept);
- ``simple-assign``: offsets committed by a consumer that only assigned partitions (a "simple" group, no
  protocol type), one of them (``events``/1) past the log end;
- ``modern-live`` and ``modern-empty``: the same with ``group.protocol=consumer`` (KIP-848), on 4.x only (below);
  ``modern-live``'s members subscribe to ``audit`` and ``events``, and to ``orders`` and ``ledger``;
- ``modern-shrunk`` (4.x): consumer-protocol members joined one by one (5 or more) to ``events`` and ``ledger``,
  then all but two left; the two, live at the kill, hold two partitions each. The two are chosen, by their member
  ids and join order, so that their order in the group's ``members`` table as all those puts grew it (8 or more
  slots: Kafka's describe order) differs from their order in a table sized for two (``order_telling_pair``);
- ``deleted-group``: committed, closed, then deleted with ``AdminClient.delete_consumer_groups``;
- ``expired-group``: committed and closed first; the broker expired its offsets (and dropped the group) before
  the tools ran (``offsets.retention.minutes=1``, the smallest the broker accepts: about 60 s);
- ``txn-group``: offsets committed by transactional producer ``tx-offsets-commit`` (``send_offsets_to_transaction``
  then commit); ``txn-group-aborted``: offsets sent by ``tx-offsets-abort`` in a transaction that aborted;
- ``recreated`` (1 partition, no records): created with ``cleanup.policy=compact``, deleted, and created again
  without configs. No metadata snapshot is taken meanwhile, so a broker started on the dir replays all three
  in one delta and the new topic has the deleted one's config (``RECREATED_CONFIGS``);
- on ``txdata``: an idempotent producer, ``tx-data`` (commit, abort, commit), the records of the two
  ``tx-offsets-*`` transactions, and last ``tx-hanging``: a transaction whose records were flushed and which is
  still ``Ongoing`` at the kill (``transaction.timeout.ms`` 15 minutes).

Each group commits exactly ``GROUP_OFFSETS[group]`` (plain commits carry the metadata string ``METADATA``).

Every group but the live ones commits within the last minute before the tools run: the one-minute
retention that expires ``expired-group`` applies to every group without members (an Empty group's offsets expire
a minute after it became Empty, a simple group's a minute after the commit). ``run_group_workload`` checks that
they all still hold their offsets after the tools ran. A broker restarted on the crashed dir must not keep that
retention, or it drops those offsets at its first check: start it with ``RESTORE_BROKER_PROPS``.

Consumer-protocol groups need 4.x here. Kafka 3.9.2 has KIP-848 as a preview
(``group.coordinator.rebalance.protocols=classic,consumer``), but it offers ConsumerGroupHeartbeat v0 only,
and librdkafka (confluent-kafka 2.16) sends v1 only: such a consumer never joins ("ConsumerGroupHeartbeatRequest
not supported by broker"). On 3.x the workload leaves the modern groups out and keeps 3.9's default,
production group coordinator (classic protocol only); 4.x runs the new coordinator.

``log.initial.task.delay.ms`` is left at its default: it delays the log manager's tasks (retention, flush,
checkpoints), not the group coordinator's offset expiry (``offsets.retention.check.interval.ms``); with it at
600000 both releases still expire a simple group's offsets 61 s after the commit.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from segdex.indexcore.log.java_hash_map import java_string_hash, timeline_capacity, timeline_slot
from tests.support.kafka_harness import KafkaBroker, KafkaInstall

GROUP_BROKER_PROPS: dict[str, str] = {
    # offsets of groups without members expire a minute after their group became Empty (or, for simple groups,
    # after the commit); the coordinator looks every second
    "offsets.retention.minutes": "1",
    "offsets.retention.check.interval.ms": "1000",
    "group.initial.rebalance.delay.ms": "0",
    "transaction.max.timeout.ms": "900000",
    # groups and transactional ids spread over several coordinator partitions
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.num.partitions": "2",
}
# 4.x: consumer-protocol groups are on by default; a shorter heartbeat makes a two-member group converge faster
CONSUMER_PROTOCOL_PROPS: dict[str, str] = {
    "group.consumer.heartbeat.interval.ms": "1000",
    "group.consumer.min.heartbeat.interval.ms": "1000",
}
# a broker started on the crashed dir: the default retention and check interval, so that the groups' offsets
# (committed long ago by then) stay
RESTORE_BROKER_PROPS: dict[str, str] = {
    "offsets.retention.minutes": "10080",
    "offsets.retention.check.interval.ms": "600000",
}

TOPICS: dict[str, int] = {"orders": 3, "events": 2, "audit": 3, "ledger": 2, "txdata": 1}
RECREATED, RECREATED_CONFIGS = "recreated", {"cleanup.policy": "compact"}
RECORDS_PER_PARTITION: dict[str, int] = {"orders": 200, "events": 150, "audit": 50, "ledger": 40}
PAST_END = 10_000  # a committed offset past the log end (simple-assign, events/1)
METADATA = "segdex-group-workload"

CLASSIC_LIVE, CLASSIC_EMPTY, SIMPLE_ASSIGN = "classic-live", "classic-empty", "simple-assign"
MODERN_LIVE, MODERN_EMPTY, MODERN_SHRUNK = "modern-live", "modern-empty", "modern-shrunk"
DELETED_GROUP, EXPIRED_GROUP = "deleted-group", "expired-group"
TXN_GROUP, TXN_GROUP_ABORTED = "txn-group", "txn-group-aborted"
MODERN_GROUPS = (MODERN_LIVE, MODERN_EMPTY, MODERN_SHRUNK)
# modern-shrunk: members subscribed to these topics (4 partitions: 2 each for the two left), joining one by one,
# at least SHRUNK_MIN_MEMBERS (a table of 8 slots or more) and at most SHRUNK_MAX_MEMBERS
SHRUNK_TOPICS = ["events", "ledger"]
SHRUNK_MIN_MEMBERS, SHRUNK_MAX_MEMBERS = 5, 16
# the live groups' members, one subscription each: both hold five partitions (a tie in --describe's member order),
# each the same partition numbers on two topics (a tie in the order of its rows by partition)
LIVE_SUBSCRIPTIONS: dict[str, list[list[str]]] = {
    CLASSIC_LIVE: [["orders", "events"], ["audit", "ledger"]],
    MODERN_LIVE: [["audit", "events"], ["orders", "ledger"]],
}

# what each group commits: (topic, partition) -> offset
GROUP_OFFSETS: dict[str, dict[tuple[str, int], int]] = {
    CLASSIC_LIVE: {("orders", 0): 40, ("orders", 1): 41, ("orders", 2): 42, ("events", 0): 43, ("audit", 0): 44,
                   ("ledger", 0): 45},
    CLASSIC_EMPTY: {("orders", 0): 100, ("orders", 1): 110, ("orders", 2): 120, ("events", 0): 30},
    SIMPLE_ASSIGN: {("orders", 1): 150, ("events", 1): PAST_END},
    MODERN_LIVE: {("events", 0): 60, ("events", 1): 61, ("audit", 0): 62, ("orders", 1): 63, ("ledger", 0): 64},
    MODERN_EMPTY: {("events", 0): 10, ("events", 1): 20},
    MODERN_SHRUNK: {("events", 1): 80, ("ledger", 0): 31},
    DELETED_GROUP: {("orders", 0): 5},
    EXPIRED_GROUP: {("orders", 2): 7},
    TXN_GROUP: {("orders", 0): 77, ("orders", 2): 88},
    TXN_GROUP_ABORTED: {("orders", 1): 99},
}
# groups that hold offsets when the tools run, and the ones that do not (deleted, expired, aborted)
KEPT_GROUPS = (CLASSIC_LIVE, CLASSIC_EMPTY, SIMPLE_ASSIGN, MODERN_LIVE, MODERN_EMPTY, MODERN_SHRUNK, TXN_GROUP)
GONE_GROUPS = (DELETED_GROUP, EXPIRED_GROUP, TXN_GROUP_ABORTED)

TX_DATA, TX_OFFSETS_COMMIT, TX_OFFSETS_ABORT, TX_HANGING = "tx-data", "tx-offsets-commit", "tx-offsets-abort", \
    "tx-hanging"
TRANSACTIONAL_IDS = (TX_DATA, TX_OFFSETS_COMMIT, TX_OFFSETS_ABORT, TX_HANGING)
# records on txdata, by kind; tx-hanging's come last
TXDATA_RECORDS: dict[str, int] = {"idempotent": 30, "committed": 20 + 25 + 10, "aborted": 15 + 12, "open": 8}

EXPIRY_TIMEOUT_S = 90.0
# the groups without members commit this long after expired-group closed: they must outlive the tools' run
LATE_COMMITS_AFTER_S = 35.0

GROUP_TOOL = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
TXN_TOOL = "org.apache.kafka.tools.TransactionsCommand"
_TOOLS_LOG4J2 = """\
status = warn
appender.err.type = Console
appender.err.name = ERR
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.err.ref = ERR
"""
_TOOLS_LOG4J1 = """\
log4j.rootLogger=WARN, err
log4j.appender.err=org.apache.log4j.ConsoleAppender
log4j.appender.err.Target=System.err
log4j.appender.err.layout=org.apache.log4j.PatternLayout
log4j.appender.err.layout.ConversionPattern=[%d] %p %m (%c)%n
"""


def consumer_protocol_supported(install: KafkaInstall) -> bool:
    """Whether this workload runs ``group.protocol=consumer`` groups on this release (see the module doc)."""
    return install.family >= 4


def group_broker_props(install: KafkaInstall) -> dict[str, str]:
    """The broker properties of the workload on this release."""
    return {**GROUP_BROKER_PROPS, **(CONSUMER_PROTOCOL_PROPS if consumer_protocol_supported(install) else {})}


@dataclass
class GroupWorkload:
    """What ``run_group_workload`` did and what the broker and its tools said, with the broker killed.

    ``tools`` maps a capture name (``groups-describe``, ``txn-list``, ``txn-describe-tx-hanging``, ...) to the
    tool's (stdout, stderr); ``tools_ms`` is the wall clock (epoch ms) when the first tool started.
    ``committed`` is each group's committed offsets as the broker answered just before the tools ran (empty for
    deleted, expired and aborted-only groups); ``listing`` each listed group's (state, type) from ListGroups.
    ``produced`` counts the records appended per (topic, partition), ``end_offsets`` the high watermarks at the
    same time (on ``txdata`` control records take offsets too) and ``stable_offsets`` the last stable offsets
    (``txdata``'s is where tx-hanging's records begin).
    """

    install: KafkaInstall
    root: Path
    broker: KafkaBroker
    crashed: Path
    props: dict[str, str]
    consumer_protocol: bool
    tools: dict[str, tuple[str, str]]
    tools_ms: int
    produced: dict[tuple[str, int], int]
    end_offsets: dict[tuple[str, int], int]
    stable_offsets: dict[tuple[str, int], int]
    groups: list[str]
    transactional_ids: list[str]
    committed: dict[str, dict[tuple[str, int], int]]
    listing: dict[str, tuple[str, str]]
    txdata_records: dict[str, int] = field(default_factory=lambda: dict(TXDATA_RECORDS))
    timings: dict[str, float] = field(default_factory=dict)

    def expected_offsets(self, group: str) -> dict[tuple[str, int], int]:
        """The offsets ``group`` committed and kept ({} for the deleted, expired and aborted ones)."""
        return dict(GROUP_OFFSETS[group]) if group in KEPT_GROUPS and group in self.groups else {}


# ----- clients


def _admin(broker: KafkaBroker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def _consumer(broker: KafkaBroker, group: str, modern: bool = False, quiet: bool = False, **conf) -> Consumer:
    base = {"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "fetch.wait.max.ms": 50}
    if modern:
        base["group.protocol"] = "consumer"
    if quiet:  # alive at the kill: its reconnect attempts would fill the output
        base["log_level"] = 0
    return Consumer({**base, **conf})


def _producer(broker: KafkaBroker, **conf) -> Producer:
    return Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5, "message.timeout.ms": 60000, **conf})


def _create_topics(broker: KafkaBroker) -> None:
    client = _admin(broker)
    for f in client.create_topics([NewTopic(t, n, 1) for t, n in TOPICS.items()]).values():
        f.result(60)


def _recreate_topic(broker: KafkaBroker) -> None:
    """``recreated``: created with ``RECREATED_CONFIGS``, deleted (gone from the listing), created without."""
    client = _admin(broker)
    client.create_topics([NewTopic(RECREATED, 1, 1, config=RECREATED_CONFIGS)])[RECREATED].result(60)
    client.delete_topics([RECREATED])[RECREATED].result(60)
    deadline = time.monotonic() + 60
    while RECREATED in client.list_topics(timeout=10).topics:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{RECREATED} still listed 60 s after its deletion")
        time.sleep(0.1)
    client.create_topics([NewTopic(RECREATED, 1, 1)])[RECREATED].result(60)


def _produce_plain(broker: KafkaBroker, produced: dict[tuple[str, int], int]) -> None:
    p = _producer(broker)
    for topic, per_partition in RECORDS_PER_PARTITION.items():
        for partition in range(TOPICS[topic]):
            for n in range(per_partition):
                p.produce(topic, key=f"{topic}-{partition}-{n}".encode(), value=b"v" * 100, partition=partition)
            produced[(topic, partition)] = per_partition
    if p.flush(60):
        raise RuntimeError("plain records not delivered")


def _produce_tx(p: Producer, count: int, tag: str) -> None:
    for n in range(count):
        p.produce("txdata", key=f"{tag}-{n}".encode(), value=b"t" * 200, partition=0)


# ----- groups


def _pump(consumers: list[Consumer], timeout: float = 0.05) -> None:
    """One poll each: members stay in their group and answer rebalances."""
    for c in consumers:
        msg = c.poll(timeout)
        if msg is not None and msg.error() and msg.error().fatal():
            raise KafkaException(msg.error())


def _wait_assigned(consumers: list[Consumer], partitions: int, timeout: float = 60.0) -> None:
    """Poll until the members hold every partition of their subscription, each member some."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _pump(consumers, 0.1)
        sizes = [len(c.assignment()) for c in consumers]
        if sum(sizes) == partitions and all(sizes):
            return
    raise RuntimeError(f"group did not settle in {timeout}s: {[c.assignment() for c in consumers]}")


def _commit(consumer: Consumer, offsets: dict[tuple[str, int], int], others: Sequence[Consumer] = (),
            timeout: float = 30.0) -> None:
    """A synchronous commit of exactly these offsets, retried while the group settles."""
    tps = [TopicPartition(t, p, o, metadata=METADATA) for (t, p), o in sorted(offsets.items())]
    deadline = time.monotonic() + timeout
    while True:
        try:
            result = consumer.commit(offsets=tps, asynchronous=False)
            errors = [tp for tp in result if tp.error]
            if not errors:
                return
            problem: object = errors
        except KafkaException as e:
            problem = e
        if time.monotonic() > deadline:
            raise RuntimeError(f"commit of {offsets} failed: {problem}")
        _pump([consumer, *others], 0.2)


def _commit_assigned(consumers: list[Consumer], group: str) -> None:
    """Each member commits the group's offsets of the partitions it holds."""
    for c in consumers:
        mine = {(tp.topic, tp.partition) for tp in c.assignment()}
        offsets = {tp: o for tp, o in GROUP_OFFSETS[group].items() if tp in mine}
        if offsets:
            _commit(c, offsets, [o for o in consumers if o is not c])
    missing = set(GROUP_OFFSETS[group]) - {(tp.topic, tp.partition) for c in consumers for tp in c.assignment()}
    if missing:
        raise RuntimeError(f"{group}: no member holds {missing}")


def _subscribed_group(broker: KafkaBroker, group: str, subscriptions: list[list[str]], modern: bool = False,
                      live: bool = False) -> list[Consumer]:
    """One consumer of ``group`` per subscription (its topics), settled, offsets committed."""
    consumers = [_consumer(broker, group, modern=modern, quiet=live) for _ in subscriptions]
    for c, topics in zip(consumers, subscriptions, strict=True):
        c.subscribe(topics)
    _wait_assigned(consumers, sum(TOPICS[t] for t in {t for topics in subscriptions for t in topics}))
    _commit_assigned(consumers, group)
    return consumers


def _closed_group(broker: KafkaBroker, group: str, topics: list[str], modern: bool = False) -> None:
    """A group whose only member committed and then left (close: LeaveGroup, the group is Empty)."""
    consumer = _subscribed_group(broker, group, [topics], modern=modern)[0]
    consumer.close()


def order_telling_pair(put_order: Sequence[str]) -> tuple[str, str] | None:
    """Two members (in put order) whose order in a ``members`` ``TimelineHashMap`` grown by ``put_order`` (all held
    at once: ``timeline_capacity(len)`` slots) differs from their order in the table two members need (4 slots):
    the same slot of 4, the first put in a lower slot of the grown table (there it comes first; in 4 slots the
    last put does). None when no two members of ``put_order`` are such."""
    grown = timeline_capacity(len(put_order))
    slots = {m: (timeline_slot(java_string_hash(m), timeline_capacity(2)), timeline_slot(java_string_hash(m), grown))
             for m in put_order}
    for i, first in enumerate(put_order):
        for then in put_order[i + 1:]:
            if slots[first][0] == slots[then][0] and slots[first][1] < slots[then][1]:
                return first, then
    return None


def _joined(admin: AdminClient, group: str, consumer: Consumer, others: Sequence[Consumer],
            timeout: float = 30.0) -> str:
    """Poll ``consumer`` (and ``others``) until the coordinator's describe of ``group`` lists it: its member id,
    its records written and replayed (its first put into the group's ``members``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _pump([consumer, *others], 0.1)
        member_id = consumer.memberid()
        if member_id:
            described = admin.describe_consumer_groups([group], request_timeout=10)[group].result(15)
            if any(m.member_id == member_id for m in described.members):
                return member_id
    raise RuntimeError(f"{group}: a member did not join in {timeout}s")


def _shrunk_group(broker: KafkaBroker, group: str, others: Sequence[Consumer]) -> list[Consumer]:
    """modern-shrunk: consumer-protocol members join one at a time (each listed by the coordinator before the next
    subscribes: their puts come in join order) until two of them tell a table grown by all of them from one sized
    for two (``order_telling_pair``); every other member leaves (``close``: its records' tombstones), and the two
    left settle at two partitions each (a tie in ``--describe``'s member order) and commit."""
    admin = _admin(broker)
    joined: list[tuple[str, Consumer]] = []
    try:
        pair = None
        while pair is None:
            if len(joined) == SHRUNK_MAX_MEMBERS:
                raise RuntimeError(f"{group}: no two of {[m for m, _ in joined]} tell the grown table apart")
            c = _consumer(broker, group, modern=True, quiet=True)
            joined.append(("", c))
            c.subscribe(SHRUNK_TOPICS)
            joined[-1] = (_joined(admin, group, c, [*others, *(j for _, j in joined[:-1])]), c)
            if len(joined) >= SHRUNK_MIN_MEMBERS:
                pair = order_telling_pair([m for m, _ in joined])
        kept = [c for m, c in joined if m in pair]
        for m, c in list(joined):
            if m not in pair:
                c.close()
                joined.remove((m, c))
                _pump([*others, *kept], 0.0)
        partitions = sum(TOPICS[t] for t in SHRUNK_TOPICS)
        deadline = time.monotonic() + 60
        while sorted(len(c.assignment()) for c in kept) != [partitions // 2] * 2:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{group}: {[c.assignment() for c in kept]} not two partitions each")
            _pump([*kept, *others], 0.1)
        _commit_assigned(kept, group)
        return kept
    except BaseException:
        for _, c in joined:
            c.close()
        raise


def _simple_group(broker: KafkaBroker, group: str) -> None:
    """Offsets committed without a subscription: assign only (generation -1, no member)."""
    c = _consumer(broker, group)
    try:
        c.assign([TopicPartition(t, p) for t, p in GROUP_OFFSETS[group]])
        _commit(c, GROUP_OFFSETS[group])
    finally:
        c.close()


def _delete_group(broker: KafkaBroker, group: str) -> None:
    _closed_group(broker, group, ["orders"])
    client = _admin(broker)
    for f in client.delete_consumer_groups([group], request_timeout=30).values():
        f.result(60)


def committed_offsets(broker: KafkaBroker, group: str) -> dict[tuple[str, int], int]:
    """The group's committed offsets, as OffsetFetch answers them ({} when it has none)."""
    client = _admin(broker)
    futures = client.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=30)
    try:
        answer = futures[group].result(60)
    except KafkaException as e:  # a deleted or expired group, as some coordinators answer for it
        if e.args[0].code() == KafkaError.GROUP_ID_NOT_FOUND:
            return {}
        raise
    return {(tp.topic, tp.partition): tp.offset for tp in answer.topic_partitions or [] if tp.offset >= 0}


def _wait_expired(broker: KafkaBroker, group: str, live: list[Consumer], timeout: float) -> float:
    """Seconds until the broker expired ``group``'s offsets (the live members keep polling meanwhile)."""
    start = time.monotonic()
    while committed_offsets(broker, group):
        if time.monotonic() - start > timeout:
            raise RuntimeError(f"{group}'s offsets did not expire in {timeout}s")
        _pump(live, 0.25)
    return time.monotonic() - start


def _listing(broker: KafkaBroker) -> dict[str, tuple[str, str]]:
    client = _admin(broker)  # kept alive until the future resolves
    result = client.list_consumer_groups(request_timeout=30).result(60)
    if result.errors:
        raise RuntimeError(f"ListGroups: {result.errors}")
    return {g.group_id: (g.state.name, g.type.name) for g in result.valid}


# ----- transactions


def _idempotent(broker: KafkaBroker, produced: dict[tuple[str, int], int]) -> None:
    p = _producer(broker, **{"enable.idempotence": True})
    _produce_tx(p, TXDATA_RECORDS["idempotent"], "idempotent")
    if p.flush(60):
        raise RuntimeError("idempotent records not delivered")
    produced[("txdata", 0)] += TXDATA_RECORDS["idempotent"]


def _tx_producer(broker: KafkaBroker, tid: str, **conf) -> Producer:
    p = _producer(broker, **{"transactional.id": tid, "transaction.timeout.ms": 900000, **conf})
    p.init_transactions(60)
    return p


def _tx_data(broker: KafkaBroker, produced: dict[tuple[str, int], int]) -> None:
    """tx-data: a committed, an aborted and a committed transaction on txdata."""
    p = _tx_producer(broker, TX_DATA)
    for count, commit in ((20, True), (15, False), (25, True)):
        p.begin_transaction()
        _produce_tx(p, count, f"{TX_DATA}-{count}")
        _end_transaction(p, commit)
        produced[("txdata", 0)] += count


def _end_transaction(p: Producer, commit: bool) -> None:
    """Flush the transaction's records, then commit or abort it."""
    p.flush(60)
    if commit:
        p.commit_transaction(60)
    else:
        p.abort_transaction(60)


def _tx_offsets(broker: KafkaBroker, tid: str, group: str, count: int, commit: bool,
                produced: dict[tuple[str, int], int]) -> None:
    """A consume-transform-produce transaction: records on txdata and ``group``'s offsets, committed or aborted."""
    p = _tx_producer(broker, tid)
    meta_consumer = _consumer(broker, group)  # its group metadata only: generation -1, no member
    try:
        p.begin_transaction()
        _produce_tx(p, count, tid)
        offsets = [TopicPartition(t, q, o) for (t, q), o in sorted(GROUP_OFFSETS[group].items())]
        p.send_offsets_to_transaction(offsets, meta_consumer.consumer_group_metadata(), 60)
        _end_transaction(p, commit)
        produced[("txdata", 0)] += count
    finally:
        meta_consumer.close()


def _tx_hanging(broker: KafkaBroker, produced: dict[tuple[str, int], int]) -> Producer:
    """A transaction whose records reached the log and whose end never will (the broker dies next)."""
    p = _tx_producer(broker, TX_HANGING, log_level=0)
    p.begin_transaction()
    _produce_tx(p, TXDATA_RECORDS["open"], TX_HANGING)
    if p.flush(60):
        raise RuntimeError("tx-hanging's records not delivered")
    produced[("txdata", 0)] += TXDATA_RECORDS["open"]
    return p


# ----- Kafka's tools


def _tools_log_config(root: Path) -> Path:
    """log4j configs sending the tools' own log lines (WARN and above) to stderr, never into their output."""
    d = root / "tools-log"
    d.mkdir(parents=True, exist_ok=True)
    (d / "log4j2.properties").write_text(_TOOLS_LOG4J2)
    (d / "log4j.properties").write_text(_TOOLS_LOG4J1)
    return d


def tool_commands(install: KafkaInstall, bootstrap: str, transactional_ids: list[str]) -> dict[str, list[str]]:
    """The tool invocations captured: name -> arguments after the main class."""
    server = ["--bootstrap-server", bootstrap]
    groups = {
        "groups-list": ["--list"],
        "groups-list-state": ["--list", "--state"],
        "groups-list-type": ["--list", "--type"],
        "groups-describe": ["--describe", "--all-groups"],
        "groups-describe-state": ["--describe", "--all-groups", "--state"],
        "groups-describe-members": ["--describe", "--all-groups", "--members"],
        "groups-describe-members-verbose": ["--describe", "--all-groups", "--members", "--verbose"],
    }
    txns = {"txn-list": ["list"], "txn-find-hanging": ["find-hanging", "--broker-id", "1"]}
    txns |= {f"txn-describe-{tid}": ["describe", "--transactional-id", tid] for tid in transactional_ids}
    return {name: [GROUP_TOOL, *server, *args] for name, args in groups.items()} | {
        name: [TXN_TOOL, *server, *args] for name, args in txns.items()}


def run_tools(install: KafkaInstall, bootstrap: str, transactional_ids: list[str], root: Path,
              parallel: int = 2, only: dict[str, list[str]] | None = None) -> dict[str, tuple[str, str]]:
    """Each tool's (stdout, stderr), ``parallel`` JVMs at a time; a failing tool's exit code ends its stderr.
    ``only``: these invocations (name -> main class and arguments) instead of ``tool_commands``."""
    log_config = _tools_log_config(root)
    pending = list((only or tool_commands(install, bootstrap, transactional_ids)).items())
    running: list[tuple[str, subprocess.Popen]] = []
    out: dict[str, tuple[str, str]] = {}
    while pending or running:
        while pending and len(running) < parallel:
            name, (main, *args) = pending.pop(0)
            running.append((name, subprocess.Popen(install.java(main, *args, log_config=log_config),
                                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                                   stdin=subprocess.DEVNULL, start_new_session=True)))
        name, proc = running.pop(0)
        stdout, stderr = proc.communicate(timeout=120)
        if proc.returncode:
            stderr += f"\n[exit code {proc.returncode}]\n"
        out[name] = (stdout, stderr)
    return out


# ----- the workload


def _end_offsets(broker: KafkaBroker, isolation: str) -> dict[tuple[str, int], int]:
    """Each partition's high watermark (``read_uncommitted``) or last stable offset (``read_committed``)."""
    c = _consumer(broker, "segdex-watermarks", **{"isolation.level": isolation})
    try:
        return {(t, p): c.get_watermark_offsets(TopicPartition(t, p), timeout=30)[1]
                for t, n in TOPICS.items() for p in range(n)}
    finally:
        c.close()


class _Run:
    """The clients of one workload run, kept until the broker is killed."""

    def __init__(self, install: KafkaInstall, root: Path) -> None:
        self.install = install
        self.root = root
        self.props = group_broker_props(install)
        self.modern = consumer_protocol_supported(install)
        self.broker = KafkaBroker(install, root / "node", self.props)
        self.produced: dict[tuple[str, int], int] = {("txdata", 0): 0}
        self.live: list[Consumer] = []
        self.hanging: Producer | None = None
        self.groups: list[str] = []
        self.timings: dict[str, float] = {}

    def first(self) -> float:
        """Topics, records, and expired-group (its retention minute starts now); when it closed (monotonic)."""
        _create_topics(self.broker)
        _produce_plain(self.broker, self.produced)
        _closed_group(self.broker, EXPIRED_GROUP, ["orders"])
        self.groups.append(EXPIRED_GROUP)
        return time.monotonic()

    def live_groups_and_transactions(self) -> None:
        self.live += _subscribed_group(self.broker, CLASSIC_LIVE, LIVE_SUBSCRIPTIONS[CLASSIC_LIVE], live=True)
        self.groups.append(CLASSIC_LIVE)
        if self.modern:
            self.live += _subscribed_group(self.broker, MODERN_LIVE, LIVE_SUBSCRIPTIONS[MODERN_LIVE], modern=True,
                                           live=True)
            self.groups.append(MODERN_LIVE)
            t_shrunk = time.monotonic()
            self.live += _shrunk_group(self.broker, MODERN_SHRUNK, self.live)
            self.groups.append(MODERN_SHRUNK)
            self.timings["shrunk_s"] = time.monotonic() - t_shrunk
        _idempotent(self.broker, self.produced)
        _tx_data(self.broker, self.produced)

    def late_groups(self) -> None:
        """The groups without members, committed within the retention minute before the tools run."""
        _closed_group(self.broker, CLASSIC_EMPTY, ["orders", "events"])
        self.groups.append(CLASSIC_EMPTY)
        _pump(self.live)
        if self.modern:
            _closed_group(self.broker, MODERN_EMPTY, ["events"], modern=True)
            self.groups.append(MODERN_EMPTY)
        _simple_group(self.broker, SIMPLE_ASSIGN)
        _delete_group(self.broker, DELETED_GROUP)
        self.groups += [SIMPLE_ASSIGN, DELETED_GROUP]
        _pump(self.live)
        _tx_offsets(self.broker, TX_OFFSETS_COMMIT, TXN_GROUP, 10, True, self.produced)
        _tx_offsets(self.broker, TX_OFFSETS_ABORT, TXN_GROUP_ABORTED, 12, False, self.produced)
        self.groups += [TXN_GROUP, TXN_GROUP_ABORTED]
        self.hanging = _tx_hanging(self.broker, self.produced)

    def wait_until(self, moment: float) -> None:
        while time.monotonic() < moment:
            _pump(self.live, min(0.25, max(0.0, moment - time.monotonic())))

    def check_kept(self, committed: dict[str, dict[tuple[str, int], int]], when: str) -> None:
        for group in self.groups:
            want = dict(GROUP_OFFSETS[group]) if group in KEPT_GROUPS else {}
            if committed[group] != want:
                raise RuntimeError(f"{when}: {group} holds {committed[group]}, expected {want}")

    def drop_clients(self) -> None:
        """After the kill: forget the live clients without a close (no broker to answer it)."""
        if self.hanging is not None:
            self.hanging.purge()
        self.hanging = None
        self.live.clear()


def run_group_workload(install: KafkaInstall, root: Path) -> GroupWorkload:
    """The workload of the module doc on a fresh broker in ``root/node``; the tools' view; ``kill -9``; the dir
    as the kill left it copied to ``root/crashed``. The broker is killed on every way out."""
    run = _Run(install, Path(root))
    t0 = time.monotonic()
    try:
        run.broker.start()
        run.timings["started_s"] = time.monotonic() - t0
        expired_closed = run.first()
        run.live_groups_and_transactions()
        run.wait_until(expired_closed + LATE_COMMITS_AFTER_S)
        run.late_groups()
        run.timings["late_groups_done_s"] = time.monotonic() - expired_closed
        _recreate_topic(run.broker)  # while expired-group's offsets wait to expire
        run.timings["expiry_wait_s"] = time.monotonic() - expired_closed + _wait_expired(
            run.broker, EXPIRED_GROUP, run.live, EXPIRY_TIMEOUT_S)
        _pump(run.live)
        committed = {g: committed_offsets(run.broker, g) for g in run.groups}
        run.check_kept(committed, "before the tools")
        listing = _listing(run.broker)
        end_offsets = _end_offsets(run.broker, "read_uncommitted")
        stable_offsets = _end_offsets(run.broker, "read_committed")
        tools_ms = int(time.time() * 1000)
        t_tools = time.monotonic()
        tools = run_tools(install, run.broker.bootstrap, list(TRANSACTIONAL_IDS), run.root)
        run.timings["tools_s"] = time.monotonic() - t_tools
        _pump(run.live)
        run.check_kept({g: committed_offsets(run.broker, g) for g in run.groups}, "after the tools")
        run.broker.kill()
        run.drop_clients()
        crashed = run.broker.copy_data(run.root / "crashed")
    finally:
        run.broker.kill()
        run.drop_clients()
    run.timings["total_s"] = time.monotonic() - t0
    return GroupWorkload(
        install=install, root=run.root, broker=run.broker, crashed=crashed, props=run.props,
        consumer_protocol=run.modern, tools=tools, tools_ms=tools_ms, produced=dict(run.produced),
        end_offsets=end_offsets, stable_offsets=stable_offsets, groups=list(run.groups),
        transactional_ids=list(TRANSACTIONAL_IDS), committed=committed, listing=listing, timings=run.timings)


# ----- after a restore


# consumer errors librdkafka reports and then retries by itself: a restarted broker still taking leadership of
# its __consumer_offsets partitions answers the first OffsetFetch NOT_COORDINATOR (seen on 3.9.2)
PASSING_CONSUMER_ERRORS = (KafkaError._PARTITION_EOF, KafkaError.NOT_COORDINATOR,
                           KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.COORDINATOR_NOT_AVAILABLE)


def consume_with_reset(broker: KafkaBroker, group: str, topic: str, partition: int, reset: str,
                       idle_s: float = 3.0, isolation: str = "read_committed") -> int:
    """How many records a consumer of ``group`` reads from ``topic``/``partition`` until it has been idle for
    ``idle_s``: it assigns the partition (no subscription, no rebalance), starts at the group's committed offset,
    and commits nothing. ``reset`` is its ``auto.offset.reset``: where it starts when the group has no offset
    there, and also when the committed offset is out of the log's range: a fetch past the log end (or before
    the log start) answers OFFSET_OUT_OF_RANGE and the consumer resets, to the log start (``earliest``) or to
    the high watermark (``latest``: it reads nothing). With ``error`` it does not reset: this raises the
    consumer's error (``_AUTO_OFFSET_RESET``) instead.
    """
    c = _consumer(broker, group, **{"auto.offset.reset": reset, "isolation.level": isolation,
                                    "enable.partition.eof": False})
    try:
        c.assign([TopicPartition(topic, partition)])
        count, idle_since = 0, time.monotonic()
        while time.monotonic() - idle_since < idle_s:
            msgs = c.consume(500, timeout=0.5)
            for m in msgs:
                if m.error():
                    if m.error().code() in PASSING_CONSUMER_ERRORS:
                        continue
                    raise KafkaException(m.error())
                count += 1
            if msgs:
                idle_since = time.monotonic()
        return count
    finally:
        c.close()
