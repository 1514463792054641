"""Topic configs read live from a running cluster (``--bootstrap-server``), with Kafka's Admin API
(``DescribeConfigs`` through ``confluent-kafka``): the same answer ``kafka-configs --describe --all`` prints, for
the topics found on disk.

Each config comes with its source; as for a saved ``--all`` output (``topic_configs_file``), topic overrides and
the brokers' settings (static and dynamic) are taken, Kafka's defaults are not. ``--command-config`` is the
client properties file the Kafka tools take (``java.util.Properties``): security settings pass to librdkafka,
``sasl.jaas.config`` of the PLAIN and SCRAM login modules becomes ``sasl.username``/``sasl.password``, and what
librdkafka cannot use (JKS/PKCS12 stores) is refused with the setting to use instead.
"""

from __future__ import annotations

import os
import re

from segdex.indexcore.config.broker_config import load_properties
from segdex.indexcore.config.log_config import KNOWN_CONFIGS, ConfigException, parse_value
from segdex.indexcore.config.topic_configs_file import DEFAULT_CONFIG, DescribedTopic

DEFAULT_TIMEOUT_S = 30.0  # how long a cluster may take to answer (SEGDEX_ADMIN_TIMEOUT_S overrides)
# Java client properties librdkafka takes under the same name
_PASS_THROUGH = ("security.protocol", "sasl.mechanism", "ssl.ca.location", "ssl.certificate.location",
                 "ssl.key.location", "ssl.key.password", "ssl.endpoint.identification.algorithm", "client.id",
                 "sasl.username", "sasl.password", "sasl.kerberos.service.name", "sasl.kerberos.principal",
                 "sasl.kerberos.keytab", "ssl.keystore.location", "ssl.keystore.password")
_JAAS = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')
_LOGIN_MODULES = ("PlainLoginModule", "ScramLoginModule")


def client_config(properties: dict[str, str], where: str = "--command-config") -> dict[str, str]:
    """librdkafka settings for the Java client properties of a ``--command-config`` file."""
    out: dict[str, str] = {}
    for key, value in properties.items():
        if key in _PASS_THROUGH:
            if key == "ssl.keystore.location" and not value.endswith((".p12", ".pfx")):
                raise ConfigException(f"{where}: {key}={value}: librdkafka reads PKCS#12 keystores only; give "
                                      f"ssl.certificate.location and ssl.key.location (PEM) instead")
            out[key] = value
        elif key == "sasl.jaas.config":
            if not any(m in value for m in _LOGIN_MODULES):
                raise ConfigException(f"{where}: sasl.jaas.config: only the PLAIN and SCRAM login modules can be "
                                      f"used here; for GSSAPI give sasl.kerberos.* settings")
            fields = dict(_JAAS.findall(value))
            if "username" not in fields or "password" not in fields:
                raise ConfigException(f"{where}: sasl.jaas.config has no username=\"...\" password=\"...\"")
            out["sasl.username"], out["sasl.password"] = fields["username"], fields["password"]
        elif key in ("ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.type"):
            if key == "ssl.truststore.location":
                raise ConfigException(f"{where}: {key}: librdkafka cannot read a Java truststore; give "
                                      f"ssl.ca.location (the CA certificate, PEM) instead")
    return out


def describe_topics(bootstrap: str, topics: list[str], properties: dict[str, str] | None = None,
                    timeout_s: float | None = None) -> dict[str, DescribedTopic]:
    """The configs of ``topics`` as the cluster at ``bootstrap`` reports them; ConfigException when it cannot
    be asked (no broker answers, authentication fails). Topics the cluster does not know are left out."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, ConfigResource

    if timeout_s is None:
        timeout_s = float(os.environ.get("SEGDEX_ADMIN_TIMEOUT_S") or DEFAULT_TIMEOUT_S)
    conf = {"bootstrap.servers": bootstrap, "socket.timeout.ms": int(timeout_s * 1000), "log_level": 0,
            **client_config(properties or {})}
    client = AdminClient(conf)
    try:
        known = set(client.list_topics(timeout=timeout_s).topics)
    except KafkaException as e:
        raise ConfigException(f"--bootstrap-server {bootstrap}: no answer in {timeout_s:.0f} s: "
                              f"{e.args[0].str() if e.args else e}") from None
    wanted = [t for t in sorted(set(topics)) if t in known]
    out: dict[str, DescribedTopic] = {}
    if not wanted:
        return out
    futures = client.describe_configs([ConfigResource("topic", t) for t in wanted],
                                      request_timeout=timeout_s)
    for resource, future in futures.items():
        try:
            entries = future.result(timeout_s)
        except KafkaException as e:
            raise ConfigException(f"--bootstrap-server {bootstrap}: configs of topic {resource.name}: "
                                  f"{e.args[0].str() if e.args else e}") from None
        described = DescribedTopic(resource.name)
        for name, entry in entries.items():
            source = _source_name(entry.source)
            if entry.is_sensitive or entry.value is None or source == DEFAULT_CONFIG:
                continue
            if name not in KNOWN_CONFIGS:  # a newer Kafka's, or a plugin's: the cluster took it
                described.unknown.append(name)
                continue
            try:
                parse_value(name, entry.value)
            except ConfigException as e:
                raise ConfigException(f"--bootstrap-server {bootstrap}: topic {resource.name}: {e}") from None
            described.values[name] = entry.value
            described.sources[name] = source
        out[resource.name] = described
    return out


def _source_name(source: object) -> str:
    """A ConfigEntry's source as ``ConfigSource``'s name (the client hands some as plain ints)."""
    from confluent_kafka.admin import ConfigSource

    if isinstance(source, ConfigSource):
        return source.name
    try:
        return ConfigSource(int(source)).name
    except (TypeError, ValueError):
        return str(source)


def read_command_config(path: str | os.PathLike) -> dict[str, str]:
    """A ``--command-config`` client properties file, read as ``java.util.Properties``."""
    return load_properties(path, "--command-config")


__all__ = ["client_config", "describe_topics", "read_command_config"]
