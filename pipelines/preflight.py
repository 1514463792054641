"""Checks made before the first change in any log dir: a usable metadata destination and room for the files.

A run that would fail at its end (a read-only or mistyped ``--metadata`` path, a full disk) must fail before it
has rewritten anything, so that the operator never has to find out what a half-done run changed. These checks
cannot make a later failure impossible (a disk can fill meanwhile); the writers handle that per file.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from segdex.indexcore.errors import NothingChangedError

# Upper bounds used to estimate what a run writes.
MIN_BATCH_BYTES = 61  # a v2 batch header: a segment of S bytes holds at most S / 61 batches
OFFSET_ENTRY_BYTES = 8
TIME_ENTRY_BYTES = 12
METADATA_BYTES_PER_SEGMENT = 1024  # a segments row, its partitions/runs share and Delta log overhead, generously
METADATA_BASE_BYTES = 1 << 20
HEADROOM_BYTES = 1 << 20  # never fill a filesystem to its last byte


class PreflightError(NothingChangedError):
    """The run cannot start: nothing was changed."""


@dataclass(frozen=True)
class RoomShortage:
    """A filesystem without room for what the run may write there; ``paths``: the run's paths on it."""

    paths: tuple[str, ...]
    needed: int
    available: int

    def __str__(self) -> str:
        return (f"{', '.join(self.paths)}: not enough room: about {self.needed:,} bytes needed for the files this "
                f"run may write, {self.available:,} bytes available")


def index_bytes_bound(size_bytes: int, index_interval_bytes: int) -> int:
    """At most how many bytes Kafka's recovery writes into a segment's ``.index`` and ``.timeindex``: an entry
    per ``index.interval.bytes`` (and never more than one per batch), plus the final time entry."""
    entries = size_bytes // max(index_interval_bytes + 1, MIN_BATCH_BYTES)
    return entries * (OFFSET_ENTRY_BYTES + TIME_ENTRY_BYTES) + TIME_ENTRY_BYTES


def _free_bytes(path: str) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def _existing(path: str) -> str:
    """``path`` or its nearest existing ancestor."""
    path = os.path.abspath(path)
    while not os.path.exists(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


def _is_local(path: str) -> bool:
    return "://" not in path or path.startswith("file://")


def _tree_bytes(path: str) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass
    return total


def check_metadata_destination(path: str) -> None:
    """The metadata directory exists (or can be created) and takes a file, as do its tables' ``_delta_log``
    directories; PreflightError with the reason otherwise. On object storage (``s3://``, ``s3a://``): a well-formed
    URI, and a store that answers a listing of it with these credentials (a missing bucket, refused credentials
    or an unreachable endpoint is one line, before any change). Other remote URIs are left to the writer."""
    if path.split("://", 1)[0].lower() in ("s3", "s3a") and "://" in path:  # metadata_store.is_object_store
        _check_object_store(path)
        return
    if not _is_local(path):
        return
    local = path[len("file://"):] if path.startswith("file://") else path
    try:
        os.makedirs(local, exist_ok=True)
    except OSError as e:
        raise PreflightError(f"metadata path {path}: cannot create it: {e.strerror or e}") from None
    if not os.path.isdir(local):
        raise PreflightError(f"metadata path {path}: not a directory")
    for name in ("segments", "partitions", "runs", "retention_actions"):
        table = os.path.join(local, name)
        if os.path.lexists(table) and not os.path.isdir(table):
            raise PreflightError(f"metadata path {path}: {table} is not a directory (a Delta table goes there)")
    probes = [local] + [os.path.join(local, n, "_delta_log") for n in sorted(os.listdir(local))
                        if os.path.isdir(os.path.join(local, n, "_delta_log"))]
    for directory in probes:
        probe = os.path.join(directory, f".segdex-probe-{os.getpid()}-{os.urandom(4).hex()}")
        try:
            fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.write(fd, b"segdex")
                os.fsync(fd)
            finally:
                os.close(fd)
                os.unlink(probe)
        except OSError as e:
            raise PreflightError(f"metadata path {path}: cannot write in {directory}: {e.strerror or e}") from None


def _check_object_store(path: str) -> None:
    from .metadata_store import MetadataStore, MetadataStoreError, check_object_store_uri, one_line

    if (problem := check_object_store_uri(path)) is not None:
        raise PreflightError(f"metadata path {path}: {problem}")
    if os.environ.get("SEGDEX_DELTA_WRITER", "").strip().lower() == "spark":  # metadata_store.WRITER_ENV
        raise PreflightError(f"metadata path {path}: SEGDEX_DELTA_WRITER=spark cannot write tables on object "
                             "storage: Delta Lake on Spark has no log store safe for other writers there (without "
                             "DynamoDB); unset it, delta-rs writes them")
    try:
        MetadataStore(path).exists("runs")
    except MetadataStoreError as e:
        raise PreflightError(f"metadata path {e}") from None
    except OSError as e:  # the store answered with something else than a refusal: one line, its first
        raise PreflightError(f"metadata path {path}: {one_line(e)}") from None


def metadata_bytes(path: str, segments: int) -> int:
    """Room the metadata tables may need: new rows, plus a rewrite of the existing data files (MERGE copies the
    files it changes)."""
    need = METADATA_BASE_BYTES + segments * METADATA_BYTES_PER_SEGMENT
    if _is_local(path) and os.path.isdir(path):
        need += _tree_bytes(path)
    return need


def check_room(needs: Iterable[tuple[str, int]]) -> list[RoomShortage]:
    """``needs``: (a path, bytes to write under it). Needs on one filesystem are added up; returns a shortage
    for each filesystem that lacks the room, with the paths on it."""
    by_device: dict[int, list] = {}
    for path, needed in needs:
        existing = _existing(path)
        entry = by_device.setdefault(os.stat(existing).st_dev, [[], existing, 0])
        if path not in entry[0]:
            entry[0].append(path)
        entry[2] += needed
    shortages = []
    for paths, existing, needed in by_device.values():
        available = _free_bytes(existing)
        if needed + HEADROOM_BYTES > available:
            shortages.append(RoomShortage(tuple(paths), needed + HEADROOM_BYTES, available))
    return shortages
