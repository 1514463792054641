"""The AWS environment completed from the profile chain (``pipelines/aws_env.py``): a profile's keys, region and
endpoint taken where the environment lacks them; sources delta-rs reads itself left alone."""

from __future__ import annotations

import os

import pytest

from segdex.pipelines import aws_env


@pytest.fixture
def files(tmp_path, monkeypatch):
    before = set(os.environ)
    for key in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(key)
    (tmp_path / "credentials").write_text("[fleet]\naws_access_key_id = AKIAFLEET\naws_secret_access_key = s3cr3t\n")
    (tmp_path / "config").write_text("[profile fleet]\nregion = eu-west-3\nendpoint_url = http://127.0.0.1:9\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_PROFILE", "fleet")
    yield tmp_path
    for key in set(os.environ) - before - {"AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "AWS_PROFILE"}:
        os.environ.pop(key)  # what _complete put in (not through monkeypatch), gone with the test


def test_a_profile_fills_keys_region_and_endpoint(files):
    assert aws_env._complete() == "shared-credentials-file"
    assert (os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"]) == ("AKIAFLEET", "s3cr3t")
    assert os.environ["AWS_REGION"] == "eu-west-3" and os.environ["AWS_ENDPOINT_URL"] == "http://127.0.0.1:9"
    assert "AWS_SESSION_TOKEN" not in os.environ


def test_the_environment_wins_over_the_profile(files, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAENV")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
    monkeypatch.setenv("AWS_REGION", "us-east-2")
    assert aws_env._complete() is None
    assert os.environ["AWS_ACCESS_KEY_ID"] == "AKIAENV" and os.environ["AWS_REGION"] == "us-east-2"


@pytest.mark.parametrize("source", ["AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"])
def test_web_identity_or_a_container_role_is_left_to_delta_rs(files, monkeypatch, source):
    """The AWS chain takes web identity (EKS) and a container's role (ECS) before the shared files: the file's
    keys are not exported over them (delta-rs reads and refreshes those itself)."""
    monkeypatch.setenv(source, "/var/run/secrets/token" if source.endswith("FILE") else "/v2/credentials/x")
    assert aws_env._complete() is None
    assert "AWS_ACCESS_KEY_ID" not in os.environ


def test_an_unknown_profile_is_one_line(files, monkeypatch):
    monkeypatch.setenv("AWS_PROFILE", "nope")
    with pytest.raises(aws_env.ProfileError, match=r"^AWS_PROFILE=nope: no such profile"):
        aws_env._complete()
