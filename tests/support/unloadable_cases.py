"""What a broker's start trips on in a log dir: the cases, what Kafka 4.4.0's start did with each, and segdex's
prediction of it in the same terms.

Shared because two tests judge ``indexcore.log.unloadable`` (and the startup preview built on it) on the same cases:
tests/kafka/test_startup_preview.py starts a real broker on a log dir holding each case and records what its start
did in ``UNLOADABLE_GOLDEN`` (``SEGDEX_RECORD_GOLDEN=1``: every case; otherwise the ``CHECKED`` ones are started
again and must answer what is recorded); tests/jobs/test_unloadable.py judges segdex's commands on every recorded
case without a broker.

Each case adds one thing to a log dir holding the topic ``orders`` (one partition, one segment of 50 records, a
clean stop's ``.kafka_cleanshutdown``). A start's outcome, in the terms both sides give: ``starts`` (the broker
reached "Kafka Server started"), ``exception`` (its fatal exception's first line, the log dir's path as
``<LOGDIR>``), ``marker_kept`` (``.kafka_cleanshutdown`` still there after it), ``logs_created`` (``.log`` files
it added to ``orders-0``), ``log_end_offset`` (of ``orders-0`` as its load completed; None when the start failed).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path

from segdex.indexcore.log.layout import CLEAN_SHUTDOWN_FILE
from segdex.indexcore.log.log_dir import list_log_dir
from segdex.indexcore.log.unloadable import first_failure
from tests.support.fixtures import GOLDEN

UNLOADABLE_GOLDEN = GOLDEN / "unloadable_kafka.json"
TOPIC = "orders"
PARTITION = f"{TOPIC}-0"
RECORDS = 50
LOGDIR = "<LOGDIR>"


def _file(name: str, where: str = PARTITION) -> Callable[[Path], None]:
    def add(log_dir: Path) -> None:
        (log_dir / where).mkdir(exist_ok=True)
        (log_dir / where / name).write_bytes(b"")
    return add


def _dir(name: str) -> Callable[[Path], None]:
    def add(log_dir: Path) -> None:
        (log_dir / name).mkdir()
    return add


CASES: dict[str, Callable[[Path], None]] = {
    # files of a partition directory whose names the load parses
    "junk.log": _file("junk.log"),
    "abc.index": _file("abc.index"),
    "abc.timeindex": _file("abc.timeindex"),
    "abc.txnindex": _file("abc.txnindex"),
    "foo.snapshot": _file("foo.snapshot"),
    "foo.cleaned": _file("foo.cleaned"),
    "foo.swap": _file("foo.swap"),
    "foo.log.swap": _file("foo.log.swap"),
    "dot.log": _file(".log"),
    "21-digit.log": _file("99999999999999999999.log"),
    "hex.index": _file("0000000000000000000a.index"),
    # a .log name that parses but is no segment's name
    "5.log": _file("5.log"),
    "plus-5.log": _file("+5.log"),
    "99.log": _file("99.log"),
    "minus-1.log": _file("-1.log"),
    # names the load deletes or ignores
    "foo.deleted": _file("foo.deleted"),
    "junk": _file("junk"),
    "sub.log-dir": lambda d: (d / PARTITION / "sub.log").mkdir(),
    # directories of the log dir
    "lost+found": _dir("lost+found"),
    "foo-dir": _dir("foo"),
    "orders-x": _dir("orders-x"),
    "orders-99999999999": _dir("orders-99999999999"),
    "orders-0-delete": _dir("orders-0-delete"),
    "dot-hidden-dir": _dir(".hidden"),
    "orders-0.zz-delete": _dir("orders-0.zz-delete"),
    "orders-+1": _dir("orders-+1"),
    "remote-log-index-cache": _dir("remote-log-index-cache"),
    "log-dir-file": lambda d: (d / "junk").write_bytes(b"x"),
    # files of other directories a start loads
    "junk.log-in-delete-dir": _file("junk.log", "orders-0.zz-delete"),
    "junk.log-in-stray-dir": _file("junk.log", "orders-0.zz-stray"),
    "junk.log-in-metadata-log": _file("junk.log", "__cluster_metadata-0"),
}
# the cases a broker is started on again in every run of the kafka_broker tests (each start costs ~2-3 s)
CHECKED = ("junk.log", "foo.snapshot", "lost+found", "5.log")


# the writing commands, each as it would change a log dir of ``orders``: retention past its records, cleaning it as
# a compacted topic, rebuilding its index files, trimming them
WRITING = {
    "clean --apply": ["clean", "--apply", "--discard", "--no-record", "--topic-config",
                      f"{TOPIC}:cleanup.policy=compact", "--topic-config", f"{TOPIC}:min.cleanable.dirty.ratio=0.01"],
    "retention --apply": ["retention", "--apply", "--no-record", "--config", "retention.ms=1000"],
    "recover": ["recover", "--no-progress"],
    "reindex": ["reindex", "--no-progress", "--normalize"],
    "compact --apply": ["compact", "--apply"],
}


def writing_command(command: str, metadata: Path) -> list[str]:
    """The arguments of a ``WRITING`` command, with ``--metadata`` where it records a run."""
    return [*WRITING[command], "--metadata", str(metadata)] if command in ("recover", "reindex") else WRITING[command]


def tree(path: Path) -> dict[str, str | None]:
    """Every entry under ``path``: a file's sha256, None for a directory."""
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else None
            for p in sorted(path.rglob("*"))}


def normalized(text: str | None, log_dir: Path) -> str | None:
    return None if text is None else text.replace(str(log_dir), LOGDIR)


def log_names(log_dir: Path) -> set[str]:
    return {p.name for p in (log_dir / PARTITION).glob("*.log")}


def predicted(log_dir: Path, log_end_offset: int = RECORDS) -> dict:
    """segdex's prediction of a start on ``log_dir`` (``list_log_dir``'s unloadable entries), in the terms of
    ``start_outcome``; ``log_end_offset``: the partition's own, which only a misread ``.log`` changes."""
    listing = list_log_dir(log_dir)
    first = first_failure(listing.unloadable)
    marker = (log_dir / CLEAN_SHUTDOWN_FILE).exists()
    mine = [u for u in listing.unloadable if Path(u.path).parent == log_dir / PARTITION and not u.fails]
    for u in mine:
        log_end_offset = u.log_end_offset if u.log_end_offset is not None else log_end_offset
    return {"starts": first is None, "exception": normalized(first.exception, log_dir) if first else None,
            "marker_kept": marker and not (first and first.deletes_marker),
            "logs_created": sorted(u.opens for u in mine if u.opens),
            "log_end_offset": None if first else log_end_offset}


_FATAL = re.compile(r"ERROR (?:Encountered fatal fault|\[SharedServer id=\d+\] Got exception)[^\n]*\n([^\n]+)")


def start_outcome(log_text: str, started: bool, log_dir: Path, logs_before: set[str]) -> dict:
    """What a broker's start on ``log_dir`` did, from its log (``log_text``: this start's lines) and the dir after
    it (the broker stopped)."""
    fatal = _FATAL.search(log_text)
    load = re.search(rf"Completed load of Log\(dir={re.escape(str(log_dir / PARTITION))}, .*?logEndOffset=(\d+)\)",
                     log_text)
    return {"starts": started, "exception": normalized(fatal.group(1).strip(), log_dir) if fatal else None,
            "marker_kept": (log_dir / CLEAN_SHUTDOWN_FILE).exists(),
            "logs_created": sorted(log_names(log_dir) - logs_before),
            "log_end_offset": int(load.group(1)) if started and load else None}
