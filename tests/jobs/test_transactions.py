"""``segdex transactions``: kafka-transactions' columns from log dirs alone, --json, and exit statuses."""

from __future__ import annotations

import json

from segdex.jobs.cli import main as cli
from tests.support.fixtures import GOLDEN


def test_transactions_list_and_find_hanging(capsys):
    assert cli(["transactions", "--json", "list", str(GOLDEN / "broker_logs")]) == 0
    assert [json.loads(line)["TransactionalId"] for line in capsys.readouterr().out.splitlines()] == ["tx-dump"]
    assert cli(["transactions", "find-hanging", str(GOLDEN / "broker_logs")]) == 0
    assert capsys.readouterr().out.startswith("Topic\tPartition\tProducerId")
