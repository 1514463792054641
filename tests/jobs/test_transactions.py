"""``segdex transactions``: kafka-transactions' columns from log dirs alone, --json, and exit statuses."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from segdex.jobs.cli import main as cli
from tests.support.fixtures import GOLDEN


def test_transactions_list_and_find_hanging(capsys):
    assert cli(["transactions", "--json", "list", str(GOLDEN / "broker_logs")]) == 0
    assert [json.loads(line)["TransactionalId"] for line in capsys.readouterr().out.splitlines()] == ["tx-dump"]
    assert cli(["transactions", "find-hanging", str(GOLDEN / "broker_logs")]) == 0
    assert capsys.readouterr().out.startswith("Topic\tPartition\tProducerId")


def test_json_and_now_are_taken_after_the_action_too(capsys):
    """``transactions list --json LOGDIR``, as kafka-transactions takes its options: the same rows as before the
    action; a value given before the action stays when the action does not repeat it."""
    logs = str(GOLDEN / "broker_logs")
    assert cli(["transactions", "--json", "list", logs]) == 0
    before = capsys.readouterr().out
    assert cli(["transactions", "list", "--json", logs]) == 0
    assert capsys.readouterr().out == before
    assert json.loads(before.splitlines()[0])["TransactionalId"] == "tx-dump"
    described = [["transactions", "--now", "2000000000000", "describe", "--transactional-id", "tx-dump", "--json",
                  logs],
                 ["transactions", "describe", "--json", "--now", "2000000000000", "--transactional-id", "tx-dump",
                  logs]]
    outs = []
    for argv in described:
        assert cli(argv) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1] and json.loads(outs[0])["TransactionalId"] == "tx-dump"


def test_every_transactions_option_has_help(capsys):
    import argparse

    from segdex.jobs.cli import build_parser

    command = next(a for a in build_parser("transactions")._actions if isinstance(a, argparse._SubParsersAction))
    transactions = command.choices["transactions"]
    actions = next(a for a in transactions._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert set(actions) == {"list", "describe", "find-hanging"}
    missing = [(name, a.option_strings) for name, p in actions.items() for a in p._actions if not a.help]
    assert missing == []
    assert cli(["transactions", "describe", "--help"]) == 0
    assert "the transactional id to describe" in " ".join(capsys.readouterr().out.split())


def test_a_damaged_transaction_state_marks_its_rows_partial_with_kafkas_answer(tmp_path: Path, capsys):
    # Kafka 4.4's own __transaction_state-0: tx-dump's records at offsets 0-9; offset 5's batch (position 656,
    # PrepareAbort) fails its CRC: the load ends at offset 5, tx-dump Ongoing as offset 4 left it
    log_dir = shutil.copytree(GOLDEN / "broker_logs", tmp_path / "logs")
    log = log_dir / "__transaction_state-0" / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    data[656 + 100] ^= 0x01
    log.write_bytes(bytes(data))
    assert cli(["transactions", "list", str(log_dir)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("PARTIAL: __transaction_state-0 loaded up to offset 5 only (00000000000000000000.log: "
                             "Record is corrupt") and out[1].startswith("TransactionalId")
    assert out[2].split("\t")[0].strip() == "tx-dump" and out[2].split("\t")[3].strip() == "Ongoing"
    assert cli(["transactions", "--json", "list", str(log_dir)]) == 1
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["TransactionalId"], r["partial"], r["loaded_to_offset"], r["kafka_after_start"]) for r in rows] == [
        ("tx-dump", True, 5, "same")]
    assert cli(["transactions", "--json", "find-hanging", str(log_dir)]) == 1
    assert cli(["transactions", "--json", "list", str(GOLDEN / "broker_logs")]) == 0
    assert [json.loads(line)["partial"] for line in capsys.readouterr().out.splitlines()] == [False]
