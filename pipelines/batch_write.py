"""Atomic replacement of many index files with few disk flushes.

Same guarantee as ``indexcore.atomic_file.write_atomic`` (temporary file in the same directory, made durable,
renamed over the target, directory fsynced: a crash leaves the old file or the new one), but for a batch:
every temporary file is written first, then one ``syncfs`` per filesystem makes them all durable (instead of
one ``fsync`` per file, which costs a journal commit each and does not scale with cores), then the renames,
then one more ``syncfs`` for the directories. Where ``syncfs`` is unavailable each file and directory is fsynced.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import tempfile
from dataclasses import dataclass, field

from indexcore.atomic_file import same_content

_libc = None


def _syncfs(fd: int) -> bool:
    """Linux ``syncfs(2)``: flush the filesystem holding ``fd``; False when not available or it failed."""
    global _libc
    try:
        if _libc is None:
            _libc = ctypes.CDLL(None, use_errno=True)
        return _libc.syncfs(fd) == 0
    except (OSError, AttributeError):
        return False


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
        errors: list[tuple[str, str]] = []
        synced_devices: set[int] = set()
        ok: list[tuple[str, str]] = []
        for tmp, path in self.staged:
            try:
                dev = os.stat(tmp).st_dev
                if dev not in synced_devices:
                    fd = os.open(tmp, os.O_RDONLY)
                    try:
                        if not _syncfs(fd):
                            os.fsync(fd)
                            synced_devices.discard(dev)
                        else:
                            synced_devices.add(dev)
                    finally:
                        os.close(fd)
                ok.append((tmp, path))
            except OSError as e:
                errors.append((path, e.strerror or str(e)))
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
        directories = []
        for tmp, path in ok:
            try:
                os.replace(tmp, path)
                d = os.path.dirname(os.path.abspath(path))
                if d not in directories:
                    directories.append(d)
            except OSError as e:
                errors.append((path, e.strerror or str(e)))
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
        # The renames are durable once each directory is: one syncfs per filesystem covers them all.
        flushed: set[int] = set()
        for d in directories:
            try:
                dev = os.stat(d).st_dev
                if dev in flushed:
                    continue
                fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
                try:
                    if _syncfs(fd):
                        flushed.add(dev)
                    else:
                        os.fsync(fd)
                finally:
                    os.close(fd)
            except OSError as e:
                errors.append((d, e.strerror or str(e)))
        self.staged.clear()
        return errors
