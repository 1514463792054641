"""A log dir's ``.lock`` held the way another process would hold it, from inside the test process.

A broker holds ``.lock`` with a POSIX record lock (``F_SETLK``), which never conflicts with a lock taken by the
same process; ``other_holder`` takes an *open file description* lock (``F_OFD_SETLK``) instead, which conflicts
with POSIX locks even within one process (fcntl(2)). Shared because the lock tests of ``log_dir``
(tests/indexcore/log/test_log_dir.py) and the refusal of ``index-trim`` on a locked dir
(tests/indexcore/tools/test_index_trim_dir.py) both need a holder without starting a second process."""

from __future__ import annotations

import contextlib
import fcntl
import os
import struct
from collections.abc import Iterator
from pathlib import Path


def _flock(kind: int, start: int = 0, length: int = 0) -> bytes:
    """``struct flock`` on Linux x86_64/aarch64: short l_type, short l_whence, off_t l_start, off_t l_len,
    pid_t l_pid (0, as F_OFD_SETLK requires), padded to 32 bytes."""
    return struct.pack("@hhqqi", kind, os.SEEK_SET, start, length, 0).ljust(32, b"\0")


@contextlib.contextmanager
def other_holder(lock_file: Path, kind: int = fcntl.F_WRLCK, start: int = 0, length: int = 0) -> Iterator[int]:
    """Hold ``lock_file`` (a byte range of it; length 0: to the end) as another process would: an OFD lock."""
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, _flock(kind, start, length))
        yield fd
    finally:
        os.close(fd)
