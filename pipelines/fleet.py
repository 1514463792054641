"""Whose row is whose across a fleet: every metadata row carries the Kafka cluster id and the broker (node) id
from its log dir's ``meta.properties``, and the host that wrote it, beside the log dir.

Across a fleet every broker's log dirs usually sit at the same path, so the path alone cannot tell two brokers'
rows apart: ``cluster_id`` and ``broker_id`` lead every such table's merge keys, and a rerun's scope (the rows it
replaces) is its own broker's rows of its own log dirs only. A log dir without ``meta.properties`` (a copy, a
ZooKeeper-era dir without one) is cluster ``""`` and broker ``-1``, never NULL, so keys always compare equal.
Rows written before these columns existed read NULL there; ``MetadataStore`` matches keys NULL-safely, so a rerun
of such a log dir replaces them.
"""

from __future__ import annotations

import functools
import json
import os
import socket
from dataclasses import dataclass, replace

import pyarrow as pa

from segdex.indexcore.config.broker_config import load_properties
from segdex.indexcore.errors import SegdexError
from segdex.indexcore.log.layout import META_PROPERTIES

from .schemas import TableSpec

ORIGIN_KEYS = ("cluster_id", "broker_id")
ORIGIN_FIELDS = (pa.field("cluster_id", pa.string()), pa.field("broker_id", pa.int32()), pa.field("host", pa.string()))
UNKNOWN_CLUSTER, UNKNOWN_BROKER = "", -1


def has_origin_keys(keys: tuple[str, ...] | list[str]) -> bool:
    """Whether a table's merge keys start with the origin (``with_origin`` put them there)."""
    return tuple(keys[:len(ORIGIN_KEYS)]) == ORIGIN_KEYS


@dataclass(frozen=True)
class Origin:
    """Who a log dir's rows come from: its cluster and broker (``meta.properties``), and this host."""

    cluster_id: str
    broker_id: int
    host: str


@functools.lru_cache(maxsize=4096)
def origin_of(log_dir: str | None) -> Origin:
    """The origin of ``log_dir``'s rows: ``cluster.id`` and ``node.id`` (``broker.id`` in ZooKeeper-era dirs) of
    its ``meta.properties``, unknown ones as ``""``/``-1``; the host is this process's."""
    host = socket.gethostname()
    if not log_dir:
        return Origin(UNKNOWN_CLUSTER, UNKNOWN_BROKER, host)
    path = os.path.join(log_dir, META_PROPERTIES)
    try:
        props = load_properties(path, "meta.properties") if os.path.isfile(path) else {}
    except (SegdexError, OSError):
        props = {}
    try:
        broker = int(props.get("node.id", props.get("broker.id", UNKNOWN_BROKER)))
    except ValueError:
        broker = UNKNOWN_BROKER
    return Origin(props.get("cluster.id", UNKNOWN_CLUSTER), broker, host)


def _dir_column(schema: pa.Schema) -> str | None:
    return "log_dir" if "log_dir" in schema.names else "log_dirs" if "log_dirs" in schema.names else None


def with_origin(spec: TableSpec) -> TableSpec:
    """``spec`` with the origin columns after its log dir column, and ``cluster_id``, ``broker_id`` leading its
    merge keys when its keys hold the log dir; tables without a log dir column are returned as they are."""
    column = _dir_column(spec.schema)
    if column is None or "broker_id" in spec.schema.names:
        return spec
    schema = spec.schema
    at = schema.get_field_index(column) + 1
    for i, f in enumerate(ORIGIN_FIELDS):
        schema = schema.insert(at + i, f)
    keys = (*ORIGIN_KEYS, *spec.keys) if column in spec.keys else spec.keys
    return replace(spec, schema=schema, keys=keys)


def _first_dir(value: str | None) -> str | None:
    """A ``runs.log_dirs`` value (a JSON list) names the run's first log dir; a ``log_dir`` is itself."""
    if value and value.startswith("["):
        try:
            dirs = json.loads(value)
        except ValueError:
            return None
        return dirs[0] if dirs else None
    return value


def stamp(table: pa.Table) -> pa.Table:
    """Fill the origin columns of ``table``'s rows that have none, from each row's log dir."""
    column = _dir_column(table.schema)
    if column is None or "broker_id" not in table.schema.names or table.num_rows == 0:
        return table
    dirs = table.column(column).to_pylist()
    origins = [origin_of(_first_dir(d)) for d in dirs]
    out = table
    for name in ("cluster_id", "broker_id", "host"):
        have = out.column(name).to_pylist()
        values = [h if h is not None else getattr(o, name) for h, o in zip(have, origins, strict=True)]
        idx = out.schema.get_field_index(name)
        out = out.set_column(idx, out.schema.field(idx), pa.array(values, out.schema.field(idx).type))
    return out


def scope_origins(log_dirs: frozenset[str]) -> set[tuple[str, int]]:
    """The (cluster id, broker id) pairs whose rows a rerun over ``log_dirs`` may replace."""
    return {(o.cluster_id, o.broker_id) for o in map(origin_of, log_dirs)}
