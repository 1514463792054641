"""The status of a segment, and of a partition (its worst segment's), with their severity order; and the exit
statuses of every segdex command.

One vocabulary for indexcore (recovery, verification), the Spark jobs, the metadata tables (``status`` column,
``runs.count_<status>``) and the nightly DAG's quality check. ``SegmentStatus`` is a ``StrEnum``: its members are
the strings stored in the tables and compare equal to them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import IntEnum, StrEnum


class SegmentStatus(StrEnum):
    """What a segment's index files are, compared with what Kafka's ``LogSegment.recover`` writes for its ``.log``.

    Declared from the worst to the best: ``severity`` is the declaration order (0 worst).
    """

    ERROR = "error"  # the segment cannot be handled (offsets beyond its relative range, a write that failed)
    UNREADABLE = "unreadable"  # the .log (or its directory) cannot be read
    CORRUPT_LOG_TAIL = "corrupt_log_tail"  # Kafka's recovery would truncate the .log at its first invalid batch
    CORRUPT_INDEX = "corrupt_index"  # an index file Kafka's sanity checks or lookups would trip on
    MISSING = "missing"  # an index file is absent: Kafka rebuilds it at load
    EQUIVALENT = "equivalent"  # other bytes than a rebuild, every entry valid (another interval, follower appends)
    OK = "ok"  # byte-identical to Kafka's recovery

    @property
    def severity(self) -> int:
        """0 for the worst status; a partition takes its worst segment's status."""
        return _ORDER[self]

    @property
    def needs_attention(self) -> bool:
        """Whether this status makes a run exit 1 (``ok`` and ``equivalent`` do not)."""
        return self not in (SegmentStatus.OK, SegmentStatus.EQUIVALENT)

    @property
    def rebuildable(self) -> bool:
        """Whether ``reindex`` rewrites the index files of a segment with this status by default (the valid part
        of a corrupt tail included); ``equivalent`` ones only with ``--normalize``."""
        return self in (SegmentStatus.MISSING, SegmentStatus.CORRUPT_INDEX, SegmentStatus.CORRUPT_LOG_TAIL)

    @classmethod
    def worst(cls, statuses: list[str] | tuple[str, ...], default: SegmentStatus | None = None) -> SegmentStatus:
        """The most severe of ``statuses`` (``default``, else ``ok``, when there are none)."""
        members = [cls(s) for s in statuses]
        if not members:
            return default or cls.OK
        return min(members, key=lambda s: s.severity)


_ORDER = {s: i for i, s in enumerate(SegmentStatus)}

# The table columns ``runs.count_<status>``, best first (the order the summary lists them in).
STATUSES: tuple[SegmentStatus, ...] = tuple(reversed(SegmentStatus))
# What the nightly quality check fails a run on by default: data Kafka would cut or cannot read, and failures.
FAIL_STATUSES: tuple[SegmentStatus, ...] = (SegmentStatus.CORRUPT_LOG_TAIL, SegmentStatus.UNREADABLE,
                                            SegmentStatus.ERROR)


@dataclass(frozen=True, slots=True)
class Reason:
    """Why a segment has its status, as fields: the file concerned, the byte position in it, the cause.

    Formatted only where it is shown: in full (``str``) on the command line, relative to the partition
    directory in a table row (``relative_to``), where the row already says which partition it is.
    """

    cause: str
    file: str | None = None
    position: int | None = None

    def __str__(self) -> str:
        return f"{self.file}: {self.cause}" if self.file else self.cause

    def relative_to(self, directory: str, own_file: str | None = None) -> str:
        """The cause, prefixed by the file's name unless it is ``own_file`` (the row's own segment)."""
        if not self.file or self.file == own_file:
            return self.cause
        name = os.path.relpath(self.file, directory) if os.path.isabs(self.file) else self.file
        return f"{name}: {self.cause}"

    def joined(self, note: str) -> Reason:
        """This reason with ``note`` appended to its cause."""
        return Reason(f"{self.cause}; {note}" if self.cause else note, self.file, self.position)


class ExitStatus(IntEnum):
    """Exit statuses of every ``segdex`` command (and the spark-submit scripts)."""

    OK = 0  # everything clean
    ATTENTION = 1  # something needs attention: a line per problem on stderr, a status in the tables
    USAGE = 2  # usage error, or a check made before any change failed: nothing was changed
    FAILED = 3  # the run failed midway: stderr says what it had already changed
    SIGNAL_BASE = 128  # + the signal number: 130 Ctrl-C (SIGINT), 143 SIGTERM; stopped cleanly
