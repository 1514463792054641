"""Kafka's checkpoint files: offset checkpoints and the leader-epoch checkpoint.

Format (``CheckpointFile``): a version line (0), a count line, then one entry
per line: ``topic partition offset`` for offset checkpoints, ``epoch
startOffset`` for ``leader-epoch-checkpoint``.
"""

from __future__ import annotations

import os

from segdex.indexcore.errors import SegdexError
from segdex.indexcore.fs.atomic_file import write_atomic
from segdex.indexcore.fs.file_access import open_regular

CURRENT_VERSION = 0


class CorruptCheckpointException(SegdexError):
    """A checkpoint file that does not follow Kafka's format."""


def _parse(text: str, path: str, fields: int) -> list[list[str]]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:  # CheckpointReadBuffer.read: an empty file (one created and never written) holds no entry
        return []
    if len(lines) < 2:
        raise CorruptCheckpointException(f"{path}: expected a version line and a count line")
    if lines[0].strip() != str(CURRENT_VERSION):
        raise CorruptCheckpointException(f"{path}: unrecognized version {lines[0].strip()!r}")
    try:
        expected = int(lines[1])
    except ValueError:
        raise CorruptCheckpointException(f"{path}: malformed entry count {lines[1]!r}") from None
    entries = [line.split() for line in lines[2:]]
    if len(entries) != expected:
        raise CorruptCheckpointException(f"{path}: expected {expected} entries but found {len(entries)}")
    for e in entries:
        if len(e) != fields:
            raise CorruptCheckpointException(f"{path}: malformed line {' '.join(e)!r}")
    return entries


def read_offset_checkpoint(path: str | os.PathLike) -> dict[tuple[str, int], int]:
    """``{(topic, partition): offset}``; a missing file reads as empty."""
    path = os.fspath(path)
    try:
        with open_regular(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return {}
    out = {}
    for topic, partition, offset in _parse(text, path, 3):
        try:
            out[(topic, int(partition))] = int(offset)
        except ValueError:
            raise CorruptCheckpointException(f"{path}: malformed line {topic} {partition} {offset}") from None
    return out


def format_offset_checkpoint(offsets: dict[tuple[str, int], int]) -> bytes:
    lines = [str(CURRENT_VERSION), str(len(offsets))]
    lines += [f"{t} {p} {o}" for (t, p), o in offsets.items()]
    return ("\n".join(lines) + "\n").encode()


# Kafka's files beside a checkpoint, whose mode a new checkpoint file takes (its owner is its directory's).
_MODE_TEMPLATES = ("meta.properties", "recovery-point-offset-checkpoint", "log-start-offset-checkpoint",
                   "replication-offset-checkpoint", "partition.metadata", "leader-epoch-checkpoint")


def mode_template(path: str | os.PathLike) -> str | None:
    """A Kafka file in the same directory whose mode a new file at ``path`` should take (a ``.log`` there when
    none of the checkpoint/metadata files exist), or None."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    for name in _MODE_TEMPLATES:
        candidate = os.path.join(directory, name)
        if candidate != path and os.path.isfile(candidate):
            return candidate
    try:
        logs = sorted(n for n in os.listdir(directory) if n.endswith(".log"))
    except OSError:
        return None
    return os.path.join(directory, logs[0]) if logs else None


def write_offset_checkpoint(path: str | os.PathLike, offsets: dict[tuple[str, int], int]) -> None:
    write_atomic(path, format_offset_checkpoint(offsets), template=mode_template(path))


def read_leader_epoch_checkpoint(path: str | os.PathLike) -> list[tuple[int, int]]:
    """``[(epoch, startOffset), ...]``; a missing file reads as empty."""
    path = os.fspath(path)
    try:
        with open_regular(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return []
    try:
        return [(int(e), int(o)) for e, o in _parse(text, path, 2)]
    except ValueError:
        raise CorruptCheckpointException(f"{path}: malformed epoch entry") from None


def format_leader_epoch_checkpoint(entries: list[tuple[int, int]]) -> bytes:
    lines = [str(CURRENT_VERSION), str(len(entries))] + [f"{e} {o}" for e, o in entries]
    return ("\n".join(lines) + "\n").encode()


def write_leader_epoch_checkpoint(path: str | os.PathLike, entries: list[tuple[int, int]]) -> None:
    write_atomic(path, format_leader_epoch_checkpoint(entries), template=mode_template(path))


PARTITION_METADATA = "partition.metadata"


def read_partition_metadata(partition_dir: str | os.PathLike) -> str | None:
    """``PartitionMetadataFile.read``: the topic id of ``partition.metadata`` (``version: 0``, ``topic_id: <id>``),
    None when the file is missing or holds no topic id line."""
    try:
        with open_regular(os.path.join(partition_dir, PARTITION_METADATA)) as f:
            text = f.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return None
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == "topic_id" and value.strip():
            return value.strip()
    return None
