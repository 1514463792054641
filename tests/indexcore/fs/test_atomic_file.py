"""``atomic_file`` on its own, fast (no Spark): what a replaced or new file keeps, when nothing is rewritten,
and what a killed run leaves for the next one. Found by mutation testing: these rules were only checked through
Spark runs before."""

from __future__ import annotations

import os
import re
import stat
import tempfile
from pathlib import Path

import pytest

from segdex.indexcore.fs.atomic_file import (
    FileAttributes,
    create_empty,
    create_temporary,
    fsync_dir,
    is_temporary,
    remove_temporaries,
    same_content,
    temporary_path,
    write_atomic,
)

OTHER = (4321, 4322)


def mode(path: Path | str) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_same_content_compares_size_and_bytes(tmp_path):
    p = tmp_path / "f"
    p.write_bytes(b"abcd")
    assert same_content(p, b"abcd")
    assert not same_content(p, b"abce")  # same size, other bytes (even ones that sort after)
    assert not same_content(p, b"abcc")
    assert not same_content(p, b"abc") and not same_content(p, b"abcde")
    assert not same_content(tmp_path / "missing", b"")
    (tmp_path / "d").mkdir()
    assert not same_content(tmp_path / "d", b"")


def test_replacement_keeps_mode_and_new_file_takes_the_templates(tmp_path):
    old = tmp_path / "x.index"
    old.write_bytes(b"old")
    old.chmod(0o640)
    write_atomic(old, b"new")
    assert old.read_bytes() == b"new" and mode(old) == 0o640
    log = tmp_path / "x.log"
    log.write_bytes(b"")
    log.chmod(0o604)
    fresh = tmp_path / "y.index"
    write_atomic(fresh, b"y", template=log)
    assert mode(fresh) == 0o604
    write_atomic(tmp_path / "z.index", b"z")
    assert mode(tmp_path / "z.index") == 0o644  # no template: what a broker's umask 022 gives
    assert not [n for n in os.listdir(tmp_path) if is_temporary(n)]


@pytest.mark.skipif(os.geteuid() != 0, reason="changing a file's owner needs root (CI runs as root)")
def test_owner_is_kept_and_new_files_take_the_directorys(tmp_path):
    os.chown(tmp_path, *OTHER)
    old = tmp_path / "x.index"
    old.write_bytes(b"old")
    os.chown(old, 1234, 1235)
    write_atomic(old, b"new")
    assert (old.stat().st_uid, old.stat().st_gid) == (1234, 1235)
    fresh = tmp_path / "y.index"
    write_atomic(fresh, b"y")
    assert (fresh.stat().st_uid, fresh.stat().st_gid) == OTHER
    attrs = FileAttributes.for_target(str(tmp_path / "new.log"))
    assert (attrs.uid, attrs.gid, attrs.mode) == (*OTHER, 0o644)


def test_create_empty_only_once(tmp_path):
    attrs = FileAttributes(os.geteuid(), os.getegid(), 0o640)
    p = tmp_path / "00000000000000000100.log"
    assert create_empty(str(p), attrs) is True
    assert p.stat().st_size == 0 and mode(p) == 0o640
    p.write_bytes(b"data")
    assert create_empty(str(p), attrs) is False  # an existing file (a re-run after a crash) is left as it is
    assert p.read_bytes() == b"data"


def test_temporaries_are_named_and_removed(tmp_path):
    tmp = Path(temporary_path(str(tmp_path)))
    assert tmp.parent == tmp_path and is_temporary(tmp.name) and tmp.name.startswith(".segdex-")
    assert not is_temporary("00000000000000000000.index") and not is_temporary("x.tmp")
    tmp.write_bytes(b"half")
    (tmp_path / "keep.tmp").write_bytes(b"kafka's")
    assert remove_temporaries(tmp_path) == [str(tmp)]
    assert sorted(os.listdir(tmp_path)) == ["keep.tmp"]
    assert remove_temporaries(tmp_path / "missing") == []


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "sub"
    target.mkdir()  # a directory where the file should go: the rename fails
    with pytest.raises(OSError):
        write_atomic(target, b"data")
    assert target.is_dir() and not [n for n in os.listdir(tmp_path) if is_temporary(n)]


# ------------------------------------------------------------------ from test_files_units.py


LOG_0 = "00000000000000000000.log"


class _ModeAtApply(FileAttributes):
    """FileAttributes that also record the mode the open temporary has when its attributes are applied."""

    __slots__ = ()
    seen: list[int] = []

    def apply(self, fd: int, path: str) -> None:
        type(self).seen.append(stat.S_IMODE(os.fstat(fd).st_mode))
        super().apply(fd, path)


def test_temporary_is_created_private_whatever_the_umask(tmp_path: Path):
    """The temporary is created 0600 (only its owner may open it) before its final mode is given, even under a
    permissive umask: nobody else can hold it open while the data goes in."""
    _ModeAtApply.seen = []
    target = tmp_path / "00000000000000000000.index"
    old_umask = os.umask(0)
    try:
        tmp = create_temporary(str(target), b"\x00" * 8, _ModeAtApply(os.geteuid(), os.getegid(), 0o644))
    finally:
        os.umask(old_umask)
    assert _ModeAtApply.seen == [0o600]
    assert os.path.dirname(tmp) == str(tmp_path) and is_temporary(os.path.basename(tmp))
    assert mode(tmp) == 0o644 and Path(tmp).read_bytes() == b"\x00" * 8
    assert not target.exists()


def test_fsync_dir_syncs_a_directory_and_refuses_a_file(tmp_path: Path):
    """``fsync_dir`` opens its argument as a directory (O_DIRECTORY): a regular file is an error, not synced."""
    assert fsync_dir(tmp_path) is None
    f = tmp_path / LOG_0
    f.write_bytes(b"")
    with pytest.raises(NotADirectoryError):
        fsync_dir(f)


def test_temporary_name_form(tmp_path: Path):
    """Temporaries are ``.segdex-<pid>-<12 hex digits: 6 random bytes>.tmp`` in the target's directory."""
    name = os.path.basename(temporary_path(str(tmp_path)))
    assert re.fullmatch(rf"\.segdex-{os.getpid()}-[0-9a-f]{{12}}\.tmp", name), name
    assert os.path.dirname(temporary_path(str(tmp_path))) == str(tmp_path)


def test_a_streamed_temporary_takes_the_mode_of_the_file_it_replaces(tmp_path: Path):
    """``open_temporary`` (a file streamed in, then renamed by the caller): the mode of the file it will replace,
    else, for a new file, the template's; a temporary already gone is discarded without an error."""
    from segdex.indexcore.fs.atomic_file import _discard, open_temporary

    target, template = tmp_path / "00000000000000000000.index", tmp_path / "00000000000000000000.log"
    target.write_bytes(b"old")
    template.write_bytes(b"")
    os.chmod(target, 0o640)
    os.chmod(template, 0o600)
    for path, mode in ((target, 0o640), (tmp_path / "00000000000000000000.timeindex", 0o600)):
        tmp, f = open_temporary(str(path), str(template))
        with f:
            f.write(b"new")
        assert stat.S_IMODE(os.stat(tmp).st_mode) == mode and Path(tmp).read_bytes() == b"new", path
        os.unlink(tmp)
        _discard(tmp)  # gone already: nothing to do
    assert target.read_bytes() == b"old"


@pytest.mark.skipif(os.geteuid() != 0, reason="the test takes another user's id for a moment (CI runs as root)")
def test_a_streamed_temporary_that_cannot_take_the_owner_is_closed_and_removed():
    """``open_temporary`` run by a user who may not give a file away (segdex run as a user other than the
    broker's, not root): the file it replaces belongs to another user, ``fchown`` fails (EPERM), and the write
    fails with segdex's message, its temporary closed (no descriptor left open) and removed (nothing left in
    the directory). The test process takes that user's id (effective uid and gid) around the call only;
    pytest's ``tmp_path`` lies under a root-only directory that user cannot cross, so the directory is a fresh
    one of its own in the system's temporary directory."""
    from segdex.indexcore.fs.atomic_file import open_temporary

    with tempfile.TemporaryDirectory() as d:
        os.chown(d, *OTHER)  # the user's own directory: it may create the temporary there
        target = Path(d) / "00000000000000000000.index"
        target.write_bytes(b"old")
        os.chown(target, 1234, 1235)  # the broker's file
        open_before = sorted(os.listdir("/proc/self/fd"))
        os.setegid(OTHER[1])
        os.seteuid(OTHER[0])
        try:
            with pytest.raises(PermissionError) as e:
                open_temporary(str(target))
        finally:
            os.seteuid(0)
            os.setegid(0)
        assert str(e.value) == (f"[Errno 1] cannot give 00000000000000000000.index the owner 1234:1235 of the file "
                                f"it replaces (run segdex as that user or as root): '{target}'")
        assert sorted(os.listdir("/proc/self/fd")) == open_before
        assert os.listdir(d) == [target.name] and target.read_bytes() == b"old"
