"""Typed rows: each table's schema is its row dataclass's fields, in order; the rows pickle (they travel from
Spark tasks to the driver) and write as their columns."""

from __future__ import annotations

import pickle
from dataclasses import fields
from datetime import UTC, datetime

import pyarrow as pa
import pytest

from segdex.pipelines import schemas
from segdex.pipelines.metadata_store import to_arrow


@pytest.mark.parametrize(("row", "table"), [
    (schemas.SegmentRow, schemas.SEGMENTS_TABLE),
    (schemas.PartitionRow, schemas.PARTITIONS_TABLE),
    (schemas.RunRow, schemas.RUNS_TABLE),
    (schemas.TopicConfigRow, schemas.TOPIC_CONFIGS_TABLE),
    (schemas.RetentionActionRow, schemas.RETENTION_ACTIONS_TABLE),
])
def test_a_tables_schema_is_its_rows_fields(row, table):
    assert [f.name for f in fields(row)] == table.schema.names
    assert set(table.keys) <= set(table.schema.names)
    for key in table.keys:
        if key != "future":  # a -future directory is part of the key; tables written before it have none
            assert not table.schema.field(key).nullable, key


def test_runs_count_every_status_in_severity_order():
    names = [f.name for f in fields(schemas.RunRow)]
    counts = [n for n in names if n.startswith("count_")]
    assert counts == [f"count_{s}" for s in schemas.STATUSES]
    assert names[-1] == "files_failed"  # added after the first release: appended, never moved


def test_a_typed_row_pickles_and_writes_as_its_columns():
    at = datetime(2026, 11, 26, tzinfo=UTC)
    row = schemas.SegmentRow(log_dir="/d", topic="t", partition=0, base_offset=100, segment_file="x.log",
                             future=False, next_offset=110, max_timestamp=5, offset_of_max_timestamp=104,
                             size_bytes=9, log_mtime_ms=7, valid_bytes=9, batch_count=1, record_count=10,
                             index_entries=0, time_index_entries=1, txn_index_entries=0, magic=2, codecs="none",
                             status="ok", reason="", run_id="r", scanned_at=at)
    assert pickle.loads(pickle.dumps(row)) == row
    table = to_arrow([row], schemas.SEGMENTS_SCHEMA)
    assert table.schema == schemas.SEGMENTS_SCHEMA
    assert table.to_pylist() == [schemas.as_columns(row)]
    assert table.column("scanned_at").type == pa.timestamp("us", tz="UTC")
