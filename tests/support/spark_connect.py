"""A Spark Connect server for the tests, started from the project's own pyspark (``spark-submit --class
org.apache.spark.sql.connect.service.SparkConnectServer spark-internal``) on 127.0.0.1 and a free port, in a
process group of its own so that stopping it stops its JVM too (``spark-submit`` is only a launcher)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyspark

from segdex.pipelines.spark_session import DELTA_CONF, FAST_START_JVM, delta_jars
from tests.support.kafka_harness import free_port

SPARK_HOME = Path(pyspark.__file__).parent


class SparkConnectServer:
    """``with SparkConnectServer(root) as server: ... server.url`` (``sc://127.0.0.1:PORT``)."""

    def __init__(self, root: Path, delta: bool = True) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.log_path = self.root / "connect-server.log"
        self.delta = delta
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        conf = {
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.driver.extraJavaOptions": FAST_START_JVM,
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.sql.warehouse.dir": str(self.root / "warehouse"),
        }
        jars = delta_jars() if self.delta else []
        if jars:
            conf.update(DELTA_CONF)
        cmd = [str(SPARK_HOME / "bin" / "spark-submit"), "--master", "local[2]",
               "--class", "org.apache.spark.sql.connect.service.SparkConnectServer"]
        if jars:
            cmd += ["--jars", ",".join(jars)]
        for key, value in conf.items():
            cmd += ["--conf", f"{key}={value}"]
        return [*cmd, "spark-internal"]

    def start(self, timeout: float = 120.0) -> SparkConnectServer:
        env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
               "SPARK_HOME": str(SPARK_HOME)}
        env.pop("SPARK_REMOTE", None)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True, cwd=self.root, env=env)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"Spark Connect server exited {self.proc.returncode}:\n{self.tail()}")
            with socket.socket() as s:
                s.settimeout(0.5)
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"Spark Connect server not listening after {timeout}s:\n{self.tail()}")

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, timeout: float = 30.0) -> None:
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout)
        except ProcessLookupError:
            pass
        self.proc = None

    def __enter__(self) -> SparkConnectServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
