"""Consumer groups and transactions offline against a real broker (4.4.0 and 3.9.2): the workload of
``tests.support.group_workload`` (classic and consumer-protocol groups, one left by most of its members, a deleted
group, expired offsets, transactional offset commits committed and aborted, a transaction open at ``kill -9``),
Kafka's own ``kafka-consumer-groups`` and ``kafka-transactions`` run against the live broker just before the kill,
then segdex from the killed broker's log dir alone; and a restore: a broker started on that dir, where one group's
committed offset is past its partition's end and a data partition comes from before a transaction's marker, serves a
consumer exactly the records segdex predicted, and Kafka's own ``find-hanging`` reports the transaction segdex found
hanging; and, on that same restored dir, a ``__consumer_offsets`` partition with a corrupt batch: segdex marks every
row of its groups partial, and the broker's own load after its recovery (``kafka-consumer-groups --describe``) holds
exactly the offsets segdex printed for them."""

from __future__ import annotations

import json
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from segdex.indexcore.config.topic_configs_live import describe_topics
from segdex.indexcore.log.java_hash_map import java_string_hash, timeline_capacity, timeline_hash_order
from segdex.indexcore.log.log_segments import segment_logs
from segdex.indexcore.metadata.metadata_image import load_metadata_image
from segdex.indexcore.record.file_records import batches, open_log
from segdex.indexcore.tools.cluster_view import ClusterView
from segdex.indexcore.tools.consumer_groups import AHEAD_OF_END, describe_groups, restore_check
from segdex.indexcore.tools.transactions import coordinated_transactions
from segdex.jobs.cli import main as cli
from tests.support.group_workload import (
    GONE_GROUPS,
    GROUP_TOOL,
    MODERN_SHRUNK,
    RECREATED,
    RECREATED_CONFIGS,
    RESTORE_BROKER_PROPS,
    SIMPLE_ASSIGN,
    TX_DATA,
    TXN_TOOL,
    consume_with_reset,
    run_group_workload,
    run_tools,
)
from tests.support.kafka_harness import KAFKA_VERSIONS, KafkaInstall

pytestmark = pytest.mark.kafka_broker


@pytest.fixture(scope="module")
def workloads(tmp_path_factory):
    """The workload on every version at once (each mostly waits a minute for the broker to expire offsets)."""
    with ThreadPoolExecutor(len(KAFKA_VERSIONS)) as pool:
        runs = {v: pool.submit(run_group_workload, KafkaInstall(v), tmp_path_factory.mktemp(f"groups-{v}"))
                for v in KAFKA_VERSIONS}
        return {v: f.result() for v, f in runs.items()}


@pytest.fixture(params=KAFKA_VERSIONS)
def workload(request, workloads):
    return workloads[request.param]


def _rows(text: str) -> list[str]:
    return sorted(line for line in text.splitlines() if line.strip())


def _tables(text: str) -> list[tuple[list[str], list[str]]]:
    """``--describe``'s tables in order: each group's (consumer ids of its member blocks in order, its rows sorted)."""
    out = []
    for table in text.split("\nGROUP ")[1:]:
        rows = [line for line in table.splitlines()[1:] if line.strip()]
        blocks = [cols[6] for cols in (r.split() for r in rows)]
        out.append(([c for i, c in enumerate(blocks) if i == 0 or blocks[i - 1] != c], sorted(rows)))
    return out


def test_groups_prints_what_kafka_consumer_groups_describe_printed(workload, capsys):
    """``segdex groups`` prints what Kafka's ``kafka-consumer-groups --describe --all-groups`` printed, row for row
    in Kafka 4.4's order: groups by id, members holding more partitions first (``classic-live``'s and
    ``modern-live``'s two members hold five each, ``modern-shrunk``'s two each: the order the coordinator's describe
    lists them, for ``modern-shrunk`` that of a table grown by members gone since), a member's rows
    and those of no member by topic then partition (every live member holds partition 0 on two topics). 3.9's tool
    prints a member's rows in its ``getLogEndOffsets`` ``HashMap``'s order: there the member blocks are compared in
    order, the rows of each table as a set."""
    kafka_out, kafka_err = workload.tools["groups-describe"]
    code = cli(["groups", str(workload.crashed)])
    out, err = capsys.readouterr()
    if workload.install.family >= 4:
        assert out == kafka_out
    else:
        assert _tables(out) == _tables(kafka_out)
    assert [line for line in err.splitlines() if "has no active members" in line] == \
        [line for line in kafka_err.splitlines() if "has no active members" in line]
    assert not any(g in out for g in GONE_GROUPS)  # deleted, expired, and offsets of an aborted transaction
    assert code == 1 and "restore check: group simple-assign: events-1: committed offset 10000" in err


def test_a_consumer_group_that_shrank_lists_its_tied_members_as_its_grown_table_does(workloads):
    """``modern-shrunk`` held five members or more, two now, tied at two partitions each: Kafka 4.4's
    ``kafka-consumer-groups --describe`` printed them in the order of the group's ``members`` ``TimelineHashMap``
    as the replay of all its members' records grew it (``ConsumerGroup.member_slots``: 8 slots or more), which
    here differs from the order of a table sized for two (4 slots): the order segdex gave before it followed the
    table's history."""
    workload = workloads["4.4.0"]  # consumer-protocol groups: 4.x here (group_workload's module doc)
    assert workload.consumer_protocol
    view = ClusterView([str(workload.crashed)])
    group = next(c.load.shard.groups.groups[MODERN_SHRUNK] for c in view.group_coordinators
                 if MODERN_SHRUNK in c.load.shard.groups.groups)
    members = list(group.members)
    assert len(members) == 2 and group.member_slots >= 8
    grown = timeline_hash_order(members, java_string_hash, group.member_slots)
    assert grown != timeline_hash_order(members, java_string_hash, timeline_capacity(len(members)))
    kafka_rows = [line.split() for line in workload.tools["groups-describe"][0].splitlines()
                  if line.split()[:1] == [MODERN_SHRUNK]]
    printed = [cols[6] for cols in kafka_rows]
    assert len(printed) == 4 and list(dict.fromkeys(printed)) == grown
    described = describe_groups(view.group_coordinators, view.topic_names, view.log_offsets, [MODERN_SHRUNK])[0]
    assert [r.consumer_id for r in described.offsets] == printed


def test_groups_state_members_and_offsets_match_the_live_broker(workload):
    view = ClusterView([str(workload.crashed)])
    groups = {g.group: g for g in describe_groups(view.group_coordinators, view.topic_names, view.log_offsets)}
    assert set(groups) == set(workload.listing)
    for group, (state, _type) in workload.listing.items():
        assert groups[group].state.lower() == state.lower(), group
        committed = {(r.topic, r.partition): r.offset for r in groups[group].offsets if r.offset is not None}
        assert committed == workload.committed[group], group


def test_transactions_list_and_describe_print_what_kafka_transactions_printed(workload, capsys):
    assert cli(["transactions", "list", str(workload.crashed)]) == 0
    assert _rows(capsys.readouterr().out) == _rows(workload.tools["txn-list"][0])
    for tid in workload.transactional_ids:
        assert cli(["transactions", "--now", str(workload.tools_ms), "describe", "--transactional-id", tid,
                    str(workload.crashed)]) == 0
        ours = capsys.readouterr().out.splitlines()
        theirs = workload.tools[f"txn-describe-{tid}"][0].splitlines()
        # every column but TransactionDurationMs (Kafka measured it when its tool ran)
        assert [line.split("\t")[:7] + line.split("\t")[8:] for line in ours] == \
            [line.split("\t")[:7] + line.split("\t")[8:] for line in theirs], tid


def test_find_hanging_agrees_with_kafka_and_the_open_transaction_is_seen(workload, capsys):
    assert cli(["transactions", "--now", str(workload.tools_ms), "find-hanging", str(workload.crashed)]) == 0
    assert capsys.readouterr().out == workload.tools["txn-find-hanging"][0]
    # tx-hanging is open in txdata-0 and Ongoing at its coordinator: not hanging, unless the coordinator forgets it
    assert cli(["transactions", "--json", "--now", str(workload.tools_ms + 60_000), "find-hanging",
                "--max-transaction-timeout", "0", "--topic", "txdata", str(workload.crashed)]) == 0
    assert capsys.readouterr().out == ""
    view = ClusterView([str(workload.crashed)])
    open_at = view.recovered("txdata", 0).producer_state
    assert any(e.current_txn_first_offset == workload.stable_offsets[("txdata", 0)]
               for e in open_at.producers.values())


def cut_before_last_marker(part: Path, producer_id: int) -> int:
    """The partition as a restore from before ``producer_id``'s last end-transaction marker leaves it: its
    ``.log`` cut at that marker, later segments, every index file and producer snapshot gone (the broker rebuilds
    them, as after any unclean stop). Returns the marker's offset."""
    found = None
    for base, path in segment_logs(part)[0]:
        with open_log(path) as buf:
            for batch in batches(buf):
                if batch.is_control and batch.producer_id == producer_id:
                    found = (base, path, batch.position, batch.base_offset)
    assert found is not None, f"no marker of producer {producer_id} in {part}"
    base, path, position, offset = found
    with open(path, "r+b") as f:
        f.truncate(position)
    for f in part.iterdir():
        later = f.suffix in (".log", ".index", ".timeindex", ".txnindex") and int(f.stem) > base
        if later or f.suffix in (".index", ".timeindex", ".txnindex", ".snapshot"):
            f.unlink()
    return offset


def _batch_holding(part: Path, offset: int) -> tuple[str, int, int, int]:
    """(.log path, position, size, base offset) of the batch of ``part`` holding ``offset``."""
    for _base, path in segment_logs(part)[0]:
        with open_log(path) as buf:
            hit = next((b for b in batches(buf) if b.base_offset <= offset <= b.last_offset), None)
        if hit is not None:
            return path, hit.position, hit.size_in_bytes, hit.base_offset
    raise AssertionError(f"no batch of {part} holds offset {offset}")


def damage_last_commit(data: Path, spare: int) -> tuple[int, int]:
    """Flip the last byte of the batch of the last offset commit of a ``__consumer_offsets`` partition other than
    ``spare`` (its CRC no longer matches), the partition where most commits come before that batch: (the
    partition, the damaged batch's base offset)."""
    view = ClusterView([str(data)])
    choices = []
    for c in view.group_coordinators:
        commits = sorted(r.record_offset for g in describe_groups([c], view.topic_names, view.log_offsets)
                         for r in g.offsets if r.record_offset is not None)
        if c.partition != spare and commits:
            path, position, size, base = _batch_holding(data / f"__consumer_offsets-{c.partition}", commits[-1])
            choices.append((sum(1 for o in commits if o < base), c.partition, path, position + size - 1, base))
    kept, partition, path, position, base = max(choices)
    assert kept, f"no commit before the last one's batch in any partition: {choices}"
    with open(path, "r+b") as f:
        f.seek(position)
        last = f.read(1)[0]
        f.seek(position)
        f.write(bytes([last ^ 0x01]))
    return partition, base


def _committed_rows(describe_out: str) -> set[tuple[str, str, int, int]]:
    """(group, topic, partition, current offset) of ``kafka-consumer-groups --describe``'s rows with a commit."""
    out = set()
    for line in describe_out.splitlines():
        cols = line.split()
        if len(cols) >= 4 and cols[0] != "GROUP" and cols[2].isdigit() and cols[3].isdigit():
            out.add((cols[0], cols[1], int(cols[2]), int(cols[3])))
    return out


def _hanging_rows(text: str) -> list[list[str]]:
    """find-hanging's rows without Duration(min) (it depends on when each tool ran)."""
    return sorted(line.split("\t")[:7] for line in text.splitlines()[1:] if line.strip())


def test_a_restored_broker_serves_what_the_restore_check_and_find_hanging_predict(workload, tmp_path: Path, capsys):
    data = shutil.copytree(workload.crashed, tmp_path / "data", symlinks=True)
    view = ClusterView([str(data)])
    groups = describe_groups(view.group_coordinators, view.topic_names, view.log_offsets, [SIMPLE_ASSIGN])
    check = next(c for c in restore_check(groups, view.count_records) if c.status == AHEAD_OF_END)
    assert (check.topic, check.partition) == ("events", 1)
    # txdata-0 restored from before tx-data's last COMMIT marker: its coordinator completed that transaction,
    # so no marker will ever come for the records left open: the transaction hangs
    tx_data = coordinated_transactions(view)[TX_DATA].metadata
    cut_before_last_marker(data / "txdata-0", tx_data.producer_id)
    # and a __consumer_offsets partition (not simple-assign's) whose last commit's batch fails its CRC
    before = {g.group for g in describe_groups(view.group_coordinators, view.topic_names, view.log_offsets)}
    damaged, loaded_to = damage_last_commit(data, groups[0].coordinator_partition)
    assert cli(["groups", "--json", str(data)]) == 1
    described = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    marks = {(g["coordinator_partition"] == damaged, g["partial"], g["loaded_to_offset"], g["kafka_after_start"])
             for g in described}
    assert marks <= {(True, True, loaded_to, "same"), (False, False, None, None)} and (True, True, loaded_to, "same") \
        in marks, marks
    predicted = {(g["group"], r["topic"], r["partition"], r["offset"]) for g in described if g["partial"]
                 for r in g["offsets"] if r["offset"] is not None}
    # the topic created, deleted and created again: segdex's image of the metadata log gives it the deleted
    # topic's config, as Kafka's MetadataDelta over the one delta the broker replays at its start does
    image = load_metadata_image(str(data / "__cluster_metadata-0"))
    assert image.topic_configs(RECREATED) == RECREATED_CONFIGS
    broker = workload.broker.sibling(tmp_path / "node", data, RESTORE_BROKER_PROPS)
    with broker:
        broker.start()
        live = describe_topics(broker.bootstrap, [RECREATED])[RECREATED]
        assert {k: v for k, v in live.values.items() if live.sources[k] == "DYNAMIC_TOPIC_CONFIG"} == \
            image.topic_configs(RECREATED)
        assert consume_with_reset(broker, SIMPLE_ASSIGN, "events", 1, "latest") == check.skipped_if_latest == 0
        assert consume_with_reset(broker, SIMPLE_ASSIGN, "events", 1, "earliest") == check.reread_if_earliest
        now_ms = int(time.time() * 1000)
        answers = run_tools(workload.install, broker.bootstrap, [], tmp_path, only={
            "find-hanging": [TXN_TOOL, "--bootstrap-server", broker.bootstrap, "find-hanging", "--broker-id", "1",
                             "--max-transaction-timeout", "0"],
            "describe": [GROUP_TOOL, "--bootstrap-server", broker.bootstrap, "--describe", "--all-groups"]})
        kafka = answers["find-hanging"]
        broker.stop()
    # the broker's recovery truncated the damaged partition where segdex's load stopped: its coordinator holds,
    # for the groups of that partition, exactly the offsets segdex marked partial (groups committed only after
    # the damage are gone from both)
    partial_groups = {g["group"] for g in described if g["partial"]}
    kafka_rows = _committed_rows(answers["describe"][0])
    assert {r for r in kafka_rows if r[0] in partial_groups} == predicted, answers["describe"]
    lost = before - {g["group"] for g in described}  # committed only after the damage: gone from both
    assert not {r[0] for r in kafka_rows} & lost
    after = ClusterView([str(data)])
    assert not next(c for c in after.group_coordinators if c.partition == damaged).load.partial  # the damage is gone
    assert check.reread_if_earliest == workload.produced[("events", 1)]
    assert cli(["transactions", "--now", str(now_ms), "find-hanging", "--max-transaction-timeout", "0",
                str(data)]) == 1
    ours = capsys.readouterr().out
    assert _hanging_rows(ours) and _hanging_rows(ours) == _hanging_rows(kafka[0]), kafka
    assert [tx_data.producer_id] == sorted({int(r[2]) for r in _hanging_rows(ours)} & {tx_data.producer_id})
