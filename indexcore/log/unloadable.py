"""What a broker's start trips on in a log dir, found from names alone, and what Kafka 4.4 does with each.

Read in Kafka's code (``LogManager.loadLogs``, ``LogLoader.load``, ``ProducerStateManager``) and confirmed on a real
Kafka 4.4.0 broker (``tests/kafka/golden/unloadable_kafka.json`` records what its start did with each case):

* ``LogManager.loadLogs`` parses the name of every directory of a log dir (``LocalLog.parseTopicPartitionName``;
  it skips ``remote-log-index-cache``) before it loads any partition. One that is no ``<topic>-<partition>``
  (``lost+found``, ``backup``, ``.snapshot``, ``orders-x``, ``orders-0-delete`` without its unique id) throws
  ``KafkaException: Found directory ..., '...' is not in the form of topic-partition ...``: the broker logs
  "Encountered fatal fault: Error starting LogManager" and exits (status 1). Regular files there are ignored.
* The load of each partition directory (``-delete``, ``-future`` and ``-stray`` ones too) reads an offset from the
  name of every regular file ending ``.log``, ``.index``, ``.timeindex``, ``.txnindex`` (``loadSegmentFiles``),
  ``.snapshot`` (``ProducerStateManager.listSnapshotFiles``), ``.cleaned`` or ``.swap``
  (``removeTempFilesAndCollectSwapFiles``), with ``LogFileUtils.offsetFromFileName``: ``Long.parseLong`` of the
  name up to its first dot. ``junk.log``, ``abc.index``, ``foo.snapshot``, ``.log``, a 21-digit offset: a
  ``NumberFormatException`` the load does not catch, and the broker exits the same way. The metadata log
  (``__cluster_metadata-0``), which the raft layer loads before ``LogManager``, too ("Got exception while starting
  SharedServer"). Names ending ``.deleted`` are deleted at load; other names and subdirectories are ignored.
* A ``.log`` whose name parses but is not the 20-digit name of its offset (``5.log``, ``+5.log``, ``-1.log``): the
  broker starts, opens the segment of that offset (``00000000000000000005.log``, created empty with its index
  files and a snapshot) and leaves the file as it is; when the offset is above every segment's base, that empty
  segment is the partition's last and its log end offset becomes that offset.
* A failed start has deleted the log dir's ``.kafka_cleanshutdown`` (``loadLogs`` removes it before it lists the
  dir; the metadata log fails before that): the start after the fix recovers every partition.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from segdex.indexcore.errors import InvalidLayoutException, SegdexError
from segdex.indexcore.log.layout import (
    CLEANED_FILE_SUFFIX,
    DELETED_FILE_SUFFIX,
    INDEX_SUFFIXES,
    LOG_FILE_SUFFIX,
    PRODUCER_SNAPSHOT_FILE_SUFFIX,
    SWAP_FILE_SUFFIX,
    kafka_file_name_prefix,
    offset_from_file_name,
    parse_segment_file_name,
)

WILL_NOT_START = "the broker will not start"
# the order a start meets what it throws on: the raft layer loads the metadata log first, then LogManager.loadLogs
# parses every directory name before it loads any partition (in parallel: no order among those)
STAGE_METADATA_LOG, STAGE_LOG_DIR, STAGE_PARTITION = 0, 1, 2
# file suffixes whose names a partition's load parses, and the Kafka step that does
_PARSED_BY = {
    **dict.fromkeys((LOG_FILE_SUFFIX, *INDEX_SUFFIXES), "LogLoader.loadSegmentFiles"),
    PRODUCER_SNAPSHOT_FILE_SUFFIX: "ProducerStateManager.listSnapshotFiles",
    CLEANED_FILE_SUFFIX: "LogLoader.removeTempFilesAndCollectSwapFiles",
    SWAP_FILE_SUFFIX: "LogLoader.removeTempFilesAndCollectSwapFiles",
}


@dataclass(frozen=True, slots=True)
class Unloadable:
    """One thing in a log dir that a broker's start trips on, and what the start does with it.

    ``exception``: Kafka's exception as its log's fatal line shows it (first line), None when the broker starts
    anyway; ``effect``: one line saying what the start does ("the broker will not start: <exception>");
    ``deletes_marker``: the failed start has deleted ``.kafka_cleanshutdown`` first; ``stage``: when the start meets
    it (``STAGE_*``); for a ``.log`` name the start misreads, ``opens``: the segment file it creates,
    ``log_end_offset``: the partition's log end offset after the start, where that segment sets it."""

    path: str
    effect: str
    hint: str
    exception: str | None = None
    deletes_marker: bool = False
    stage: int = STAGE_PARTITION
    opens: str | None = None
    log_end_offset: int | None = None

    @property
    def fails(self) -> bool:
        return self.exception is not None

    def __str__(self) -> str:
        return f"{self.path}: {self.effect} ({self.hint})"


def _kafka_text(e: SegdexError) -> str:
    return f"{e.kafka_class}: {str(e).splitlines()[0]}"


def failed_start(path: str, e: SegdexError, hint: str, stage: int) -> Unloadable:
    """An Unloadable for an exception Kafka's start does not catch: the broker exits."""
    text = _kafka_text(e)
    return Unloadable(path, f"{WILL_NOT_START}: {text}", hint, text, stage != STAGE_METADATA_LOG, stage)


def file_problem(partition_dir: str, name: str, bases: set[int], metadata_log: bool = False) -> Unloadable | None:
    """What the load of ``partition_dir`` does with its regular file ``name`` (``bases``: the base offsets of the
    partition's segments, from their 20-digit ``.log`` names): None when nothing worth saying."""
    if name.endswith(DELETED_FILE_SUFFIX):
        return None  # deleted at load
    suffix = next((s for s in _PARSED_BY if name.endswith(s)), None)
    if suffix is None:
        return None
    path = os.path.join(partition_dir, name)
    try:
        offset = offset_from_file_name(name)
    except InvalidLayoutException as e:
        return failed_start(path, e, f"{_PARSED_BY[suffix]} reads an offset from the name of every {suffix} file; "
                                     f"move it out of the partition dir",
                            STAGE_METADATA_LOG if metadata_log else STAGE_PARTITION)
    if suffix != LOG_FILE_SUFFIX or name == kafka_file_name_prefix(offset) + LOG_FILE_SUFFIX or offset in bases:
        return None
    opened = kafka_file_name_prefix(offset) + LOG_FILE_SUFFIX
    last = not bases or offset > max(bases)
    effect = (f"the broker starts but reads it as the segment at offset {offset}: it creates an empty {opened} "
              f"(and its index files) beside the partition's segments"
              + (f", and the partition's log end offset becomes {offset}" if last else ""))
    return Unloadable(path, effect, "move it out of the partition dir", opens=opened,
                      log_end_offset=offset if last else None)


def partition_dir_problems(partition_dir: str, metadata_log: bool = False) -> list[Unloadable]:
    """Every file of a partition directory whose name its load trips on (``file_problem``), by name; an
    unreadable directory gives none (the scan reports it)."""
    try:
        names = sorted(os.listdir(partition_dir))
    except OSError:
        return []
    bases = set()
    for name in names:
        try:
            parsed = parse_segment_file_name(name)
        except InvalidLayoutException:
            continue
        if parsed.suffix == LOG_FILE_SUFFIX and not parsed.state_suffix:
            bases.add(parsed.base_offset)
    found = []
    for name in names:
        problem = file_problem(partition_dir, name, bases, metadata_log)
        # the load skips what is no regular file (Java's File.isFile, a symlink's target); stat only the rare suspect
        if problem is not None and os.path.isfile(problem.path):
            found.append(problem)
    return found


def first_failure(problems: list[Unloadable]) -> Unloadable | None:
    """The failure a start meets first (the broker exits on it), by stage; None when the start does not fail."""
    failing = [p for p in problems if p.fails]
    return min(failing, key=lambda p: p.stage) if failing else None


def fail_notes(problems: list[Unloadable], clean_shutdown: bool) -> list[str]:
    """The line a startup preview gives a partition of a log dir whose start fails: the failure the broker exits
    on, how many others wait behind it, and, with ``.kafka_cleanshutdown`` there, that the failed start deletes it
    (so the start after the fix recovers every partition)."""
    first = first_failure(problems)
    if first is None:
        return []
    note = f"{first.effect} ({first.path})"
    others = sum(p.fails for p in problems) - 1
    if others:
        note += f"; {others} more in this log dir"
    if clean_shutdown and first.deletes_marker:
        note += ("; the failed start deletes .kafka_cleanshutdown first: the start after the fix recovers every "
                 "partition")
    return [note]


def unloadable_refusal(log_dir: str, problems: list[Unloadable]) -> str:
    """Why a writing command leaves a log dir alone (its ``unloadable`` lines are printed apart): the operator
    moves what they name, or says ``--allow-unloadable``."""
    what = "will not start on it" if any(u.fails for u in problems) else "misreads it"
    return (f"{log_dir}: a broker {what} as it is ({len(problems)} unloadable line{'s' if len(problems) != 1 else ''}"
            f"); nothing was written there: move what they name out of it, or give --allow-unloadable")
