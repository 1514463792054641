"""Atomic file replacement: temporary file in the same directory, fsync, rename, fsync the directory.

A crash at any moment leaves either the old file or the new one, never a mix.
"""

from __future__ import annotations

import os


def fsync_dir(directory: str | os.PathLike) -> None:
    fd = os.open(os.fspath(directory), os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: str | os.PathLike, data: bytes, fsync_directory: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically (keeps the old file's mode when there is one)."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    # O_EXCL with a random name, as tempfile.mkstemp does (tempfile itself costs ~7 ms of start-up to import).
    tmp = os.path.join(directory, f".segdex-{os.getpid()}-{os.urandom(6).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        except FileNotFoundError:
            os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    if fsync_directory:
        fsync_dir(directory)


def same_content(path: str | os.PathLike, data: bytes) -> bool:
    """Whether ``path`` exists and holds exactly ``data`` (reads no more than needed)."""
    try:
        if os.path.getsize(path) != len(data):
            return False
        with open(path, "rb") as f:
            return f.read() == data
    except FileNotFoundError:
        return False
