"""Kafka's answers to config values (its ``ConfigDef`` over (name, value) pairs: a refusal's message, or None where
it takes the value), kept compactly in a golden file: names answered alike grouped, each group's refusals by value,
the name in a message written ``{name}``. Shared by tests/indexcore/config's broker and topic config judges."""

from __future__ import annotations

import json

Answers = dict[str, dict[str, str | None]]  # name -> value -> Kafka's refusal (None: taken)


def grouped(answers: Answers) -> list[dict]:
    """``answers`` as kept: ``[{"names": [...], "refused": {value: message}}, ...]``."""
    groups: dict[str, list[str]] = {}
    for name, by_value in answers.items():
        refused = {v: m.replace(name, "{name}") for v, m in by_value.items() if m is not None}
        groups.setdefault(json.dumps(refused, sort_keys=True), []).append(name)
    return [{"names": sorted(names), "refused": json.loads(refused)} for refused, names in sorted(groups.items())]


def groups_text(groups: list[dict]) -> str:
    """The kept groups as JSON, one group a line."""
    return "[\n" + ",\n".join(json.dumps(g, sort_keys=True) for g in groups) + "\n]"


def answered(groups: list[dict], values: list[str]) -> Answers:
    """The answers ``grouped`` kept, by name and value, for ``values``."""
    return {name: {v: group["refused"][v].replace("{name}", name) if v in group["refused"] else None for v in values}
            for group in groups for name in group["names"]}
