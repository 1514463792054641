"""Delta tables on object storage (s3proxy, a real S3 server): written by many processes at once, each
commit's rows exactly once, by delta-rs's conditional-PUT commits, Delta transaction identifiers and a re-read
when a commit's outcome is unknown."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter

import pyarrow as pa
import pytest

from segdex.pipelines import metadata_store as ms
from segdex.pipelines.schemas import TableSpec
from tests.support.fleet_writer import SCHEMA
from tests.support.kafka_harness import REPO_ROOT

APPEND = TableSpec("events", SCHEMA, ())
UPSERT = TableSpec("events", SCHEMA, ("writer", "n"))


def _rows(writer: int, n: int) -> pa.Table:
    return pa.table({"writer": pa.array([writer] * n, pa.int32()), "n": pa.array(range(n), pa.int32()),
                     "value": [f"w{writer}-{i}" for i in range(n)]}, schema=SCHEMA)


def _counts(store: ms.MetadataStore, name: str = "events") -> Counter:
    return Counter(store.read(name).column("writer").to_pylist())


def test_tables_on_s3_and_s3a(s3_env, s3_bucket):
    """A store at s3://bucket/prefix creates, appends and merges; s3a:// names the same table."""
    store = ms.MetadataStore(f"s3://{s3_bucket}/segdex")
    assert not store.exists("events")
    store.upsert(UPSERT, _rows(1, 10))
    store.upsert(UPSERT, _rows(1, 12))  # a rerun: the 10 matched, 2 new
    store.append(APPEND, _rows(2, 3))
    assert store.exists("events")
    assert _counts(store) == {1: 12, 2: 3}
    assert _counts(ms.MetadataStore(f"s3a://{s3_bucket}/segdex")) == {1: 12, 2: 3}
    assert store.committed_version("events") == 3  # one txn version per commit of this store
    assert ms.MetadataStore(f"s3://{s3_bucket}/segdex").committed_version("events") == -1  # another app id


def _race(s3_env: dict, uri: str, writers: int, rows: int, mode: str) -> list[dict]:
    start = time.time() + 4.0  # every interpreter up and importing before the common start
    env = {**os.environ, **s3_env}
    procs = [subprocess.Popen([sys.executable, "-m", "tests.support.fleet_writer", uri, "events", str(w), str(rows),
                               str(start), mode], cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for w in range(writers)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, f"writer exited {p.returncode}: {err[-2000:]}"
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


@pytest.mark.parametrize("mode", ["append", "upsert"])
def test_sixteen_writers_at_once_each_row_once(s3_env, s3_bucket, mode):
    """16 processes (more than the cores) write 100 rows each into one table that none has created yet, at the
    same moment. Unprotected, delta-rs raised in 10 of 16 while rows landed; here every process succeeds and the
    table holds each writer's 100 rows exactly once."""
    uri = f"s3://{s3_bucket}/fleet"
    results = _race(s3_env, uri, 16, 100, mode)
    store = ms.MetadataStore(uri)
    assert _counts(store) == {w: 100 for w in range(16)}
    table = store.read("events")
    assert len(set(zip(table.column("writer").to_pylist(), table.column("n").to_pylist(), strict=True))) == 1600
    attempts = sorted(r["attempts"] for r in results)
    print(f"{mode}: 16 writers, attempts {attempts}, slowest {max(r['seconds'] for r in results)} s")


def test_commit_landed_but_answer_lost(s3_env, s3_bucket):
    """The commit went through and the caller got an error (the answer lost): the re-read finds the store's txn
    in the table, so the rows are not written a second time."""
    from deltalake import write_deltalake

    store = ms.MetadataStore(f"s3://{s3_bucket}/lost")
    calls = []

    def commit_then_fail(props):
        calls.append(props)
        write_deltalake(store.uri("events"), _rows(7, 50), mode="append", commit_properties=props)
        if len(calls) == 1:
            raise OSError("connection reset by peer while reading the response")

    assert store.commit_once("events", commit_then_fail) == 0
    assert len(calls) == 1 and store.commit_attempts["events"] == 1
    assert _counts(store) == {7: 50}


def test_commit_failed_before_landing_is_retried(s3_env, s3_bucket):
    """An error before anything landed: the re-read does not find the txn, the commit is tried again, once."""
    from deltalake import write_deltalake

    store = ms.MetadataStore(f"s3://{s3_bucket}/retry")
    calls = []

    def fail_then_commit(props):
        calls.append(props)
        if len(calls) == 1:
            raise OSError("Generic S3 error: the request was cut")
        write_deltalake(store.uri("events"), _rows(3, 20), mode="append", commit_properties=props)

    assert store.commit_once("events", fail_then_commit) == 1
    assert store.commit_attempts["events"] == 2
    assert _counts(store) == {3: 20}


def test_a_lagging_listing_neither_hides_a_commit_nor_creates_the_table_again(s3_server, s3_env, s3_bucket):
    """While other writers PUT into the table's ``_delta_log/``, s3proxy's listings leave out objects whose PUTs
    have returned, so a snapshot may miss this store's commit, or every commit. Whether the commit landed is
    decided by reading the commits by key as well: asked 60 times under that load, the answer is always yes (a
    "no" would write the rows a second time). A new store's writer asks for the first commit by key before it
    creates the table: the table is never created a second time over the first (a new schema, new partitions)."""
    import threading

    from deltalake import DeltaTable

    uri = f"s3://{s3_bucket}/lag"
    for writer in (2, 3, 4):
        ms.MetadataStore(uri).append(APPEND, _rows(writer, 1))
    store = ms.MetadataStore(uri)
    store.append(APPEND, _rows(1, 5))
    version = store.committed_version("events")
    assert version == 1 and DeltaTable(store.uri("events")).version() == 4  # created empty, then 4 appends
    client, stop = s3_server.client(), threading.Event()

    def put_beside(worker: int) -> None:
        i = 0
        while not stop.is_set():
            key = f"lag/events/_delta_log/other-{worker}-{i % 100}.tmp"  # at most 600 of them to list
            client.put_object(Bucket=s3_bucket, Key=key, Body=b"x" * 2000)
            i += 1

    threads = [threading.Thread(target=put_beside, args=(w,)) for w in range(6)]
    for t in threads:
        t.start()
    try:
        answers = []
        for _ in range(60):
            answers.append(store._landed("events", version))
            ms.MetadataStore(uri)._create_remote(APPEND, _rows(2, 1).schema)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert answers == [True] * 60
    assert DeltaTable(store.uri("events")).version() == 4
    assert _counts(store) == {1: 5, 2: 1, 3: 1, 4: 1}
