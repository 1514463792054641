"""Consumer groups and transactions offline against a real broker (4.4.0 and 3.9.2): the workload of
``tests.support.group_workload`` (classic and consumer-protocol groups, a deleted group, expired offsets,
transactional offset commits committed and aborted, a transaction open at ``kill -9``), Kafka's own
``kafka-consumer-groups`` and ``kafka-transactions`` run against the live broker just before the kill, then
segdex from the killed broker's log dir alone; and a restore: a broker started on that dir, where one group's
committed offset is past its partition's end, serves a consumer exactly the records segdex predicted."""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from segdex.indexcore.tools.cluster_view import ClusterView
from segdex.indexcore.tools.consumer_groups import AHEAD_OF_END, describe_groups, restore_check
from segdex.jobs.cli import main as cli
from tests.support.group_workload import (
    GONE_GROUPS,
    RESTORE_BROKER_PROPS,
    SIMPLE_ASSIGN,
    consume_with_reset,
    run_group_workload,
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


def test_groups_prints_what_kafka_consumer_groups_describe_printed(workload, capsys):
    kafka_out, kafka_err = workload.tools["groups-describe"]
    code = cli(["groups", str(workload.crashed)])
    out, err = capsys.readouterr()
    # the same rows in the same columns (Kafka orders a group's rows by a HashMap: compared as sets)
    assert _rows(out) == _rows(kafka_out) and out.count("\nGROUP ") == kafka_out.count("\nGROUP ")
    assert [line for line in err.splitlines() if "has no active members" in line] == \
        [line for line in kafka_err.splitlines() if "has no active members" in line]
    assert not any(g in out for g in GONE_GROUPS)  # deleted, expired, and offsets of an aborted transaction
    assert code == 1 and "restore check: group simple-assign: events-1: committed offset 10000" in err


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


def test_a_restored_broker_serves_the_records_the_restore_check_predicts(workload, tmp_path: Path):
    data = shutil.copytree(workload.crashed, tmp_path / "data", symlinks=True)
    view = ClusterView([str(data)])
    groups = describe_groups(view.group_coordinators, view.topic_names, view.log_offsets, [SIMPLE_ASSIGN])
    check = next(c for c in restore_check(groups, view.count_records) if c.status == AHEAD_OF_END)
    assert (check.topic, check.partition) == ("events", 1)
    broker = workload.broker.sibling(tmp_path / "node", data, RESTORE_BROKER_PROPS)
    with broker:
        broker.start()
        assert consume_with_reset(broker, SIMPLE_ASSIGN, "events", 1, "latest") == check.skipped_if_latest == 0
        assert consume_with_reset(broker, SIMPLE_ASSIGN, "events", 1, "earliest") == check.reread_if_earliest
        broker.stop()
    assert check.reread_if_earliest == workload.produced[("events", 1)]
