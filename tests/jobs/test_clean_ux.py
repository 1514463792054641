"""What a new user of ``segdex clean`` meets around the rounds themselves (issue 38, item 5): a bad ``--now`` is a
usage error in Kafka's words, on every command that takes it; ``--until-clean`` that may need more rounds than
``--max-rounds`` says so before any round; a log dir a broker holds is refused naming its pid, exit 2; the plan
names the leftovers of an interrupted cleaning that ``--apply`` acts on first."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from segdex.jobs.cli import main as segdex
from tests.jobs.test_clean import _compacted_log_dir, _tree

COMPACT = ["--topic-config", "orders:cleanup.policy=compact"]


@pytest.mark.parametrize("command", [["clean"], ["retention"], ["recover"], ["transactions", "list"]])
@pytest.mark.parametrize(("now", "why"), [
    ("9223372036854775807", "Value must be no more than 253402300799999 (9999-12-31T23:59:59.999Z, the last "
                            "instant the tables record)"),
    ("-5", "Value must be at least 0 (epoch milliseconds)")])
def test_a_bad_now_is_a_usage_error_in_one_line(tmp_path: Path, capsys, command: list[str], now: str, why: str):
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    assert segdex([*command, "--now", now, str(log_dir)]) == 2
    err = capsys.readouterr().err
    assert err == f"segdex {command[0]}: Invalid value {now} for --now: {why}\n"


def test_until_clean_past_max_rounds_is_said_before_any_round(tmp_path: Path, capsys):
    log_dir, now = _compacted_log_dir(tmp_path, 1, seed=11)
    before = _tree(log_dir)
    base = ["clean", "--now", str(now), "--no-record", *COMPACT, "--until-clean", "--dedupe-buffer-size", "48"]
    for extra in ([], ["--apply", "--discard"]):
        assert segdex([*base, *extra, str(log_dir)]) == 2
        out, err = capsys.readouterr()
        assert err == ("segdex clean: orders-0: --until-clean may need up to 265 rounds (dirty offsets 300..565, "
                       "at most 1 key(s) a round in this offset map), more than --max-rounds 100: give --max-rounds "
                       "265 (or a bigger --dedupe-buffer-size); no round was run\n"), err
        assert out == "" and _tree(log_dir) == before
    assert segdex([*base, "--max-rounds", "265", str(log_dir)]) == 0
    assert "orders-0: would clean: " in capsys.readouterr().out
    assert segdex([*base, "--max-rounds", "0", str(log_dir)]) == 2
    assert capsys.readouterr().err == "segdex clean: Invalid value 0 for --max-rounds: Value must be at least 1\n"
    assert segdex([*base[:-1], "24", str(log_dir)]) == 2
    assert capsys.readouterr().err == ("segdex clean: --dedupe-buffer-size must hold at least one key at the load "
                                       "factor 0.9 (48 bytes), got 24\n")


def test_apply_stops_at_max_rounds_and_says_so(tmp_path: Path, capsys):
    log_dir, now = _compacted_log_dir(tmp_path, 1, seed=11)
    args = ["clean", "--now", str(now), "--no-record", *COMPACT, "--until-clean", "--dedupe-buffer-size", "120",
            "--max-rounds", "100", "--apply", "--discard", "--no-progress"]
    assert segdex([*args[:-5], "--max-rounds", "2", *args[-3:], str(log_dir)]) == 2  # 2 < the bound: said
    capsys.readouterr()
    assert segdex([*args, str(log_dir)]) == 0
    out = capsys.readouterr().out
    assert "orders-0: cleaned: " in out and " rounds: " in out and "(stopped at --max-rounds" not in out


@pytest.fixture
def broker_like_holder(tmp_path: Path):
    """Another process holding a log dir's ``.lock`` as a broker does (a POSIX ``fcntl`` lock: ``FileChannel
    .tryLock``); its pid."""
    def hold(log_dir: Path):
        code = ("import fcntl, os, sys, time\n"
                "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
                "fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
                "print('held', flush=True)\n"
                "time.sleep(120)\n")
        proc = subprocess.Popen([sys.executable, "-c", code, str(log_dir / ".lock")], stdout=subprocess.PIPE,
                                text=True)
        assert proc.stdout.readline().strip() == "held"
        procs.append(proc)
        return proc.pid

    procs: list[subprocess.Popen] = []
    yield hold
    for proc in procs:
        proc.kill()
        proc.wait()


def test_a_held_log_dir_is_refused_with_its_holders_pid_exit_2(tmp_path: Path, capsys, broker_like_holder):
    log_dir, now = _compacted_log_dir(tmp_path, 1)
    pid = broker_like_holder(log_dir)
    before = _tree(log_dir)
    name = Path(f"/proc/{pid}/comm").read_text().strip()
    for extra in ([], ["--apply", "--discard"]):
        assert segdex(["clean", "--now", str(now), "--no-record", *COMPACT, *extra, str(log_dir)]) == 2
        err = capsys.readouterr().err
        assert (f"segdex clean: refused {os.path.realpath(log_dir)}: {os.path.realpath(log_dir)}: its .lock is held "
                f"by another process (pid {pid}) named {name} (a running Kafka broker, or another segdex run?)") in err
        assert _tree(log_dir) == before


def test_the_plan_names_what_apply_does_first_with_an_interrupted_cleanings_files(tmp_path: Path, capsys):
    log_dir, now = _compacted_log_dir(tmp_path, 1)
    part = log_dir / "orders-0"
    bases = sorted(int(p.name[:20]) for p in part.glob("*.log"))
    for name in (f"{bases[0]:020d}.log.deleted", f"{bases[0]:020d}.index.deleted", f"{bases[-1]:020d}.log.cleaned",
                 f"{bases[-1]:020d}.log.swap"):
        (part / name).write_bytes(b"")
    before = _tree(log_dir)
    args = ["clean", "--now", str(now), "--no-record", *COMPACT, str(log_dir)]
    assert segdex(args) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (f"leftovers: orders-0: --apply first removes {bases[0]:020d}.index.deleted, "
                      f"{bases[0]:020d}.log.deleted (an interrupted replace's old files); removes "
                      f"{bases[-1]:020d}.log.cleaned, {bases[-1]:020d}.log.swap (a cleaning that never finished), "
                      f"as Kafka's load does at a broker's next start")
    assert _tree(log_dir) == before  # a plan: said, not done
    assert segdex([*args[:-1], "--apply", "--discard", str(log_dir)]) == 0
    out = capsys.readouterr().out
    assert "finished: orders-0: " in out and not [p for p in part.iterdir() if p.suffix in (".deleted", ".cleaned",
                                                                                              ".swap")]


def test_round_progress_moves_per_round():
    """The driver's progress line from rounds the tasks report over the real progress channel."""
    from segdex.pipelines import spark_tasks
    from segdex.pipelines.cleaning import RoundProgress

    said: list[tuple[int, int]] = []
    with spark_tasks.ProgressChannel() as channel, RoundProgress(channel, lambda r, b, _s: said.append((r, b))):
        sender = channel.sender
        for _ in range(3):
            sender(1, 100)
            sender.flush()
            time.sleep(1.2)
        sender.close()
    assert [r for r, _ in said][:3] == [1, 2, 3] and said[2][1] == 300


def test_the_cleaners_broker_settings_in_config_build_its_cleaner(tmp_path: Path, capsys):
    """``--config`` takes broker names: for ``clean`` the cleaner's own settings (``log.cleaner.*``,
    ``message.max.bytes``) build its cleaner as ``--broker-config``'s do, winning over the file's, and are not
    said to change nothing; a value the cleaner cannot run with is refused naming ``--config``, exit 2."""
    log_dir, now = _compacted_log_dir(tmp_path, 1, seed=11)
    broker = tmp_path / "server.properties"
    broker.write_text("log.cleaner.io.buffer.size=1\n")
    base = ["clean", "--now", str(now), "--no-record", *COMPACT]
    assert segdex([*base, "--broker-config", str(broker), str(log_dir)]) == 2
    assert capsys.readouterr().err.startswith("segdex clean: --broker-config: log.cleaner.io.buffer.size=1: each "
                                              "cleaner thread's read buffer would be 0 bytes")
    assert segdex([*base, "--broker-config", str(broker), "--config", "log.cleaner.io.buffer.size=4096",
                   "--config", "log.cleaner.threads=2", str(log_dir)]) == 0
    out, err = capsys.readouterr()
    assert "config:" not in err and "orders-0: would clean: " in out, err
    for setting, why in (("log.cleaner.io.buffer.size=1", "log.cleaner.io.buffer.size=1: each cleaner thread's "
                                                          "read buffer would be 0 bytes"),
                         ("log.cleaner.dedupe.buffer.size=1048576", "log.cleaner.dedupe.buffer.size=1048576: must "
                                                                    "be at least 1MB per cleaner thread")):
        assert segdex([*base, "--config", setting, str(log_dir)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"segdex clean: --config: {why}") and err.count("\n") == 1, err
    # a default refused because of --config's thread count: the flag that changed it is named
    assert segdex([*base, "--config", "log.cleaner.threads=200", str(log_dir)]) == 2
    assert capsys.readouterr().err.startswith("segdex clean: --config: log.cleaner.dedupe.buffer.size=134217728: "
                                              "must be at least 1MB per cleaner thread (200 threads")
    # in --topic-config a broker's cleaner setting is a topic's no more than for a broker: said to change nothing
    assert segdex([*base, "--topic-config", "orders:log.cleaner.threads=2", "--config", "log.cleaner.enable=false",
                   str(log_dir)]) == 0
    assert capsys.readouterr().err.startswith("config: not used by segdex, so changing nothing here (taken and "
                                              "checked as Kafka checks them): log.cleaner.enable (--config), "
                                              "log.cleaner.threads (--topic-config)")
