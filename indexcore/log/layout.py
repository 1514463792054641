"""Kafka's file and directory naming (``LogFileUtils``, ``LocalLog.parseTopicPartitionName``)."""

from __future__ import annotations

import os
import re
import unicodedata
from dataclasses import dataclass

from segdex.indexcore.errors import InvalidLayoutException, NotTopicPartitionDirException, NumberFormatException

LOG_FILE_SUFFIX = ".log"
INDEX_FILE_SUFFIX = ".index"
TIME_INDEX_FILE_SUFFIX = ".timeindex"
TXN_INDEX_FILE_SUFFIX = ".txnindex"
PRODUCER_SNAPSHOT_FILE_SUFFIX = ".snapshot"
DELETED_FILE_SUFFIX = ".deleted"
CLEANED_FILE_SUFFIX = ".cleaned"
SWAP_FILE_SUFFIX = ".swap"
INDEX_SUFFIXES = (INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX)
SEGMENT_SUFFIXES = (LOG_FILE_SUFFIX, *INDEX_SUFFIXES)

DELETE_DIR_SUFFIX = "-delete"
FUTURE_DIR_SUFFIX = "-future"
STRAY_DIR_SUFFIX = "-stray"

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"  # LogCleanerManager: each partition's first dirty offset
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
META_PROPERTIES = "meta.properties"
LOCK_FILE = ".lock"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"

REMOTE_LOG_INDEX_CACHE_DIR = "remote-log-index-cache"  # RemoteIndexCache.DIR_NAME: LogManager.loadLogs skips it

_SEGMENT_NAME = re.compile(r"^(\d{20})(\.[a-z]+)((?:\.(?:deleted|cleaned|swap))?)$")
# LocalLog's DELETE_DIR_PATTERN, FUTURE_DIR_PATTERN and STRAY_DIR_PATTERN: "^(\\S+)-(\\S+)\\.(\\S+)-delete" (matched
# whole); Java's \S is any character but the six ASCII white spaces.
_JAVA_S = r"[^ \t\n\x0b\f\r]+"
_MARKED_DIR = {kind: re.compile(rf"{_JAVA_S}-{_JAVA_S}\.{_JAVA_S}-{kind}") for kind in ("delete", "future", "stray")}
_NOT_A_PARTITION = ("Found directory {path}, '{name}' is not in the form of topic-partition or "
                    "topic-partition.uniqueId-delete (if marked for deletion).\nKafka's log directories (and "
                    "children) should only contain Kafka topic data.")
MAX_TOPIC_LENGTH = 249
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")


def filename_prefix_from_offset(offset: int) -> str:
    """The 20-digit zero-padded base offset that names a segment's files."""
    if offset < 0:
        raise InvalidLayoutException(f"Segment base offset must be non-negative, got {offset}")
    return f"{offset:020d}"


def segment_file_name(base_offset: int, suffix: str) -> str:
    return filename_prefix_from_offset(base_offset) + suffix


@dataclass(frozen=True, slots=True)
class SegmentFileName:
    base_offset: int
    suffix: str  # ".log", ".index", ...
    state_suffix: str  # "", ".deleted", ".cleaned" or ".swap"


def parse_segment_file_name(name: str) -> SegmentFileName:
    """Parse ``00000000000000001000.log`` (optionally ``.deleted``/``.cleaned``/``.swap``)."""
    m = _SEGMENT_NAME.match(name)
    if not m or int(m.group(1)) >= 1 << 63:  # 20 digits above Long.MAX_VALUE: Kafka's parse throws on them
        raise InvalidLayoutException(
            f"{name!r} is not a Kafka segment file name (20-digit base offset, then .log/.index/.timeindex/...)")
    return SegmentFileName(int(m.group(1)), m.group(2), m.group(3))


def base_offset_of(path: str | os.PathLike) -> int:
    """Base offset from a segment file's path; InvalidLayoutException if misnamed."""
    return parse_segment_file_name(os.path.basename(os.fspath(path))).base_offset


@dataclass(frozen=True, slots=True)
class TopicPartition:
    topic: str
    partition: int
    kind: str = ""  # "", "delete", "future" or "stray"

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


def parse_java_long(text: str, bits: int = 64) -> int:
    """Java's ``Long.parseLong(text)`` (``bits=32``: ``Integer.parseInt``), radix 10: an optional sign, then
    decimal digits (any Unicode ``Nd`` digit, as ``Character.digit``), within range. Anything else raises
    NumberFormatException with the JDK's message. Python's ``int`` would also take spaces and underscores."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits or not all(c.isdecimal() for c in digits):
        raise NumberFormatException(f'For input string: "{text}"')
    value = int("".join(str(unicodedata.decimal(c)) for c in digits)) * (-1 if text[0] == "-" else 1)
    if not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
        raise NumberFormatException(f'For input string: "{text}"')
    return value


def offset_from_file_name(name: str) -> int:
    """``LogFileUtils.offsetFromFileName``: ``Long.parseLong`` of the name up to its first dot, as every pass of
    Kafka's log load reads a ``.log``, index, ``.snapshot``, ``.cleaned`` or ``.swap`` file's offset;
    NumberFormatException with the JDK's message when it is no long (``junk.log``, ``.log``, 21 digits)."""
    return parse_java_long(name[:name.index(".")] if "." in name else name)


def kafka_file_name_prefix(offset: int) -> str:
    """``LogFileUtils.filenamePrefixFromOffset`` as Kafka formats any long: at least 20 digits, a sign before
    them (``-00000000000000000001``): the file Kafka opens for an offset it read from another name."""
    return ("-" if offset < 0 else "") + f"{abs(offset):020d}"


def kafka_topic_partition(name: str, canonical_path: str = "") -> TopicPartition:
    """``LocalLog.parseTopicPartitionName`` as Kafka 4.4's ``LogManager.loadLogs`` applies it to every directory of
    a log dir: a name with a dash; a ``-delete``/``-future``/``-stray`` suffix only after ``.<uniqueId>``; then
    the last dash splits topic from an ``Integer.parseInt`` partition. No topic-name check (a name Kafka parses
    but no topic can have is a stray partition to its start). Raises NotTopicPartitionDirException with Kafka's
    message (``canonical_path``: the directory's canonical path, which the message names)."""
    def refused() -> NotTopicPartitionDirException:
        return NotTopicPartitionDirException(_NOT_A_PARTITION.format(path=canonical_path or name, name=name))

    if "-" not in name:
        raise refused()
    kind = next((k for k in _MARKED_DIR if name.endswith(f"-{k}")), "")
    if kind and not _MARKED_DIR[kind].fullmatch(name):
        raise refused()
    stem = name[:name.rindex(".")] if kind else name
    topic, _, number = stem.rpartition("-")
    if not topic or not number:
        raise refused()
    try:
        partition = parse_java_long(number, 32)
    except NumberFormatException:
        raise refused() from None
    return TopicPartition(topic, partition, kind)


def parse_partition_dir_name(name: str) -> TopicPartition:
    """``orders-3`` -> TopicPartition("orders", 3); ``orders-3.<uid>-delete`` keeps kind "delete". Kafka's parse
    (``kafka_topic_partition``), then the topic must be one Kafka allows (``Topic.validate``)."""
    try:
        tp = kafka_topic_partition(name)
    except NotTopicPartitionDirException:
        raise InvalidLayoutException(f"{name!r} is not a partition directory name (<topic>-<partition>)") from None
    topic = tp.topic
    if len(topic) > MAX_TOPIC_LENGTH or not _LEGAL_TOPIC.match(topic) or topic in (".", ".."):
        raise InvalidLayoutException(f"{name!r} does not name a legal Kafka topic")
    return tp


def index_paths(log_path: str | os.PathLike) -> dict[str, str]:
    """The index file paths beside a ``.log`` file, keyed by suffix."""
    stem = os.fspath(log_path)[: -len(LOG_FILE_SUFFIX)]
    return {suffix: stem + suffix for suffix in INDEX_SUFFIXES}
