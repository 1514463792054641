"""One writer process of the fleet tests: appends (or upserts) rows tagged with its number into a shared table.

``python -m tests.support.fleet_writer URI TABLE WRITER ROWS START MODE``: waits until the wall clock reaches
START (so that every process commits at the same moment), writes ROWS rows through ``MetadataStore`` (``append``
or ``upsert``, keyed by writer and row), and prints one JSON line: the writer, the attempts the commit took, and
the seconds it took. The AWS environment points it at the store.
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
    store = MetadataStore(uri)
    while time.time() < start:
        time.sleep(0.002)
    t0 = time.monotonic()
    (store.upsert if mode == "upsert" else store.append)(spec, data)
    print(json.dumps({"writer": writer, "attempts": store.commit_attempts[table],
                      "seconds": round(time.monotonic() - t0, 3)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
