"""Every broker setting segdex checks (``broker_config.check_broker_value``: numbers, their ranges, booleans) judged
beside Kafka's own ``KafkaConfig`` (4.4's ``ConfigDef``, in its JVM: the key's type, then its validator) over a set
of values: the same values taken, the same refused, in the same words. Kafka's answers are kept in
tests/kafka/golden/broker_values.json (``SEGDEX_RECORD_GOLDEN=1`` records them); the in-process test compares
segdex's answers with them."""

from __future__ import annotations

import json
import os

import pytest

from segdex.indexcore.config.broker_config import check_broker_value
from segdex.indexcore.config.kafka_configs import BROKER_CONFIGS
from segdex.indexcore.config.log_config import ConfigException
from tests.support.config_answers import Answers, answered, grouped, groups_text
from tests.support.fixtures import GOLDEN

ANSWERS = GOLDEN / "broker_values.json"
VALUES = ["", " ", "0", " 7 ", "1", "-1", "-2", "2", "13", "14", "100", "1000", "65535", "32767", "32768", "-32768",
          "-32769", "2147483647", "2147483648", "-2147483648", "-2147483649", "9223372036854775807",
          "9223372036854775808", "-9223372036854775809", "0.5", "1.5", "1.0", "-0.1", "1e3", "abc", "0x10", "+5",
          "true", "TRUE", "False", " true ", "yes", "1_000", " abc ", "\u0663", "\u00a07", "+", "1.5d", "2f",
          "Infinity", "-Infinity", "NaN", "inf", "nan", "0x1p3", ".5", "5.", "1E-5", "0.001", "1e7", "9999999.0",
          "1.5F", "2D", "0x.p1", "0x1p99999", "-0x1.8p1"]
CHECKED = ("BOOLEAN", "INT", "LONG", "SHORT", "DOUBLE")  # the types check_broker_value parses


def _names() -> list[str]:
    return sorted(n for n, (kind, _, _, versions) in BROKER_CONFIGS.items() if kind in CHECKED and "4.4" in versions)


def _segdex(name: str, value: str) -> str | None:
    try:
        check_broker_value("server.properties", name, value)
    except ConfigException as e:
        return str(e).removeprefix("server.properties: ")
    return None


def _kept() -> Answers:
    """Kafka's answers as kept, by setting and value (None: taken)."""
    return answered(json.loads(ANSWERS.read_text()), VALUES)


def test_kafkas_answers_are_the_recorded_ones(kafka44):
    """Kafka 4.4's ``KafkaConfig`` over every (setting, value): its answers are the ones kept (recorded when asked)."""
    answers = {name: {value: kafka44.broker_value(name, value) for value in VALUES} for name in _names()}
    if os.environ.get("SEGDEX_RECORD_GOLDEN") == "1":
        ANSWERS.write_text(groups_text(grouped(answers)) + "\n")
    assert answers == _kept()


def test_every_checked_broker_setting_is_judged_as_kafka_judges_it():
    answers = _kept()
    assert sorted(answers) == _names() and len(answers) >= 100
    wrong = [(name, value, theirs, _segdex(name, value)) for name, by_value in answers.items()
             for value, theirs in by_value.items() if _segdex(name, value) != theirs]
    assert wrong == []
    assert sum(theirs is not None for by_value in answers.values() for theirs in by_value.values()) >= 1000


@pytest.mark.parametrize("value", ["${file:/etc/kafka/secrets.properties:retention}", " ${env:RETENTION} "])
def test_a_value_a_config_provider_fills_is_left_to_the_broker(value):
    """The broker resolves ``${provider:path:key}`` before its ConfigDef parses the value: segdex cannot, and leaves
    it."""
    assert _segdex("log.retention.check.interval.ms", value) is None
