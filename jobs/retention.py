"""``segdex retention``: what Kafka's ``deleteOldSegments`` would do to each partition, offline.

Plan by default (nothing on disk changes), ``--apply`` to rename segments ``*.deleted`` and update the
checkpoints, ``--from-metadata`` to plan from the Delta tables alone. Exit 0 clean, 1 something needs attention
(a refused log dir, a partition without a high watermark, future timestamps, unreadable files), 2 usage.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import UTC, datetime

from segdex.indexcore.config.log_config import (
    LogConfig,
)
from segdex.indexcore.errors import SegdexError
from segdex.indexcore.log.layout import filename_prefix_from_offset
from segdex.indexcore.status import ExitStatus
from segdex.jobs.common import (
    add_allow_unloadable_argument,
    add_broker_config_argument,
    check_log_dirs,
    now_error,
    print_log_dir_outcome,
    spark_if_master,
    topic_config_resolver,
)
from segdex.jobs.report import human_bytes

SPARK = True  # a Spark command: `-v` shows Spark's own log lines
HELP = ("plan (or --apply) Kafka's retention offline: log start offset, retention.bytes, retention.ms passes; "
        "--from-metadata plans from the Delta tables alone")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--now", type=int, metavar="EPOCH_MS", help="the clock for retention.ms (default: now)")
    parser.add_argument("--config", action="append", metavar="KEY=VALUE",
                        help="topic config for every topic, e.g. retention.ms=259200000 (repeatable)")
    parser.add_argument("--topic-config", action="append", metavar="TOPIC:KEY=VALUE",
                        help="config for one topic, e.g. orders:retention.bytes=1073741824 (repeatable)")
    parser.add_argument("--metadata", metavar="PATH",
                        help="Delta tables directory where retention_actions is recorded "
                             "(default: $SEGDEX_METADATA or ./segdex-metadata)")
    parser.add_argument("--no-record", action="store_true", help="print only; write no Delta table")
    parser.add_argument("--apply", action="store_true",
                        help="rename deleted segments *.deleted and update log-start-offset-checkpoint and "
                             "leader-epoch-checkpoint (refused where a broker holds the log dir's .lock)")
    add_allow_unloadable_argument(parser)
    parser.add_argument("--from-metadata", metavar="PATH",
                        help="what-if: plan from the segments/partitions tables under PATH; no disk is read")
    parser.add_argument("--master", metavar="URL",
                        help="Spark master; with it, log dirs are processed one Spark task each")
    parser.add_argument("--verbose", "-v", action="store_true", help="also print why each pass stopped")
    add_broker_config_argument(parser)
    parser.add_argument("log_dirs", nargs="*", metavar="LOGDIR",
                        help="Kafka log dir (holds <topic>-<n> dirs); default: --broker-config's log.dirs")


def _err(msg: str) -> None:
    print(f"segdex retention: {msg}", file=sys.stderr)


def _print_plan(where: str, plan, verbose: bool, applied: bool) -> None:
    verb = "deleted" if applied else "delete"
    for d in plan.deletions:
        print(f"{where}: {verb} {filename_prefix_from_offset(d.base_offset)} {human_bytes(d.size_bytes)} [{d.rule}] "
              f"{d.reason}")
    if plan.roll_offset is not None:
        print(f"{where}: every segment goes: {'rolled' if applied else 'roll'} an empty segment at {plan.roll_offset}")
    for seg, why in plan.blocked:
        print(f"{where}: blocked {filename_prefix_from_offset(seg.base_offset)}: {why}")
    if plan.skipped:
        print(f"{where}: nothing deletable: {plan.skipped}")
    elif plan.deletions:
        epochs = ""
        if plan.leader_epochs_after is not None:
            epochs = " leader epochs " + " ".join(f"{e}:{o}" for e, o in plan.leader_epochs_after)
        print(f"{where}: {len(plan.deletions)} segments, {human_bytes(plan.bytes_freed)}; log start offset "
              f"{plan.log_start_offset_before} -> {plan.log_start_offset_after};{epochs}")
    else:
        print(f"{where}: nothing to delete")
    if verbose:
        for note in plan.notes:
            print(f"{where}:   {note}")


RETENTION_KEYS = ("retention.ms", "retention.bytes", "cleanup.policy")


def _print_configs(outcomes) -> None:
    """Say which retention configs were assumed (Kafka's defaults) and which came from Kafka's internal-topic
    configs, so that a plan on unstated settings never passes unnoticed."""
    configs = {}
    for o in outcomes:
        configs.update(o.configs)
    assumed: dict[tuple[str, ...], list[str]] = {}
    for topic, resolved in sorted(configs.items()):
        internal = resolved.from_internal_topic()
        if internal:
            given = ", ".join(f"{k}={v}" for k, v in sorted(internal.items()))
            print(f"config: {topic}: {given} (Kafka's config for this internal topic)")
        # retention.ms and retention.bytes only matter to a topic whose policy deletes
        keys = tuple(k for k in resolved.assumed(RETENTION_KEYS) if k == "cleanup.policy" or resolved.config.delete)
        if keys:
            assumed.setdefault(keys, []).append(topic)
    for keys, topics in assumed.items():
        values = ", ".join(f"{k}={getattr(LogConfig(), k.replace('.', '_'))}" for k in keys)
        print(f"config: assumed Kafka's defaults {values} for {len(topics)} topics ({', '.join(topics)}): "
              f"not given with --config or --topic-config")


def _usage_error(args: argparse.Namespace) -> str | None:
    if args.from_metadata and (args.log_dirs or args.apply):
        return "--from-metadata plans from the tables alone: give no LOGDIR and no --apply"
    if not args.from_metadata and not args.log_dirs:
        return "give at least one LOGDIR, --broker-config with log.dirs, or --from-metadata PATH"
    return now_error(args.now)


def print_log_dirs(outcomes, apply: bool, verbose: bool, now_ms: int) -> int:
    """Each log dir's partitions, plans and totals; the exit status they call for."""
    status = ExitStatus.OK
    mode = "apply" if apply else "plan"
    _print_configs(outcomes)
    for o in outcomes:
        print_log_dir_outcome(o, apply)
        freed = 0
        for p in o.partitions:
            where = os.path.basename(p.partition_dir)
            if p.error:
                print(f"{where}: error: {p.error}", file=sys.stderr)
            _print_plan(where, p.plan, verbose, apply and p.applied)
            freed += p.plan.bytes_freed if (p.applied or not apply) else 0
        print(f"{o.log_dir}: {mode}: {human_bytes(freed)} {'freed' if apply else 'to free'} "
              f"in {len(o.partitions)} partitions (now={now_ms})")
        if o.needs_attention:
            status = ExitStatus.ATTENTION
    return status


def _record(spark, metadata: str, outcomes, run_id: str, run_at, now_ms: int, apply: bool) -> int:
    from segdex.pipelines import retention as pr

    rows = pr.outcome_rows(outcomes, run_id, run_at, now_ms, apply)
    try:
        pr.record_actions(spark, metadata, rows)
    except Exception as e:  # the files are done; say the record failed
        _err(f"could not record retention_actions in {metadata}: {type(e).__name__}: {e}")
        return ExitStatus.ATTENTION
    print(f"recorded {len(rows)} rows in {metadata}/{pr.RETENTION_ACTIONS} (run {run_id})")
    return ExitStatus.OK


def run(args: argparse.Namespace) -> int:
    try:
        config, broker = topic_config_resolver(args, args.log_dirs)
    except SegdexError as e:
        _err(str(e))
        return ExitStatus.USAGE
    if broker is not None and not args.log_dirs and not args.from_metadata:
        args.log_dirs = list(broker.log_dirs)
    why = _usage_error(args)
    if why:
        _err(why)
        return ExitStatus.USAGE
    now_ms = args.now if args.now is not None else int(time.time() * 1000)
    from segdex.pipelines import retention as pr
    from segdex.pipelines.schemas import default_metadata_path

    metadata = args.metadata or default_metadata_path()
    run_id, run_at = pr.new_run_id(), datetime.now(UTC)
    if args.from_metadata:
        return _what_if(args, config, now_ms, metadata, run_id, run_at)
    if check_log_dirs("retention", args.log_dirs):
        return ExitStatus.USAGE
    spark = spark_if_master(args.master, "retention", args.remote)
    outcomes = pr.run_disk([os.path.abspath(d) for d in args.log_dirs], config, now_ms, args.apply, spark,
                           args.allow_unloadable)
    status = print_log_dirs(outcomes, args.apply, args.verbose, now_ms)
    if not args.no_record:
        status = max(status, _record(spark, metadata, outcomes, run_id, run_at, now_ms, args.apply))
    return status


def _what_if(args, config, now_ms: int, metadata: str, run_id: str, run_at) -> int:
    from segdex.pipelines import metadata_store as ms
    from segdex.pipelines import retention as pr
    from segdex.pipelines.spark_session import get_spark

    source = ms.MetadataStore(args.from_metadata)
    for table in ("segments", "partitions"):
        if not source.exists(table):
            _err(f"{args.from_metadata}: no {table} table (run `segdex verify` or `segdex reindex` first)")
            return ExitStatus.USAGE
    spark = get_spark(args.master, "segdex-retention-what-if", remote=args.remote)
    try:
        df = pr.what_if(spark, args.from_metadata, config, now_ms, run_id, run_at).cache()
        rows = [r.asDict() for r in df.orderBy("log_dir", "topic", "partition", "base_offset").collect()]
    except ms.MetadataStoreError as e:
        _err(str(e))
        return ExitStatus.USAGE
    totals: dict[str, list[int]] = {}
    for r in rows:
        where = f"{r['topic']}-{r['partition']}"
        if r["action"] == "delete":
            print(f"{where}: would delete {r['segment']} {human_bytes(r['bytes'])} [{r['rule']}] {r['reason']}")
            t = totals.setdefault(r["topic"], [0, 0])
            t[0] += 1
            t[1] += r["bytes"]
        elif r["action"] == "blocked":
            print(f"{where}: blocked {r['segment']}: {r['reason']}")
        else:
            print(f"{where}: nothing deletable: {r['reason']}")
    for topic, (n, b) in sorted(totals.items()):
        print(f"topic {topic}: {n} segments, {human_bytes(b)} would be freed")
    print(f"what-if total: {human_bytes(sum(b for _, b in totals.values()))} (now={now_ms})")
    if not args.no_record and args.metadata:
        pr.record_actions(spark, metadata, rows)
        print(f"recorded {len(rows)} rows in {metadata}/{pr.RETENTION_ACTIONS} (run {run_id})")
    return ExitStatus.ATTENTION if any(r["action"] != "delete" for r in rows) else ExitStatus.OK


if __name__ == "__main__":
    from segdex.jobs.cli import main

    sys.exit(main(["retention", *sys.argv[1:]]))
