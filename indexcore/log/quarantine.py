"""What ``segdex recover --truncate`` and ``segdex clean --apply`` remove from a partition, kept whole under a
quarantine directory.

Kafka's recovery cuts a segment at its first invalid batch and deletes every later segment of the partition
(``LogLoader.recoverLog``: ``truncate`` then ``removeAndDeleteSegmentsAsync``). segdex does the same cut, but
first copies the cut bytes and moves the later segments under ``<quarantine>/<log dir name>-<hash>/<partition>/``
(a broker refuses a log dir holding a directory that is not a partition, so the quarantine lives outside every
log dir), each piece made durable before the partition changes, with a ``manifest.json`` naming where each piece
came from, its SHA-256, and the shell command that puts it back. The manifest is rewritten (atomically) after
each piece, so an interrupted run still says where everything went.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from dataclasses import asdict, dataclass, field

from segdex.indexcore.errors import UsageException
from segdex.indexcore.fs.atomic_file import fsync_dir, write_atomic
from segdex.indexcore.log.layout import index_paths

MANIFEST = "manifest.json"


@dataclass
class QuarantinedPiece:
    kind: str  # "tail": bytes cut from the end of a .log; "file": a whole file moved away
    source: str  # absolute path it came from
    quarantined: str  # absolute path it is kept at
    size: int
    sha256: str
    offset_in_source: int = 0  # tail: where in the .log the cut bytes started
    restore: str = ""  # a shell command that puts it back (after stopping the broker)


@dataclass
class QuarantineManifest:
    partition_dir: str
    run_id: str
    reason: str
    pieces: list[QuarantinedPiece] = field(default_factory=list)
    # shell commands that put the partition back as it was before the run, in order (``QuarantineSession``: the
    # files the run left removed, then every original copied back); empty where each piece's own line does it
    restore: list[str] = field(default_factory=list)


def check_quarantine_dir(quarantine: str, log_dirs: list[str]) -> str:
    """The quarantine's real path, created if missing; UsageException when it lies inside a log dir (the broker
    would refuse that log dir) or cannot be written."""
    path = os.path.realpath(quarantine)
    for d in log_dirs:
        real = os.path.realpath(d)
        if path == real or path.startswith(real + os.sep):
            raise UsageException(f"--quarantine {quarantine}: inside the log dir {d}; a broker refuses a log dir "
                                 f"holding a directory that is not a partition: choose a path outside every log dir")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise UsageException(f"--quarantine {quarantine}: cannot create it: {e.strerror or e}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise UsageException(f"--quarantine {quarantine}: not writable")
    return path


def partition_quarantine(quarantine: str, partition_dir: str) -> str:
    """Where one partition's pieces go: the log dir's name and a hash of its path (two log dirs may share a
    name), then the partition directory's name."""
    log_dir = os.path.dirname(os.path.realpath(partition_dir))
    tag = hashlib.sha256(log_dir.encode()).hexdigest()[:8]
    return os.path.join(quarantine, f"{os.path.basename(log_dir)}-{tag}", os.path.basename(partition_dir))


def _sha256_of(path: str, start: int = 0) -> tuple[int, str]:
    h = hashlib.sha256()
    n = 0
    with open(path, "rb") as f:
        f.seek(start)
        while chunk := f.read(1 << 20):
            h.update(chunk)
            n += len(chunk)
    return n, h.hexdigest()


def _copy_durably(src: str, dst: str, start: int = 0) -> None:
    """``src`` (from byte ``start``) copied to a new ``dst``, fsynced, with ``src``'s owner, group, mode and times:
    the manifest's ``cp -p`` restore lines bring back what the broker had (a broker running as its own user must
    open its segments again, and a segment without a time index is dated by its file's time)."""
    with open(src, "rb") as fi, open(dst, "xb") as fo:
        fi.seek(start)
        shutil.copyfileobj(fi, fo, 1 << 20)
        st = os.fstat(fi.fileno())
        try:
            os.fchown(fo.fileno(), st.st_uid, st.st_gid)
        except PermissionError:  # not root: the copy stays ours, as cp -p leaves it
            pass
        os.fchmod(fo.fileno(), stat.S_IMODE(st.st_mode))
        fo.flush()
        os.utime(fo.fileno(), ns=(st.st_atime_ns, st.st_mtime_ns))
        os.fsync(fo.fileno())
    fsync_dir(os.path.dirname(dst))


def _write_manifest(where: str, manifest: QuarantineManifest) -> None:
    """The manifest of this run, with every earlier run's into the same place kept under ``earlier`` (oldest
    first): a second run, or a second cleaning round, must not lose the first one's record of its pieces. An
    earlier manifest that cannot be read is kept beside it, renamed."""
    path = os.path.join(where, MANIFEST)
    earlier: list = []
    if os.path.exists(path):
        try:
            with open(path, encoding="utf-8") as f:
                old = json.load(f)
            if not isinstance(old, dict):
                raise ValueError("not a JSON object")
        except (OSError, ValueError):
            os.replace(path, f"{path}.unreadable.{manifest.run_id}")
        else:
            earlier = list(old.get("earlier") or [])
            if old.get("run_id") != manifest.run_id:  # another run's: it becomes history
                earlier.append({k: v for k, v in old.items() if k != "earlier"})
    data = json.dumps({**asdict(manifest), "pieces": [asdict(p) for p in manifest.pieces], "earlier": earlier},
                      indent=2) + "\n"
    write_atomic(path, data.encode())


def truncate_with_quarantine(partition_dir: str, log_path: str, valid_bytes: int, later_logs: list[str],
                             quarantine: str, run_id: str, reason: str) -> QuarantineManifest:
    """Cut ``log_path`` to ``valid_bytes`` and move ``later_logs`` (and their index files) away, as Kafka's
    recovery does, keeping every removed byte under ``quarantine``. Each piece is durable there before the
    partition changes; the caller holds the log dir's ``.lock``."""
    where = partition_quarantine(quarantine, partition_dir)
    os.makedirs(where, exist_ok=True)
    manifest = QuarantineManifest(os.path.realpath(partition_dir), run_id, reason)
    name = os.path.basename(log_path)
    tail = os.path.join(where, f"{name}.tail-at-{valid_bytes}")
    if os.path.exists(tail):  # an earlier interrupted run kept it: keep that one, name this one apart
        tail = os.path.join(where, f"{name}.tail-at-{valid_bytes}.{run_id}")
    _copy_durably(log_path, tail, valid_bytes)
    size, digest = _sha256_of(tail)
    manifest.pieces.append(QuarantinedPiece(
        "tail", os.path.realpath(log_path), tail, size, digest, valid_bytes,
        f"truncate -s {valid_bytes} '{os.path.realpath(log_path)}' && cat '{tail}' >> '{os.path.realpath(log_path)}'"))
    _write_manifest(where, manifest)
    moved = [p for later in later_logs for p in (later, *index_paths(later).values()) if os.path.exists(p)]
    _keep_files(where, manifest, moved)
    # everything is kept: now change the partition as Kafka's recovery would
    with open(log_path, "r+b") as f:
        f.truncate(valid_bytes)
        os.fsync(f.fileno())
    for path in moved:
        os.unlink(path)
    fsync_dir(partition_dir)
    return manifest


def _keep_files(where: str, manifest: QuarantineManifest, files: list[str], restore=None) -> None:
    """Copy each file whole and durably under ``where`` (a name already there gets the run id appended), each a
    piece of the manifest, which is rewritten after each copy (``restore()``: its top-level restore lines)."""
    for path in files:
        dst = os.path.join(where, os.path.basename(path))
        if os.path.exists(dst):
            dst = f"{dst}.{manifest.run_id}"
        size, digest = _sha256_of(path)
        _copy_durably(path, dst)
        manifest.pieces.append(QuarantinedPiece("file", os.path.realpath(path), dst, size, digest, 0,
                                                f"cp -p '{dst}' '{os.path.realpath(path)}'"))
        if restore is not None:
            manifest.restore = restore()
        _write_manifest(where, manifest)


def keep_in_quarantine(partition_dir: str, files: list[str], quarantine: str, run_id: str,
                       reason: str) -> QuarantineManifest:
    """Copy ``files`` of a partition durably under its quarantine, with the manifest, before anything changes
    (``segdex clean --apply``: the segments a cleaning replaces)."""
    where = partition_quarantine(quarantine, partition_dir)
    os.makedirs(where, exist_ok=True)
    manifest = QuarantineManifest(os.path.realpath(partition_dir), run_id, reason)
    _keep_files(where, manifest, files)
    return manifest


class QuarantineSession:
    """One run's quarantine of one partition across all its writes (``segdex clean --apply``: every group of every
    round): each ORIGINAL file (one the partition held before the run) kept once, before the write that replaces
    it; a file the run itself wrote and a later round replaces is not kept (it can be made again from the
    originals). One manifest for the run, rewritten after each piece, whose top-level ``restore`` lines remove what
    the run left and copy every original back: the partition as it was before the run."""

    def __init__(self, partition_dir: str, quarantine: str, run_id: str, reason: str) -> None:
        self.partition_dir = os.path.realpath(partition_dir)
        self.where = partition_quarantine(quarantine, partition_dir)
        self.manifest = QuarantineManifest(self.partition_dir, run_id, reason)
        self.written: set[str] = set()  # real paths of the files this run put into the partition
        self.kept: set[str] = set()  # real paths of the originals kept

    def to_keep(self, files: list[str]) -> list[str]:
        """Those of ``files`` that are originals not kept yet."""
        real = [os.path.realpath(f) for f in files]
        return [f for f, r in zip(files, real, strict=True) if r not in self.written and r not in self.kept]

    def keep(self, files: list[str]) -> None:
        """Copy the originals among ``files`` durably under the quarantine, before anything replaces them."""
        todo = self.to_keep(files)
        if not todo and self.manifest.pieces:
            return
        os.makedirs(self.where, exist_ok=True)
        _keep_files(self.where, self.manifest, todo, self._restore)
        self.kept.update(os.path.realpath(f) for f in todo)
        if not todo:
            _write_manifest(self.where, self.manifest)

    def wrote(self, files: list[str]) -> None:
        """``files`` were written into the partition by this run: a later replacement of them keeps nothing, and
        the restore lines remove them first."""
        self.written.update(os.path.realpath(f) for f in files)
        if self.manifest.pieces:
            self.manifest.restore = self._restore()
            _write_manifest(self.where, self.manifest)

    def _restore(self) -> list[str]:
        """Remove what the run wrote (and an interrupted replacement's ``.cleaned``/``.swap`` files, which a
        broker's load would otherwise swap in over the originals), then copy every original back."""
        unfinished = [f"rm -f '{self.partition_dir}'/*.cleaned '{self.partition_dir}'/*.swap"]
        return (unfinished + [f"rm -f '{p}'" for p in sorted(self.written)]
                + [f"cp -p '{p.quarantined}' '{p.source}'" for p in self.manifest.pieces])
