"""Opening segment, index and checkpoint files for reading: regular files only.

``open()`` on a FIFO named ``00000000000000000000.log`` blocks until a writer appears, forever in practice;
a device file would stream endlessly. Kafka only ever reads regular files, so segdex opens with ``O_NONBLOCK``
(a FIFO then opens at once), checks that the descriptor is a regular file, and refuses anything else with
``NotRegularFileException``.
"""

from __future__ import annotations

import io
import os
import stat

from segdex.indexcore.errors import SegdexError


class NotRegularFileException(SegdexError):
    """A path that names a FIFO, socket, device or directory where a regular file is expected."""

    def __init__(self, path: str, kind: str) -> None:
        self.path = path
        self.cause = f"cannot read: {kind}, not a regular file"
        super().__init__(f"{path}: {self.cause}")


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a regular file"


def check_regular(path: str | os.PathLike) -> None:
    """Raise ``NotRegularFileException`` unless ``path`` (followed through symlinks) is a regular file."""
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise NotRegularFileException(os.fspath(path), _kind(mode))


def is_regular(path: str | os.PathLike) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def open_regular_fd(path: str | os.PathLike) -> int:
    """A read-only descriptor of ``path``, which must be a regular file; never blocks on a FIFO."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFileException(os.fspath(path), _kind(mode))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_regular(path: str | os.PathLike, encoding: str | None = None) -> io.BufferedReader | io.TextIOWrapper:
    """``open(path, "rb")`` (or text with ``encoding``) for a regular file only."""
    fd = open_regular_fd(path)
    if encoding is None:
        return os.fdopen(fd, "rb")
    return os.fdopen(fd, "r", encoding=encoding)


def read_regular(path: str | os.PathLike) -> bytes | None:
    """The bytes of the regular file at ``path`` (``open_regular``'s checks), or None when there is none: an
    index file a segment may lack."""
    try:
        with open_regular(path) as f:
            return f.read()
    except FileNotFoundError:
        return None
