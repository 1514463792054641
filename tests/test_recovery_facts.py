"""What recovery counts for each segment (``RecoveryResult``: batches, records, first and last offset, codecs,
magics, max timestamp), with both scan kernels, against Kafka's own listing of the same segments
(``*.batches.json``, ``FileRecords.batches()`` on the broker's files) for every fixture case Kafka left whole.

These are the facts segdex records per segment in its Delta tables; the legacy (v0/v1), transactional and
control batches take the slow path (``_recover_batch``), the rest the kernel's."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, fixture_case_names

from segdex.indexcore.log_segment import recover

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}  # Kafka's CompressionType ids
CASES = [c for c in fixture_case_names() if not c.startswith("corrupt_")]


def test_every_whole_case_is_here():
    assert len(CASES) >= 22


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
def test_recovery_counts_what_kafka_lists(case: str, native: bool):
    listings = sorted((FIXTURES / case / "broker").glob("*.batches.json"))
    assert listings, case
    for listing in listings:
        batches = json.loads(listing.read_text())
        log = listing.with_name(listing.name.replace(".batches.json", ".log"))
        base = int(log.name[:20])
        result = recover(log.read_bytes(), base, native=native)
        got = (result.batch_count, result.record_count, result.first_offset, result.last_offset,
               result.codecs, result.magics, result.valid_bytes)
        want = (len(batches), sum(b["recordCount"] for b in batches),
                batches[0]["baseOffset"] if batches else -1, batches[-1]["lastOffset"] if batches else -1,
                sorted({b["compressionType"] for b in batches}, key=CODECS.__getitem__),
                sorted({b["magic"] for b in batches}),
                sum(b["sizeInBytes"] for b in batches))
        assert got == want, (case, log.name)
        if batches:
            assert result.max_timestamp == max(b["maxTimestamp"] for b in batches), (case, log.name)


def _txn(offset: int) -> bytes:
    """A transactional batch: recovery takes it on the slow path (producer state), not in the kernel."""
    from segdex.indexcore.segment_writer import build_batch

    return build_batch(offset, [(1_700_000_000_000, b"k", b"v")], producer_id=5, producer_epoch=0,
                       base_sequence=offset % 1000, is_transactional=True)


@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
def test_relative_offsets_up_to_int32_max_on_the_slow_path(native: bool):
    """``AbstractIndex.relativeOffset``: offset - base must lie in [0, Integer.MAX_VALUE]. A batch at exactly
    base + Integer.MAX_VALUE is recovered; one past it stops recovery (Kafka splits such a segment on load)."""
    int32_max = 2**31 - 1
    fits = _txn(10) + _txn(10 + int32_max)
    result = recover(fits, 10, native=native)
    assert (result.error, result.valid_bytes, result.last_offset) == (None, len(fits), 10 + int32_max)
    past = _txn(10) + _txn(11 + int32_max)
    result = recover(past, 10, native=native)
    assert result.valid_bytes == len(_txn(10)) and result.error == (
        f"IndexOffsetOverflowException at position {len(_txn(10))}: offset {11 + int32_max} at position "
        f"{len(_txn(10))} does not fit the segment's relative offset range (base offset 10); Kafka would split "
        f"this segment on load")
