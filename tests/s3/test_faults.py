"""Faults and bad input on object storage: each is one line and exit 2 before any change, never a traceback
nor a credential on the terminal; a store that went down fails a write in one line; the next run completes."""

from __future__ import annotations

import functools
import os

import pytest

from segdex.pipelines import metadata_store as ms
from segdex.pipelines.sample_logdir import generate_sample
from tests.support import cli
from tests.support.kafka_harness import free_port

segdex = functools.partial(cli.segdex, timeout=300)  # env over this process's, or the whole with inherit=False


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("faults") / "kafka-logs"
    generate_sample(d, batches_per_partition=30, segment_bytes=8 * 1024)
    return d


def _index_bytes(log_dir) -> dict:
    return {p.relative_to(log_dir): p.read_bytes() for p in log_dir.rglob("*index")}


_NO_KEYS = {"AWS_ACCESS_KEY_ID": None, "AWS_SECRET_ACCESS_KEY": None}


@pytest.mark.parametrize("case,uri,env_change,says", [
    ("wrong secret", "s3://{bucket}/m", {"AWS_SECRET_ACCESS_KEY": "wrong-secret-0123456789"}, "refused"),
    ("missing bucket", "s3://no-such-bucket-here/m", {}, "the bucket does not exist"),
    ("endpoint down", "s3://{bucket}/m", {"AWS_ENDPOINT_URL": "http://127.0.0.1:{closed}"}, "cannot be reached"),
    ("no bucket", "s3:///m", {}, "no bucket in the URI"),
    ("bad bucket name", "s3://Bad_Bucket/m", {}, "not a valid bucket name"),
    ("credentials in the URI", "s3://key:secret@{bucket}/m", {}, "do not belong in the URI"),
    ("a Spark writer", "s3a://{bucket}/m", {"SEGDEX_DELTA_WRITER": "spark"}, "Delta Lake on Spark has no log store"),
    ("no such profile", "s3://{bucket}/m", {**_NO_KEYS, "AWS_PROFILE": "nope", "AWS_CONFIG_FILE": "{home}/config"},
     "AWS_PROFILE=nope: no such profile"),
    # nothing at all: no keys, no profile, no endpoint, no instance role (delta-rs's own chain, its warnings muted)
    ("no credentials", "s3://{bucket}/m", {**_NO_KEYS, "AWS_ENDPOINT_URL": None, "HOME": "{home}",
                                           "AWS_EC2_METADATA_DISABLED": "true"}, "no AWS credentials were found"),
    ("a bad store timeout", "s3://{bucket}/m", {"SEGDEX_STORE_TIMEOUT": "soon"}, "SEGDEX_STORE_TIMEOUT='soon'"),
])
def test_bad_store_is_one_line_exit_2(s3_server, s3_bucket, log_dir, tmp_path, case, uri, env_change, says):
    before = _index_bytes(log_dir)
    env = {**os.environ, **s3_server.env()}
    for key, value in env_change.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value.format(closed=free_port(), home=tmp_path)
    proc = segdex("reindex", "--no-progress", "--metadata", uri.format(bucket=s3_bucket), str(log_dir), env=env,
                  inherit=False)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr and s3_server.secret_key not in proc.stderr + proc.stdout
    assert "wrong-secret" not in proc.stderr
    assert _index_bytes(log_dir) == before


def test_aws_profile_gives_the_credentials(s3_server, s3_bucket, log_dir, tmp_path, monkeypatch):
    """Keys in a named profile of the shared files only (as ``aws configure --profile`` writes them), the region in
    the config file: delta-rs, given an S3-compatible endpoint, does not read them itself; segdex takes them from
    the profile chain, the run records its rows, and the key appears in no output."""
    server = s3_server.env()
    (tmp_path / "credentials").write_text(f"[fleet]\naws_access_key_id = {server['AWS_ACCESS_KEY_ID']}\n"
                                          f"aws_secret_access_key = {server['AWS_SECRET_ACCESS_KEY']}\n")
    (tmp_path / "config").write_text("[profile fleet]\nregion = us-east-1\n")
    env = {k: v for k, v in {**os.environ, **server}.items()
           if k not in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION")}
    env.update(AWS_PROFILE="fleet", AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "credentials"),
               AWS_CONFIG_FILE=str(tmp_path / "config"))
    uri = f"s3://{s3_bucket}/profile"
    proc = segdex("reindex", "--no-progress", "--metadata", uri, str(log_dir), env=env, inherit=False)
    assert proc.returncode == 0, proc.stderr
    assert s3_server.secret_key not in proc.stderr + proc.stdout
    for key, value in server.items():
        monkeypatch.setenv(key, value)
    assert ms.MetadataStore(uri).read("segments").num_rows == sum(1 for _ in log_dir.glob("*-*/*.log"))


def test_slow_store_progress_then_timeout(s3_server, s3_bucket, log_dir, monkeypatch):
    """A store that answers late (each answer held 0.3 s): the run completes, and while a commit waits a line
    says which table and for how long. A store slower than ``AWS_TIMEOUT``: one line saying it did not answer in
    time, exit 2 (nothing changed yet)."""
    from tests.support.tcp_gate import TcpGate

    uri = f"s3://{s3_bucket}/slow"
    gate = TcpGate(s3_server.port, delay=0.3)
    try:
        proc = segdex("reindex", "--metadata", uri, str(log_dir),
                      env=s3_server.env(AWS_ENDPOINT_URL=f"http://127.0.0.1:{gate.port}"))
    finally:
        gate.close()
    assert proc.returncode == 0, proc.stderr
    waits = [ln for ln in proc.stderr.splitlines() if ln.startswith("metadata: ") and "waiting on the store" in ln]
    assert waits and all(ln.startswith(f"metadata: {uri}/") for ln in waits), proc.stderr
    for key, value in s3_server.env().items():
        monkeypatch.setenv(key, value)
    assert ms.MetadataStore(uri).read("segments").num_rows == sum(1 for _ in log_dir.glob("*-*/*.log"))

    gate = TcpGate(s3_server.port, delay=2.0)
    try:
        proc = segdex("reindex", "--no-progress", "--metadata", uri, str(log_dir),
                      env=s3_server.env(AWS_ENDPOINT_URL=f"http://127.0.0.1:{gate.port}", AWS_TIMEOUT="500ms"))
    finally:
        gate.close()
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"segdex reindex: metadata path {uri}/runs: the object store did not answer in time (each request waits "
        "AWS_TIMEOUT, 30s by default, and is retried; check the endpoint's load and the network)"]


def test_store_down_then_back(s3_server, s3_env, s3_bucket, tmp_path):
    """The server stops between two writes of a run: the write fails with one line naming the table and why
    (no traceback text, no credential); once it is back, the same write completes and its rows land once."""
    import pyarrow as pa

    from segdex.pipelines.schemas import TableSpec
    from tests.support.fleet_writer import SCHEMA

    spec = TableSpec("events", SCHEMA, ("writer", "n"))
    rows = pa.table({"writer": pa.array([1] * 5, pa.int32()), "n": pa.array(range(5), pa.int32()),
                     "value": ["x"] * 5}, schema=SCHEMA)
    store = ms.MetadataStore(f"s3://{s3_bucket}/down")
    store.upsert(spec, rows)
    s3_server.stop()
    try:
        with pytest.raises(ms.StorageAccessError) as err:
            store.upsert(spec, rows)
    finally:
        s3_server.start()
    message = str(err.value)
    assert message == f"s3://{s3_bucket}/down/events: the object store cannot be reached (check AWS_ENDPOINT_URL, " \
                      "AWS_REGION and the network)"
    store.upsert(spec, rows)
    assert store.read("events").num_rows == 5 and store.committed_version("events") == 3  # 2: the failed one


def test_one_line_hides_secrets(monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s3cr3t-value")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "t0ken-value")
    text = ms.one_line(OSError("\x1b[31mfailed\x1b[0m with s3cr3t-value and t0ken-value\n  ↳ more"))
    assert text == "failed with *** and ***"



def test_store_unreachable_mid_run_then_rerun(s3_server, s3_bucket, tmp_path, monkeypatch):
    """The store answers the check before any change, then is gone (a TCP path to it closed after its first
    connection) while the run records its metadata after rewriting index files: exit 3, one line saying what had
    changed; the rewritten files are valid, and the next run completes with each segment's row once."""
    from tests.support.tcp_gate import TcpGate

    log_dir = tmp_path / "kafka-logs"
    generate_sample(log_dir, batches_per_partition=30, segment_bytes=8 * 1024)
    for index in log_dir.rglob("*.index"):
        index.unlink()
    uri = f"s3://{s3_bucket}/midrun"
    gate = TcpGate(s3_server.port, allow=1)
    try:
        proc = segdex("reindex", "--no-progress", "--metadata", uri, str(log_dir),
                      env=s3_server.env(AWS_ENDPOINT_URL=f"http://127.0.0.1:{gate.port}"))
    finally:
        gate.close()
    assert proc.returncode == 3, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert "cannot be reached" in last and "index files were rewritten" in last, proc.stderr
    assert "Traceback" not in proc.stderr and s3_server.secret_key not in proc.stderr
    segments = sum(1 for _ in log_dir.glob("*-*/*.log"))
    assert sum(1 for _ in log_dir.rglob("*.index")) == segments
    again = segdex("reindex", "--no-progress", "--metadata", uri, str(log_dir), env=s3_server.env())
    assert again.returncode == 0, again.stderr
    verify = segdex("verify", "--no-progress", "--metadata", uri, str(log_dir), env=s3_server.env())
    assert verify.returncode == 0, verify.stderr
    for key, value in s3_server.env().items():
        monkeypatch.setenv(key, value)
    table = ms.MetadataStore(uri).read("segments")
    assert table.num_rows == segments == len(set(zip(table.column("topic").to_pylist(),
                                                      table.column("partition").to_pylist(),
                                                      table.column("base_offset").to_pylist(), strict=True)))
