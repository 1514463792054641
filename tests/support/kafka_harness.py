"""Apache Kafka in the tests: a single-node KRaft broker and Kafka's own recovery code, from the release jars.

``scripts/test.sh`` fetches the jars (``tests/kafka/pom.xml``, one folder per version under ``.venv/kafka/``)
and compiles ``tests/kafka/oracle/KafkaOracle.java`` against each. Nothing here is skipped when they are
missing: the tests fail with the command that fetches them.

- ``KafkaBroker``: combined broker and controller on 127.0.0.1 with free ports, its log dir formatted by Kafka's
  storage tool, started in a process group of its own, stopped cleanly (SIGTERM, controlled shutdown) or with
  ``kill -9``, restarted on the same dir, its log lines kept in ``broker.log``.
- ``KafkaOracle``: one JVM per version answering "recover this partition dir as Kafka does" line by line.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
KAFKA_HOME = REPO_ROOT / ".venv" / "kafka"
KAFKA_VERSIONS = os.environ.get("SEGDEX_KAFKA_VERSIONS", "4.4.0 3.9.2").split()
FETCH_HINT = "run `bash scripts/test.sh` (it fetches Kafka's jars with Maven: scripts/env.sh segdex_kafka)"
INDEX_SUFFIXES = (".index", ".timeindex", ".txnindex")

_LOG4J2 = """\
status = warn
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = OUT
logger.controller.name = org.apache.kafka.controller
logger.controller.level = WARN
"""
_LOG4J1 = """\
log4j.rootLogger=INFO, out
log4j.appender.out=org.apache.log4j.ConsoleAppender
log4j.appender.out.layout=org.apache.log4j.PatternLayout
log4j.appender.out.layout.ConversionPattern=[%d] %p %m (%c)%n
"""


@dataclass(frozen=True)
class KafkaInstall:
    """One Kafka release as fetched by ``segdex_kafka``: its jars and the oracle compiled against them."""

    version: str

    @property
    def home(self) -> Path:
        return KAFKA_HOME / self.version

    @property
    def family(self) -> int:
        return int(self.version.split(".")[0])

    @property
    def oracle_classes(self) -> Path:
        """Where ``KafkaOracle.java`` is compiled for this release: ``oracle/`` beside its jars, or
        ``$SEGDEX_ORACLE_CLASSES/<version>`` (a worktree's own build, its oracle source changed, the jars shared)."""
        override = os.environ.get("SEGDEX_ORACLE_CLASSES")
        return Path(override) / self.version if override else self.home / "oracle"

    def classpath(self, *extra: Path) -> str:
        return os.pathsep.join([*(str(p) for p in extra), str(self.home / "libs" / "*")])

    def check(self) -> KafkaInstall:
        if not (self.home / ".built").is_file():
            raise RuntimeError(f"Kafka {self.version} not found under {self.home}: {FETCH_HINT}")
        return self

    def java(self, main: str, *args: str, extra_cp: tuple[Path, ...] = (), log_config: Path | None = None,
             heap: str = "512m", broker_jvm: bool = False) -> list[str]:
        """The command line of ``main`` on this release's classpath. Tests start small JVMs (serial GC, C1 only:
        quick to start); ``broker_jvm`` gives the JVM ``kafka-server-start.sh`` gives a broker (1 GiB heap, G1, C2
        as ``KAFKA_JVM_PERFORMANCE_OPTS``), what the benchmarks compare against."""
        if broker_jvm:
            cmd = ["java", "-Xmx1G", "-Xms1G", *BROKER_JVM_OPTS]
        else:
            cmd = ["java", f"-Xmx{heap}", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]
        if log_config is not None:
            cmd += [f"-Dlog4j2.configurationFile={log_config / 'log4j2.properties'}",
                    f"-Dlog4j.configuration=file:{log_config / 'log4j.properties'}"]
        return [*cmd, "-cp", self.classpath(*extra_cp), main, *args]


# kafka-run-class.sh's KAFKA_JVM_PERFORMANCE_OPTS, which every broker started by kafka-server-start.sh runs with
BROKER_JVM_OPTS = ("-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
                   "-XX:+ExplicitGCInvokesConcurrent", "-XX:MaxInlineLevel=15", "-Djava.awt.headless=true")

# LogLoader's lines for a segment it recovers: at open (index missing or corrupt), and in recoverLog
_RECOVERED = re.compile(r"(?:Recovering unflushed segment (\d+)\.|corresponding to log file \S*?(\d{20})\.log)")


class _PortTaken(RuntimeError):
    """The broker exited at start because one of its ports was taken meanwhile."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def new_cluster_id() -> str:
    """A cluster id as `kafka-storage random-uuid` prints it: URL-safe base64 of 16 random bytes, never starting
    with '-' (Kafka's Uuid.randomUuid draws again: the storage tool would read such an id as an option)."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


class KafkaBroker:
    """A single-node KRaft broker (``process.roles=broker,controller``) in ``root``; ``data_dir`` is its log dir.

    ``props`` adds or overrides server properties (``log.retention.check.interval.ms``, ...). ``start`` formats
    the dir on first use. The broker binds 127.0.0.1 only; its ports stay the same across restarts.
    """

    def __init__(self, install: KafkaInstall, root: Path, props: dict[str, str] | None = None,
                 data_dir: Path | None = None, cluster_id: str | None = None, broker_jvm: bool = False) -> None:
        self.install = install.check()
        self.broker_jvm = broker_jvm
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.data_dir = Path(data_dir) if data_dir is not None else self.root / "data"
        self.cluster_id = cluster_id or new_cluster_id()
        self.port, self.controller_port = free_port(), free_port()
        self._started = False  # once started, a restart keeps the ports (clients reconnect there)
        self._fixed_ports = False  # a sibling on another broker's ports (sibling(same_ports=True))
        self.extra = dict(props or {})
        self.proc: subprocess.Popen | None = None
        self.log_path = self.root / "broker.log"
        for name, text in (("log4j2.properties", _LOG4J2), ("log4j.properties", _LOG4J1)):
            (self.root / name).write_text(text)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def properties(self) -> dict[str, str]:
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(self.data_dir),
            "num.partitions": "1",
            "auto.create.topics.enable": "false",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "1",
            "group.initial.rebalance.delay.ms": "0",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            # a broker started again after a kill -9 cannot register until its controller has let the dead
            # incarnation's session lapse (DUPLICATE_BROKER_REGISTRATION): 4 s of it rather than the default 9 s
            "broker.heartbeat.interval.ms": "500",
            "broker.session.timeout.ms": "4000",
        }
        props.update(self.extra)
        return props

    def write_properties(self) -> Path:
        path = self.root / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in self.properties().items()))
        return path

    def format(self) -> None:
        """``kafka-storage format`` on the log dir, as an operator does before the first start."""
        config = self.write_properties()
        proc = subprocess.run(self.install.java("kafka.tools.StorageTool", "format", "-t", self.cluster_id,
                                                "-c", str(config), log_config=self.root),
                              capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            raise RuntimeError(f"kafka-storage format failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")

    def start(self, timeout: float = 90.0) -> KafkaBroker:
        """Start the broker and wait for "Kafka Server started". A port ``free_port`` chose can be taken before
        the broker binds it (any client's connection may get it as its local port): a broker that exits on
        "Address already in use" is started again, on new ports the first time it starts (a restart keeps its
        ports: clients reconnect there), up to 3 times."""
        for attempt in range(3):
            try:
                self._start_once(timeout)
                self._started = True
                return self
            except _PortTaken:
                if attempt == 2:
                    raise
                if self._started or self._fixed_ports:
                    time.sleep(1.0)
                else:
                    self.port, self.controller_port = free_port(), free_port()
        return self

    def _start_once(self, timeout: float) -> None:
        if not (self.data_dir / "meta.properties").exists():
            self.format()
        config = self.write_properties()
        with open(self.log_path, "a") as log:
            log.write(f"----- start {time.strftime('%H:%M:%S')}\n")
            log.flush()
            self.proc = subprocess.Popen(self.install.java("kafka.Kafka", str(config), log_config=self.root,
                                                           heap="768m", broker_jvm=self.broker_jvm),
                                         stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True, cwd=self.root)
        deadline = time.monotonic() + timeout
        offset = self.log_path.stat().st_size
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                code, self.proc = self.proc.returncode, None
                with open(self.log_path, errors="replace") as f:
                    f.seek(max(0, offset - 1))
                    if "Address already in use" in f.read():
                        raise _PortTaken()
                raise RuntimeError(f"Kafka {self.install.version} exited {code} at start:\n{self.tail()}")
            with open(self.log_path, errors="replace") as f:
                f.seek(max(0, offset - 1))
                if "Kafka Server started" in f.read():
                    return
            time.sleep(0.2)
        self.kill()
        raise RuntimeError(f"Kafka {self.install.version} did not start in {timeout}s:\n{self.tail()}")

    def stop(self, timeout: float = 90.0) -> None:
        """Clean shutdown (SIGTERM to the group): the broker closes its segments and writes its marker."""
        if self.proc is None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise RuntimeError(f"Kafka {self.install.version} did not stop in {timeout}s:\n{self.tail()}") from None
        finally:
            self.proc = None

    def kill(self) -> None:
        """``kill -9``: no controlled shutdown, no flush, no clean-shutdown marker."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(30)
        self.proc = None

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def copy_data(self, dest: Path) -> Path:
        """A copy of the (stopped) broker's log dir, file bytes and modes kept."""
        assert self.proc is None, "copy a stopped broker's dir"
        shutil.copytree(self.data_dir, dest, symlinks=True)
        return dest

    def sibling(self, root: Path, data_dir: Path, props: dict[str, str] | None = None,
                same_ports: bool = False) -> KafkaBroker:
        """The same node (cluster id, node id) on another copy of its log dir. With ``same_ports`` it listens
        where this broker did (this one must be stopped), so that clients connected to it reconnect there."""
        other = KafkaBroker(self.install, root, {**self.extra, **(props or {})}, data_dir, self.cluster_id,
                            self.broker_jvm)
        if same_ports:
            assert self.proc is None, "a sibling on the same ports needs this broker stopped"
            other.port, other.controller_port = self.port, self.controller_port
            other._fixed_ports = True
        return other

    def __enter__(self) -> KafkaBroker:
        return self

    def __exit__(self, *exc) -> None:
        self.kill()


def delete_index_files(log_dir: Path, topics: set[str] | None = None) -> int:
    """Remove every ``.index``/``.timeindex``/``.txnindex`` of the topic partitions (as a lost-index disk leaves)."""
    n = 0
    for part in log_dir.iterdir():
        if not part.is_dir() or (topics is not None and part.name.rsplit("-", 1)[0] not in topics):
            continue
        for f in part.iterdir():
            if f.suffix in INDEX_SUFFIXES:
                f.unlink()
                n += 1
    return n


class KafkaOracle:
    """Kafka's own ``LogSegment.recover`` over partition dirs, one long-lived JVM (``KafkaOracle.java``)."""

    def __init__(self, install: KafkaInstall, work: Path, broker_jvm: bool = False) -> None:
        self.install = install.check()
        work.mkdir(parents=True, exist_ok=True)
        # LogLoader's INFO lines go to a file of their own: which segments a load recovered (``load``)
        self.loader_log = work / "loader.log"
        self.loader_log.touch()
        loaders = ("org.apache.kafka.storage.internals.log.LogLoader", "kafka.log.LogLoader")
        log4j2 = _LOG4J2.replace("INFO", "ERROR") + (
            "appender.loader.type = File\nappender.loader.name = LOADER\n"
            f"appender.loader.fileName = {self.loader_log}\nappender.loader.append = true\n"
            "appender.loader.layout.type = PatternLayout\nappender.loader.layout.pattern = %m%n\n") + "".join(
            f"logger.l{i}.name = {name}\nlogger.l{i}.level = INFO\nlogger.l{i}.additivity = false\n"
            f"logger.l{i}.appenderRef.f.ref = LOADER\n" for i, name in enumerate(loaders))
        log4j1 = _LOG4J1.replace("INFO", "ERROR") + (
            "log4j.appender.loader=org.apache.log4j.FileAppender\n"
            f"log4j.appender.loader.File={self.loader_log}\nlog4j.appender.loader.Append=true\n"
            "log4j.appender.loader.layout=org.apache.log4j.PatternLayout\n"
            "log4j.appender.loader.layout.ConversionPattern=%m%n\n") + "".join(
            f"log4j.logger.{name}=INFO, loader\nlog4j.additivity.{name}=false\n" for name in loaders)
        for name, text in (("log4j2.properties", log4j2), ("log4j.properties", log4j1)):
            (work / name).write_text(text)
        self.proc = subprocess.Popen(
            install.java("KafkaOracle", extra_cp=(install.oracle_classes,), log_config=work, broker_jvm=broker_jvm),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            start_new_session=True)

    def recover(self, partition_dir: Path, index_interval_bytes: int = 4096,
                segment_index_bytes: int = 10 * 1024 * 1024) -> dict:
        """Recover every ``.log`` of ``partition_dir`` in place (index files written beside them)."""
        return self._ask(f"{partition_dir}\t{index_interval_bytes}\t{segment_index_bytes}",
                         f"recovery of {partition_dir}")

    def load(self, partition_dir: Path, now_ms: int, log_start_offset: int = 0, recovery_point: int = 0,
             clean: bool = False, config: dict[str, object] | None = None) -> dict:
        """A broker's start and clean stop of ``partition_dir`` (a ``<topic>-<n>`` dir), in place: Kafka's
        ``LogLoader`` with this log start offset, recovery point and clean-shutdown flag, the clock at ``now_ms``.
        Answers ``{"logStartOffset", "logEndOffset", "recoveryPoint", "recovered"}`` or ``{"exception", ...}``:
        ``recovered`` the base offsets of the segments the load recovered, from LogLoader's own log lines."""
        pairs = ";".join(f"{k}={v}" for k, v in (config or {}).items())
        seen = self.loader_log.stat().st_size
        answer = self._ask(f"load\t{partition_dir}\t{log_start_offset}\t{recovery_point}\t{int(clean)}\t{now_ms}"
                           f"\t{pairs}", f"load of {partition_dir}")
        with open(self.loader_log, errors="replace") as f:
            f.seek(seen)
            lines = f.read()
        answer["recovered"] = sorted({int(a or b) for a, b in _RECOVERED.findall(lines)})
        return answer

    def cleanable(self, partition_dir: Path, now_ms: int, log_start_offset: int = 0, high_watermark: int = -1,
                  checkpoint: int | None = None, dedupe_bytes: int = 0,
                  config: dict[str, object] | None = None, recovery_point: int = 0, clean: bool = False,
                  io_buffers: tuple[int, int] = (262_144, 1_048_588), load_factor: float = 0.9) -> dict:
        """Kafka's log cleaner's view of ``partition_dir`` (a ``<topic>-<n>`` dir, loaded in place as ``load``
        loads it): ``LogCleanerManager.cleanableOffsets``, ``maxCompactionDelay`` and ``LogToClean`` at ``now_ms``
        with the checkpointed offset ``checkpoint`` (None: no entry) and the high watermark (-1: the log end);
        with ``dedupe_bytes`` also one ``Cleaner.doClean`` round (``endOffset``, ``cleanMs``), which rewrites the
        dir. Kafka 4.x's Java cleaner, or 3.x's Scala one (``kafka.log``) by the same names. The log is opened with
        ``recovery_point`` and the clean-shutdown flag ``clean`` (both: a clean start, no segment re-read, so a
        damaged batch below the recovery point reaches the cleaner as it is). ``io_buffers``: the round's
        ``Cleaner``'s read buffer at its start, and the broker's ``message.max.bytes`` (``maxIoBufferSize``);
        ``load_factor``: ``log.cleaner.io.buffer.load.factor`` (the ``Cleaner``'s ``dupBufferLoadFactor``)."""
        pairs = ";".join(f"{k}={v}" for k, v in (config or {}).items())
        cp = "-" if checkpoint is None else str(checkpoint)
        return self._ask(f"cleanable\t{partition_dir}\t{log_start_offset}\t{now_ms}\t{high_watermark}\t{cp}"
                         f"\t{dedupe_bytes}\t{pairs}\t{recovery_point}\t{int(clean)}\t{io_buffers[0]}"
                         f"\t{io_buffers[1]}\t{load_factor}",
                         f"cleaner view of {partition_dir}")

    def validate(self, name: str, value: str) -> str | None:
        """Kafka's ``LogConfig.validate`` of one topic config: its message when it refuses the value, else None."""
        return self._ask(f"validate\t{name}\t{value}", f"validation of {name}={value}").get("error")

    def broker_value(self, name: str, value: str) -> str | None:
        """A broker setting as ``KafkaConfig``'s ``ConfigDef`` parses it (its type, then its validator): the message
        where it refuses the value, else None; ``KeyError`` for a key this broker does not define."""
        answer = self._ask(f"broker\t{name}\t{value}", f"broker setting {name}={value}")
        if answer.get("unknown"):
            raise KeyError(name)
        return answer.get("error")

    def checkpoint(self, kind: str, path: Path) -> list | str:
        """A checkpoint file read as the broker reads it (``kind`` epoch: ``LeaderEpochCheckpointFile``, else
        ``OffsetCheckpointFile``): its entries ([epoch, offset] or [topic, partition, offset], the latter sorted),
        or the exception the read throws (its class and message)."""
        answer = self._ask(f"checkpoint\t{kind}\t{path}", f"read of checkpoint {path}")
        return answer.get("exception") or answer["entries"]

    def stream(self, codec: int, magic: int, path: Path, ops: str) -> dict:
        """The compressed payload in ``path`` read through Kafka's decompressing stream (``wrapForInput``), with
        ``ops`` (comma separated: ``r`` one ``read()``, ``fN`` one ``Utils.readFully`` of N bytes): {"opening": the
        exception opening throws} or {"counts": each op's bytes (-1: the end), "data": the bytes delivered, "end": the
        exception an op threw, its cause after " | ", or None}."""
        answer = self._ask(f"stream\t{codec}\t{magic}\t{path}\t{ops}", f"stream of {path}")
        if "data" in answer:
            answer["data"] = base64.b64decode(answer["data"])
        return answer

    def bench(self, log_dir: Path, base_offset: int = 0, runs: int = 5, index_interval_bytes: int = 4096,
              segment_index_bytes: int = 10 * 1024 * 1024) -> list[float]:
        """Seconds of each of ``runs`` ``LogSegment.recover`` calls on one segment, in this warm JVM."""
        answer = self._ask(f"bench\t{log_dir}\t{base_offset}\t{index_interval_bytes}\t{segment_index_bytes}"
                           f"\t{runs}", "benchmark")
        return [ms / 1000 for ms in answer["ms"]]

    def _ask(self, request: str, what: str) -> dict:
        """One request line to the oracle JVM, its one JSON answer; RuntimeError when it failed or exited."""
        self.proc.stdin.write(request + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"Kafka {self.install.version}'s oracle exited ({self.proc.poll()}) during {what}")
        answer = json.loads(line)
        if "fatal" in answer:
            raise RuntimeError(f"Kafka {self.install.version}'s {what} failed: {answer['fatal']}")
        return answer

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
