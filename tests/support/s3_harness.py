"""A real S3-compatible server in the tests: s3proxy (``org.gaul:s3proxy``, Apache-2.0) on its filesystem backend.

``scripts/test.sh`` fetches its jars (``tests/s3/pom.xml``, scripts/env.sh ``segdex_s3proxy``) into
``.venv/s3proxy/libs``. ``S3Server`` starts ``org.gaul.s3proxy.Main`` as the Kafka harness starts a broker: on
127.0.0.1 at a free port, in a process group of its own, its objects as files in a temporary dir (the
``filesystem-nio2`` backend), signature V4 with a random key pair, its log in ``s3proxy.log``. ``stop`` ends the
group; ``start`` again serves the same objects on the same port (a server "down" in the middle of a run).
``client()`` is a botocore S3 client (an implementation apart from delta-rs's) for buckets and raw PUTs; ``env()``
is the AWS environment segdex and delta-rs read.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from tests.support.kafka_harness import REPO_ROOT, free_port

S3PROXY_LIBS = REPO_ROOT / ".venv" / "s3proxy" / "libs"
FETCH_HINT = "run `bash scripts/test.sh` (it fetches s3proxy's jars with Maven: scripts/env.sh segdex_s3proxy)"
REGION = "us-east-1"

_LOGBACK = """\
<configuration>
  <appender name="OUT" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%d{HH:mm:ss.SSS} %-5level %logger{20} - %msg%n</pattern></encoder>
  </appender>
  <root level="WARN"><appender-ref ref="OUT"/></root>
  <logger name="org.gaul.s3proxy.Main" level="INFO"/>
</configuration>
"""


class S3Server:
    """s3proxy serving the objects under ``root / "data"`` at ``endpoint`` (path-style, plain http)."""

    def __init__(self, root: Path) -> None:
        if not (S3PROXY_LIBS.parent / ".fetched").is_file():
            raise RuntimeError(f"s3proxy not found under {S3PROXY_LIBS}: {FETCH_HINT}")
        self.root = Path(root)
        self.data = self.root / "data"
        self.data.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.access_key = "segdex-" + secrets.token_hex(4)
        self.secret_key = secrets.token_hex(16)
        self.log_path = self.root / "s3proxy.log"
        (self.root / "logback.xml").write_text(_LOGBACK)
        self.proc: subprocess.Popen | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _write_properties(self) -> Path:
        props = {
            "s3proxy.endpoint": self.endpoint,
            "s3proxy.authorization": "aws-v2-or-v4",
            "s3proxy.identity": self.access_key,
            "s3proxy.credential": self.secret_key,
            "jclouds.provider": "filesystem-nio2",
            "jclouds.filesystem.basedir": str(self.data),
        }
        path = self.root / "s3proxy.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        path.chmod(0o600)
        return path

    def start(self, timeout: float = 60.0) -> S3Server:
        """Start the server and wait until it answers; a port taken meanwhile is a new free port (first start)."""
        for attempt in range(3):
            config = self._write_properties()
            with open(self.log_path, "a") as log:
                log.write(f"----- start {time.strftime('%H:%M:%S')}\n")
                log.flush()
                self.proc = subprocess.Popen(
                    ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
                     f"-Dlogback.configurationFile={self.root / 'logback.xml'}", "-cp", f"{S3PROXY_LIBS}/*",
                     "org.gaul.s3proxy.Main", "--properties", str(config)],
                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                    cwd=self.root)
            if self._wait_ready(timeout):
                return self
            if attempt == 2 or "Address already in use" not in self.tail():
                raise RuntimeError(f"s3proxy did not start:\n{self.tail()}")
            self.port = free_port()
        return self

    def _wait_ready(self, timeout: float) -> bool:
        import socket

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.proc = None
                return False
            with socket.socket() as s:
                s.settimeout(0.5)
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return True
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"s3proxy did not listen in {timeout}s:\n{self.tail()}")

    def stop(self) -> None:
        """End the server's process group (SIGTERM, then SIGKILL after 10 s)."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(10)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        self.proc = None

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def env(self, **overrides: str) -> dict[str, str]:
        """The standard AWS environment that points segdex (delta-rs, Hadoop's s3a) at this server."""
        env = {"AWS_ENDPOINT_URL": self.endpoint, "AWS_REGION": REGION, "AWS_ACCESS_KEY_ID": self.access_key,
               "AWS_SECRET_ACCESS_KEY": self.secret_key, "AWS_ALLOW_HTTP": "true"}
        env.update(overrides)
        return env

    def client(self) -> Any:
        """A botocore S3 client on this server (path-style addressing)."""
        import botocore.session
        from botocore.config import Config

        session = botocore.session.get_session()
        return session.create_client("s3", region_name=REGION, endpoint_url=self.endpoint,
                                     aws_access_key_id=self.access_key, aws_secret_access_key=self.secret_key,
                                     config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))

    def bucket(self, name: str) -> str:
        """Create bucket ``name`` (new for each test that asks: tests do not share tables); returns it."""
        self.client().create_bucket(Bucket=name)
        return name

    def __enter__(self) -> S3Server:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
