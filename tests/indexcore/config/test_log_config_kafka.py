"""Every topic config's values judged by segdex beside Kafka's own ``LogConfig.validate`` (Kafka 4.4's and 3.9's, in
their JVM): the same values taken, the same refused, in the same words (segdex adds a did-you-mean to an unknown
name). Where 3.9 and 4.4 differ segdex keeps 4.4's rule (``segment.bytes`` at least 1 MiB, no empty item in a
``cleanup.policy`` list)."""

from __future__ import annotations

import pytest

from segdex.indexcore.config.kafka_configs import TOPIC_CONFIGS
from segdex.indexcore.config.log_config import ConfigException, parse_value

VALUES = ["", "0", "1", "-1", "-2", "-3", "2", "9", "10", "17", "22", "23", "-131072", "-131073", "0.5", "1.5",
          "-0.1", "2147483647", "2147483648", "-2147483649", "9223372036854775807", "9223372036854775808", "abc",
          "true", "FALSE", "yes", "1048576", "1048575", "14", "compact", "compact,delete", "delete,", "compact,,delete",
          "forever", "zstd", "GZIP", "producer", "CreateTime", "logappendtime", "*", "0:1,1:2", "0:1,x", "3.0-IV1",
          "1e-5", "-1e8", "0.10.2", "0.10", "3.0-IV9", "4.0", "4.0-IV1", "2.8", "1_000", " abc ", " 7 ", "+5", "\u0663",
          "\u00a07", "1.5d", "Infinity", "NaN", "inf", "0x1p-2", "1E-5", " compact "]
# where Kafka 3.9 and 4.4 differ, segdex answers as 4.4
DIFFERS_IN_39 = {("segment.bytes", v) for v in VALUES if v.strip().lstrip("+-").isdigit() and int(v) < 1048576} | {
    ("cleanup.policy", v) for v in ("delete,", "compact,,delete")}


def _segdex(name: str, value: str) -> str | None:
    try:
        parse_value(name, value)
    except ConfigException as e:
        return str(e).split(" (did you mean")[0]
    return None


@pytest.mark.parametrize("version", ["4.4.0", "3.9.2"])
def test_every_topic_config_judged_as_kafka_judges_it(version: str, kafka44, kafka39):
    kafka = kafka44 if version == "4.4.0" else kafka39
    names = sorted(n for n, d in TOPIC_CONFIGS.items() if version[:3] in d.versions) + ["segment.mss"]
    wrong = []
    for name in names:
        for value in VALUES:
            if version == "3.9.2" and (name, value) in DIFFERS_IN_39:
                continue
            theirs, ours = kafka.validate(name, value), _segdex(name, value)
            if theirs != ours:
                wrong.append((name, value, theirs, ours))
    assert wrong == []
