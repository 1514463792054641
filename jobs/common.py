"""Argument checks and Spark start-up shared by the ``segdex`` subcommands."""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from segdex.indexcore.errors import SegdexError

BROKER_CONFIG_HELP = ("the broker's server.properties: its log.dirs (then LOGDIR may be left out) and the log.* "
                      "defaults its topics inherit (log.index.interval.bytes, log.retention.hours, ...)")


TOPIC_CONFIGS_HELP = ("the saved output of `kafka-configs.sh --bootstrap-server ... --entity-type topics --describe` "
                      "(with or without --all): every topic's overrides, and with --all the brokers' settings")


CONFIG_SOURCES_HELP = ("Topic configs (cleanup.policy, retention.ms, index.interval.bytes, ...) come from, highest "
                       "first: --topic-config; Kafka's own configs of its internal topics (__consumer_offsets and "
                       "__transaction_state are cleanup.policy=compact); --config; --bootstrap-server or "
                       "--topic-configs; the log dir's metadata log (__cluster_metadata-0: each topic's configs, "
                       "then the brokers' dynamic ones); --broker-config's log.* settings (log.cleanup.policy, ...); "
                       "Kafka's defaults (cleanup.policy=delete).")


def add_broker_config_argument(parser: argparse.ArgumentParser) -> None:
    """--broker-config, --topic-configs, --bootstrap-server and --command-config, and where topic configs come from
    (after the parser's epilog)."""
    parser.epilog = f"{parser.epilog}. {CONFIG_SOURCES_HELP}" if parser.epilog else CONFIG_SOURCES_HELP
    parser.add_argument("--broker-config", metavar="PATH", help=BROKER_CONFIG_HELP)
    parser.add_argument("--topic-configs", metavar="PATH", help=TOPIC_CONFIGS_HELP)
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT",
                        help="read the topics' configs live from this cluster (Admin API, as kafka-configs "
                             "--describe --all), for the topics found on disk")
    parser.add_argument("--command-config", metavar="PATH",
                        help="client properties for --bootstrap-server (TLS/SASL), as the Kafka tools take them")


def add_allow_unloadable_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--allow-unloadable", action="store_true",
                        help="write even into a log dir a broker's start trips on (an `unloadable:` line: a "
                             "directory that is no partition, a file name Kafka's load throws on); by default such "
                             "a log dir is refused and nothing is written there")


def topic_of_path(path: str) -> str | None:
    """The topic of a partition directory or of a ``.log`` file's directory (None when the name is not one)."""
    from segdex.indexcore.log.layout import parse_partition_dir_name

    d = os.path.abspath(path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path)))
    try:
        return parse_partition_dir_name(os.path.basename(d)).topic
    except SegdexError:
        return None


def topics_on_disk(paths: list[str]) -> list[str]:
    """The topics of the partition directories under the given log dirs, or of the given partition dirs."""
    from segdex.indexcore.log.log_dir import list_log_dir

    topics: set[str] = set()
    for path in paths:
        try:
            topics.update(p.topic for p in list_log_dir(path).partitions)
        except (SegdexError, OSError):
            topic = topic_of_path(path)
            if topic is not None:
                topics.add(topic)
    return sorted(topics)


def described_topics(args: argparse.Namespace, paths: list[str] | None = None,
                     notes: ConfigNotes | None = None) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, str]]]:
    """(topic -> configs, topic -> their sources) from ``--topic-configs`` and, live, ``--bootstrap-server`` (for
    the topics under ``paths``; live values win); empty without either. ConfigException when a file is bad or the
    cluster cannot be asked. The configs segdex does not use, and the names Kafka does not know, go to ``notes``."""
    from segdex.indexcore.config.log_config import ConfigException
    from segdex.indexcore.config.topic_configs_file import read_topic_configs

    described = {}
    path = getattr(args, "topic_configs", None)
    if path:
        described.update(read_topic_configs(path))
        if notes is not None:
            notes.add("--topic-configs", described.values())
    bootstrap = getattr(args, "bootstrap_server", None)
    command_config = getattr(args, "command_config", None)
    if command_config and not bootstrap:
        raise ConfigException("--command-config is for --bootstrap-server: give both")
    if bootstrap:
        from segdex.indexcore.config.topic_configs_live import describe_topics, read_command_config

        properties = read_command_config(command_config) if command_config else {}
        live = describe_topics(bootstrap, topics_on_disk(paths or []), properties)
        if notes is not None:
            notes.add("--bootstrap-server", live.values())
        described.update(live)
    return ({t: d.values for t, d in described.items()}, {t: d.sources for t, d in described.items()})


class ConfigNotes:
    """What a run's config arguments gave that changes nothing here, said once each on stderr (``print``): the
    Kafka configs segdex does not use (taken and checked as Kafka checks them) and, from files a broker or a
    cluster wrote, the names Kafka 4.4 and 3.9 do not know (left out, as a broker leaves them)."""

    def __init__(self, used: frozenset[str] = frozenset()) -> None:
        self.used = used  # broker settings the command takes from --config (clean: the cleaner's)
        self.unused: dict[str, list[str]] = {}  # name -> the arguments that gave it
        self.unknown: dict[str, list[str]] = {}

    def _note(self, into: dict[str, list[str]], name: str, where: str) -> None:
        if where not in into.setdefault(name, []):
            into[name].append(where)

    def add_items(self, where: str, items: dict[str, str]) -> None:
        """``--config``/``--topic-config`` items (topic or broker names; unknown ones were refused before)."""
        from segdex.indexcore.config.broker_config import ALL_BROKER_SYNONYMS, broker_only
        from segdex.indexcore.config.log_config import KNOWN_CONFIGS, UNUSED_CONFIGS

        for name in items:
            topic_key = name if name in KNOWN_CONFIGS else ALL_BROKER_SYNONYMS.get(name, (None,))[0]
            if (topic_key in UNUSED_CONFIGS or name in broker_only(items)) and not (
                    name in self.used and where == "--config"):
                self._note(self.unused, name, where)

    def add(self, where: str, described: Any) -> None:
        """The topics of a ``--topic-configs`` file or of ``--bootstrap-server``'s answer."""
        from segdex.indexcore.config.log_config import UNUSED_CONFIGS

        for topic in described:
            for name in topic.values:
                if name in UNUSED_CONFIGS:
                    self._note(self.unused, name, where)
            for name in topic.unknown:
                self._note(self.unknown, name, where)

    def print(self) -> None:
        from segdex.indexcore.config.kafka_configs import BROKER_CONFIGS
        from segdex.indexcore.config.log_config import KNOWN_CONFIGS, did_you_mean

        if self.unused:
            print("config: not used by segdex, so changing nothing here (taken and checked as Kafka checks them): "
                  + ", ".join(f"{k} ({', '.join(w)})" for k, w in sorted(self.unused.items())), file=sys.stderr)
        if self.unknown:
            known = {*KNOWN_CONFIGS, *BROKER_CONFIGS}
            names = [f"{k} ({', '.join(w)}){did_you_mean(k, known, 0.85)}" for k, w in sorted(self.unknown.items())]
            print(f"config: names Kafka 4.4 and 3.9 do not know, left out as a broker leaves them: {', '.join(names)}",
                  file=sys.stderr)


def _check_names(flag: str, items: dict[str, str], prefix: str = "") -> None:
    """Refuse a name Kafka knows neither as a topic config nor as a broker setting, with the nearest one."""
    from segdex.indexcore.config.broker_config import broker_only, check_broker_value
    from segdex.indexcore.config.kafka_configs import BROKER_CONFIGS
    from segdex.indexcore.config.log_config import KNOWN_CONFIGS, ConfigException, unknown_config

    for key, value in items.items():
        if key not in KNOWN_CONFIGS and key not in BROKER_CONFIGS:
            raise ConfigException(f"{flag} {prefix}{key}={value}: {unknown_config(key)}")
    for key in broker_only(items):  # a broker setting no topic takes: its value checked as the broker checks it
        check_broker_value(flag, key, items[key])


def config_layers(args: argparse.Namespace, notes: ConfigNotes | None = None,
                  ) -> tuple[Any, dict[str, str], dict[str, dict[str, str]]]:
    """(BrokerConfig or None, --config, --topic-config) with broker names turned into topic config names;
    ConfigException (a SegdexError) when any is bad: a value Kafka would refuse, a name it does not know (with
    the nearest it does). What changes nothing here goes to ``notes``."""
    from segdex.indexcore.config.broker_config import read_broker_config, topic_names
    from segdex.indexcore.config.log_config import parse_config_args, parse_topic_config_args

    notes = notes if notes is not None else ConfigNotes()
    path = getattr(args, "broker_config", None)
    broker = read_broker_config(path) if path else None
    for name in broker.unknown if broker is not None else []:
        notes._note(notes.unknown, name, "--broker-config")
    given = parse_config_args(getattr(args, "config", None))
    _check_names("--config", given)
    notes.add_items("--config", given)
    per_topic = parse_topic_config_args(getattr(args, "topic_config", None))
    for topic, kv in per_topic.items():
        _check_names("--topic-config", kv, f"{topic}:")
        notes.add_items("--topic-config", kv)
    return broker, topic_names(given), {t: topic_names(kv) for t, kv in per_topic.items()}


def broker_defaults(broker: Any) -> dict[str, str]:
    return dict(broker.defaults) if broker is not None else {}


def _broker_settings_used(command: str) -> frozenset[str]:
    """The broker settings ``command`` takes from ``--config`` beside the topic configs: ``clean`` builds its
    cleaner from them."""
    if command != "clean":
        return frozenset()
    from segdex.indexcore.config.cleaner_config import CLEANER_PROPS

    return CLEANER_PROPS


def topic_config_resolver(args: argparse.Namespace, paths: list[str] | None = None) -> tuple[Any, Any]:
    """The one place a command's config arguments become a ``TopicConfigResolver``: ``--topic-config``,
    ``--config``, ``--topic-configs`` and ``--bootstrap-server`` (asked about the topics under ``paths``, else
    under the broker's ``log.dirs``), ``--broker-config``'s ``log.*`` settings, Kafka's defaults; returned with the
    ``BrokerConfig`` read (None without ``--broker-config``). ConfigException (a SegdexError) when any is bad.
    What was given that changes nothing here is said once, in a ``config:`` line on stderr."""
    from segdex.indexcore.config.log_config import TopicConfigResolver

    notes = ConfigNotes(_broker_settings_used(getattr(args, "command", "")))
    broker, config, topic_configs = config_layers(args, notes)
    if not paths and broker is not None:
        paths = list(broker.log_dirs)
    described, sources = described_topics(args, paths, notes)
    resolver = TopicConfigResolver(config, topic_configs, broker=broker_defaults(broker),
                                   broker_origins=broker.origins if broker is not None else None,
                                   described=described, described_sources=sources,
                                   internal=broker.internal if broker is not None else None,
                                   internal_origins=broker.internal_origins if broker is not None else None,
                                   metadata=metadata_log_configs(paths or []))
    notes.print()
    return resolver, broker


def metadata_log_configs(log_dirs: list[str]) -> Any:
    """The configs of the metadata log (``__cluster_metadata``) in ``log_dirs``, its most advanced replica, for
    the broker whose log dir holds it (``meta.properties``' ``node.id``); None without one (a ZooKeeper-era
    broker's dirs). One line on stderr when it cannot be read (the configs are then assumed) or stops early."""
    from segdex.indexcore.errors import SegdexError
    from segdex.indexcore.log.log_dir import read_node_id
    from segdex.indexcore.metadata.config_repository import log_configs
    from segdex.indexcore.metadata.metadata_image import most_advanced_image

    try:
        found = most_advanced_image([d for d in log_dirs if os.path.isdir(d)])
    except (SegdexError, OSError) as e:
        print(f"config: the metadata log could not be read ({getattr(e, 'strerror', None) or e}): its topic and "
              f"broker configs are not used", file=sys.stderr)
        return None
    if found is None:
        return None
    part, image = found
    if image.stopped:
        print(f"config: the metadata log {part} was read up to offset {image.offset} ({image.stopped})",
              file=sys.stderr)
    return log_configs(image, read_node_id(os.path.dirname(part)))


NOW_MAX_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z: the last instant a table's timestamp takes


def now_error(now: int | None) -> str | None:
    """What is wrong with ``--now EPOCH_MS``, in Kafka's words for a bounded value (``ConfigDef.Range``); None
    when it is fine (or not given). Beyond year 9999 no table could record the run."""
    if now is None:
        return None
    if now < 0:
        return f"Invalid value {now} for --now: Value must be at least 0 (epoch milliseconds)"
    if now > NOW_MAX_MS:
        return (f"Invalid value {now} for --now: Value must be no more than {NOW_MAX_MS} "
                f"(9999-12-31T23:59:59.999Z, the last instant the tables record)")
    return None


def log_dirs_or_broker(command: str, given: list[str], broker: Any) -> list[str] | None:
    """The LOGDIRs given, else the broker config's log.dirs; None (after a message) when there are none."""
    if given:
        return given
    if broker is not None and broker.log_dirs:
        return list(broker.log_dirs)
    where = f" (and {broker.path} sets no log.dirs)" if broker is not None else ""
    print(f"segdex {command}: give at least one LOGDIR, or --broker-config with log.dirs{where}", file=sys.stderr)
    return None


def report_missing_log_dirs(command: str, log_dirs: list[str]) -> bool:
    """Print a line for each LOGDIR that is not a directory; True when any is (a usage error: exit 2)."""
    missing = [d for d in log_dirs if not os.path.isdir(d)]
    for d in missing:
        print(f"segdex {command}: {d}: not a directory (no such log dir)", file=sys.stderr)
    return bool(missing)


def check_log_dirs(command: str, log_dirs: list[str]) -> bool:
    """Print a line for each LOGDIR that is missing or is a partition directory rather than a log dir; True when
    any is (a usage error: exit 2)."""
    from segdex.indexcore.log.log_dir import describe_dir

    if report_missing_log_dirs(command, log_dirs):
        return True
    bad = False
    for d in log_dirs:
        if describe_dir(d) == "partition_dir":
            parent = os.path.dirname(os.path.abspath(d))
            print(f"segdex {command}: {d}: a partition directory, not a log dir: give its log dir ({parent})"
                  + (", or use `segdex rebuild` for one partition" if command in ("reindex", "verify") else ""),
                  file=sys.stderr)
            bad = True
    return bad


def command_seconds() -> float:
    """Seconds since this process started (its wall time so far, interpreter start included), from the
    kernel's record of the start; the time since segdex's first import where /proc is absent."""
    try:
        with open("/proc/self/stat") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return time.monotonic() - _IMPORTED


_IMPORTED = time.monotonic()


def with_command_time(summary: Any) -> Any:
    """A run's summary as the command lived it: wall time since the process started, the Spark start as its
    own first phase (the pipeline measured only its own phases)."""
    from segdex.pipelines.spark_session import START_SECONDS

    summary.phases = {**START_SECONDS, **summary.phases}
    summary.wall_seconds = command_seconds()
    summary.driver_peak_bytes = driver_peak_bytes()
    return summary


def driver_peak_bytes() -> int:
    """This process's peak resident memory so far (the driver's, not its workers'): ``ru_maxrss``, in KiB on
    Linux."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def spark_if_master(master: str | None, command: str, remote: str | None = None) -> Any:
    """A SparkSession when ``--master`` or ``--remote`` (or ``SPARK_REMOTE``) was given, else None (the command
    then runs in this process)."""
    from segdex.pipelines.spark_session import REMOTE_ENV, get_spark

    remote = remote or (None if master else os.environ.get(REMOTE_ENV))
    if not master and not remote:
        return None
    return get_spark(master, f"segdex-{command}", remote=remote)


def print_log_dir_outcome(outcome: Any, apply: bool) -> None:
    """The log-dir level lines of retention and compact: what a broker's start trips on, refusal, skipped
    directories, temporaries of an interrupted run that were removed."""
    for problem in outcome.unloadable:
        print(f"unloadable: {problem}", file=sys.stderr)
    if outcome.error:
        print(f"{outcome.log_dir}: {'refused' if apply else 'warning'}: {outcome.error}", file=sys.stderr)
    for path, why in outcome.skipped:
        print(f"{path}: skipped: {why}")
    for path in outcome.removed_temporaries:
        print(f"removed: {path}: temporary file left by an interrupted segdex run", file=sys.stderr)


def report_cluster_view(command: str, view: Any, coordinators: list[Any]) -> int:
    """Print what could not be read in a ``ClusterView`` and what Kafka's load of each coordinator partition would
    fail on (one line each, on stderr); ATTENTION when there was any, else OK."""
    from segdex.indexcore.status import ExitStatus

    lines = [*view.problems, *(f"{c.topic}-{c.partition}: {why}" for c in coordinators for why in c.load.problems())]
    for line in lines:
        print(f"segdex {command}: {line}", file=sys.stderr)
    return ExitStatus.ATTENTION if lines else ExitStatus.OK
