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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from segdex.indexcore.fs.atomic_file import FileAttributes, create_temporary, same_content

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

    def stage(self, path: str, data: bytes, template: str | None = None) -> bool:
        """Stage ``data`` for ``path`` unless the file already holds exactly it; True when staged. The temporary
        file already has the owner, group and mode the target must keep (``FileAttributes.for_target``)."""
        if same_content(path, data):
            return False
        tmp = create_temporary(path, data, FileAttributes.for_target(path, template), sync=False)
        self.staged.append((tmp, path))
        return True

    def discard(self, targets: set[str] | None = None) -> None:
        """Remove the temporaries of ``targets`` (every staged file when None); they will not be committed."""
        keep = []
        for tmp, target in self.staged:
            if targets is None or target in targets:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
            else:
                keep.append((tmp, target))
        self.staged[:] = keep

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
        # A rename whose directory could not be made durable may not survive a crash: its file counts as failed.
        for directory, why in _fsync_all(directories, directory=True):
            errors += [(path, f"fsync of its directory failed: {why}") for _, path in self.staged
                       if os.path.dirname(os.path.abspath(path)) == directory]
        self.staged.clear()
        return errors
