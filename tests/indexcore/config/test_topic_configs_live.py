"""The parts of ``topic_configs_live`` that need no broker: naming a config entry's source.

Expected names are the ``ConfigSource`` ids of Kafka's DescribeConfigs protocol (``DescribeConfigsResponse``):
1 DYNAMIC_TOPIC_CONFIG, 4 STATIC_BROKER_CONFIG, 5 DEFAULT_CONFIG.
"""

from __future__ import annotations

import pytest
from confluent_kafka.admin import ConfigSource

from segdex.indexcore.config.log_config import ConfigException
from segdex.indexcore.config.topic_configs_live import _source_name, client_config, read_command_config


def test_source_given_as_the_enum():
    assert _source_name(ConfigSource.DYNAMIC_TOPIC_CONFIG) == "DYNAMIC_TOPIC_CONFIG"


def test_source_given_as_kafka_protocol_id():
    """The client hands some sources as the protocol's plain ints (or their text)."""
    assert _source_name(1) == "DYNAMIC_TOPIC_CONFIG"
    assert _source_name("4") == "STATIC_BROKER_CONFIG"
    assert _source_name(5) == "DEFAULT_CONFIG"


def test_source_that_is_no_id_is_shown_as_given():
    assert _source_name("SOMETHING_NEWER") == "SOMETHING_NEWER"
    assert _source_name(None) == "None"
    assert _source_name(99) == "99"  # an id this client does not know


@pytest.mark.parametrize("keystore", ["/etc/kafka/client.p12", "/etc/kafka/client.pfx"])
def test_pkcs12_keystore_passes_through(keystore: str):
    """librdkafka's ssl.keystore.location takes PKCS#12 only (.p12, .pfx); the Java name is the same."""
    assert client_config({"ssl.keystore.location": keystore, "ssl.keystore.password": "pw"}) == \
        {"ssl.keystore.location": keystore, "ssl.keystore.password": "pw"}


def test_java_keystore_is_refused_with_what_to_give_instead():
    with pytest.raises(ConfigException) as e:
        client_config({"ssl.keystore.location": "/etc/kafka/client.jks"})
    assert str(e.value) == ("--command-config: ssl.keystore.location=/etc/kafka/client.jks: librdkafka reads "
                            "PKCS#12 keystores only; give ssl.certificate.location and ssl.key.location (PEM) instead")


@pytest.mark.parametrize("jaas", [
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="ops";',
    'org.apache.kafka.common.security.plain.PlainLoginModule required password="pw";',
])
def test_jaas_without_username_or_password_is_refused(jaas: str):
    with pytest.raises(ConfigException) as e:
        client_config({"sasl.jaas.config": jaas}, where="--admin-config")
    assert str(e.value) == '--admin-config: sasl.jaas.config has no username="..." password="..."'


def test_java_truststore_is_refused_but_its_password_and_type_are_dropped():
    """librdkafka has no truststore: the location cannot be used, its password and type mean nothing to it."""
    assert client_config({"ssl.truststore.password": "x", "ssl.truststore.type": "JKS"}) == {}
    with pytest.raises(ConfigException) as e:
        client_config({"ssl.truststore.location": "/etc/kafka/trust.jks"})
    assert str(e.value) == ("--command-config: ssl.truststore.location: librdkafka cannot read a Java truststore; "
                            "give ssl.ca.location (the CA certificate, PEM) instead")


def test_command_config_file_errors_name_the_flag(tmp_path):
    missing = tmp_path / "client.properties"
    with pytest.raises(ConfigException) as e:
        read_command_config(missing)
    assert str(e.value) == f"--command-config {missing}: no such file"
    missing.write_text("security.protocol=SSL\nssl.ca.location = /etc/ca.pem\n")
    assert read_command_config(missing) == {"security.protocol": "SSL", "ssl.ca.location": "/etc/ca.pem"}
