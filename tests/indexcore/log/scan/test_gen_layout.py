"""The scan package's single layout: the generated C header is in step with the Python definitions, and the C
kernel reads the batch header only through the named offsets."""

from __future__ import annotations

import re
import struct
from pathlib import Path

from segdex.indexcore.index import offset_index, time_index
from segdex.indexcore.log.scan import gen_layout, state
from segdex.indexcore.record import batch_header, record_batch

SCAN = Path(gen_layout.__file__).parent


def test_generated_header_is_current():
    assert (SCAN / "_layout.h").read_text() == gen_layout.render(), \
        "indexcore/log/scan/_layout.h is stale: run `python -m segdex.indexcore.log.scan.gen_layout`"


def test_offsets_chain_as_kafka_defines_them():
    # DefaultRecordBatch: each field starts where the previous one ends
    fields = ["BASE_OFFSET", "LENGTH", "PARTITION_LEADER_EPOCH", "MAGIC", "CRC", "ATTRIBUTES", "LAST_OFFSET_DELTA",
              "BASE_TIMESTAMP", "MAX_TIMESTAMP", "PRODUCER_ID", "PRODUCER_EPOCH", "BASE_SEQUENCE", "RECORDS_COUNT"]
    at = 0
    for name in fields:
        assert getattr(batch_header, f"{name}_OFFSET") == at, name
        at += getattr(batch_header, f"{name}_LENGTH" if name != "ATTRIBUTES" else "ATTRIBUTE_LENGTH")
    assert at == batch_header.RECORD_BATCH_OVERHEAD == 61 == batch_header.RECORD_BATCH_V2.size
    sizes = [struct.calcsize(">" + c) for c in batch_header.RECORD_BATCH_V2.format.lstrip(">")]
    assert sizes == [getattr(batch_header, f"{n}_LENGTH" if n != "ATTRIBUTES" else "ATTRIBUTE_LENGTH")
                     for n in fields]
    assert record_batch.RECORD_BATCH_V2 is batch_header.RECORD_BATCH_V2  # one definition
    assert record_batch.ATTRIBUTES_V2_OFFSET == batch_header.ATTRIBUTES_OFFSET
    for name in ("COMPRESSION_CODEC_MASK", "TIMESTAMP_TYPE_MASK", "TRANSACTIONAL_FLAG_MASK", "CONTROL_FLAG_MASK",
                 "NO_TIMESTAMP"):
        assert getattr(record_batch, name) == getattr(batch_header, name), name
    assert "COMPRESSION_CODEC_MASK =" not in Path(record_batch.__file__).read_text()  # imported, not redefined


def test_index_entries_are_laid_out_by_their_index_modules():
    """Each index file's entry layout lives in the module of that file, and reaches C from there."""
    assert offset_index.ENTRY.format == ">ii" and offset_index.ENTRY_SIZE == 8
    assert time_index.ENTRY.format == ">qi" and time_index.ENTRY_SIZE == 12
    header = (SCAN / "_layout.h").read_text()
    assert "#define OFFSET_INDEX_ENTRY_SIZE 8\n" in header and "#define TIME_INDEX_ENTRY_SIZE 12\n" in header
    assert not hasattr(batch_header, "OFFSET_INDEX_ENTRY") and not hasattr(batch_header, "TIME_INDEX_ENTRY")


def test_slots_are_defined_once():
    names = [name for name, _ in state.SLOTS]
    assert [getattr(state, name) for name in names] == list(range(state.N_SLOTS))
    assert sorted(n for n in dir(state) if n.startswith("S_")) == sorted(names)
    source = (SCAN / "_fastscan.c").read_text()
    assert '#include "_layout.h"' in source
    assert not re.search(r"\benum\s*\{\s*S_POSITION", source), "the C file defines its own slots"


def test_c_kernel_reads_the_header_by_name():
    source = (SCAN / "_fastscan.c").read_text()
    raw = re.findall(r"\bh\s*\+\s*\d+|\bh\[\d+\]", source)
    assert not raw, f"raw header offsets in _fastscan.c: {raw}"
    masks = re.findall(r"\battributes\s*&\s*0x[0-9a-fA-F]+", source)
    assert not masks, f"raw attribute masks in _fastscan.c: {masks}"
    assert "PyRun_String" not in source  # the CRC library is found by native.py, not by Python source in C


def test_gen_layout_main_rewrites_the_header(tmp_path, monkeypatch):
    """``python -m ...gen_layout`` replaces the whole header with the committed text (a longer stale file too)."""
    target = tmp_path / "_layout.h"
    target.write_text("stale\n" * 1000)
    monkeypatch.setattr(gen_layout, "HEADER", str(target))
    gen_layout.main()
    assert target.read_text() == (SCAN / "_layout.h").read_text()
