"""``segdex clean``: what Kafka's log cleaner would do to each compacted partition, offline: a plan by default
(nothing in a log dir changes), ``--apply`` to clean as Kafka's cleaner does (one round per partition Kafka would
clean now, every replaced file kept under ``--quarantine`` unless ``--discard``).

Per partition of a topic whose ``cleanup.policy`` includes ``compact`` (Kafka's internal topics included): whether
Kafka's cleaner would take it at ``--now`` and why (``min.cleanable.dirty.ratio``, ``max.compaction.lag.ms``), its
cleanable range, and what one round would leave (segments, bytes and records before and after, tombstones kept,
the ``cleaner-offset-checkpoint`` after it, whether the offset map filled). Recorded in the ``cleaning`` table.
Exit 0 when every partition was planned, 1 when one could not be (a load that would truncate or fail, a batch
whose codec segdex does not rebuild yet), 2 usage (also: every log dir held by another process, or
``--until-clean`` past ``--max-rounds``; nothing was changed).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time

from segdex.indexcore.errors import SegdexError
from segdex.indexcore.status import ExitStatus
from segdex.jobs.common import add_allow_unloadable_argument, check_log_dirs, now_error, topics_on_disk
from segdex.jobs.reindex import add_common_arguments, resolve_configs

SPARK = True  # a Spark command: `-v` shows Spark's own log lines
HELP = ("Kafka's log compaction offline: which compacted partitions its cleaner would clean now and what a round "
        "would leave; --apply cleans them as it would")
COMMAND = "clean"
# --until-clean's bound on the rounds of one partition: 100 rounds of Kafka's default 128 MiB offset map take about
# 500 million keys, more than a broker's cleaner sees in one partition; a tiny --dedupe-buffer-size passes it
DEFAULT_MAX_ROUNDS = 100


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--now", metavar="EPOCH_MS", type=int, default=None,
                        help="the cleaner's clock: lags, delete horizons, producer expiry (default: now)")
    parser.add_argument("--dedupe-buffer-size", metavar="BYTES", type=int, default=None,
                        help="one cleaner thread's offset map (default: log.cleaner.dedupe.buffer.size / "
                             "log.cleaner.threads from --broker-config, else Kafka's 128 MiB)")
    parser.add_argument("--no-record", action="store_true", help="print only; write no Delta table")
    parser.add_argument("--apply", action="store_true",
                        help="clean, one round each, the partitions Kafka's cleaner would clean now, as it would "
                             "(refused where a broker holds the log dir's .lock); needs --quarantine or --discard")
    parser.add_argument("--quarantine", metavar="DIR",
                        help="with --apply: where every replaced segment file goes first, with a manifest.json "
                             "(outside every log dir)")
    parser.add_argument("--until-clean", action="store_true",
                        help="round after round while the offset map fills, until what Kafka would clean now is "
                             "clean (a plan: counts only, a round the next one reads spilled to a scratch dir "
                             "under TMPDIR; with --apply: each written), at most --max-rounds rounds a partition")
    parser.add_argument("--max-rounds", metavar="N", type=int, default=DEFAULT_MAX_ROUNDS,
                        help=f"with --until-clean: at most N rounds a partition (default {DEFAULT_MAX_ROUNDS}); a "
                             f"partition that may need more is named before any round runs, with the N it needs")
    parser.add_argument("--discard", action="store_true",
                        help="with --apply: keep no copy of the replaced segments (disks without room for both)")
    add_allow_unloadable_argument(parser)
    add_common_arguments(parser)


def _cleaner_config(args: argparse.Namespace):
    from segdex.indexcore.config.broker_config import load_properties
    from segdex.indexcore.config.cleaner_config import CLEANER_PROPS, CleanerConfig
    from segdex.indexcore.config.log_config import parse_config_args

    props = load_properties(args.broker_config, "--broker-config") if args.broker_config else {}
    # the cleaner's broker settings given in --config win over the file's (message.max.bytes is also every
    # topic's max.message.bytes)
    given = {k: v for k, v in parse_config_args(args.config).items() if k in CLEANER_PROPS}
    try:
        config = CleanerConfig.from_properties({**props, **given})
    except ValueError as e:  # its message starts with the setting it refuses, which may be a default
        name = str(e).split("=")[0]
        flag = "--config" if name in given or (name not in props and given) else "--broker-config"
        raise SegdexError(f"{flag}: {e}") from None
    if args.dedupe_buffer_size is not None:
        config = dataclasses.replace(config, num_threads=1, dedupe_buffer_size=args.dedupe_buffer_size)
        from segdex.pipelines.cleaning import keys_per_round

        if keys_per_round(config, at_least=0) < 1:  # a round would take no key: no round would get anywhere
            least = next(n for n in range(24, 4096, 24)
                         if keys_per_round(dataclasses.replace(config, dedupe_buffer_size=n), at_least=0) >= 1)
            raise SegdexError(f"--dedupe-buffer-size must hold at least one key at the load factor "
                              f"{config.dedupe_buffer_load_factor} ({least} bytes), got {args.dedupe_buffer_size}")
    return config


def _fmt(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


def _print_refusals(run) -> int:
    """What a broker's start trips on, refused log dirs, stray replicas, partitions past --max-rounds; the exit
    status they call for (USAGE: nothing was run, or every log dir is held by a broker)."""
    from segdex.indexcore.log.log_dir import LOCK_HELD
    from segdex.jobs.report import print_unloadable
    from segdex.pipelines.cleaning import strays

    status = ExitStatus.ATTENTION if run.discovery.unloadable else ExitStatus.OK
    print_unloadable(run.discovery.unloadable)
    for log_dir, why in run.discovery.refused:
        print(f"segdex {COMMAND}: refused {log_dir}: {why}", file=sys.stderr)
        status = ExitStatus.ATTENTION
    if run.discovery.refused and not run.discovery.listed and all(LOCK_HELD in why for _, why in
                                                                  run.discovery.refused):
        status = ExitStatus.USAGE  # every log dir held by a broker (or another run): nothing was changed
    for path, why in strays(run.discovery):
        print(f"stray: {path}: left alone: its broker renames it -stray at its start ({why})", file=sys.stderr)
        status = max(status, ExitStatus.ATTENTION)
    for task, bound in run.over_bound:
        print(f"segdex {COMMAND}: {task.topic}-{task.partition}: --until-clean may need up to {bound.rounds:,} rounds "
              f"(dirty offsets {bound.first_offset:,}..{bound.end_offset:,}, at most {bound.keys_per_round:,} key(s) a "
              f"round in this offset map), more than --max-rounds {run.max_rounds}: give --max-rounds "
              f"{bound.rounds} (or a bigger --dedupe-buffer-size); no round was run", file=sys.stderr)
        status = ExitStatus.USAGE
    return status


def _partition_line(where: str, p, max_rounds: int | None) -> str:
    from segdex.jobs.report import human_bytes

    verdict = ("cleaned" if p.applied else "would clean" if p.would_clean else "not now")
    line = (f"{where}: {verdict}: {p.why}; dirty offsets {_fmt(p.first_dirty_offset)}.."
            f"{_fmt(p.first_uncleanable_offset)}")
    if p.end_offset is not None:
        rounds = "one round" if p.rounds <= 1 else f"{p.rounds} rounds"
        line += (f"; {rounds}: {p.segments_before} -> {p.segments_after} segments, "
                 f"{human_bytes(p.bytes_before)} -> {human_bytes(p.bytes_after)}, records {_fmt(p.records_before)}"
                 f" -> {_fmt(p.records_after)} (tombstones: {_fmt(p.tombstones_removed)} removed, "
                 f"{_fmt(p.tombstones_kept)} kept" + (f"; aborted transactions' records: {p.aborted_removed:,}"
                                                      f" removed" if p.aborted_removed else "") + "), checkpoint "
                 f"{_fmt(p.checkpoint)} -> {p.end_offset}" + ("; the offset map filled: more rounds" if p.map_full
                                                             else ""))
        if p.map_full and max_rounds and p.rounds >= max_rounds:
            line += f" (stopped at --max-rounds {max_rounds})"
    if p.applied:
        line += f"; replaced files kept in {p.quarantine}" if p.quarantine else "; replaced files discarded"
    return line


def print_run(run) -> int:
    """What a broker's start trips on, refused log dirs, one line per partition (after what --apply does first
    with an interrupted cleaning's files), then totals; the exit status."""
    from segdex.jobs.report import human_bytes

    status = _print_refusals(run)
    if run.over_bound:
        return status
    due = saved = 0
    for task, p in run.plans:
        where = f"{task.topic}-{task.partition}"
        if task.path in run.leftovers:
            print(f"leftovers: {where}: --apply first {run.leftovers[task.path]}, as Kafka's load does at a "
                  f"broker's next start")
        if p.finished:
            print(f"finished: {where}: an interrupted cleaning's files, as Kafka's load would: {p.finished}")
        if p.error:
            print(f"error: {where}: {p.error}", file=sys.stderr)
            # a round that failed after swapping groups in changed the partition: the run failed midway
            status = max(status, ExitStatus.FAILED if p.swapped_groups else ExitStatus.ATTENTION)
            continue
        print(_partition_line(where, p, run.max_rounds))
        if p.applied:
            saved += p.bytes_freed
        elif p.would_clean and p.end_offset is not None:
            due += 1
            saved += p.bytes_before - p.bytes_after
    applied = sum(p.applied for _, p in run.plans)
    if applied:
        print(f"{COMMAND} {run.run_id}: {len(run.plans)} compacted partitions, {applied} cleaned, {human_bytes(saved)} "
              f"freed (now={run.now_ms})")
    else:
        print(f"{COMMAND} {run.run_id}: {len(run.plans)} compacted partitions, {due} Kafka would clean now, "
              f"{human_bytes(saved)} cleaning would free there (now={run.now_ms})")
    return status


def print_round_progress(rounds: int, nbytes: int, elapsed_s: float) -> None:
    """The progress line of a run's rounds, on stderr."""
    from segdex.jobs.report import fmt_bytes

    print(f"progress: {rounds:,} rounds done, {fmt_bytes(nbytes)} cleaned, elapsed {elapsed_s:.0f}s", file=sys.stderr,
          flush=True)


def run(args: argparse.Namespace) -> int:
    try:
        default, topics = resolve_configs(args)
        cleaner = _cleaner_config(args)
    except SegdexError as e:
        print(f"segdex {COMMAND}: {e}", file=sys.stderr)
        return ExitStatus.USAGE
    if now_error(args.now):
        print(f"segdex {COMMAND}: {now_error(args.now)}", file=sys.stderr)
        return ExitStatus.USAGE
    if not args.log_dirs or check_log_dirs(COMMAND, args.log_dirs):
        return ExitStatus.USAGE
    if args.max_rounds < 1:
        print(f"segdex {COMMAND}: Invalid value {args.max_rounds} for --max-rounds: Value must be at least 1",
              file=sys.stderr)
        return ExitStatus.USAGE
    if args.apply and bool(args.quarantine) == bool(args.discard):
        print(f"segdex {COMMAND}: --apply needs --quarantine DIR (replaced segments kept there) or --discard "
              f"(kept nowhere), one of them", file=sys.stderr)
        return ExitStatus.USAGE
    if not args.apply and (args.quarantine or args.discard):
        print(f"segdex {COMMAND}: --quarantine and --discard go with --apply", file=sys.stderr)
        return ExitStatus.USAGE
    quarantine = None
    if args.quarantine:
        from segdex.indexcore.log.quarantine import check_quarantine_dir

        try:
            quarantine = check_quarantine_dir(args.quarantine, args.log_dirs)
        except SegdexError as e:
            print(f"segdex {COMMAND}: {e}", file=sys.stderr)
            return ExitStatus.USAGE
    from segdex.pipelines import cleaning
    from segdex.pipelines.local_engine import close_engine, get_engine
    from segdex.pipelines.run_context import RunRequest
    from segdex.pipelines.schemas import default_metadata_path

    topics = {t: args._resolver(t) for t in topics_on_disk(args.log_dirs)} | topics
    now = args.now if args.now is not None else int(time.time() * 1000)
    rounds = cleaning.Rounds(args.until_clean, args.max_rounds,
                             None if args.no_progress else print_round_progress)
    spark = get_engine(args.master, f"segdex-{COMMAND}", args.remote)
    try:
        request = RunRequest(args.log_dirs, args.metadata or default_metadata_path(), default, topics, now_ms=now,
                             allow_unloadable=args.allow_unloadable, quarantine=quarantine)
        if args.apply:
            result = cleaning.apply(spark, request, cleaner, rounds)
        else:
            result = cleaning.plan(spark, request, cleaner, rounds)
        status = print_run(result)
        if not args.no_record and not result.over_bound:
            try:
                cleaning.record(spark, args.metadata or default_metadata_path(), result)
            except Exception as e:  # the plan stands; the table could not take it
                print(f"segdex {COMMAND}: the cleaning table was not written: {e}", file=sys.stderr)
                return ExitStatus.ATTENTION
    finally:
        close_engine(spark)
    return status


if __name__ == "__main__":  # spark-submit jobs/clean.py ...
    from segdex.jobs.cli import main
    from segdex.pipelines.spark_session import stop_active

    code = main([COMMAND, *sys.argv[1:]])
    stop_active()
    sys.exit(code)
