"""A real Spark standalone cluster for tests: one master and one worker on 127.0.0.1, started with pyspark's own
launcher (``<pyspark>/bin/spark-class``), each in its own process group on free ports.

``spark-class`` ends by exec'ing its JVM, and a worker starts executor JVMs (and they Python workers) as its
children: killing only the process it started would leave JVMs behind. So every process started here gets a new
session (``start_new_session=True``) and is stopped by signalling its whole process group.

    with StandaloneCluster(tmp_path) as cluster:
        cluster.submit([...app and its args...])   # spark-submit --master cluster.master_url ...
        cluster.state()                             # the master's JSON: workers, active and completed apps
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

PYSPARK_HOME = Path(importlib.util.find_spec("pyspark").submodule_search_locations[0])
SPARK_CLASS = PYSPARK_HOME / "bin" / "spark-class"
SPARK_SUBMIT = PYSPARK_HOME / "bin" / "spark-submit"
HOST = "127.0.0.1"
# JVMs that start fast and stay small: the daemons only route messages.
FAST_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
# The environment of a test process that runs a local SparkSession: a spark-submit child must not attach to it.
_GATEWAY_VARS = ("PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET")


class ClusterError(RuntimeError):
    """The cluster did not come up (or a submission did not finish) in time; the message carries the log tails."""


def free_ports(n: int) -> list[int]:
    """``n`` distinct TCP ports free on 127.0.0.1 now (each bound to port 0, all held until all are picked)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((HOST, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def log_tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return f"({path}: not written)"
    return "\n".join(text.splitlines()[-lines:])


def stop_group(proc: subprocess.Popen, grace_s: float = 10.0) -> None:
    """Stop a process started with ``start_new_session=True`` and everything in its process group: SIGTERM (the
    master and worker shut down and the worker kills its executors), then SIGKILL for whatever is left."""
    pgid = proc.pid  # a session leader's pid is its group's id
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        pass
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)  # the leader's stragglers (executors, Python workers), or the leader
    proc.wait(timeout=grace_s)
    deadline = time.monotonic() + grace_s
    while _group_alive(pgid):
        if time.monotonic() > deadline:
            raise ClusterError(f"processes of group {pgid} ({proc.args[:2]}) still run after SIGKILL")
        time.sleep(0.1)


def _group_alive(pgid: int) -> bool:
    """Whether a process of the group is still running (zombies, which only their parent can reap, do not count)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":  # fields: state, ppid, pgrp, ...
            return True
    return False


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without a local SparkSession's gateway, with ``extra`` on top."""
    env = {k: v for k, v in os.environ.items() if k not in _GATEWAY_VARS}
    env.update(extra or {})
    return env


class StandaloneCluster:
    """A Spark standalone master and one worker on 127.0.0.1 (a context manager; ``start()``/``stop()``)."""

    def __init__(self, root: str | os.PathLike, cores: int = 1, worker_memory: str = "1g",
                 daemon_memory: str = "256m", start_timeout_s: float = 90.0) -> None:
        self.root = Path(root)
        self.cores = cores
        self.worker_memory = worker_memory
        self.daemon_memory = daemon_memory
        self.start_timeout_s = start_timeout_s
        self.port, self.webui_port, self.worker_webui_port = free_ports(3)
        self.master_url = f"spark://{HOST}:{self.port}"
        self.webui_url = f"http://{HOST}:{self.webui_port}"
        self.master_log = self.root / "master.log"
        self.worker_log = self.root / "worker.log"
        self.work_dir = self.root / "work"  # the worker's: one folder per application, its executors' logs in it
        self.conf_dir = self.root / "conf"  # empty: Spark's defaults, nothing from the pyspark install
        self._procs: list[subprocess.Popen] = []

    # -- life cycle --------------------------------------------------------------------------------------------

    def env(self) -> dict[str, str]:
        """The environment of the daemons (and what spark-submit needs to reach them)."""
        return clean_env({
            "SPARK_LOCAL_IP": HOST,
            "SPARK_CONF_DIR": str(self.conf_dir),
            "SPARK_DAEMON_MEMORY": self.daemon_memory,  # -Xmx of master and worker
            "SPARK_DAEMON_JAVA_OPTS": FAST_JVM,
            "SPARK_LAUNCHER_OPTS": FAST_JVM,  # spark-class's own launcher JVM
            # no REST submission server (it would take the fixed port 6066)
            "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
        })

    def start(self) -> StandaloneCluster:
        for d in (self.root, self.work_dir, self.conf_dir):
            d.mkdir(parents=True, exist_ok=True)
        try:
            self._spawn(self.master_log, "org.apache.spark.deploy.master.Master", "--host", HOST,
                        "--port", str(self.port), "--webui-port", str(self.webui_port))
            self._wait_for(self.master_log, "I have been elected leader! New state: ALIVE", "master")
            self._spawn(self.worker_log, "org.apache.spark.deploy.worker.Worker", self.master_url,
                        "--host", HOST, "--webui-port", str(self.worker_webui_port), "--cores", str(self.cores),
                        "--memory", self.worker_memory, "--work-dir", str(self.work_dir))
            self._wait_for(self.worker_log, f"Successfully registered with master {self.master_url}", "worker")
            self._wait_for(self.master_log, f"Registering worker {HOST}:", "master")
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for proc in reversed(self._procs):  # the worker (and its executors) first, then the master
            stop_group(proc)
        self._procs.clear()

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def pids(self) -> list[int]:
        """Process group ids of the running daemons."""
        return [p.pid for p in self._procs if p.poll() is None]

    def _spawn(self, log: Path, main_class: str, *args: str) -> None:
        with open(log, "wb") as out:
            self._procs.append(subprocess.Popen([str(SPARK_CLASS), main_class, *args], stdout=out,
                                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                                env=self.env(), cwd=self.root, start_new_session=True))

    def _wait_for(self, log: Path, line: str, what: str) -> None:
        """Poll ``log`` until it holds ``line``; ClusterError with the log tails when the process exits first or
        the timeout passes."""
        proc = self._procs[-1]
        deadline = time.monotonic() + self.start_timeout_s
        while True:
            if line in log.read_text(errors="replace"):
                return
            if proc.poll() is not None:
                raise ClusterError(f"the Spark {what} exited with status {proc.returncode} before logging "
                                   f"{line!r}\n{self.log_tails()}")
            if time.monotonic() > deadline:
                raise ClusterError(f"the Spark {what} did not log {line!r} within {self.start_timeout_s:.0f}s"
                                   f"\n{self.log_tails()}")
            time.sleep(0.2)

    def log_tails(self, lines: int = 40) -> str:
        return "\n".join(f"--- {p.name} (last {lines} lines) ---\n{log_tail(p, lines)}"
                         for p in (self.master_log, self.worker_log))

    # -- what ran on it ----------------------------------------------------------------------------------------

    def state(self) -> dict:
        """The master's status as its web UI serves it (``/json/``): workers, active and completed apps."""
        with urllib.request.urlopen(f"{self.webui_url}/json/", timeout=10) as r:
            return json.load(r)

    def completed_apps(self) -> dict[str, dict]:
        return {a["id"]: a for a in self.state()["completedapps"]}

    def executor_logs(self, app_id: str) -> dict[str, str]:
        """Executor id -> its stderr (the worker keeps it under ``work/<app id>/<executor id>/``)."""
        return {p.parent.name: p.read_text(errors="replace")
                for p in sorted((self.work_dir / app_id).glob("*/stderr"))}

    def submit(self, args: Sequence[str], env: Mapping[str, str] | None = None, timeout_s: float = 300.0,
               cwd: str | os.PathLike | None = None) -> subprocess.CompletedProcess:
        """``spark-submit --master <this cluster> ARGS`` in its own process group (killed whole on timeout)."""
        return spark_submit(["--master", self.master_url, *args],
                            env={"SPARK_LOCAL_IP": HOST, "SPARK_CONF_DIR": str(self.conf_dir), **(env or {})},
                            timeout_s=timeout_s, cwd=cwd)


def spark_submit(args: Sequence[str], env: Mapping[str, str] | None = None, timeout_s: float = 300.0,
                 cwd: str | os.PathLike | None = None) -> subprocess.CompletedProcess:
    """pyspark's ``spark-submit ARGS`` with this environment plus ``env``; its output captured; ClusterError (with
    the output's tail) if it runs longer than ``timeout_s`` (its whole process group is killed)."""
    cmd = [str(SPARK_SUBMIT), *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            text=True, env=clean_env(env), cwd=cwd, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        stop_group(proc, grace_s=5)
        out, err = proc.communicate()
        tail = "\n".join(err.splitlines()[-40:])
        raise ClusterError(f"spark-submit did not finish within {timeout_s:.0f}s: {cmd}\n{tail}") from None
    finally:
        if proc.poll() is None:
            stop_group(proc, grace_s=5)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)
