"""The topic configs segdex understands (``LogConfig``), with Kafka's defaults."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from .errors import SegdexError

DAY_MS = 24 * 60 * 60 * 1000


class ConfigException(SegdexError):
    """An unknown config name or a value Kafka would reject."""


@dataclass(frozen=True)
class LogConfig:
    index_interval_bytes: int = 4096
    segment_index_bytes: int = 10 * 1024 * 1024
    segment_bytes: int = 1024 * 1024 * 1024
    retention_ms: int = 7 * DAY_MS
    retention_bytes: int = -1
    cleanup_policy: str = "delete"
    file_delete_delay_ms: int = 60000

    def with_overrides(self, overrides: dict[str, str]) -> LogConfig:
        """A copy with Kafka config names (``index.interval.bytes=1024``) applied."""
        changes = {}
        for key, value in overrides.items():
            attr = key.replace(".", "_")
            field = next((f for f in fields(self) if f.name == attr), None)
            if field is None:
                known = ", ".join(sorted(f.name.replace("_", ".") for f in fields(self)))
                raise ConfigException(f"unknown config {key!r} (known: {known})")
            if field.type in ("int", int):
                try:
                    changes[attr] = int(value)
                except ValueError:
                    raise ConfigException(f"config {key} needs an integer, got {value!r}") from None
            else:
                changes[attr] = value
        config = replace(self, **changes)
        config.validate()
        return config

    def validate(self) -> None:
        if self.index_interval_bytes < 0:
            raise ConfigException(f"index.interval.bytes must be >= 0, got {self.index_interval_bytes}")
        if self.segment_index_bytes < 4:
            raise ConfigException(f"segment.index.bytes must be >= 4, got {self.segment_index_bytes}")
        for policy in self.cleanup_policy.split(","):
            if policy.strip() not in ("delete", "compact"):
                raise ConfigException(f"cleanup.policy must be delete and/or compact, got {self.cleanup_policy!r}")


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
