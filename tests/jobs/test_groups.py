"""``segdex groups`` and ``segdex transactions``: Kafka's columns on stdout, problems and the restore check on
stderr, exit status 1 when something needs attention, 2 on bad input (never a traceback); a coordinator partition
loaded in part or missing marked above the rows and in every JSON row it touches."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from segdex.indexcore.tools.segment_writer import build_batch, write_partition
from segdex.jobs.cli import main as cli
from tests.support.fixtures import GOLDEN
from tests.support.group_log_dirs import T, commit, group_value, restored_log_dir
from tests.support.kafka_bytes import i16, s16


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



def _damaged_log_dir(root: Path) -> Path:
    """``restored_log_dir`` whose ``__consumer_offsets-0`` holds later commits of ``app`` (5 and 3) and ``simple``
    in a second segment whose first batch fails its CRC: a load reaches offset 3, where ``app`` committed 1 and 1."""
    log_dir = restored_log_dir(root)
    shutil.rmtree(log_dir / "__consumer_offsets-0")
    batches = [build_batch(0, [(T, i16(2) + s16("app"), group_value([("m-a", {"orders": [0, 1]}), ("m-b", {})]))]),
               build_batch(1, [commit("app", "orders", 0, 1), commit("app", "orders", 1, 1)]),
               build_batch(3, [commit("app", "orders", 0, 5), commit("app", "orders", 1, 3)]),
               build_batch(5, [commit("simple", "orders", 2, 12)])]
    write_partition(log_dir, "__consumer_offsets", 0, batches, segment_bytes=len(batches[0]) + len(batches[1]))
    second = log_dir / "__consumer_offsets-0" / "00000000000000000003.log"
    data = bytearray(second.read_bytes())
    data[len(batches[2]) - 5] ^= 0x01
    second.write_bytes(bytes(data))
    return log_dir


def test_groups_over_a_damaged_coordinator_partition_mark_every_row_partial(tmp_path: Path, capsys):
    log_dir = _damaged_log_dir(tmp_path)
    assert cli(["groups", str(log_dir)]) == 1
    out, err = capsys.readouterr()
    lines = [line for line in out.splitlines() if line]
    # the partition's mark, then the group's, above its rows; simple (committed after the damage) is missing
    assert lines[0].startswith("PARTIAL: __consumer_offsets-0 loaded up to offset 3 only (00000000000000000003.log: "
                               "Record is corrupt") and "Kafka: a broker's start truncates it at offset 3" in lines[0]
    assert lines[1].startswith("PARTIAL: group app: __consumer_offsets-0 loaded up to offset 3 only")
    assert lines[2].startswith("GROUP ") and [line.split()[:4] for line in lines[3:]] == [
        ["app", "orders", "0", "1"], ["app", "orders", "1", "1"]]
    assert "simple" not in out and "Record is corrupt" in err
    assert cli(["groups", "--json", "--group", "app", "--group", "simple", str(log_dir)]) == 1
    rows = {g["group"]: g for g in map(json.loads, capsys.readouterr().out.splitlines())}
    assert {g: (r["partial"], r["loaded_to_offset"], r["kafka_after_start"]) for g, r in rows.items()} == {
        "app": (True, 3, "same"), "simple": (True, None, None)}  # simple: not found, but it may be past offset 3
    assert "not in the coordinator partitions loaded" in rows["simple"]["partial_reason"]


def test_groups_with_a_coordinator_partition_missing_say_so_and_exit_1(tmp_path: Path, capsys):
    log_dir = restored_log_dir(tmp_path)
    (log_dir / "__consumer_offsets-0").rename(log_dir / "__consumer_offsets-2")
    assert cli(["groups", "--group", "nope", str(log_dir)]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines()[0] == ("PARTIAL: __consumer_offsets-0, __consumer_offsets-1 in none of the log dirs "
                                   "given: what Kafka holds there is missing from this view")
    assert "PARTIAL: group nope: not in the coordinator partitions loaded, but __consumer_offsets-0 in none" in out
    assert "does not exist" not in out + err
    assert cli(["groups", "--json", str(restored_log_dir(tmp_path / "whole"))]) == 1  # the restore check's 1
    assert not any(json.loads(line)["partial"] for line in capsys.readouterr().out.splitlines())
