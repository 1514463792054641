"""The metadata log's snapshots (raft's ``Snapshots``): ``<end offset, 20 digits>-<epoch, 10 digits>.checkpoint``
in ``__cluster_metadata-0``, each a file of record batches (a ``SnapshotHeader`` control batch, the image's
records, a ``SnapshotFooter``) that stands for the log up to its end offset (exclusive). A snapshot being written
is ``.checkpoint.part``, one being removed ``.checkpoint.deleted``: neither counts (``Snapshots.parse``)."""

from __future__ import annotations

import os
import re

SNAPSHOT_SUFFIX = ".checkpoint"
_SNAPSHOT_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")


def snapshot_id(path: str | os.PathLike) -> tuple[int, int] | None:
    """``Snapshots.parse``: (end offset, epoch) of a snapshot file's name, None for any other file."""
    m = _SNAPSHOT_NAME.match(os.path.basename(os.fspath(path)))
    return (int(m.group(1)), int(m.group(2))) if m else None


def snapshots(partition_dir: str | os.PathLike) -> list[tuple[tuple[int, int], str]]:
    """The complete snapshots of a metadata log's partition dir, oldest first: ((end offset, epoch), path)."""
    out = []
    for name in os.listdir(partition_dir):
        found = snapshot_id(name)
        if found is not None:
            out.append((found, os.path.join(os.fspath(partition_dir), name)))
    return sorted(out)
