"""The magic 0/1 writer (``segment_writer.build_legacy``) against the messages Kafka wrote in the fixtures: each
uncompressed message rebuilt from its own offset, timestamp, key and value is Kafka's bytes; a gzip wrapper holds
Kafka's inner messages, with Kafka's wrapper offset, magic, attributes and timestamp (the deflate stream itself
is the compressor's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from segdex.indexcore.record.file_records import batches, open_log
from segdex.indexcore.record.records import records
from segdex.indexcore.tools.segment_writer import build_legacy
from tests.support.fixtures import FIXTURES
from tests.support.kafka_bytes import decompress

HEADER = 8 + 4 + 4  # offset, size, crc


def _messages(log: Path):
    with open_log(log) as buf:
        for b in batches(buf):
            yield b, list(records(buf, b)), bytes(buf[b.position:b.position + b.size_in_bytes])


@pytest.mark.parametrize("case", ["v0_none", "v1_none"])
def test_uncompressed_messages_are_kafkas_bytes(case: str):
    [log] = (FIXTURES / case / "broker").glob("*.log")
    built = b"".join(build_legacy(recs[0].offset, recs, magic=b.magic) for b, recs, _ in _messages(log))
    assert built == log.read_bytes()
    assert len(log.read_bytes()) > 10_000


@pytest.mark.parametrize("case", ["v0_gzip", "v1_gzip"])
def test_gzip_wrappers_hold_kafkas_messages(case: str):
    [log] = (FIXTURES / case / "broker").glob("*.log")
    checked = 0
    for b, recs, kafka in _messages(log):
        ours = build_legacy(recs[0].offset, recs, magic=b.magic, compression=b.compression_type)
        fixed = HEADER + 2 + (8 if b.magic else 0)  # magic, attributes, timestamp
        assert ours[:8] == kafka[:8]  # the wrapper's offset: its last inner message's
        assert ours[HEADER:fixed] == kafka[HEADER:fixed]  # magic, attributes (codec, timestamp type), timestamp
        inner = [decompress(b.compression_type, m[fixed + 8:]) for m in (ours, kafka)]  # after key -1, value size
        assert inner[0] == inner[1]
        checked += 1
    assert checked >= 100


def test_a_compressed_wrapper_needs_messages():
    with pytest.raises(ValueError, match="^a compressed legacy wrapper needs at least one message$"):
        build_legacy(0, [], magic=1, compression=1)
