"""``segdex groups`` and ``segdex transactions``: Kafka's columns on stdout, problems and the restore check on
stderr, exit status 1 when something needs attention, 2 on bad input (never a traceback)."""

from __future__ import annotations

import json
from pathlib import Path

from segdex.jobs.cli import main as cli
from tests.support.fixtures import GOLDEN
from tests.support.group_log_dirs import restored_log_dir


def test_groups_prints_kafkas_table_and_flags_the_restore_problems(tmp_path: Path, capsys):
    log_dir = restored_log_dir(tmp_path)
    assert cli(["groups", str(log_dir)]) == 1
    out, err = capsys.readouterr()
    assert out.count("GROUP           TOPIC") == 2 and "simple          orders          2          2" in out
    assert "restore check: group app: orders-1: committed offset 40 is past the log end offset 5" in err
    assert "restore check: group simple: orders-2: committed offset 2 is before the log start offset 10" in err


def test_groups_json_has_one_object_per_group_with_its_restore_check(tmp_path: Path, capsys):
    assert cli(["groups", "--json", "--group", "app", str(restored_log_dir(tmp_path))]) == 1
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [g["group"] for g in lines] == ["app"]
    assert [(c["partition"], c["status"], c["reread_if_earliest"]) for c in lines[0]["restore_check"]] == [
        (0, "ok", 0), (1, "ahead_of_end", 4)]
    assert lines[0]["members"][0]["assignment"] == [["orders", 0], ["orders", 1]]


def test_a_clean_log_dir_exits_zero(capsys):
    assert cli(["groups", str(GOLDEN / "broker_logs")]) == 0


def test_bad_input_gets_a_message_and_an_exit_code(tmp_path: Path, capsys):
    assert cli(["groups", str(tmp_path / "missing")]) == 2
    assert "not a directory" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert cli(["groups", str(tmp_path / "empty")]) == 1
    assert "no __consumer_offsets partition" in capsys.readouterr().err
    assert cli(["transactions", "describe", "--transactional-id", "nope", str(GOLDEN / "broker_logs")]) == 1
    assert "Failed to describe transaction state of transactional-id `nope`" in capsys.readouterr().err
    assert cli(["transactions", "find-hanging", "--partition", "0", str(GOLDEN / "broker_logs")]) == 2
    assert "--partition needs --topic" in capsys.readouterr().err

