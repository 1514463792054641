"""The AWS environment the object-store writers read, completed from the profile chain before the first request.

delta-rs resolves credentials itself, but for an S3-compatible endpoint (``AWS_ENDPOINT_URL`` set) it uses the
object_store crate's own chain: the environment, web identity, the container and the instance role, and not the
shared files. So ``AWS_PROFILE=fleet`` (keys in ``~/.aws/credentials``, an ``sso_session``, a
``credential_process`` or a ``role_arn``), which Hadoop's s3a and every AWS tool honour, would reach delta-rs as no
credentials at all. ``complete_from_profile`` asks botocore's resolver (the AWS SDK for Python's chain) for the
profile's credentials, region and endpoint, and puts them in this process's environment (never on a command line,
in a table or a log line) where delta-rs, its children and Spark's s3a read them.

Sources delta-rs and s3a refresh on their own (the environment, web identity, the container and the instance role)
are left to them: a role's short-lived keys copied into the environment would expire in a long run. Keys a
profile's ``role_arn`` or SSO login gives are taken once, at the start (valid an hour by default).
"""

from __future__ import annotations

import os
import threading

# botocore's providers that the object_store crate lacks (the shared files and what they name)
_PROFILE_PROVIDERS = ("assume-role", "sso", "shared-credentials-file", "login", "custom-process", "config-file",
                      "ec2-credentials-file", "boto-config")
# sources the AWS chain takes before a profile's keys (web identity, as on EKS; a container's role, as on ECS)
_AHEAD_OF_PROFILES = ("AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                      "AWS_CONTAINER_CREDENTIALS_FULL_URI")
_done: dict[str, str | None] = {}
_guard = threading.Lock()


class ProfileError(ValueError):
    """The profile the environment names cannot give credentials (no such profile, a broken file, an expired
    SSO login): one line for the user."""


def complete_from_profile() -> str | None:
    """Fill ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY`` (and ``AWS_SESSION_TOKEN``), ``AWS_REGION`` and
    ``AWS_ENDPOINT_URL`` from the AWS profile chain where the environment lacks them; returns the source's name
    (``shared-credentials-file``, ``sso``, ...) or None when nothing was taken. Once per process."""
    with _guard:
        if "result" not in _done:
            _done["result"] = _complete()
        return _done["result"]


def _complete() -> str | None:
    if os.environ.get("AWS_ACCESS_KEY_ID") and os.environ.get("AWS_SECRET_ACCESS_KEY"):
        return None
    if any(os.environ.get(k) for k in _AHEAD_OF_PROFILES):  # the chain's earlier sources: delta-rs takes them
        return None
    try:
        import botocore.exceptions
        import botocore.session
    except ImportError:  # pragma: no cover - a dependency of segdex
        return None
    profile = os.environ.get("AWS_PROFILE") or os.environ.get("AWS_DEFAULT_PROFILE")
    try:
        session = botocore.session.Session(profile=profile)
        scoped = session.get_scoped_config()
        resolver = session.get_component("credential_provider")
        for provider in list(resolver.providers):
            if provider.METHOD not in _PROFILE_PROVIDERS:
                resolver.remove(provider.METHOD)
        credentials = resolver.load_credentials()
    except botocore.exceptions.ProfileNotFound:
        raise ProfileError(f"AWS_PROFILE={profile}: no such profile in the AWS config or credentials file") from None
    except botocore.exceptions.BotoCoreError as e:
        raise ProfileError(f"AWS_PROFILE={profile or 'default'}: {e}") from None
    if not os.environ.get("AWS_REGION") and not os.environ.get("AWS_DEFAULT_REGION") and scoped.get("region"):
        os.environ["AWS_REGION"] = scoped["region"]
    endpoint = scoped.get("endpoint_url") or (scoped.get("s3") or {}).get("endpoint_url")
    if endpoint and not os.environ.get("AWS_ENDPOINT_URL") and not os.environ.get("AWS_ENDPOINT_URL_S3"):
        os.environ["AWS_ENDPOINT_URL"] = endpoint
    if credentials is None:
        return None
    frozen = credentials.get_frozen_credentials()
    os.environ["AWS_ACCESS_KEY_ID"] = frozen.access_key
    os.environ["AWS_SECRET_ACCESS_KEY"] = frozen.secret_key
    if frozen.token:
        os.environ["AWS_SESSION_TOKEN"] = frozen.token
    else:
        os.environ.pop("AWS_SESSION_TOKEN", None)
    return credentials.method
