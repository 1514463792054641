"""Kafka's checkpoint files: offset checkpoints and the leader-epoch checkpoint.

Format (``CheckpointFile``): UTF-8 text; a version line (0), a count line, then one entry per line:
``topic partition offset`` for offset checkpoints, ``epoch startOffset`` for ``leader-epoch-checkpoint``.
Read as ``CheckpointFile.CheckpointReadBuffer.read`` reads it: lines as ``BufferedReader.readLine`` ends them
(``\n``, ``\r`` or ``\r\n``); an empty file, or one with its version line only, holds no entry; the version
and count lines and the numbers of an entry parsed by ``Integer.parseInt``/``Long.parseLong`` (no blank around
them); an entry's fields split by ``Pattern.compile("\\s+")`` (ASCII blanks; a leading blank makes an empty
first field).
"""

from __future__ import annotations

import os
import re

from segdex.indexcore.config.log_config import java_integer
from segdex.indexcore.errors import SegdexError
from segdex.indexcore.fs.atomic_file import write_atomic
from segdex.indexcore.fs.file_access import open_regular

CURRENT_VERSION = 0


class CorruptCheckpointException(SegdexError):
    """A checkpoint file that does not follow Kafka's format."""


_LINE_END = re.compile(r"\r\n|\r|\n")  # BufferedReader.readLine's line terminators
_BLANKS = re.compile(r"[ \t\n\x0b\f\r]+")  # Java's \s


def _read_text(path: str) -> str | None:
    """The file's text (None: no file); bytes that are not UTF-8 are a corrupt checkpoint, as Java's decoder's
    ``MalformedInputException``."""
    try:
        with open_regular(path) as f:
            data = f.read()
    except FileNotFoundError:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CorruptCheckpointException(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None


def _number(text: str, bits: int, path: str) -> int:
    """``Integer.parseInt``/``Long.parseLong``."""
    try:
        return java_integer(text, bits)
    except ValueError:
        raise CorruptCheckpointException(f"{path}: malformed number {text!r}") from None


def _parse(text: str, path: str, fields: int) -> list[list[str]]:
    """``CheckpointReadBuffer.read``: the entries' fields (``fields`` of them each)."""
    lines = _LINE_END.split(text)
    if lines[-1] == "":  # the last line's terminator ends no further line
        lines.pop()
    if not lines:  # an empty file (one created and never written) holds no entry
        return []
    if _number(lines[0], 32, path) != CURRENT_VERSION:
        raise CorruptCheckpointException(f"{path}: unrecognized version {lines[0]!r}")
    if len(lines) < 2:  # no count line: no entry
        return []
    expected = _number(lines[1], 32, path)
    entries = []
    for line in lines[2:]:
        parts = _BLANKS.split(line)
        while parts and parts[-1] == "":  # Pattern.split drops trailing empty strings
            parts.pop()
        if len(parts) != fields:
            raise CorruptCheckpointException(f"{path}: malformed line {line!r}")
        entries.append(parts)
    if len(entries) != expected:
        raise CorruptCheckpointException(f"{path}: expected {expected} entries but found {len(entries)}")
    return entries


def read_offset_checkpoint(path: str | os.PathLike) -> dict[tuple[str, int], int]:
    """``{(topic, partition): offset}``; a missing file reads as empty."""
    path = os.fspath(path)
    text = _read_text(path)
    if text is None:
        return {}
    return {(topic, _number(partition, 32, path)): _number(offset, 64, path)
            for topic, partition, offset in _parse(text, path, 3)}


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
    text = _read_text(path)
    if text is None:
        return []
    return [(_number(e, 32, path), _number(o, 64, path)) for e, o in _parse(text, path, 2)]


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
