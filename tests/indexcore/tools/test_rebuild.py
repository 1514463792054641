"""``rebuild`` (segdex rebuild) in the test process: what it takes as a target, what it refuses, the notices it
gives, and the outcome of each segment, in place and into ``--out-dir``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.errors import InvalidLayoutException, UsageException
from segdex.indexcore.fs.atomic_file import TEMP_PREFIX, TEMP_SUFFIX
from segdex.indexcore.tools.rebuild import RebuildNotice, RebuildOutcome, rebuild
from tests.support.fixtures import load_case
from tests.support.log_segments import SRC, partition

CONFIG = LogConfig().with_overrides({k: str(v) for k, v in load_case(SRC.name)["topic_config"].items()
                                     if k in ("index.interval.bytes", "segment.index.bytes")})


def test_in_place_with_notices_then_nothing_to_do(tmp_path: Path):
    part = partition(tmp_path)
    (part / "garbage.log").write_bytes(b"")
    tmp = part / f"{TEMP_PREFIX}1-ab{TEMP_SUFFIX}"
    tmp.write_bytes(b"half")
    first = list(rebuild(str(part), CONFIG))
    notices = [r for r in first if isinstance(r, RebuildNotice)]
    assert notices == [
        RebuildNotice(str(tmp), "temporary file left by an interrupted segdex run", "removed"),
        RebuildNotice(str(part / "garbage.log"), "not a segment file name (expected a 20-digit base offset, e.g. "
                                                 "00000000000000001000.log)", "misnamed")]
    assert [n.needs_attention for n in notices] == [False, True] and not tmp.exists()
    outcomes = [r for r in first if isinstance(r, RebuildOutcome)]
    assert [o.segment.base_offset for o in outcomes] == sorted(int(p.name[:20]) for p in part.glob("0*.log"))
    for o in outcomes:
        stem = o.segment.log_path[:-4]
        assert o.written == [stem + ".index", stem + ".timeindex"] and o.unchanged == []  # no .txnindex: none
        for path in o.written:
            assert Path(path).read_bytes() == (SRC / "recovered" / Path(path).name).read_bytes()
            assert os.stat(path).st_mode & 0o777 == 0o640  # the mode of the .log beside it
    again = [r for r in rebuild(str(part), CONFIG) if isinstance(r, RebuildOutcome)]
    assert all(o.written == [] and len(o.unchanged) == 2 for o in again)


def test_one_log_file_and_out_dir(tmp_path: Path):
    part = partition(tmp_path)
    log = next(iter(sorted(part.glob("0*.log"))))
    [one] = list(rebuild(str(log), CONFIG))
    assert one.segment.log_path == str(log) and one.written == [str(log)[:-4] + ".index", str(log)[:-4] + ".timeindex"]
    out = tmp_path / "out"
    results = list(rebuild(str(part), CONFIG, out_dir=str(out)))
    assert sorted(p.name for p in (out / "orders-0").iterdir()) == sorted(
        n for p in part.glob("0*.log") for n in (p.name[:-4] + ".index", p.name[:-4] + ".timeindex"))
    assert all(isinstance(r, RebuildOutcome) for r in results)
    [misnamed] = list(rebuild(str(_write(part / "x.log")), CONFIG))
    assert (misnamed.kind, misnamed.path) == ("misnamed", str(part / "x.log"))


def _write(path: Path) -> Path:
    path.write_bytes(b"")
    return path


def test_targets_refused(tmp_path: Path):
    part = partition(tmp_path)
    with pytest.raises(UsageException) as e:
        list(rebuild(str(part.parent), CONFIG))
    assert str(e.value) == (f"{part.parent}: a log dir, not a partition directory: give one of its partition "
                            f"directories (e.g. {part.parent / '<topic>-<partition>'}), or run `segdex reindex "
                            f"{part.parent}`")
    with pytest.raises(FileNotFoundError):
        list(rebuild(str(part / "nope"), CONFIG))
    with pytest.raises(InvalidLayoutException) as e:
        list(rebuild(str(_write(part / "00000000000000000000.index")), CONFIG))
    assert str(e.value) == f"{part / '00000000000000000000.index'}: not a .log segment file nor a partition directory"
    meta = partition(tmp_path / "m", "__cluster_metadata-0")
    with pytest.raises(UsageException) as e:
        list(rebuild(str(meta), CONFIG))
    assert str(e.value) == (f"{meta}: the KRaft metadata log (__cluster_metadata) is never rewritten in place; use "
                            f"--out-dir to look at its rebuilt indexes")
    assert not list(meta.glob("*.index"))
    assert [r for r in rebuild(str(meta), CONFIG, out_dir=str(tmp_path / "out")) if r.written]
