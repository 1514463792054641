"""The files a block of code opens in one directory, as the kernel reports them (Linux ``inotify``, ``IN_OPEN``):
a count of opens by file name, taken from the real filesystem with nothing in the code under test replaced.

The kernel merges an event into the one queued just before it when both are the same; closes are watched too, so
that an open, its close and the next open of the same file stay three events (two opens of one file, both still
open at once, still count as one)."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import struct
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

IN_CLOSE_WRITE, IN_CLOSE_NOWRITE, IN_OPEN = 0x08, 0x10, 0x20
IN_NONBLOCK = os.O_NONBLOCK
EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len; then len bytes of name

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


@contextlib.contextmanager
def opens_in(directory: str | os.PathLike) -> Iterator[Counter]:
    """Count every open(2) of a file in ``directory`` made inside the block (by any process), by file name; the
    counter is filled when the block ends."""
    fd = _libc.inotify_init1(IN_NONBLOCK)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "inotify_init1")
    counts: Counter = Counter()
    try:
        if _libc.inotify_add_watch(fd, os.fsencode(Path(directory)), IN_OPEN | IN_CLOSE_WRITE | IN_CLOSE_NOWRITE) < 0:
            raise OSError(ctypes.get_errno(), f"inotify_add_watch {directory}")
        yield counts
        while True:
            try:
                data = os.read(fd, 1 << 16)
            except BlockingIOError:
                break
            at = 0
            while at < len(data):
                _wd, mask, _cookie, size = EVENT.unpack_from(data, at)
                name = data[at + EVENT.size: at + EVENT.size + size].rstrip(b"\0").decode()
                if mask & IN_OPEN and name:
                    counts[name] += 1
                at += EVENT.size + size
    finally:
        os.close(fd)
