"""Atomic replacement of many index files with few disk flushes.

Same guarantee as ``indexcore.atomic_file.write_atomic`` (temporary file in the same directory, made durable,
renamed over the target, directory fsynced: a crash leaves the old file or the new one), but for a batch:
every temporary file is written first, then all are fsynced at once from a few threads (the filesystem's journal
commits concurrent fsyncs together: one after another, each costs a commit and the task waits on the disk
instead of using its core), then the renames, then the directories are fsynced the same way.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from indexcore.atomic_file import same_content

FLUSH_THREADS = 16


def _fsync_path(path: str, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_all(paths: list[str], directory: bool = False) -> list[tuple[str, str]]:
    """fsync every path from a few threads (the filesystem's journal commits concurrent fsyncs together);
    returns ``(path, error)`` for failures."""
    def one(path: str) -> tuple[str, str] | None:
        try:
            _fsync_path(path, directory)
            return None
        except OSError as e:
            return path, e.strerror or str(e)

    if len(paths) <= 1:
        results = [one(p) for p in paths]
    else:
        with ThreadPoolExecutor(min(FLUSH_THREADS, len(paths))) as pool:
            results = list(pool.map(one, paths))
    return [r for r in results if r is not None]


@dataclass
class PendingWrites:
    """Temporary files staged beside their targets, committed together."""

    staged: list[tuple[str, str]] = field(default_factory=list)  # (tmp, target)

    def stage(self, path: str, data: bytes) -> bool:
        """Stage ``data`` for ``path`` unless the file already holds exactly it; True when staged."""
        if same_content(path, data):
            return False
        directory = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(prefix=".segdex-", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            try:
                os.chmod(tmp, os.stat(path).st_mode & 0o7777)
            except FileNotFoundError:
                os.chmod(tmp, 0o644)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        self.staged.append((tmp, path))
        return True

    def discard(self) -> None:
        for tmp, _ in self.staged:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        self.staged.clear()

    def commit(self) -> list[tuple[str, str]]:
        """Make staged files durable, rename them over their targets, fsync the directories.

        Returns ``(target, error)`` for files that could not be replaced (their temporaries are removed).
        """
        if not self.staged:
            return []
        failed = dict(_fsync_all([tmp for tmp, _ in self.staged]))
        errors: list[tuple[str, str]] = []
        directories: list[str] = []
        for tmp, path in self.staged:
            try:
                if tmp in failed:
                    raise OSError(failed[tmp])
                os.replace(tmp, path)
                d = os.path.dirname(os.path.abspath(path))
                if d not in directories:
                    directories.append(d)
            except OSError as e:
                errors.append((path, e.strerror or str(e)))
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
        errors += _fsync_all(directories, directory=True)
        self.staged.clear()
        return errors
