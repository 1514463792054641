"""The saved output of ``kafka-configs.sh --bootstrap-server ... --entity-type topics --describe`` (Kafka's
``ConfigCommand``): each topic's configs as the cluster reports them, read back by ``--topic-configs PATH``.

Two forms, one header line per topic then one indented line per config::

    Dynamic configs for topic orders are:
      retention.ms=86400000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=86400000}
    All configs for topic orders are:
      cleanup.policy=delete sensitive=false synonyms={DEFAULT_CONFIG:log.cleanup.policy=delete}

Without ``--all`` every line is a topic override. With ``--all`` every config is listed with its effective value
and its source is the first synonym's: ``DYNAMIC_TOPIC_CONFIG`` (a topic override), ``STATIC_BROKER_CONFIG``,
``DYNAMIC_BROKER_CONFIG`` or ``DYNAMIC_DEFAULT_BROKER_CONFIG`` (the brokers' ``log.*`` settings, dynamic ones
included, which no ``server.properties`` shows), ``DEFAULT_CONFIG`` (Kafka's default: not taken, so that a value
nobody set stays visible as assumed). Every Kafka topic config is taken and checked (those segdex does not use
change nothing); a name Kafka 4.4 and 3.9 do not know (a newer Kafka's, a plugin's) is left out and named once;
sensitive (``null``) values never.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from segdex.indexcore.config.log_config import KNOWN_CONFIGS, ConfigException, parse_value

_HEADER = re.compile(r"^(Dynamic|All) configs for topic (\S+) are:\s*$")
_ENTRY = re.compile(r"^\s+(?P<key>[^=\s]+)=(?P<value>.*?) sensitive=(?P<sensitive>true|false) "
                    r"synonyms=\{(?P<synonyms>.*)\}\s*$")
_SYNONYM_SOURCE = re.compile(r"^([A-Z_]+):")

DYNAMIC_TOPIC_CONFIG = "DYNAMIC_TOPIC_CONFIG"
DEFAULT_CONFIG = "DEFAULT_CONFIG"


@dataclass
class DescribedTopic:
    """One topic's configs from the file: value and source (``ConfigEntry.ConfigSource`` name) per config."""

    topic: str
    values: dict[str, str] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)  # names no Kafka 4.4 or 3.9 topic config has: not taken


def parse_topic_configs(text: str, where: str = "--topic-configs") -> dict[str, DescribedTopic]:
    """Topic -> its described configs; ConfigException naming the line for anything else (a file that is not
    this output, a value Kafka would reject)."""
    topics: dict[str, DescribedTopic] = {}
    current: DescribedTopic | None = None
    form = ""
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        header = _HEADER.match(line)
        if header:
            form, name = header.groups()
            current = topics.setdefault(name, DescribedTopic(name))
            continue
        entry = _ENTRY.match(line)
        if entry is None or current is None:
            raise ConfigException(f"{where} line {n}: not `kafka-configs --entity-type topics --describe` output "
                                  f"(expected 'Dynamic configs for topic T are:' or 'All configs for topic T are:' "
                                  f"and indented KEY=VALUE sensitive=... synonyms={{...}} lines): {line.strip()!r}")
        key, value = entry["key"], entry["value"]
        synonyms = entry["synonyms"]
        source_match = _SYNONYM_SOURCE.match(synonyms)
        # --all lists every synonym a value has: one with none is Kafka's default of a config no broker setting
        # supplies (leader.replication.throttled.replicas=), as DescribeConfigs says it (DEFAULT_CONFIG)
        source = source_match.group(1) if source_match else (DYNAMIC_TOPIC_CONFIG if form == "Dynamic"
                                                              else DEFAULT_CONFIG)
        if entry["sensitive"] == "true" or source == DEFAULT_CONFIG:
            continue
        if key not in KNOWN_CONFIGS:  # a newer Kafka's, or a plugin's (confluent.*): the cluster took it
            current.unknown.append(key)
            continue
        try:
            parse_value(key, value)
        except ConfigException as e:
            raise ConfigException(f"{where} line {n}: topic {current.topic}: {e}") from None
        current.values[key] = value
        current.sources[key] = source
    if not topics:
        raise ConfigException(f"{where}: no 'Dynamic configs for topic T are:' or 'All configs for topic T are:' "
                              f"line: not `kafka-configs --entity-type topics --describe` output")
    return topics


def read_topic_configs(path: str | os.PathLike) -> dict[str, DescribedTopic]:
    """``parse_topic_configs`` of a file; ConfigException when it cannot be read."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise ConfigException(f"--topic-configs {path}: no such file") from None
    except IsADirectoryError:
        raise ConfigException(f"--topic-configs {path}: a directory, not a file") from None
    except UnicodeDecodeError as e:
        raise ConfigException(f"--topic-configs {path}: not text ({e.reason})") from None
    return parse_topic_configs(text, f"--topic-configs {path}")


__all__ = ["DescribedTopic", "parse_topic_configs", "read_topic_configs"]
