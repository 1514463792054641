"""The ``segdex_fleet`` DAG: every broker of a fleet reindexes its own log dirs on its own host into the shared
tables, then one check of the whole fleet and one maintenance of the tables, both from one place.

```
brokers -> reindex_broker (mapped: one task per broker) -> maintenance -> fleet_check
```

Params (trigger with config to override any of them):

``brokers``         list of ``{"broker_id": N, "host": "kafka-N.example", "log_dirs": ["/var/lib/kafka/data"]}``;
                    empty: the Airflow Variable ``segdex_fleet_brokers`` (the same list as JSON)
``metadata``        the shared tables, e.g. ``s3://kafka-lake/segdex`` (AWS settings from the workers' environment)
``fail_statuses``   segment statuses that fail the fleet check
``vacuum_hours``    ``segdex compact --vacuum-hours`` of the maintenance task

Each mapped ``reindex_broker`` runs ``segdex reindex`` over its broker's log dirs where the task runs, and first
checks that those log dirs are that broker's (``meta.properties`` ``node.id``), so a task that landed on the
wrong host fails before it writes. How a task reaches its broker's host: airflow_dags/README.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from airflow.sdk import DAG, Param, Variable, chain, get_current_context, task

from segdex.indexcore.status import FAIL_STATUSES as DEFAULT_FAIL_STATUSES

DAG_ID = "segdex_fleet"
BROKERS_VARIABLE = "segdex_fleet_brokers"
QUEUE_PER_HOST_ENV = "SEGDEX_FLEET_QUEUE_PER_HOST"
FAIL_STATUSES = tuple(str(s) for s in DEFAULT_FAIL_STATUSES)


class FleetCheckFailed(Exception):
    """The fleet check found brokers that need attention (the message names each one)."""


# ---------------------------------------------------------------------------------------------------------------
# Pure helpers (unit-tested)
# ---------------------------------------------------------------------------------------------------------------

def normalize_brokers(brokers: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The brokers list checked: each has an int ``broker_id``, a ``host`` and non-empty ``log_dirs``; ids unique."""
    out, seen = [], set()
    for b in brokers:
        broker_id, log_dirs = int(b["broker_id"]), [str(d) for d in b.get("log_dirs") or []]
        if not log_dirs:
            raise ValueError(f"broker {broker_id}: no log_dirs")
        if broker_id in seen:
            raise ValueError(f"broker {broker_id} is listed twice")
        seen.add(broker_id)
        out.append({"broker_id": broker_id, "host": str(b.get("host") or ""), "log_dirs": log_dirs})
    if not out:
        raise ValueError(f"no brokers: set params.brokers or the Variable {BROKERS_VARIABLE}")
    return out


def parse_time_brokers() -> list[dict[str, Any]]:
    """The Variable's brokers when the DAG file is parsed (the queue-per-host layout), each with a host."""
    listed = normalize_brokers(json.loads(Variable.get(BROKERS_VARIABLE, default="[]")))
    missing = [b["broker_id"] for b in listed if not b["host"]]
    if missing:
        raise ValueError(f"{QUEUE_PER_HOST_ENV}=1: broker(s) {missing} have no host (their worker queue)")
    return listed


def reindex_command(broker: Mapping[str, Any], metadata: str) -> list[str]:
    """The ``segdex reindex`` a broker's task runs (in this worker's Python)."""
    return [sys.executable, "-m", "segdex.jobs.cli", "reindex", "--metadata", metadata, "--no-progress",
            *broker["log_dirs"]]


def wrong_log_dirs(broker: Mapping[str, Any]) -> list[str]:
    """The broker's log dirs whose ``meta.properties`` names another broker (or none): the task is not where its
    broker's disks are."""
    from segdex.pipelines.fleet import origin_of

    return [d for d in broker["log_dirs"] if origin_of(d).broker_id != broker["broker_id"]]


def _latest_runs(runs: list[dict], since: datetime | None) -> dict[int, dict]:
    latest: dict[int, dict] = {}
    for r in runs:
        if r["command"] != "reindex" or (since is not None and r["started_at"] < since):
            continue
        b = r["broker_id"]
        if b not in latest or r["started_at"] > latest[b]["started_at"]:
            latest[b] = r
    return latest


def _broker_problems(broker: Mapping[str, Any], run: dict | None, segments: list[dict],
                     fail_statuses: Sequence[str]) -> list[str]:
    b = broker["broker_id"]
    if run is None:
        return [f"broker {b}: no reindex run recorded in this fleet run"]
    problems = []
    if run["exit_status"] >= 2:
        problems.append(f"broker {b}: reindex exit {run['exit_status']}")
    bad = [s for s in segments if s["status"] in fail_statuses]
    for s in bad[:10]:
        problems.append(f"broker {b}: {s['log_dir']}/{s['topic']}-{s['partition']} segment {s['base_offset']}: "
                        f"{s['status']}")
    if len(bad) > 10:
        problems.append(f"broker {b}: {len(bad) - 10} more segment(s) with a failing status")
    seen_dirs = {s["log_dir"] for s in segments}
    for d in broker["log_dirs"]:
        if os.path.realpath(d) not in seen_dirs:
            problems.append(f"broker {b}: {d}: no segment recorded")
    return problems


def _broker_named(broker_id: int, problems: list[str]) -> bool:
    return any(p.startswith(f"broker {broker_id}:") for p in problems)


def fleet_check(metadata: str, brokers: Sequence[Mapping[str, Any]], fail_statuses: Sequence[str],
                since: datetime | None = None) -> dict[int, dict[str, int]]:
    """Every broker's latest reindex run since ``since`` is in ``runs``, and its log dirs' rows in ``segments``
    have no failing status; returns per-broker counts, or raises ``FleetCheckFailed`` naming each broker."""
    from segdex.pipelines import metadata_store

    ids = {b["broker_id"] for b in brokers}
    latest = _latest_runs(metadata_store.read_arrow(metadata, "runs").to_pylist(), since)
    segments = [s for s in metadata_store.read_arrow(metadata, "segments").to_pylist() if s["broker_id"] in ids]
    counts, problems = {}, []
    for broker in brokers:
        b = broker["broker_id"]
        mine = [s for s in segments if s["broker_id"] == b]
        counts[b] = {"segments": len(mine), "bytes": sum(s["size_bytes"] or 0 for s in mine)}
        problems += _broker_problems(broker, latest.get(b), mine, fail_statuses)
    for b, c in counts.items():
        print(f"broker {b}: {c['segments']} segments, {c['bytes']} bytes")
    if problems:
        failing = sorted({b["broker_id"] for b in brokers if _broker_named(b["broker_id"], problems)})
        raise FleetCheckFailed(f"fleet check failed for broker(s) {failing}:\n" + "\n".join(problems))
    print(f"fleet check passed: {len(brokers)} broker(s)")
    return counts


# ---------------------------------------------------------------------------------------------------------------
# The tasks
# ---------------------------------------------------------------------------------------------------------------

def _params() -> Mapping[str, Any]:
    return get_current_context()["params"]


@task
def brokers() -> list[dict[str, Any]]:
    listed = _params()["brokers"] or json.loads(Variable.get(BROKERS_VARIABLE, default="[]"))
    return normalize_brokers(listed)


@task(map_index_template="broker {{ broker_id }}")
def reindex_broker(broker: dict[str, Any]) -> dict[str, Any]:
    """``segdex reindex`` of one broker's log dirs here; exit 1 (bad segments, recorded) passes: the check decides."""
    get_current_context()["broker_id"] = broker["broker_id"]  # type: ignore[literal-required]  # the map index's name
    wrong = wrong_log_dirs(broker)
    if wrong:
        raise RuntimeError(f"broker {broker['broker_id']}: {wrong} hold another broker's meta.properties "
                           f"(is this task on {broker['host'] or 'its broker host'}?)")
    cmd = reindex_command(broker, str(_params()["metadata"]))
    print(" ".join(cmd), flush=True)
    status = subprocess.run(cmd, check=False).returncode
    if status not in (0, 1):
        raise RuntimeError(f"broker {broker['broker_id']}: segdex reindex exit {status}")
    return {"broker_id": broker["broker_id"], "exit_status": status}


@task(trigger_rule="all_done")
def maintenance() -> None:
    """OPTIMIZE and VACUUM of the shared tables, from one place; writers need not stop (Delta's vacuum keeps
    files younger than ``vacuum_hours``)."""
    params = _params()
    cmd = [sys.executable, "-m", "segdex.jobs.cli", "compact", "--metadata", str(params["metadata"]),
           "--vacuum-hours", str(params["vacuum_hours"])]
    status = subprocess.run(cmd, check=False).returncode
    if status != 0:
        raise RuntimeError(f"segdex compact --metadata: exit {status}")


@task(trigger_rule="all_done", retries=0)
def check(brokers: list[dict[str, Any]]) -> dict[int, dict[str, int]]:
    context = get_current_context()
    params = context["params"]
    since = context["dag_run"].start_date
    return fleet_check(str(params["metadata"]), brokers, params["fail_statuses"] or FAIL_STATUSES, since)


PARAMS = {
    "brokers": Param([], type="array", items={"type": "object", "required": ["broker_id", "log_dirs"]},
                     description=f"[{{broker_id, host, log_dirs}}]; empty: the Variable {BROKERS_VARIABLE}"),
    "metadata": Param(os.environ.get("SEGDEX_METADATA", "/var/lib/segdex/metadata"), type="string", minLength=1,
                      description="the shared tables, e.g. s3://bucket/prefix"),
    "fail_statuses": Param(list(FAIL_STATUSES), type="array", items={"type": "string"}),
    "vacuum_hours": Param(168, type="integer", minimum=168, description="compact --vacuum-hours"),
}

with DAG(
    dag_id=DAG_ID,
    description="each broker reindexes its own log dirs into the shared tables; one fleet check, one maintenance",
    schedule="0 2 * * *",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    dagrun_timeout=timedelta(hours=8),
    params=PARAMS,
    default_args={"owner": "segdex", "retries": int(os.environ.get("SEGDEX_NIGHTLY_RETRIES", "1")),
                  "retry_delay": timedelta(minutes=10)},
    tags=["segdex", "kafka", "fleet"],
    doc_md=__doc__,
) as dag:
    listed = brokers()
    if os.environ.get(QUEUE_PER_HOST_ENV) == "1":
        # A worker queue per host: Airflow routes by the task's queue, one for all of a mapped task's instances,
        # so here each broker of the Variable (read when the file is parsed) is its own task on its host's queue.
        per_broker = [reindex_broker.override(task_id=f"reindex_broker_{b['broker_id']}", queue=b["host"],
                                              map_index_template=None)(b) for b in parse_time_brokers()]
    else:
        per_broker = [reindex_broker.expand(broker=listed)]
    chain(per_broker, maintenance(), check(listed))
