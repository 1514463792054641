"""Files segdex creates, checked on real files with ``os.stat`` (no Spark, no broker, no mocked file system).

Covers ``atomic_file`` (a temporary starts private to its owner whatever the umask, ``fsync_dir`` wants a
directory, the temporary's name form), ``checkpoints`` (a new checkpoint file takes the mode of the first ``.log``
of its directory: ``mode_template``), ``segment_writer`` (segment names and rolls: a segment is named after the
first offset of its first append, a roll never happens on an empty segment, an existing partition directory is
reused) and ``TransactionIndex`` (it carries its segment's base offset, as Kafka's ``TransactionIndex(startOffset,
file)`` does).

Expected values come from the definitions written out here: file names from Kafka's 20-digit zero-padded
``<offset>.log`` rule, checkpoint text from Kafka's offset checkpoint format (version line, entry count, then
``topic partition offset`` lines), modes set on the files by the test itself, batch offsets read from the bytes with
``struct`` and the generator's own record of what it wrote.
"""

from __future__ import annotations

import os
import re
import stat
import struct
from pathlib import Path

import pytest

from segdex.indexcore.fs.atomic_file import FileAttributes, create_temporary, fsync_dir, is_temporary, temporary_path
from segdex.indexcore.index.transaction_index import TransactionIndex
from segdex.indexcore.log.checkpoints import mode_template, write_offset_checkpoint
from segdex.indexcore.log.log_segment import recover
from segdex.indexcore.tools.segment_writer import SegmentWriter, build_batch, build_legacy, write_partition
from tests.kafka_bytes import legacy_message

LOG_0 = "00000000000000000000.log"
LOG_100 = "00000000000000000100.log"


def mode(path: Path | str) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def log_name(offset: int) -> str:
    """Kafka's segment file name: the base offset zero-padded to 20 digits."""
    return f"{offset:020d}.log"


class _ModeAtApply(FileAttributes):
    """FileAttributes that also record the mode the open temporary has when its attributes are applied."""

    __slots__ = ()
    seen: list[int] = []

    def apply(self, fd: int, path: str) -> None:
        type(self).seen.append(stat.S_IMODE(os.fstat(fd).st_mode))
        super().apply(fd, path)


# --- atomic_file -----------------------------------------------------------------------------------------------

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


# --- checkpoints ---------------------------------------------------------------------------------------------

def test_mode_template_is_the_first_log_of_the_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """With none of Kafka's checkpoint/metadata files beside it, a new file takes the mode of the directory's
    first ``.log`` (by name, i.e. lowest base offset); only ``.log`` files count."""
    d = tmp_path / "orders-0"
    d.mkdir()
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    (elsewhere / "00000000000000000999.log").write_bytes(b"")
    monkeypatch.chdir(elsewhere)  # a .log in the working directory must not be taken
    target = d / "leader-epoch-checkpoint.new"
    assert mode_template(target) is None  # empty directory
    (d / "00000000000000000000.index").write_bytes(b"")
    (d / "00000000000000000007.LOG").write_bytes(b"")
    assert mode_template(target) is None  # no .log yet
    (d / LOG_100).write_bytes(b"")
    assert mode_template(target) == str(d / LOG_100)
    (d / LOG_0).write_bytes(b"")
    assert mode_template(target) == str(d / LOG_0)
    assert mode_template(str(target)) == os.path.join(str(d), LOG_0)


def test_new_offset_checkpoint_takes_the_first_logs_mode(tmp_path: Path):
    """A checkpoint file written where none was gets the mode of the directory's first ``.log`` (not 0644), with
    Kafka's offset checkpoint text: version 0, the entry count, one ``topic partition offset`` line each."""
    (tmp_path / LOG_0).write_bytes(b"")
    os.chmod(tmp_path / LOG_0, 0o600)
    (tmp_path / LOG_100).write_bytes(b"")
    os.chmod(tmp_path / LOG_100, 0o664)
    cp = tmp_path / "recovery-point-offset-checkpoint"
    write_offset_checkpoint(cp, {("orders", 0): 100})
    assert mode(cp) == 0o600
    assert cp.read_bytes() == b"0\n1\norders 0 100\n"
    assert (os.stat(cp).st_uid, os.stat(cp).st_gid) == (os.stat(tmp_path).st_uid, os.stat(tmp_path).st_gid)
    assert sorted(os.listdir(tmp_path)) == [LOG_0, LOG_100, "recovery-point-offset-checkpoint"]


# --- segment_writer ------------------------------------------------------------------------------------------

def test_write_partition_names_a_segment_after_the_given_first_offset(tmp_path: Path):
    """A compressed magic 1 wrapper carries its last inner offset (7); given as ``(bytes, 5)`` its segment is named
    after the first offset, 5, as Kafka names a segment after the first offset it holds."""
    wrapper = build_legacy(5, [(1, b"a", b"b"), (2, b"c", b"d"), (3, b"e", b"f")], magic=1, compression=1)
    assert struct.unpack_from(">q", wrapper, 0)[0] == 7  # the wrapper's own offset field
    paths = write_partition(tmp_path, "t", 0, [(wrapper, 5)])
    assert paths == [tmp_path / "t-0" / log_name(5)]
    assert paths[0].read_bytes() == wrapper


def test_write_partition_reuses_an_existing_partition_directory(tmp_path: Path):
    """Writing into a partition directory that already exists (a second run, or one made beforehand) works."""
    part = tmp_path / "t-2"
    part.mkdir()
    b0 = build_batch(0, [(1000, b"k", b"v")])
    assert write_partition(tmp_path, "t", 2, [b0]) == [part / LOG_0]
    b1 = build_batch(1, [(1001, b"k", b"w")])
    with SegmentWriter(tmp_path, "t", 2) as w:
        w.append(b1)
    assert w.paths == [part / log_name(1)]
    assert sorted(os.listdir(part)) == [LOG_0, log_name(1)]
    assert (part / LOG_0).read_bytes() == b0 and (part / log_name(1)).read_bytes() == b1


def test_no_roll_on_an_empty_segment_even_for_an_oversized_append(tmp_path: Path):
    """A roll never happens on an empty segment: a batch larger than ``segment_bytes`` goes into the freshly
    rolled (empty) segment instead of rolling again."""
    batch = build_batch(105, [(1000, b"k", b"x" * 100)])
    with SegmentWriter(tmp_path, "t", 0, segment_bytes=len(batch) - 1) as w:
        w.roll(100)
        w.append(batch)
    assert w.paths == [tmp_path / "t-0" / LOG_100]
    assert (tmp_path / "t-0" / LOG_100).read_bytes() == batch


def test_a_one_byte_segment_rolls_before_an_append_past_segment_bytes(tmp_path: Path):
    """Any non-empty segment (even one byte) rolls before an append that would take it past ``segment_bytes``."""
    batch = build_batch(1, [(1000, b"k", b"v")])
    with SegmentWriter(tmp_path, "t", 0, segment_bytes=len(batch)) as w:
        w.append(b"\x00", first_offset=0)
        w.append(batch)
    part = tmp_path / "t-0"
    assert w.paths == [part / LOG_0, part / log_name(1)]
    assert (part / LOG_0).read_bytes() == b"\x00" and (part / log_name(1)).read_bytes() == batch


# --- transaction_index ---------------------------------------------------------------------------------------

def test_transaction_index_carries_its_segments_base_offset():
    """Kafka's ``TransactionIndex(startOffset, file)``: a recovered segment's index starts at the base offset."""
    assert TransactionIndex(100).start_offset == 100
    r = recover(build_batch(100, [(1000, b"k", b"v")]), 100)
    assert r.txn_index.start_offset == 100 and len(r.txn_index) == 0


_v1_message = legacy_message  # a magic 1 message laid out from the message format


def test_legacy_messages_stamped_with_log_append_time():
    """A v1 message set written with LogAppendTime: attribute bit 3 set and the append time as each message's
    timestamp, whether the type or only the time is given."""
    from segdex.indexcore.tools.segment_writer import LOG_APPEND_TIME, build_batch

    want = _v1_message(5, 0x08, 99, b"k", b"v") + _v1_message(6, 0x08, 99, b"k", b"w")
    records = [(1, b"k", b"v"), (2, b"k", b"w")]
    assert build_batch(5, records, magic=1, log_append_time=99) == want
    assert build_batch(5, records, magic=1, timestamp_type=LOG_APPEND_TIME) == (
        _v1_message(5, 0x08, 1, b"k", b"v") + _v1_message(6, 0x08, 2, b"k", b"w"))


def test_an_end_marker_without_a_time_is_at_time_zero():
    """``control=`` without ``control_timestamp``: the marker's record and the batch's timestamps are 0."""
    from segdex.indexcore.tools.segment_writer import build_batch

    batch = build_batch(3, [], control=("COMMIT", 2), producer_id=7, producer_epoch=0)
    base_ts, max_ts = struct.unpack_from(">qq", batch, 27)
    assert (base_ts, max_ts) == (0, 0)
