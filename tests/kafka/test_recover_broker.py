"""``segdex recover`` against a real broker's own recovery, after a ``kill -9`` with a transaction open and an
idempotent producer alive (Kafka 4.4.0 and 3.9.2).

The crashed log dir is copied twice. On copy A the broker recovers by itself (an unclean start); on copy B
``segdex recover`` runs first and the broker then starts on the very ports the dead broker had, so that the
idempotent producer still holding its producer id, epoch and sequence numbers reconnects to it. Both end in the
same state: log end and log start offsets, last stable offsets, leader epochs, producer snapshot contents, the
records served in both isolation levels. The broker on B recovers nothing (its log says so), the producer goes on
without a sequence error under ``enable.gapless.guarantee``, and the open transaction holds the last stable
offset until its coordinator aborts it.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from confluent_kafka import IsolationLevel, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import OffsetSpec

from segdex.indexcore.log.checkpoints import read_leader_epoch_checkpoint, read_offset_checkpoint
from segdex.indexcore.log.producer_snapshot import read_snapshot
from segdex.jobs.cli import main as cli
from tests.support.kafka_harness import KAFKA_VERSIONS, KafkaBroker, KafkaInstall
from tests.support.kafka_workload import (
    BROKER_PROPS,
    TOPICS,
    Clock,
    admin,
    consume_all,
    create_topics,
    leave_transaction_open,
    partition_dirs,
    produce_phase,
    producer,
    topic_config_args,
)

pytestmark = pytest.mark.kafka_broker

LIVE = 100  # records the idempotent producer writes before the crash, and again after it
MARKER = b'{"version":0,"brokerEpoch":-1}'


def offsets(broker: KafkaBroker) -> dict[str, tuple[int, int, int]]:
    """Per topic: (log start offset, last stable offset, log end offset), as ListOffsets answers them."""
    client = admin(broker)
    out = {}
    for topic in TOPICS:
        tp = TopicPartition(topic, 0)
        answers = []
        for spec, level in ((OffsetSpec.earliest(), IsolationLevel.READ_UNCOMMITTED),
                            (OffsetSpec.latest(), IsolationLevel.READ_COMMITTED),
                            (OffsetSpec.latest(), IsolationLevel.READ_UNCOMMITTED)):
            for f in client.list_offsets({tp: spec}, isolation_level=level).values():
                answers.append(f.result(30).offset)
        out[topic] = tuple(answers)
    return out


def served_records(broker: KafkaBroker) -> dict[tuple[str, str], list[tuple]]:
    return {(t, iso): consume_all(broker, t, iso) for t in TOPICS for iso in ("read_committed", "read_uncommitted")}


def snapshots(log_dir: Path) -> dict[str, list]:
    """Every producer snapshot of the workload's partitions: {"<topic>/<file>": entries}."""
    return {f"{topic}/{p.name}": read_snapshot(p.read_bytes(), p.name)
            for topic, part in partition_dirs(log_dir).items() for p in sorted(part.glob("*.snapshot"))}


def epochs(log_dir: Path) -> dict[str, list[tuple[int, int]]]:
    return {t: read_leader_epoch_checkpoint(part / "leader-epoch-checkpoint") for t, part in
            partition_dirs(log_dir).items()}


def start_log(broker: KafkaBroker) -> list[str]:
    """The broker's log lines up to "Kafka Server started", those naming a workload partition."""
    text = broker.log_text()
    text = text[:text.index("Kafka Server started")]
    names = "|".join(re.escape(f"{t}-0") for t in TOPICS)
    return [line for line in text.splitlines() if re.search(rf"(?<![\w-])({names})(?![\w-])", line)]


class Deliveries:
    """What librdkafka reports back: delivery results and client-level errors."""

    def __init__(self) -> None:
        self.delivered: list[int] = []
        self.failed: list[str] = []
        self.errors: list[str] = []

    def on_delivery(self, err, msg) -> None:
        if err is not None:
            self.failed.append(str(err))
        else:
            self.delivered.append(msg.offset())

    def on_error(self, err) -> None:
        if err.fatal() or err.code() not in _TRANSPORT_ERRORS:
            self.errors.append(str(err))


_TRANSPORT_ERRORS = {KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._RESOLVE}  # broker down


@pytest.mark.parametrize("version", KAFKA_VERSIONS)
def test_recover_after_kill_matches_the_brokers_own_recovery(version, tmp_path, spark):
    install = KafkaInstall(version)
    broker = KafkaBroker(install, tmp_path / "node", BROKER_PROPS)
    clock = Clock(7)
    report = Deliveries()
    live = None
    try:
        broker.start()
        create_topics(broker, {t: c for t, (c, _) in TOPICS.items()})
        produce_phase(broker, 1, clock)
        broker.stop()
        broker.start()  # a second leader epoch
        produce_phase(broker, 2, clock)
        # an idempotent producer that outlives the broker: its id, epoch and sequence numbers must still hold
        live = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True,
                         "enable.gapless.guarantee": True, "linger.ms": 5, "batch.num.messages": 10,
                         "message.timeout.ms": 300000, "log_level": 0, "error_cb": report.on_error})
        for n in range(LIVE):
            live.produce("txn", key=f"live-{n}".encode(), value=b"v" * 200, on_delivery=report.on_delivery)
        live.flush(60)
        assert len(report.delivered) == LIVE and not report.failed and not report.errors
        open_tx = leave_transaction_open(broker, clock)
        broker.kill()
        open_tx.purge()
        del open_tx

        crashed = broker.data_dir
        a = tmp_path / "a" / "data"
        b = tmp_path / "b" / "data"
        for dest in (a, b):
            dest.parent.mkdir(parents=True)
            shutil.copytree(crashed, dest, symlinks=True)
        assert not (crashed / ".kafka_cleanshutdown").exists()

        # copy B: segdex recover, then nothing is left for the broker to recover
        code = cli(["recover", "--no-progress", "--metadata", str(tmp_path / "meta"), *topic_config_args(),
                    str(b)])
        assert code == 0
        assert (b / ".kafka_cleanshutdown").read_bytes() == MARKER
        recovered_snapshots, recovered_epochs = snapshots(b), epochs(b)
        recovered_lso = read_offset_checkpoint(b / "log-start-offset-checkpoint")
        recovery_points = read_offset_checkpoint(b / "recovery-point-offset-checkpoint")

        # copy A: the broker's own recovery, then a clean stop
        on_a = broker.sibling(tmp_path / "a", a)
        on_a.start()
        try:
            offsets_a = offsets(on_a)
            records_a = served_records(on_a)
        finally:
            on_a.stop()
        log_a = start_log(on_a)
        assert any("Recovering unflushed segment" in line or "rebuilding index files" in line for line in log_a)
        assert any("Wrote producer snapshot" in line for line in log_a)

        assert snapshots(a) == recovered_snapshots
        for topic, (_start, _lso, leo) in offsets_a.items():
            assert recovery_points[(topic, 0)] == leo, topic
            # when the broker's start made it leader in a new epoch (4.x), one more entry at the log end offset
            ours, theirs = recovered_epochs[topic], epochs(a)[topic]
            assert theirs == ours or (theirs[:-1] == ours and theirs[-1][1] == leo
                                      and theirs[-1][0] > ours[-1][0]), (topic, ours, theirs)
        assert {t: o for (t, _p), o in read_offset_checkpoint(a / "log-start-offset-checkpoint").items()
                if t in TOPICS} == {t: o for (t, _p), o in recovered_lso.items() if t in TOPICS}
        txn_start, txn_lso, txn_leo = offsets_a["txn"]
        assert txn_lso < txn_leo  # the open transaction holds the last stable offset
        open_keys = [r for r in records_a[("txn", "read_uncommitted")] if r[1] and r[1].startswith(b"open-")]
        assert len(open_keys) == 50 and txn_lso == open_keys[0][0]

        # copy B's broker, on the dead broker's ports
        on_b = broker.sibling(tmp_path / "b", b, same_ports=True)
        on_b.start()
        try:
            log_b = start_log(on_b)
            assert any("Skipping recovery of" in line for line in on_b.log_text().splitlines()
                       if str(b) in line)
            for needle in ("Recovering unflushed segment", "rebuilding index files", "Wrote producer snapshot",
                           "Deleting segments as part of log recovery", "Corruption found"):
                assert not [line for line in log_b if needle in line], needle
            assert offsets(on_b) == offsets_a
            assert served_records(on_b) == records_a

            # the idempotent producer goes on: no sequence error, no new producer epoch
            for n in range(LIVE, 2 * LIVE):
                live.produce("txn", key=f"live-{n}".encode(), value=b"v" * 200, on_delivery=report.on_delivery)
            assert live.flush(120) == 0
            assert not report.failed and not report.errors, (report.failed, report.errors)
            assert len(report.delivered) == 2 * LIVE and report.delivered[LIVE] == txn_leo

            # the coordinator aborts the open transaction when its transactional id comes back
            assert offsets(on_b)["txn"][1] == txn_lso
            fencer = producer(on_b, **{"transactional.id": "tx-open", "transaction.timeout.ms": 900000})
            fencer.init_transactions(60)
            _start, lso_after, leo_after = offsets(on_b)["txn"]
            assert lso_after == leo_after > txn_leo + LIVE
            committed = consume_all(on_b, "txn", "read_committed")
            uncommitted = consume_all(on_b, "txn", "read_uncommitted")
        finally:
            on_b.stop()
        assert epochs(b) == epochs(a)  # the producer's records went on in the epoch both brokers started in
        keys = [r[1] for r in committed if r[1] and r[1].startswith(b"live-")]
        assert keys == [f"live-{n}".encode() for n in range(2 * LIVE)]
        assert not [r for r in committed if r[1] and r[1].startswith(b"open-")]
        assert len([r for r in uncommitted if r[1] and r[1].startswith(b"open-")]) == 50

        # the producer's entry: the same id and epoch before and after, its sequence carried on
        def live_entry(entries: list) -> tuple[int, int, int]:
            found = [(e.producer_id, e.producer_epoch, e.last_seq) for e in entries
                     if e.last_seq in (LIVE - 1, 2 * LIVE - 1) and e.current_txn_first_offset is None]
            assert len(found) == 1, entries
            return found[0]

        before = live_entry(recovered_snapshots[max(k for k in recovered_snapshots if k.startswith("txn/"))])
        after_files = {k: v for k, v in snapshots(b).items() if k.startswith("txn/")}
        after = live_entry(after_files[max(after_files)])
        assert before[:2] == after[:2] and (before[2], after[2]) == (LIVE - 1, 2 * LIVE - 1)
    finally:
        if live is not None:
            live.purge()
        broker.kill()
