"""The topic configs segdex understands (``LogConfig``), with Kafka's defaults, types and validators, and the
configs Kafka gives its internal topics when it creates them.

Validation follows Kafka's ``LogConfig`` definitions (``ConfigDef`` types INT/LONG/LIST and their ranges), with
Kafka's message text: ``Invalid value 3000000000 for configuration index.interval.bytes: Not a number of type
INT``.

Where a topic's value comes from, highest first (``TopicConfigResolver``):

1. ``--topic-config TOPIC:KEY=VALUE`` (a topic override, as ``kafka-configs --alter`` sets);
2. the configs Kafka sets when it creates an internal topic (``__consumer_offsets`` and ``__transaction_state``
   are ``cleanup.policy=compact``; ``__share_group_state`` is ``delete`` with ``retention.ms=-1``, its
   coordinator moves the log start offset itself; their ``segment.bytes`` the broker's
   ``offsets.topic.segment.bytes``, ``transaction.state.log.segment.bytes`` and
   ``share.coordinator.state.topic.segment.bytes`` from ``--broker-config``, 100 MiB by default): a topic-level
   override in Kafka too, so a ``--config`` default for every topic does not reach them;
3. ``--config KEY=VALUE`` (a default for every topic; topic or broker names);
4. what the cluster reports (``--topic-configs``, the saved ``kafka-configs --describe`` output,
   ``indexcore.topic_configs_file``, or ``--bootstrap-server``): the topic's overrides, and with ``--all`` the
   brokers' settings too;
5. the metadata log in the log dirs (``__cluster_metadata``, ``indexcore.metadata``): the topic's own configs,
   then this broker's dynamic ``log.*`` configs, then the cluster-wide dynamic broker defaults, as a KRaft broker
   layers them (``DynamicBrokerConfig``);
6. the broker's ``log.*`` settings from ``--broker-config server.properties`` (``indexcore.broker_config``);
7. Kafka's default, *assumed*: the summary of a writing command names the topics that ran on assumed values.

``__cluster_metadata`` is the KRaft metadata log: it follows ``metadata.*`` settings and its own snapshots,
never topic configs; no writing command touches it (``is_cluster_metadata``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from decimal import Decimal

from segdex.indexcore.config.kafka_configs import (
    BROKER_CONFIGS,
    MESSAGE_FORMAT_VERSIONS,
    TOPIC_CONFIGS,
    TopicConfigDef,
)
from segdex.indexcore.errors import SegdexError

DAY_MS = 24 * 60 * 60 * 1000
INT_MAX = 2**31 - 1
INT_MIN = -(2**31)
LONG_MAX = 2**63 - 1
LONG_MIN = -(2**63)
MIN_SEGMENT_BYTES = 1024 * 1024  # segment.bytes' lower bound in Kafka 4.x's LogConfig (14 bytes in 3.x)

CLUSTER_METADATA_TOPIC = "__cluster_metadata"

SOURCE_TOPIC_CONFIG = "--topic-config"
SOURCE_INTERNAL_TOPIC = "internal topic"
SOURCE_CONFIG = "--config"
SOURCE_DEFAULT = "Kafka default"
SOURCE_BROKER = "server.properties"
SOURCE_DESCRIBED = "--topic-configs"
SOURCE_METADATA_LOG = "metadata log"


@dataclass(frozen=True)
class MetadataLogConfigs:
    """What the metadata log says, in topic config names: each topic's own configs, the broker's dynamic defaults
    (the cluster-wide ones under this broker's own) with the broker names they came from, and where it was read
    (``offset N``)."""

    topics: Mapping[str, Mapping[str, str]]
    broker: Mapping[str, str]
    broker_origins: Mapping[str, str]
    where: str

# What Kafka sets when it creates its internal topics, with the brokers' default segment sizes; read from the
# Kafka 4.1.1 jars (GroupCoordinatorService.groupMetadataTopicConfigs, TransactionStateManager
# .transactionTopicConfigs, ShareCoordinatorService.shareGroupStateTopicConfigs,
# TopicBasedRemoteLogMetadataManagerConfig).
INTERNAL_TOPIC_CONFIGS: dict[str, dict[str, str]] = {
    "__consumer_offsets": {"cleanup.policy": "compact", "segment.bytes": str(100 * 1024 * 1024)},
    "__transaction_state": {"cleanup.policy": "compact", "segment.bytes": str(100 * 1024 * 1024)},
    "__share_group_state": {"cleanup.policy": "delete", "retention.ms": "-1", "segment.bytes": str(100 * 1024 * 1024)},
    "__remote_log_metadata": {"cleanup.policy": "delete", "retention.ms": "-1"},
}


class ConfigException(SegdexError):
    """An unknown config name or a value Kafka would reject (Kafka's ``ConfigException``)."""


def is_cluster_metadata(topic: str) -> bool:
    """Whether ``topic`` is the KRaft metadata log, which no segdex writing command touches."""
    return topic == CLUSTER_METADATA_TOPIC


# the topic configs segdex uses, and the one broker setting it takes as one (ProducerStateManagerConfig's
# producer.id.expiration.ms: producers idle this long are dropped when a log loads)
_PRODUCER_ID_EXPIRATION = "producer.id.expiration.ms"
_DEFS: dict[str, TopicConfigDef] = {**TOPIC_CONFIGS,
                                    _PRODUCER_ID_EXPIRATION: TopicConfigDef("INT", "86400000", 1, versions=())}
_USED = ("index.interval.bytes", "segment.index.bytes", "segment.bytes", "retention.ms", "retention.bytes",
         "cleanup.policy", "file.delete.delay.ms", "message.format.version", _PRODUCER_ID_EXPIRATION,
         "delete.retention.ms", "min.compaction.lag.ms", "max.compaction.lag.ms", "min.cleanable.dirty.ratio",
         "max.message.bytes")
CONFIG_NAMES = frozenset(_USED)  # the configs segdex uses (LogConfig's fields)
INTERNAL_SEGMENT_BYTES = "internal.segment.bytes"  # 4.x: when set, the segment size instead of segment.bytes
KNOWN_CONFIGS = frozenset(_DEFS)  # every topic config Kafka 4.4 or 3.9 knows, and producer.id.expiration.ms
UNUSED_CONFIGS = KNOWN_CONFIGS - CONFIG_NAMES - {INTERNAL_SEGMENT_BYTES}  # taken, checked, changing nothing here
INDEX_CONFIGS = ("index.interval.bytes", "segment.index.bytes")  # what decides the bytes of the index files


def _invalid(key: str, value: object, why: str) -> ConfigException:
    return ConfigException(f"Invalid value {value} for configuration {key}: {why}")


def did_you_mean(name: str, known: Iterable[str], cutoff: float = 0.6) -> str:
    """`` (did you mean X?)`` with the known name nearest to ``name`` (difflib), or nothing when none is near."""
    near = difflib.get_close_matches(name, sorted(known), n=1, cutoff=cutoff)
    return f" (did you mean {near[0]}?)" if near else ""


def unknown_config(key: str) -> ConfigException:
    """Kafka's ``LogConfig.validateNames`` wording, with the nearest name a topic config or broker setting has."""
    return ConfigException(f"Unknown topic config name: {key}{did_you_mean(key, {*_DEFS, *BROKER_CONFIGS})}")


def java_trim(text: str) -> str:
    """``String.trim``: the characters up to U+0020 cut from both ends (a no-break space stays)."""
    return text.strip("".join(map(chr, range(0x21))))


# Double.valueOf's forms: decimal (ASCII digits, an optional exponent and type suffix), NaN, Infinity, hexadecimal
_JAVA_DECIMAL = re.compile(r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?)")
_JAVA_HEX = re.compile(r"([+-]?)0[xX]([0-9a-fA-F]*\.?[0-9a-fA-F]*)[pP]([+-]?[0-9]+)[fFdD]?")


def java_double(text: str) -> float:
    """``Double.valueOf`` of a trimmed text; ValueError where Java throws ``NumberFormatException``.

    Both round to the nearest double; a hexadecimal value past ``Double.MAX_VALUE`` is an infinity in Java
    (Python's ``fromhex`` raises ``OverflowError``), and one with no digit (``0x.p1``) is refused by both."""
    if _JAVA_DECIMAL.fullmatch(text):
        return float(text.rstrip("fFdD"))
    hexa = _JAVA_HEX.fullmatch(text)
    if not hexa:
        raise ValueError(text)
    try:
        return float.fromhex(f"{hexa.group(1)}0x{hexa.group(2)}p{hexa.group(3)}")
    except OverflowError:
        return float(f"{hexa.group(1)}inf")


def java_integer(text: str, bits: int) -> int:
    """``Short.parseShort``/``Integer.parseInt``/``Long.parseLong`` of a trimmed text: a sign, then decimal digits
    (any script's, as ``Character.digit`` reads them; no underscore), in range; ValueError where Java throws."""
    if not re.fullmatch(r"[+-]?\d+", text):
        raise ValueError(text)
    number = int(text)
    if not -(2 ** (bits - 1)) <= number < 2 ** (bits - 1):
        raise ValueError(text)
    return number


def _java_double(x: float) -> str:
    """``Double.toString``: plain between 10^-3 and 10^7, else ``1.0E-5``; ``NaN``, ``Infinity``."""
    if x != x:
        return "NaN"
    if x in (float("inf"), float("-inf")):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0 or 1e-3 <= abs(x) < 1e7:
        return repr(x)
    d = Decimal(repr(x)).normalize()
    digits = "".join(map(str, d.as_tuple().digits))
    return f"{'-' if x < 0 else ''}{digits[0]}.{digits[1:] or '0'}E{d.adjusted()}"


def _check_range(d: TopicConfigDef, key: str, number: int | float, shown: str) -> None:
    """``ConfigDef.Range.ensureValid`` (gzip's level also takes its -1)."""
    if d.also is not None:  # GzipCompression.LevelValidator
        if number != d.also and not d.at_least <= number <= d.at_most:
            raise _invalid(key, shown, f"Value must be between {d.at_least} and {d.at_most} or equal to {d.also}")
        return
    if d.at_least is not None and number < d.at_least:
        raise _invalid(key, shown, f"Value must be at least {d.at_least}")
    if d.at_most is not None and number > d.at_most:
        raise _invalid(key, shown, f"Value must be no more than {d.at_most}")


_COMMA_WITH_WHITESPACE = re.compile(r"[ \t\n\x0b\f\r]*,[ \t\n\x0b\f\r]*")  # ConfigDef's, Java's \s: ASCII only


def _parse_list(d: TopicConfigDef, key: str, text: str) -> str:
    """``ConfigDef.parseType`` LIST (split at commas, an empty text an empty list), then the validator: Kafka
    4.x's ``ValidList`` (no empty item), ``ThrottledReplicaListValidator``."""
    items = _COMMA_WITH_WHITESPACE.split(text) if text else []
    if d.throttled:
        if not (all(re.fullmatch(r"([0-9]+:[0-9]+)?", p) for p in items) or "".join(items) == "*"):
            raise _invalid(key, f"[{', '.join(items)}]", f"{key} must be the literal '*' or a list of replicas in "
                                                         f"the following format: [partitionId]:[brokerId],"
                                                         f"[partitionId]:[brokerId],...")
        return ",".join(items)
    if d.valid is not None:
        if "" in items:
            raise ConfigException(f"Configuration '{key}' values must not be empty.")
        for p in items:
            if p not in d.valid:
                raise _invalid(key, p, f"String must be one of: {', '.join(d.valid)}")
    return ",".join(items)


def _message_format_version(text: str) -> str:
    """Kafka 3.9's ``MetadataVersion.fromVersionString``: a version, or a release before 4.0 by its short name."""
    shorts = {v.split("-")[0] for v in MESSAGE_FORMAT_VERSIONS if not v.startswith("4.")}
    if text not in MESSAGE_FORMAT_VERSIONS and text not in shorts:
        raise _invalid("message.format.version", text, f"Version {text} is not a valid version")
    return text


def parse_value(key: str, value: str) -> int | float | str:
    """A config value as Kafka's ``ConfigDef.parseType`` and validator read it; ConfigException otherwise (an
    unknown name with the nearest known one)."""
    d = _DEFS.get(key)
    if d is None:
        raise unknown_config(key)
    text = java_trim(value)
    if key == "message.format.version":
        return _message_format_version(text)
    if d.type == "STRING":
        if d.valid is not None and text not in d.valid:
            raise _invalid(key, text, f"String must be one of: {', '.join(d.valid)}")
        return text
    if d.type == "BOOLEAN":
        if text.lower() not in ("true", "false"):
            raise _invalid(key, value, "Expected value to be either true or false")
        return text.lower()
    if d.type == "LIST":  # an empty list is allowed (Kafka 4.x): neither compaction nor deletion
        return _parse_list(d, key, text)
    if d.type == "DOUBLE":  # ConfigDef.parseType: Double.valueOf, then Range.between
        try:
            number = java_double(text)
        except ValueError:
            raise _invalid(key, value, "Not a number of type DOUBLE") from None
        _check_range(d, key, number, _java_double(number))
        return number
    try:
        number = java_integer(text, 32 if d.type == "INT" else 64)
    except ValueError:
        raise _invalid(key, value, f"Not a number of type {d.type}") from None
    _check_range(d, key, number, str(number))
    return number


@dataclass(frozen=True)
class LogConfig:
    index_interval_bytes: int = 4096
    segment_index_bytes: int = 10 * 1024 * 1024
    segment_bytes: int = 1024 * 1024 * 1024
    retention_ms: int = 7 * DAY_MS
    retention_bytes: int = -1
    cleanup_policy: str = "delete"
    file_delete_delay_ms: int = 60000
    message_format_version: str = "3.0-IV1"
    producer_id_expiration_ms: int = 86_400_000
    delete_retention_ms: int = DAY_MS
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    min_cleanable_dirty_ratio: float = 0.5
    max_message_bytes: int = 1_048_588  # the cleaner's read buffer grows to it (cleaner.IoBuffers)

    def with_overrides(self, overrides: Mapping[str, str]) -> LogConfig:
        """A copy with Kafka config names (``index.interval.bytes=1024``) applied; ConfigException when bad. Every
        Kafka topic config is checked; those segdex does not use change nothing (``internal.segment.bytes``, set,
        is the segment size, as Kafka 4.x's ``LogConfig.segmentSize``)."""
        parsed = {key: parse_value(key, str(value)) for key, value in overrides.items()}
        changes = {key.replace(".", "_"): v for key, v in parsed.items() if key in CONFIG_NAMES}
        if INTERNAL_SEGMENT_BYTES in parsed:
            changes["segment_bytes"] = parsed[INTERNAL_SEGMENT_BYTES]
        config = replace(self, **changes)
        if config.min_compaction_lag_ms > config.max_compaction_lag_ms:  # LogConfig.validateValues
            raise ConfigException(f"conflict topic config setting min.compaction.lag.ms "
                                  f"({config.min_compaction_lag_ms}) > max.compaction.lag.ms "
                                  f"({config.max_compaction_lag_ms})")
        return config

    def validate(self) -> None:
        """Check every value as Kafka's LogConfig would (for configs built field by field)."""
        for f in fields(self):
            parse_value(f.name.replace("_", "."), str(getattr(self, f.name)))

    @property
    def delete(self) -> bool:
        """``LogConfig.delete``: the cleanup policy includes ``delete`` (also ``compact,delete``)."""
        return "delete" in [p.strip() for p in self.cleanup_policy.split(",")]

    @property
    def compact(self) -> bool:
        """``LogConfig.compact``: the cleanup policy includes ``compact`` (also ``compact,delete``)."""
        return "compact" in [p.strip() for p in self.cleanup_policy.split(",")]

    @property
    def legacy_record_version(self) -> bool:
        """``LogConfig.recordVersion`` below V2: a 3.x topic pinned to ``message.format.version`` 0.8-0.10, whose
        log keeps no leader-epoch cache (``UnifiedLog.maybeCreateLeaderEpochCache`` deletes the file)."""
        return self.message_format_version.startswith(("0.8", "0.9", "0.10"))

    def describe(self, keys: list[str] | None = None) -> str:
        return ", ".join(f"{k}={getattr(self, k.replace('.', '_'))}" for k in (keys or list(_USED)))


@dataclass(frozen=True)
class ResolvedConfig:
    """A topic's effective config and where each value came from (key -> one of the ``SOURCE_*`` names)."""

    topic: str
    config: LogConfig
    sources: dict[str, str] = field(default_factory=dict)
    unused: dict[str, str] = field(default_factory=dict)  # Kafka configs given that segdex does not use: value

    def assumed(self, keys: list[str] | tuple[str, ...]) -> list[str]:
        """The keys among ``keys`` that nobody gave: Kafka's defaults, assumed."""
        return [k for k in keys if self.sources.get(k, SOURCE_DEFAULT) == SOURCE_DEFAULT]

    def rows(self) -> list[dict[str, str]]:
        """One ``{"topic", "config", "value", "source"}`` per config segdex uses (the effective value and where it
        came from, ``Kafka default`` when nobody gave it), then one per Kafka config given that it does not use."""
        used = [{"topic": self.topic, "config": key, "value": str(getattr(self.config, key.replace(".", "_"))),
                 "source": self.sources.get(key, SOURCE_DEFAULT)} for key in sorted(CONFIG_NAMES)]
        return used + [{"topic": self.topic, "config": key, "value": value, "source": self.sources[key]}
                       for key, value in sorted(self.unused.items())]

    def from_internal_topic(self) -> dict[str, str]:
        return {k: str(getattr(self.config, k.replace(".", "_")))
                for k, s in self.sources.items() if s == SOURCE_INTERNAL_TOPIC}


class TopicConfigResolver:
    """Each topic's effective ``LogConfig`` from ``--config``, ``--topic-config`` and Kafka's internal-topic and
    default configs (precedence in the module docstring). Values are validated when the resolver is built."""

    def __init__(self, config: Mapping[str, str] | None = None,
                 topic_configs: Mapping[str, Mapping[str, str]] | None = None,
                 broker: Mapping[str, str] | None = None, broker_origins: Mapping[str, str] | None = None,
                 described: Mapping[str, Mapping[str, str]] | None = None,
                 described_sources: Mapping[str, Mapping[str, str]] | None = None,
                 internal: Mapping[str, Mapping[str, str]] | None = None,
                 internal_origins: Mapping[str, Mapping[str, str]] | None = None,
                 metadata: MetadataLogConfigs | None = None) -> None:
        self.metadata = metadata
        self.described = {t: dict(kv) for t, kv in (described or {}).items()}
        self.described_sources = {t: dict(kv) for t, kv in (described_sources or {}).items()}
        # Kafka's internal-topic configs, with the broker's own settings of them (offsets.topic.segment.bytes, ...)
        self.internal = {t: {**kv, **(internal or {}).get(t, {})} for t, kv in INTERNAL_TOPIC_CONFIGS.items()}
        self.internal_origins = {t: dict(kv) for t, kv in (internal_origins or {}).items()}
        self.broker = dict(broker or {})
        self.broker_origins = dict(broker_origins or {})
        self.config = dict(config or {})
        self.topic_configs = {t: dict(kv) for t, kv in (topic_configs or {}).items()}
        for topic in self.topic_configs:
            if not topic:
                raise ConfigException("empty topic name in --topic-config")
        self._cache: dict[str, ResolvedConfig] = {}
        metadata_broker = dict(metadata.broker) if metadata is not None else {}
        self.default = LogConfig().with_overrides({**self.broker, **metadata_broker, **self.config})
        for topic in self.topic_configs:
            self.resolve(topic)

    def resolve(self, topic: str) -> ResolvedConfig:
        cached = self._cache.get(topic)
        if cached is not None:
            return cached
        values: dict[str, str] = {}
        sources: dict[str, str] = {}
        origins = {SOURCE_BROKER: self.broker_origins, SOURCE_DESCRIBED: self.described_sources.get(topic, {}),
                   SOURCE_INTERNAL_TOPIC: self.internal_origins.get(topic, {})}
        metadata: tuple = ()
        if self.metadata is not None:  # "metadata log (log.retention.ms, offset 59)", "metadata log (offset 59)"
            where = self.metadata.where
            origins[SOURCE_METADATA_LOG] = {k: f"{o}, {where}" for k, o in self.metadata.broker_origins.items()}
            metadata = ((SOURCE_METADATA_LOG, self.metadata.broker),
                        (f"{SOURCE_METADATA_LOG} ({where})", self.metadata.topics.get(topic)))
        for source, layer in ((SOURCE_BROKER, self.broker), *metadata, (SOURCE_DESCRIBED, self.described.get(topic)),
                              (SOURCE_CONFIG, self.config),
                              (SOURCE_INTERNAL_TOPIC, self.internal.get(topic)),
                              (SOURCE_TOPIC_CONFIG, self.topic_configs.get(topic))):
            for key, value in (layer or {}).items():
                values[key] = value
                origin = origins.get(source, {}).get(key)
                sources[key] = f"{source} ({origin})" if origin else source
        resolved = ResolvedConfig(topic, LogConfig().with_overrides(values), sources,
                                  {k: str(v) for k, v in values.items() if k not in CONFIG_NAMES})
        self._cache[topic] = resolved
        return resolved

    def __call__(self, topic: str) -> LogConfig:
        return self.resolve(topic).config

    def configured_topics(self) -> set[str]:
        """The topics some layer names (a flag, a described file or the metadata log): the others take
        ``default``."""
        named = {*self.topic_configs, *self.described}
        return named | set(self.metadata.topics) if self.metadata is not None else named


def parse_config_args(items: list[str] | None) -> dict[str, str]:
    """``["k=v", ...]`` -> ``{k: v}``; ConfigException for an item without ``=``."""
    out = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigException(f"expected KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def parse_topic_config_args(items: list[str] | None) -> dict[str, dict[str, str]]:
    """``["orders:index.interval.bytes=1024", ...]`` -> ``{"orders": {"index.interval.bytes": "1024"}}``."""
    out: dict[str, dict[str, str]] = {}
    for item in items or []:
        topic, sep, rest = item.partition(":")
        if not sep or not topic:
            raise ConfigException(f"expected TOPIC:KEY=VALUE, got {item!r}")
        out.setdefault(topic, {}).update(parse_config_args([rest]))
    return out
