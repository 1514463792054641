"""The parts of ``topic_configs_live`` that need no broker: naming a config entry's source.

Expected names are the ``ConfigSource`` ids of Kafka's DescribeConfigs protocol (``DescribeConfigsResponse``):
1 DYNAMIC_TOPIC_CONFIG, 4 STATIC_BROKER_CONFIG, 5 DEFAULT_CONFIG.
"""

from __future__ import annotations

from confluent_kafka.admin import ConfigSource

from segdex.indexcore.topic_configs_live import _source_name


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
