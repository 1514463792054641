"""Atomic file replacement: temporary file in the same directory, fsync, rename, fsync the directory.

A crash at any moment leaves either the old file or the new one, never a mix. The new file gets the owner,
group and mode a broker expects (``FileAttributes.for_target``): brokers run as their own user while segdex
often runs as root, and a broker that cannot open its index files read-write does not start.

Temporary files are named ``.segdex-<pid>-<random>.tmp`` (``is_temporary``); a run killed between writing
and renaming one leaves it behind, and the next writing run removes it under the log dir's ``.lock``
(``remove_temporaries``). Kafka's loader ignores such files.
"""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass

TEMP_PREFIX = ".segdex-"
TEMP_SUFFIX = ".tmp"
DEFAULT_MODE = 0o644  # what a broker running with the usual umask 022 creates


def fsync_dir(directory: str | os.PathLike) -> None:
    fd = os.open(os.fspath(directory), os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def temporary_path(directory: str) -> str:
    """A fresh temporary file name in ``directory`` (opened with O_EXCL by the caller)."""
    return os.path.join(directory, f"{TEMP_PREFIX}{os.getpid()}-{os.urandom(6).hex()}{TEMP_SUFFIX}")


def is_temporary(name: str) -> bool:
    """Whether a file name is one of segdex's temporary files."""
    return name.startswith(TEMP_PREFIX) and name.endswith(TEMP_SUFFIX)


def remove_temporaries(directory: str | os.PathLike) -> list[str]:
    """Delete segdex's temporary files left in ``directory`` by a run that was killed; returns their paths.

    Call only while holding the log dir's ``.lock``: then no other segdex run is writing there."""
    directory = os.fspath(directory)
    removed = []
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return removed
    for name in names:
        if is_temporary(name):
            path = os.path.join(directory, name)
            try:
                os.unlink(path)
            except FileNotFoundError:
                continue
            removed.append(path)
    if removed:
        fsync_dir(directory)
    return sorted(removed)


@dataclass(frozen=True, slots=True)
class FileAttributes:
    """Owner, group and permission bits a written file must end with."""

    uid: int
    gid: int
    mode: int

    @classmethod
    def for_target(cls, path: str, template: str | None = None) -> FileAttributes:
        """The attributes for a file written at ``path``: those of the file it replaces; for a new file, the owner
        and group of its directory and the mode of ``template`` (the ``.log`` beside an index file, say), else
        0644."""
        try:
            st = os.stat(path)
            return cls(st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode))
        except FileNotFoundError:
            pass
        dst = os.stat(os.path.dirname(os.path.abspath(path)))
        mode = DEFAULT_MODE
        if template is not None:
            try:
                mode = stat.S_IMODE(os.stat(template).st_mode)
            except FileNotFoundError:
                pass
        return cls(dst.st_uid, dst.st_gid, mode)

    def apply(self, fd: int, path: str) -> None:
        """Give the open file ``fd`` these attributes. Changing the owner needs root (or the same owner): when it
        is not possible the write fails, rather than leave a file the broker may be unable to open."""
        st = os.fstat(fd)
        if (st.st_uid, st.st_gid) != (self.uid, self.gid):
            try:
                os.fchown(fd, self.uid, self.gid)
            except PermissionError:
                raise PermissionError(
                    1, f"cannot give {os.path.basename(path)} the owner {self.uid}:{self.gid} of the file it replaces "
                       f"(run segdex as that user or as root)", path) from None
        if stat.S_IMODE(st.st_mode) != self.mode:
            os.fchmod(fd, self.mode)


def create_temporary(path: str, data: bytes, attributes: FileAttributes, sync: bool = True) -> str:
    """Write ``data`` into a new temporary file beside ``path`` with ``attributes``; fsync it when ``sync``.
    Returns the temporary path (removed again when anything fails)."""
    tmp = temporary_path(os.path.dirname(os.path.abspath(path)))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            attributes.apply(fd, path)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        _discard(tmp)
        raise
    return tmp


def open_temporary(path: str, template: str | None = None):
    """A new temporary file beside ``path`` with the attributes ``path`` would get (``FileAttributes.for_target``),
    opened for buffered writing: for a file too big to hold in memory, streamed in, then fsynced and renamed by
    the caller. Returns (its path, the open file)."""
    attributes = FileAttributes.for_target(path, template)
    tmp = temporary_path(os.path.dirname(os.path.abspath(path)))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        attributes.apply(fd, path)
        return tmp, os.fdopen(fd, "wb", buffering=1 << 20)
    except BaseException:
        os.close(fd)
        _discard(tmp)
        raise


def _discard(tmp: str) -> None:
    """Remove a temporary whose write or rename failed (already gone: nothing to do)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)


def write_atomic(path: str | os.PathLike, data: bytes, fsync_directory: bool = True,
                 template: str | os.PathLike | None = None) -> None:
    """Replace ``path`` with ``data`` atomically, keeping the owner, group and mode of the file it replaces (a new
    file: its directory's owner and group, ``template``'s mode; see ``FileAttributes.for_target``)."""
    path = os.fspath(path)
    attributes = FileAttributes.for_target(path, os.fspath(template) if template is not None else None)
    tmp = create_temporary(path, data, attributes)
    try:
        os.replace(tmp, path)
    except BaseException:
        _discard(tmp)
        raise
    if fsync_directory:
        fsync_dir(os.path.dirname(os.path.abspath(path)))


def create_empty(path: str, attributes: FileAttributes) -> bool:
    """Create an empty file (O_EXCL) with ``attributes`` and fsync it; False when it already exists."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    try:
        attributes.apply(fd, path)
        os.fsync(fd)
    finally:
        os.close(fd)
    return True


def same_content(path: str | os.PathLike, data: bytes) -> bool:
    """Whether ``path`` is a regular file holding exactly ``data`` (reads no more than needed)."""
    from segdex.indexcore.fs.file_access import NotRegularFileException, open_regular

    try:
        if os.path.getsize(path) != len(data):
            return False
        with open_regular(path) as f:
            return f.read() == data
    except (FileNotFoundError, NotRegularFileException):
        return False
