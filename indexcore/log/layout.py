"""Kafka's file and directory naming (``LogFileUtils``, ``UnifiedLog.parseTopicPartitionName``)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from segdex.indexcore.errors import InvalidLayoutException

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

_SEGMENT_NAME = re.compile(r"^(\d{20})(\.[a-z]+)((?:\.(?:deleted|cleaned|swap))?)$")
# "<topic>-<partition>", optionally followed by ".<uniqueId>-delete|-future|-stray" as Kafka names them.
_PARTITION_DIR = re.compile(
    r"^(?P<topic>.+)-(?P<partition>\d+)(?:(?:\.(?P<uid>[0-9a-fA-F]+))?-(?P<kind>delete|future|stray))?$")
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
    if not m:
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


def parse_partition_dir_name(name: str) -> TopicPartition:
    """``orders-3`` -> TopicPartition("orders", 3); ``orders-3.<uid>-delete`` keeps kind "delete"."""
    m = _PARTITION_DIR.match(name)
    if not m:
        raise InvalidLayoutException(f"{name!r} is not a partition directory name (<topic>-<partition>)")
    topic = m.group("topic")
    if len(topic) > MAX_TOPIC_LENGTH or not _LEGAL_TOPIC.match(topic) or topic in (".", ".."):
        raise InvalidLayoutException(f"{name!r} does not name a legal Kafka topic")
    return TopicPartition(topic, int(m.group("partition")), m.group("kind") or "")


def index_paths(log_path: str | os.PathLike) -> dict[str, str]:
    """The index file paths beside a ``.log`` file, keyed by suffix."""
    stem = os.fspath(log_path)[: -len(LOG_FILE_SUFFIX)]
    return {suffix: stem + suffix for suffix in INDEX_SUFFIXES}
