"""One writer process of the fleet tests: appends (or upserts) rows tagged with its number into a shared table.

``python -m tests.support.fleet_writer URI TABLE WRITER ROWS START MODE``: waits until the wall clock reaches
START (so that every process commits at the same moment), writes ROWS rows through ``MetadataStore`` (``append``
or ``upsert``, keyed by writer and row, or ``segments``), and prints one JSON line: the writer, the attempts the
commit took, and the seconds it took. MODE ``segments``: the writer is broker WRITER, its rows MERGEd into
``segments`` (a table partitioned by broker). The AWS environment points it at the store.
"""

from __future__ import annotations

import json
import sys
import time

import pyarrow as pa

from segdex.pipelines.metadata_store import MetadataStore
from segdex.pipelines.schemas import TableSpec

SCHEMA = pa.schema([pa.field("writer", pa.int32(), nullable=False), pa.field("n", pa.int32(), nullable=False),
                    pa.field("value", pa.string())])


def main(argv: list[str]) -> int:
    uri, table, writer, rows, start, mode = argv[0], argv[1], int(argv[2]), int(argv[3]), float(argv[4]), argv[5]
    spec = TableSpec(table, SCHEMA, ("writer", "n") if mode == "upsert" else ())
    data = pa.table({"writer": pa.array([writer] * rows, pa.int32()), "n": pa.array(range(rows), pa.int32()),
                     "value": [f"w{writer}-{i}" for i in range(rows)]}, schema=SCHEMA)
    if mode == "segments":  # a broker's segment rows, MERGEd into the segments table (partitioned by broker)
        from segdex.pipelines.schemas import SEGMENTS_SCHEMA, SEGMENTS_TABLE

        spec = SEGMENTS_TABLE
        data = pa.Table.from_pylist([{"log_dir": "/var/lib/kafka/data", "cluster_id": "c", "broker_id": writer,
                                      "topic": "t", "partition": i % 10, "future": False, "base_offset": i,
                                      "status": "ok"} for i in range(rows)],
                                    schema=pa.schema([*SEGMENTS_SCHEMA, pa.field("cluster_id", pa.string()),
                                                      pa.field("broker_id", pa.int32())]))
    store = MetadataStore(uri)
    while time.time() < start:
        time.sleep(0.002)
    t0 = time.monotonic()
    (store.append if mode == "append" else store.upsert)(spec, data)
    print(json.dumps({"writer": writer, "attempts": store.commit_attempts[table],
                      "seconds": round(time.monotonic() - t0, 3)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
