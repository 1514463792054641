"""Iteration over the batches of a ``.log`` file, with Kafka's "valid bytes" rule.

Mirrors ``FileLogInputStream.nextBatch``: fewer bytes left than a header up to
the magic byte, or a batch that runs past the end of the file, ends iteration
quietly (a partial batch); a size field below the smallest legacy overhead
raises ``CorruptRecordException`` (trailing zeros of a preallocated file).
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from contextlib import contextmanager

from segdex.indexcore.errors import CorruptRecordException, KafkaReadException
from segdex.indexcore.fs.file_access import open_regular
from segdex.indexcore.record.record_batch import (
    HEADER_SIZE_UP_TO_MAGIC,
    LOG_ENTRY_HEADER,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    RECORD_OVERHEAD_V0,
    RecordBatch,
    read_batch_header,
)


def batches(buf, start: int = 0, end: int | None = None) -> Iterator[RecordBatch]:
    """Yield shallow batches from ``start``; raise CorruptRecordException on a bad size field."""
    end = len(buf) if end is None else end
    position = start
    while position < end - HEADER_SIZE_UP_TO_MAGIC:
        _offset, size = LOG_ENTRY_HEADER.unpack_from(buf, position)
        if size < RECORD_OVERHEAD_V0:
            raise CorruptRecordException(
                f"Found record size {size} smaller than minimum record overhead ({RECORD_OVERHEAD_V0})")
        if position > end - LOG_OVERHEAD - size:
            return  # partial batch at the end of the file
        batch = read_batch_header(buf, position)
        yield batch
        position += batch.size_in_bytes


def load_batch_header(buf, batch: RecordBatch, path: str, start: int = 0) -> None:
    """``FileChannelRecordBatch.loadBatchHeader`` of ``batch`` in ``FileRecords`` of ``path`` from ``start`` to
    the end of ``buf``: a v2 header the file ends inside of cannot be loaded (``KafkaException``)."""
    if batch.magic >= 2 and batch.position + RECORD_BATCH_OVERHEAD > len(buf):
        raise KafkaReadException(f"Failed to load record batch at position {batch.position} from FileRecords(size="
                                 f"{len(buf) - start}, file={path}, start={start}, end={len(buf)})")


@contextmanager
def open_log(path: str | os.PathLike):
    """Map a ``.log`` file read-only; an empty file maps to ``b""``. Never writes the file."""
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            yield b""
            return
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            yield m
