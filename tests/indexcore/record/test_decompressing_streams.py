"""Compressed payloads read as Kafka 4.4's readers read them: ``Compression.wrapForInput`` (the codec's own stream,
``GZIPInputStream``, xerial's ``SnappyInputStream``, Kafka's ``Lz4BlockInputStream``, zstd-jni's
``ZstdInputStreamNoFinalizer``, under a ``ChunkedBytesStream``), then ``read()`` and ``Utils.readFully`` calls in
the order a case gives.

Each case is a payload (whole, cut, a bit flipped, bytes after it, a header or frame field set by hand) and its
reads; Kafka's answer is what opening the stream threw, or what each read delivered and what the read that failed
threw. Kafka's answers and the payloads are kept in ``decompressing_streams.json`` (``SEGDEX_RECORD_GOLDEN=1``
draws the cases again and records them); the test process compares segdex's streams with every one of them."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import struct
import zlib
from pathlib import Path

import cramjam
import lz4.block
import lz4.frame
import pytest
import xxhash

from segdex.indexcore.errors import JavaException, KafkaReadException
from segdex.indexcore.record.compression import wrap_for_input
from segdex.indexcore.utils.chunked_bytes_stream import read_fully
from tests.support.fixtures import GOLDEN

ANSWERS = GOLDEN / "decompressing_streams.json"
READS = ("r", "r", "f1", "f100", "f2047", "f2048", "f3000", "f16384", "f20000", "f70000")


def _plain(rng: random.Random, size: int) -> bytes:
    """Bytes that compress (a record-like repetition, one byte in thirty random)."""
    return bytes(65 + i * 7 % 13 if rng.random() < 0.97 else rng.getrandbits(8) for i in range(size))


def _xerial(*chunks: bytes, version: int = 1) -> bytes:
    out = b"\x82SNAPPY\x00" + struct.pack(">ii", version, 1)
    for c in chunks:
        raw = bytes(cramjam.snappy.compress_raw(c))
        out += struct.pack(">i", len(raw)) + raw
    return out


def _lz4_frame(flg: int, bd: int, blocks: list[bytes], content_size: bool = False, end: bytes = b"\0\0\0\0",
               hc: int | None = None) -> bytes:
    """An LZ4 frame laid out field by field: the descriptor's checksum byte right unless ``hc`` is given."""
    descriptor = bytes([flg, bd]) + (struct.pack("<q", 1000) if content_size else b"")
    check = (xxhash.xxh32_intdigest(descriptor, 0) >> 8) & 0xFF if hc is None else hc
    return struct.pack("<i", 0x184D2204) + descriptor + bytes([check]) + b"".join(blocks) + end


def _lz4_block(data: bytes, stored: bool = False, checksum: bool = False) -> bytes:
    body = data if stored else lz4.block.compress(data, store_size=False)
    size = len(body) | (0x80000000 if stored else 0)
    return struct.pack("<I", size) + body + (struct.pack("<I", xxhash.xxh32_intdigest(body, 0)) if checksum else b"")


def _gzip_member(data: bytes, flags: int = 0, extra: bytes = b"") -> bytes:
    raw = zlib.compressobj(6, zlib.DEFLATED, -15)
    body = raw.compress(data) + raw.flush()
    header = b"\x1f\x8b\x08" + bytes([flags]) + bytes(6) + extra
    if flags & 2:
        header += struct.pack("<H", zlib.crc32(header) & 0xFFFF)
    return header + body + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)


def _crafted(rng: random.Random) -> list[tuple[str, int, bytes]]:
    """Payloads whose fields are set by hand: each codec's header and framing checks."""
    small, big = _plain(rng, 3000), _plain(rng, 70000)
    whole_lz4 = _lz4_block(small)
    zstd = bytes(cramjam.zstd.compress(small).read())
    cases = [
        ("gzip: empty", 1, b""), ("gzip: one byte", 1, b"\x1f"), ("gzip: method 7", 1, b"\x1f\x8b\x07" + bytes(7)),
        ("gzip: a name and a comment", 1, _gzip_member(small, 8 | 16, b"name\0comment\0")),
        ("gzip: an extra field", 1, _gzip_member(small, 4, b"\x03\x00abc")),
        ("gzip: header CRC right", 1, _gzip_member(small, 2)),
        ("gzip: header CRC wrong", 1, _gzip_member(small, 2)[:10] + b"\0\0" + _gzip_member(small, 2)[12:]),
        ("gzip: name never ended", 1, b"\x1f\x8b\x08\x08" + bytes(6) + b"abc"),
        ("gzip: two members", 1, _gzip_member(small) + _gzip_member(big)),
        ("gzip: garbage after the trailer", 1, _gzip_member(small) + bytes(range(40))),
        ("gzip: trailer size wrong", 1, _gzip_member(small)[:-4] + b"\0\0\0\0"),
        ("gzip: trailer cut", 1, _gzip_member(small)[:-3]),
        ("snappy: empty", 2, b""), ("snappy: raw block", 2, bytes(cramjam.snappy.compress_raw(small))),
        ("snappy: raw block cut", 2, bytes(cramjam.snappy.compress_raw(small))[:50]),
        ("snappy: raw varint past 32 bits", 2, b"\xff\xff\xff\xff\x7f" + bytes(10)),
        ("snappy: raw length past an int", 2, b"\xff\xff\xff\xff\x0f" + bytes(10)),
        ("snappy: header only", 2, _xerial()),
        ("snappy: header cut", 2, _xerial()[:12]),
        ("snappy: chunk length cut", 2, _xerial(small) + b"\0\0"),
        ("snappy: negative chunk length", 2, _xerial(small) + struct.pack(">i", -5) + bytes(8)),
        ("snappy: chunk past 512 MiB", 2, _xerial(small) + struct.pack(">i", 512 * 1024 * 1024 + 1) + bytes(8)),
        ("snappy: chunk cut", 2, _xerial(small, big)[:-10]),
        ("snappy: concatenated stream", 2, _xerial(small) + _xerial(big)),
        ("snappy: concatenated header cut", 2, _xerial(small) + _xerial()[:10]),
        ("snappy: concatenated version 0", 2, _xerial(small) + _xerial(big, version=0)),
        ("snappy: concatenated magic wrong", 2, _xerial(small) + b"\x82SNA" + b"XXXX" + bytes(8) + bytes(20)),
        ("snappy: empty chunk", 2, _xerial(small, b"", big)),
        ("lz4: empty", 3, b""), ("lz4: magic wrong", 3, b"\x04\x22\x4d\x19" + bytes(10)),
        ("lz4: reserved bits", 3, _lz4_frame(0x61, 0x40, [whole_lz4])),
        ("lz4: dependent blocks", 3, _lz4_frame(0x40, 0x40, [whole_lz4])),
        ("lz4: version 2", 3, _lz4_frame(0xA0, 0x40, [whole_lz4])),
        ("lz4: BD reserved2", 3, _lz4_frame(0x60, 0x41, [whole_lz4])),
        ("lz4: BD block size 3", 3, _lz4_frame(0x60, 0x30, [whole_lz4])),
        ("lz4: BD reserved3", 3, _lz4_frame(0x60, 0xC0, [whole_lz4])),
        ("lz4: descriptor checksum wrong", 3, _lz4_frame(0x60, 0x40, [whole_lz4], hc=0)),
        ("lz4: content size", 3, _lz4_frame(0x68, 0x40, [whole_lz4], content_size=True)),
        ("lz4: content size cut", 3, _lz4_frame(0x68, 0x40, [], content_size=True)[:10]),
        ("lz4: no checksum byte", 3, _lz4_frame(0x60, 0x40, [])[:6]),
        ("lz4: block checksums", 3, _lz4_frame(0x70, 0x40, [_lz4_block(small, checksum=True)] * 2)),
        ("lz4: block checksum wrong", 3, _lz4_frame(0x70, 0x40, [_lz4_block(small, checksum=True)[:-1] + b"\0",
                                                                  _lz4_block(small, checksum=True)])),
        ("lz4: block checksum cut", 3, _lz4_frame(0x70, 0x40, [_lz4_block(small)], end=b"")),
        ("lz4: stored block", 3, _lz4_frame(0x60, 0x40, [_lz4_block(small, stored=True), whole_lz4])),
        ("lz4: block past the maximum", 3, _lz4_frame(0x60, 0x40, [struct.pack("<I", 65537) + bytes(10)])),
        ("lz4: block cut", 3, _lz4_frame(0x60, 0x40, [whole_lz4[:-5]], end=b"")),
        ("lz4: no end mark", 3, _lz4_frame(0x60, 0x40, [whole_lz4], end=b"")),
        ("lz4: bytes after the end mark", 3, _lz4_frame(0x60, 0x40, [whole_lz4], end=bytes(4) + b"junk" * 5)),
        ("lz4: content checksum", 3, _lz4_frame(0x64, 0x40, [whole_lz4], end=bytes(4) + b"\1\2\3\4")),
        ("lz4: content checksum cut", 3, _lz4_frame(0x64, 0x40, [whole_lz4], end=bytes(4) + b"\1\2")),
        ("lz4: an empty block", 3, _lz4_frame(0x60, 0x40, [_lz4_block(b""), whole_lz4])),
        ("lz4: a block of corrupt data", 3, _lz4_frame(0x60, 0x40, [whole_lz4, struct.pack("<I", 6) + b"\xff" * 6])),
        ("lz4: a frame as python-lz4 writes it", 3, lz4.frame.compress(big, block_linked=False)),
        ("zstd: empty", 4, b""), ("zstd: garbage", 4, b"not a zstd frame"),
        ("zstd: two frames", 4, zstd + bytes(cramjam.zstd.compress(big).read())),
        ("zstd: three bytes after the frame", 4, zstd + b"\1\2\3"),
        ("zstd: garbage after the frame", 4, zstd + b"garbage!"),
        ("zstd: a skippable frame first", 4, struct.pack("<II", 0x184D2A50, 4) + b"skip" + zstd),
        ("zstd: a frame cut", 4, zstd[:-7]),
    ]
    return cases


def _drawn(rng: random.Random, n: int) -> list[tuple[str, int, bytes]]:
    """Payloads the sample writer's compressors make, whole or damaged: cut, a bit flipped, bytes after them."""
    from segdex.indexcore.record.compression import compress

    out = []
    for i in range(n):
        codec = rng.choice([1, 2, 3, 4])
        payload = compress(codec, _plain(rng, rng.choice([1, 500, 3000, 20000, 70000])))
        kind = rng.choice(["whole", "cut", "cut", "flip", "flip", "tail"])
        if kind == "cut":
            payload = payload[:rng.randrange(len(payload))]
        elif kind == "flip":
            b = bytearray(payload)
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
            payload = bytes(b)
        elif kind == "tail":
            payload += bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 40)))
        out.append((f"drawn {i}: {kind}", codec, payload))
    return out


def _cases() -> dict[str, dict]:
    rng = random.Random(20261129)
    cases = {}
    for name, codec, payload in _crafted(rng) + _drawn(rng, 60):
        reads = ",".join(rng.choice(READS) for _ in range(rng.randint(3, 30)))
        cases[name] = {"codec": codec, "payload": base64.b64encode(payload).decode(), "reads": reads}
    return cases


def summary(counts: list[int], data: bytes, end: str | None) -> dict:
    """A stream answer as the tests keep it: each read's count, the bytes' digest, the failure (None)."""
    return {"counts": counts, "sha256": hashlib.sha256(data).hexdigest(), "end": end}


def _read_as_the_oracle(stream, reads: str) -> tuple[list[int], bytes, JavaException | None]:
    """The oracle's ``stream`` reads over ``stream`` (``r``: ``read()``; ``fN``: ``readFully`` of N bytes): each
    read's count (-1 for ``read()`` at the end), the bytes read, and the throwable that ended them (None)."""
    counts, data = [], []
    try:
        for op in reads.split(","):
            if op == "r":
                b = stream.read()
                counts.append(1 if b >= 0 else -1)
                data.append(bytes([b]) if b >= 0 else b"")
            else:
                got = read_fully(stream, int(op[1:]))
                counts.append(len(got))
                data.append(got)
    except JavaException as e:
        return counts, b"".join(data), e
    return counts, b"".join(data), None


def read_as_kafka(case: dict) -> dict:
    """segdex's stream over the case (its ``magic``: 2 where it names none), answered as Kafka's oracle answers
    (``wrapForInput``, then the reads): the failure as the oracle describes a throwable (its class, ": ", its
    message, "null" for none), and ``io``, whether it is an ``IOException``."""
    try:
        stream = wrap_for_input(case["codec"], base64.b64decode(case["payload"]), case.get("magic", 2))
    except KafkaReadException as e:
        return {"opening": f"org.apache.kafka.common.KafkaException: {e}"}
    counts, data, e = _read_as_the_oracle(stream, case["reads"])
    if e is not None:
        return {**summary(counts, data, f"{e.kafka_class}: {e}"), "io": e.io}
    return summary(counts, data, None)


def _same(kafkas: dict, ours: dict) -> bool:
    """The same answer; of an ``IOException`` only its class (its words are the codec's own: zlib's, lz4-java's),
    as the record readers wrap it whatever it says."""
    if "opening" in kafkas or "opening" in ours:
        return kafkas.get("opening") == ours.get("opening")
    if (kafkas["counts"], kafkas["sha256"]) != (ours["counts"], ours["sha256"]):
        return False
    if kafkas["end"] is None or ours["end"] is None:
        return kafkas["end"] == ours["end"]
    return kafkas["end"].split(":")[0] == ours["end"].split(":")[0] and (ours["io"] or kafkas["end"] == ours["end"])


def test_kafkas_streams_are_the_recorded_ones(kafka44, tmp_path: Path):
    """Kafka 4.4's stream over every kept payload gives the kept answer (``SEGDEX_RECORD_GOLDEN=1`` draws the cases
    and records Kafka's answers)."""
    recording = os.environ.get("SEGDEX_RECORD_GOLDEN") == "1"
    cases = _cases() if recording else json.loads(ANSWERS.read_text())
    answers = {}
    for name, case in cases.items():
        path = tmp_path / "payload"
        path.write_bytes(base64.b64decode(case["payload"]))
        answer = kafka44.stream(case["codec"], 2, path, case["reads"])
        if "opening" not in answer:
            answer = summary(answer["counts"], answer["data"], answer["end"])
        answers[name] = {**{k: case[k] for k in ("codec", "payload", "reads")}, "kafka": answer}
    if recording:
        ANSWERS.write_text(json.dumps(answers, indent=0, sort_keys=True) + "\n")
    kept = json.loads(ANSWERS.read_text())
    assert {n: a["kafka"] for n, a in answers.items()} == {n: a["kafka"] for n, a in kept.items()}


@pytest.mark.parametrize("codec", [1, 2, 3, 4], ids=["gzip", "snappy", "lz4", "zstd"])
def test_every_stream_reads_as_kafkas(codec: int):
    """Each kept case of the codec: the same opening failure, or the same bytes from each read and a failure of the
    same class at the same read."""
    kept = {n: c for n, c in json.loads(ANSWERS.read_text()).items() if c["codec"] == codec}
    differ = {}
    for name, case in kept.items():
        ours = read_as_kafka(case)
        if not _same(case["kafka"], ours):
            differ[name] = f"segdex {ours}, Kafka {case['kafka']}"
    assert not differ, differ
    assert len(kept) >= 20
    failing = sum(1 for c in kept.values() if "opening" in c["kafka"] or c["kafka"]["end"] is not None)
    assert 10 <= failing < len(kept)  # failures and reads to the end alike
