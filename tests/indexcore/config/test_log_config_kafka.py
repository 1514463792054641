"""Every topic config's values judged by segdex beside Kafka's own ``LogConfig.validate`` (Kafka 4.4's and 3.9's, in
their JVM): the same values taken, the same refused, in the same words (segdex adds a did-you-mean to an unknown
name). Where 3.9 and 4.4 differ segdex keeps 4.4's rule (``segment.bytes`` at least 1 MiB, no empty item in a
``cleanup.policy`` list). Kafka's answers are kept in tests/kafka/golden/topic_values.json
(``SEGDEX_RECORD_GOLDEN=1`` records them); segdex's are compared with them in the test process."""

from __future__ import annotations

import json
import os

import pytest

from segdex.indexcore.config.kafka_configs import TOPIC_CONFIGS
from segdex.indexcore.config.log_config import ConfigException, parse_value
from tests.support.config_answers import Answers, answered, grouped, groups_text
from tests.support.fixtures import GOLDEN

VALUES = ["", "0", "1", "-1", "-2", "-3", "2", "9", "10", "17", "22", "23", "-131072", "-131073", "0.5", "1.5",
          "-0.1", "2147483647", "2147483648", "-2147483649", "9223372036854775807", "9223372036854775808", "abc",
          "true", "FALSE", "yes", "1048576", "1048575", "14", "compact", "compact,delete", "delete,", "compact,,delete",
          "forever", "zstd", "GZIP", "producer", "CreateTime", "logappendtime", "*", "0:1,1:2", "0:1,x", "3.0-IV1",
          "1e-5", "-1e8", "0.10.2", "0.10", "3.0-IV9", "4.0", "4.0-IV1", "2.8", "1_000", " abc ", " 7 ", "+5", "\u0663",
          "\u00a07", "1.5d", "Infinity", "NaN", "inf", "0x1p-2", "1E-5", " compact ",
          "1.5F", "2D", "-Infinity", "0x.p1", "0x1p99999"]
# where Kafka 3.9 and 4.4 differ, segdex answers as 4.4
DIFFERS_IN_39 = {("segment.bytes", v) for v in VALUES if v.strip().lstrip("+-").isdigit() and int(v) < 1048576} | {
    ("cleanup.policy", v) for v in ("delete,", "compact,,delete")}


def _segdex(name: str, value: str) -> str | None:
    try:
        parse_value(name, value)
    except ConfigException as e:
        return str(e).split(" (did you mean")[0]
    return None


ANSWERS = GOLDEN / "topic_values.json"  # Kafka's answers by version: configs grouped, their refusals by value


def _names(version: str) -> list[str]:
    return sorted(n for n, d in TOPIC_CONFIGS.items() if version[:3] in d.versions) + ["segment.mss"]


def _kept(version: str) -> Answers:
    """Kafka's answers as kept for ``version``, by config and value (None: taken)."""
    return answered(json.loads(ANSWERS.read_text())[version], VALUES)


@pytest.mark.parametrize("version", ["4.4.0", "3.9.2"])
def test_kafkas_answers_are_the_recorded_ones(version: str, kafka44, kafka39):
    """Kafka's ``LogConfig.validate`` over every (config, value): its answers are the ones kept
    (``SEGDEX_RECORD_GOLDEN=1`` records them)."""
    kafka = kafka44 if version == "4.4.0" else kafka39
    answers = {name: {value: kafka.validate(name, value) for value in VALUES} for name in _names(version)}
    if os.environ.get("SEGDEX_RECORD_GOLDEN") == "1":
        kept = json.loads(ANSWERS.read_text()) if ANSWERS.exists() else {}
        kept[version] = grouped(answers)
        ANSWERS.write_text("{\n" + ",\n".join(f"{json.dumps(k)}: {groups_text(kept[k])}" for k in sorted(kept))
                           + "\n}\n")
    assert answers == _kept(version)


@pytest.mark.parametrize("version", ["4.4.0", "3.9.2"])
def test_every_topic_config_judged_as_kafka_judges_it(version: str):
    """segdex's answers equal Kafka's kept ones, in the test process."""
    wrong = [(name, value, theirs, _segdex(name, value)) for name, by_value in _kept(version).items()
             for value, theirs in by_value.items()
             if not (version == "3.9.2" and (name, value) in DIFFERS_IN_39) and _segdex(name, value) != theirs]
    assert wrong == []
