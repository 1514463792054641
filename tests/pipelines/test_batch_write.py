"""segdex.pipelines.batch_write: staged atomic replacement, one flush per batch."""

from __future__ import annotations

from segdex.pipelines.batch_write import PendingWrites


def test_stage_commit_replaces_only_changed_files(tmp_path):
    same, changed, new = tmp_path / "a.index", tmp_path / "b.index", tmp_path / "c.index"
    same.write_bytes(b"same")
    changed.write_bytes(b"old")
    changed.chmod(0o600)
    mtime = same.stat().st_mtime_ns
    w = PendingWrites()
    assert not w.stage(str(same), b"same")
    assert w.stage(str(changed), b"new bytes")
    assert w.stage(str(new), b"")
    assert changed.read_bytes() == b"old"  # nothing visible before commit
    assert not new.exists()
    assert w.commit() == []
    assert changed.read_bytes() == b"new bytes" and new.read_bytes() == b""
    assert changed.stat().st_mode & 0o777 == 0o600  # mode kept
    assert same.stat().st_mtime_ns == mtime
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.index", "b.index", "c.index"]  # no temporaries


def test_commit_failure_is_reported_and_cleaned(tmp_path):
    target = tmp_path / "d.index"
    w = PendingWrites()
    assert w.stage(str(target), b"x")
    target.mkdir()  # the rename cannot replace a directory
    (target / "keep").write_text("k")
    errors = w.commit()
    assert [p for p, _ in errors] == [str(target)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.index"]


def test_discard_removes_temporaries(tmp_path):
    w = PendingWrites()
    w.stage(str(tmp_path / "e.index"), b"x")
    w.discard()
    assert list(tmp_path.iterdir()) == []
    assert w.commit() == []
