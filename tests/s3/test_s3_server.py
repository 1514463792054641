"""The S3 server the fleet tests rely on: s3proxy keeps what it is given, and its conditional PUT
(``If-None-Match: *``, what delta-rs commits ``_delta_log/N.json`` with) lets exactly one racer win."""

from __future__ import annotations

import threading

import pytest
from botocore.exceptions import ClientError


def _status(error: ClientError) -> int:
    return int(error.response["ResponseMetadata"]["HTTPStatusCode"])


def test_put_get_list_delete(s3_server, s3_bucket):
    client = s3_server.client()
    client.put_object(Bucket=s3_bucket, Key="a/b.json", Body=b"{}")
    assert client.get_object(Bucket=s3_bucket, Key="a/b.json")["Body"].read() == b"{}"
    assert [o["Key"] for o in client.list_objects_v2(Bucket=s3_bucket, Prefix="a/")["Contents"]] == ["a/b.json"]
    client.delete_object(Bucket=s3_bucket, Key="a/b.json")
    assert client.list_objects_v2(Bucket=s3_bucket, Prefix="a/").get("KeyCount") == 0


def test_wrong_secret_refused(s3_server, s3_bucket):
    import botocore.session
    from botocore.config import Config

    bad = botocore.session.get_session().create_client(
        "s3", region_name="us-east-1", endpoint_url=s3_server.endpoint, aws_access_key_id=s3_server.access_key,
        aws_secret_access_key="not-the-secret", config=Config(s3={"addressing_style": "path"}))
    with pytest.raises(ClientError) as err:
        bad.put_object(Bucket=s3_bucket, Key="x", Body=b"x")
    assert _status(err.value) == 403


@pytest.mark.parametrize("rounds,racers", [(20, 8)])
def test_conditional_put_is_atomic(s3_server, s3_bucket, rounds, racers):
    """20 rounds of 8 threads PUTting the same new key with ``If-None-Match: *``: each round exactly one PUT
    succeeds (200), the others get 412 Precondition Failed, and the object holds the winner's bytes."""
    clients = [s3_server.client() for _ in range(racers)]
    for r in range(rounds):
        key = f"_delta_log/{r:020d}.json"
        outcome: dict[int, int] = {}
        barrier = threading.Barrier(racers)

        def put(i: int, key: str = key, outcome: dict = outcome, barrier: threading.Barrier = barrier) -> None:
            barrier.wait()
            try:
                clients[i].put_object(Bucket=s3_bucket, Key=key, Body=f"writer {i}".encode(), IfNoneMatch="*")
                outcome[i] = 200
            except ClientError as e:
                outcome[i] = _status(e)

        threads = [threading.Thread(target=put, args=(i,)) for i in range(racers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        winners = [i for i, code in outcome.items() if code == 200]
        assert len(winners) == 1, f"round {r}: {outcome}"
        assert sorted(code for code in outcome.values() if code != 200) == [412] * (racers - 1), outcome
        body = clients[0].get_object(Bucket=s3_bucket, Key=key)["Body"].read()
        assert body == f"writer {winners[0]}".encode()


def test_restart_keeps_objects(s3_server, s3_bucket):
    """A server stopped and started again (a store "down" in the middle of a run) serves what it held."""
    s3_server.client().put_object(Bucket=s3_bucket, Key="kept", Body=b"kept")
    port = s3_server.port
    s3_server.stop()
    s3_server.start()
    assert s3_server.port == port
    assert s3_server.client().get_object(Bucket=s3_bucket, Key="kept")["Body"].read() == b"kept"
