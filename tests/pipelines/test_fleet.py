"""Whose row is whose (``pipelines/fleet.py``): the origin columns from ``meta.properties``, the keys they lead,
and tables written before they existed gaining them with no row lost."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from segdex.pipelines import fleet
from segdex.pipelines import metadata_store as ms
from segdex.pipelines.schemas import SEGMENTS_SCHEMA, SEGMENTS_TABLE


def _log_dir(root: Path, name: str, props: str | None) -> str:
    d = root / name
    d.mkdir()
    if props is not None:
        (d / "meta.properties").write_text(props)
    return str(d)


def _segments(log_dir: str, offsets: list[int], status: str = "ok") -> pa.Table:
    return pa.Table.from_pylist([{"log_dir": log_dir, "topic": "t", "partition": 0, "future": False,
                                  "base_offset": o, "status": status} for o in offsets], schema=SEGMENTS_SCHEMA)


def test_origin_from_meta_properties(tmp_path):
    kraft = _log_dir(tmp_path, "kraft", "version=1\nnode.id=7\ncluster.id=abc\ndirectory.id=x\n")
    zk = _log_dir(tmp_path, "zk", "version=0\nbroker.id=3\ncluster.id=old\n")
    bare = _log_dir(tmp_path, "bare", None)
    assert (fleet.origin_of(kraft).cluster_id, fleet.origin_of(kraft).broker_id) == ("abc", 7)
    assert (fleet.origin_of(zk).cluster_id, fleet.origin_of(zk).broker_id) == ("old", 3)
    assert (fleet.origin_of(bare).cluster_id, fleet.origin_of(bare).broker_id) == ("", -1)
    spec = fleet.with_origin(SEGMENTS_TABLE)
    assert spec.keys[:2] == ("cluster_id", "broker_id") and "host" in spec.schema.names
    stamped = fleet.stamp(ms.to_arrow(_segments(kraft, [0]), spec.schema))
    assert stamped.select(["cluster_id", "broker_id"]).to_pylist() == [{"cluster_id": "abc", "broker_id": 7}]


def test_old_table_gains_the_columns_no_row_lost(tmp_path):
    """A segments table written before the origin columns: a rerun of one log dir adds the columns, replaces that
    dir's rows (no duplicate beside the NULL-origin ones) and keeps every other dir's rows."""
    meta = tmp_path / "meta"
    mine = _log_dir(tmp_path, "mine", "version=1\nnode.id=4\ncluster.id=c1\n")
    other = _log_dir(tmp_path, "other", "version=1\nnode.id=5\ncluster.id=c1\n")
    write_deltalake(str(meta / "segments"), pa.concat_tables([_segments(mine, [0, 100, 200]),
                                                              _segments(other, [0, 50])]))
    assert "broker_id" not in DeltaTable(str(meta / "segments")).schema().to_arrow().names
    store = ms.MetadataStore(str(meta))
    store.upsert(SEGMENTS_TABLE, _segments(mine, [100, 200, 300], status="corrupt"),
                 scope=ms.Scope("log_dir", frozenset({mine})))
    rows = store.read("segments").to_pylist()
    assert sorted((r["log_dir"] == mine, r["base_offset"], r["broker_id"], r["status"]) for r in rows) == [
        (False, 0, None, "ok"), (False, 50, None, "ok"),
        (True, 100, 4, "corrupt"), (True, 200, 4, "corrupt"), (True, 300, 4, "corrupt")]
