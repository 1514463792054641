"""Kafka 4.4's decompressing streams in the states the mutation run found untested (the survivors of
``report-rest.md`` in ``record/snappy_input_stream``, ``record/zstd_input_stream``, ``record/gzip_input_stream``
and ``record/lz4_block_input_stream``), judged by Kafka's own classes and kept in ``decompressing_stream_mutants.json``
(``SEGDEX_RECORD_GOLDEN=1`` draws the cases again and records the answers):

- ``streams``: payloads read through ``Compression.wrapForInput`` (the oracle's ``stream``, as in
  ``test_decompressing_streams.py``), compared in full: the bytes of each read, and the failure's class and
  message (every message here is the stream's own Java text, none is a native library's).

  - snappy: wrong headers of concatenated streams. ``hasNextChunk`` answers "no chunk" for one, without ending
    the stream (``finishedReading`` stays false), so each later call reads the next 16 bytes; the calls
    ``available`` makes (from ``ChunkedBytesStream.read``) count as much as ``read``'s, and a valid stream after
    them is found by a later read.
  - snappy: a raw block (no xerial header) of length 0: an empty stream, not a ``NegativeArraySizeException``;
    raw lengths read as negative ints (the exception's text is the length), and varints snappy refuses (a sixth
    byte, a fifth byte of 16 or more: ``PARSING_ERROR``).
  - gzip: bytes after a member's trailer are read as another member's header only where the input has more or
    over 26 bytes are left in the inflater's buffer (18 after the trailer: ignored; 19: read, and found cut);
    a damaged deflate block fails with zlib's own words.
  - lz4: a frame with a content size and nothing after it (``readHeader``'s checksum byte missing), or only the
    checksum byte.
  - zstd: a block decoded, then the payload ends inside the next one: ``readInternal`` reads the source again only
    where it has bytes (``in.available() > 0``) or nothing was decoded yet, so the decoded block is delivered
    and the next read throws "Truncated source". A payload one byte longer than zstd-jni's source buffer
    (``recommendedDInSize``) whose last byte completes a damaged block: the one byte is read in the same
    ``readInternal`` (it is available), which throws, losing the block decoded before it.

- ``available``: the codec's own stream's ``available()`` after each of a series of reads, as the JVM answers
  (JDK 17's ``GZIPInputStream``, snappy-java's ``SnappyInputStream``, zstd-jni's ``ZstdInputStreamNoFinalizer``,
  each over Kafka's ``ByteBufferInputStream`` as Kafka opens it), from a small program compiled against Kafka 4.4's
  jars. Kafka's readers use ``available()`` only in ``ChunkedBytesStream.read(b, off, len)`` (to stop early), and
  ``Utils.readFully`` reads on after such a stop, so these values reach Kafka's answers only where ``available``
  does more than answer (snappy's reads the next chunk); the test pins the Java classes' answers themselves, and
  each read's count (reads of one byte and of none too, which ``ChunkedBytesStream`` never asks for)."""

from __future__ import annotations

import base64
import json
import os
import random
import struct
import subprocess
import zlib
from pathlib import Path

import cramjam
import lz4.block
import pytest
import xxhash
import zstandard

from segdex.indexcore.errors import JavaException, KafkaReadException
from segdex.indexcore.record.compression import wrap_for_input
from segdex.indexcore.record.default_record import stream_records
from segdex.indexcore.record.gzip_input_stream import GZIPInputStream
from segdex.indexcore.record.lz4_block_input_stream import Lz4BlockInputStream
from segdex.indexcore.record.snappy_input_stream import SnappyInputStream
from segdex.indexcore.record.zstd_input_stream import SRC_BUFF_SIZE, ZstdInputStreamNoFinalizer
from tests.indexcore.record.test_decompressing_streams import read_as_kafka, summary
from tests.indexcore.record.test_records import body, deep, msg
from tests.support.fixtures import GOLDEN

ANSWERS = GOLDEN / "decompressing_stream_mutants.json"
WRONG_HEADER = b"\x82SNA" + b"XXXX" + bytes(8)  # starts as the magic's first int does, then is not the magic
WRONG_HC = 0  # the right one for FLG 0x60, BD 0x40 is 0x82
STREAMS = {1: GZIPInputStream, 2: SnappyInputStream, 4: ZstdInputStreamNoFinalizer}

_JAVA = """\
import java.io.*;
import java.nio.ByteBuffer;
import java.nio.file.*;
import org.apache.kafka.common.utils.internals.ByteBufferInputStream;

/** Each line of the manifest (codec, payload file, ops: "a" available(), "rN" read(b, 0, N)): one answer line,
 *  the ops' results comma separated, or the class of what opening or an op threw. */
public class StreamAvailable {
    public static void main(String[] args) throws Exception {
        for (String line : Files.readAllLines(Paths.get(args[0]))) {
            String[] f = line.split("\\t");
            InputStream in = new ByteBufferInputStream(ByteBuffer.wrap(Files.readAllBytes(Paths.get(f[1]))));
            StringBuilder out = new StringBuilder();
            try {
                InputStream s = f[0].equals("1") ? new java.util.zip.GZIPInputStream(in, 8 * 1024)
                    : f[0].equals("2") ? new org.xerial.snappy.SnappyInputStream(in)
                    : new com.github.luben.zstd.ZstdInputStreamNoFinalizer(in);
                byte[] buf = new byte[1 << 20];
                for (String op : f[2].split(",")) {
                    int n = op.equals("a") ? s.available() : s.read(buf, 0, Integer.parseInt(op.substring(1)));
                    out.append(out.length() == 0 ? "" : ",").append(n);
                }
            } catch (Throwable t) {
                out.append(out.length() == 0 ? "" : ",").append(t.getClass().getName());
            }
            System.out.println(out);
        }
    }
}
"""


def _plain(rng: random.Random, size: int) -> bytes:
    """Bytes that compress (a record-like repetition, one byte in thirty random)."""
    return bytes(65 + i * 7 % 13 if rng.random() < 0.97 else rng.getrandbits(8) for i in range(size))


def _xerial(*chunks: bytes) -> bytes:
    out = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    for c in chunks:
        raw = bytes(cramjam.snappy.compress_raw(c))
        out += struct.pack(">i", len(raw)) + raw
    return out


def _gzip_member(data: bytes) -> bytes:
    raw = zlib.compressobj(6, zlib.DEFLATED, -15)
    body = raw.compress(data) + raw.flush()
    return b"\x1f\x8b\x08\x00" + bytes(6) + body + struct.pack("<II", zlib.crc32(data), len(data))


def _zstd_blocks(*parts: bytes) -> bytes:
    """One zstd frame (no checksum, no content size), each part ending a block of its own."""
    c = zstandard.ZstdCompressor(write_checksum=False, write_content_size=False).compressobj()
    out = b""
    for i, p in enumerate(parts):
        out += c.compress(p) + (c.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK) if i < len(parts) - 1 else c.flush())
    return out


def _past_the_source_buffer(rng: random.Random) -> bytes:
    """A frame ``SRC_BUFF_SIZE + 1`` bytes long: a stored block of under 16 KiB, then a compressed block that ends
    at the payload's last byte, which is set to 0 (a bit stream without its end mark: the block is corrupt)."""
    second = bytearray()
    while len(second) < 130000:  # nearly random bytes with a few copies: a compressed block of ~120 KiB
        if len(second) > 100 and rng.random() < 0.04:
            s = rng.randrange(len(second) - 64)
            second += second[s:s + rng.randint(8, 40)]
        else:
            second += bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 30)))
    second = bytes(second[:130000])
    first = bytes(rng.getrandbits(8) for _ in range(5000))  # random: a stored block, one byte for each
    for _ in range(10):
        frame = _zstd_blocks(first, second)
        if len(frame) == SRC_BUFF_SIZE + 1:
            return frame[:-1] + b"\0"
        first = first[:len(first) + SRC_BUFF_SIZE + 1 - len(frame)] + bytes(
            rng.getrandbits(8) for _ in range(SRC_BUFF_SIZE + 1 - len(frame)))
    raise AssertionError("no frame of the length sought")


def _lz4_frame(payload: bytes, hc: int | None = None, bd: int = 0x40) -> bytes:
    """An LZ4 frame as Kafka's producers write it (FLG 0x60, BD 0x40: one compressed block), its descriptor checksum
    byte ``hc`` (None: the right one)."""
    block = lz4.block.compress(payload, store_size=False)
    hc = (xxhash.xxh32_intdigest(bytes([0x60, bd]), 0) >> 8) & 0xFF if hc is None else hc
    return struct.pack("<iBBB", 0x184D2204, 0x60, bd, hc) + struct.pack("<I", len(block)) + block + bytes(4)


def _legacy_lz4_wrapper(magic: int) -> bytes:
    """A legacy wrapper message of ``magic`` whose value is an LZ4 frame with a wrong descriptor checksum (as Kafka
    0.8-0.9's writers computed it over the magic too), holding two inner messages."""
    return msg(1, body(magic, None, _lz4_frame(_inner(magic), WRONG_HC), attributes=3))


def _inner(magic: int) -> bytes:
    return msg(0, body(magic, b"k0", b"v0")) + msg(1, body(magic, b"k1", b"v1"))


def _stream_cases() -> dict[str, dict]:
    rng = random.Random(202611291)
    small, big = _plain(rng, 3000), _plain(rng, 8000)
    cases = {}
    for k in range(1, 6):
        payload = _xerial(small) + WRONG_HEADER * k + _xerial(big)
        for j, reads in enumerate(("f5000,r,r,r,r,r,f100,f3000,r", "f3000,f10,r,f3000,f50000,r,f10",
                                   "r,f2999,f1,r,r,r,r,f8000,r")):
            cases[f"snappy: {k} wrong concatenated headers, then a stream ({j})"] = (2, payload, reads)
    # a concatenated stream's header cut: SnappyIOException with snappy-java's own words (whole text compared)
    for n in (10, 15):
        cases[f"snappy: a concatenated header cut to {n} bytes"] = (2, _xerial(small) + _xerial()[:n], "f2000,r,f5000")
    # a concatenated header's version (its second int: the third is the compatible version, not checked)
    header = b"\x82SNAPPY\x00" + struct.pack(">ii", 0, 0x7F000000)
    cases["snappy: a concatenated header of version 0"] = (2, _xerial(small) + header + _xerial(big)[16:], "f5000,r")
    cases["snappy: a raw block of nothing"] = (2, b"\x00", "r,f10,r")
    cases["snappy: a raw block of nothing, then bytes"] = (2, b"\x00\x01\x02", "r")
    cases["snappy: a raw length of -2"] = (2, b"\xfe\xff\xff\xff\x0f" + bytes(10), "r")
    # snappy's Varint::Parse32WithLimit: 5 bytes at most, the fifth below 16; 0x80 continues a varint
    cases["snappy: a raw length of -2^31, bytes of 0x80 in it"] = (2, b"\x80\x80\x80\x80\x08" + bytes(10), "r")
    cases["snappy: a raw length whose fifth byte is 16"] = (2, b"\x80\x80\x80\x80\x10" + bytes(10), "r")
    cases["snappy: a raw length of six bytes"] = (2, b"\x80\x80\x80\x80\x80\x00" + bytes(10), "r")
    cut = _zstd_blocks(_plain(rng, 5000), _plain(rng, 40000))[:-10]
    cases["zstd: a block, then the payload ends in the next"] = (4, cut, "r,r,f100,r,f20000,r")
    cases["zstd: a block, then the payload ends in the next (readFully)"] = (4, cut, "f100,f20000,f20000")
    cases["zstd: one byte past the source buffer completes a corrupt block"] = (
        4, _past_the_source_buffer(rng), "r,r,f100,f20000,f200000,r")
    cases["lz4: the largest block size (BD 0x70: 4 MiB)"] = (3, _lz4_frame(small, bd=0x70), "f5000,r")
    cases = {n: (*c, 2) for n, c in cases.items()}
    for magic in (0, 1):  # Kafka ignores the descriptor checksum of a v0 message's frame only
        cases[f"lz4: a wrong descriptor checksum, magic {magic}"] = (3, _lz4_frame(_inner(magic), WRONG_HC),
                                                                     "f100000,r", magic)
    # gzip (one 8 KiB fill takes the whole payload): readTrailer looks for another member only where the input has
    # more or over 26 bytes (the trailer's 8 and 18) are left in the inflater's buffer; here a header follows,
    # then an empty block and a trailer cut short. A damaged deflate block: ZipException with zlib's own words.
    member = _gzip_member(b"gzip" * 500)
    after = b"\x1f\x8b\x08\x00" + bytes(6) + b"\x03\x00" + bytes(8)
    for n in (18, 19):
        cases[f"gzip: {n} bytes after the member, a header in them"] = (1, member + after[:n], "f100000,r", 2)
    cases["gzip: a deflate block of an invalid type"] = (1, member[:10] + b"\x07" + bytes(20), "f100,r", 2)
    # FLG 0x68 (content size set): readHeader skips its 8 bytes when 8 remain, then the checksum byte is not there
    # (ByteBuffer.get's BufferUnderflowException; a v0 message's frame: position past the limit); 7 are too few;
    # with a ninth (the checksum byte: a v0 message's frame skips it) the header is whole and no block follows
    sized = struct.pack("<iBB", 0x184D2204, 0x68, 0x40)
    for magic in (0, 2):
        for n in (7, 8, 9):
            cases[f"lz4: a content size, then {n} bytes, magic {magic}"] = (3, sized + bytes(n), "r", magic)
    return {n: {"codec": c, "payload": base64.b64encode(p).decode(), "reads": r, "magic": m}
            for n, (c, p, r, m) in cases.items()}


def _available_cases() -> dict[str, dict]:
    rng = random.Random(202611292)
    a, b = _plain(rng, 3000), _plain(rng, 5000)
    cases = {
        "gzip: one member": (1, _gzip_member(a), "a,r100,a,r100000,a,r100000,a"),
        "gzip: one member, its last bytes read alone": (1, _gzip_member(a), "r2900,a,r100,a,r10,a"),
        "gzip: two members": (1, _gzip_member(a) + _gzip_member(b), "r100000,a,r100,a,r100000,a,r10,a"),
        "snappy: two chunks": (2, _xerial(a, b), "a,r100,a,r2900,a,r5000,a,r10,a"),
        "snappy: two chunks, read across": (2, _xerial(a, b), "r3000,a,r4000,a,r4000,a"),
        "zstd: a frame smaller than a read": (4, bytes(cramjam.zstd.compress(a).read()), "a,r16384,a,r16384,a"),
        "zstd: a frame larger than a read": (4, bytes(cramjam.zstd.compress(_plain(rng, 70000)).read()),
                                             "a" + ",r16384,a" * 6),
        "zstd: empty": (4, b"", "a,r10,a"),
        # snappy-java refuses a chunk longer than 512 MiB; one of 512 MiB exactly is allocated, then found cut
        "snappy: a chunk of 512 MiB exactly": (2, _xerial(a) + struct.pack(">i", 512 << 20) + bytes(8), "r5000"),
        # reads of one byte and of none (ChunkedBytesStream never asks its source for fewer than its buffer's size)
        "gzip: reads of none": (1, _gzip_member(a), "r0,r100,r0,r100000,r100000,r0"),
        "snappy: reads of none": (2, _xerial(a, b), "r0,r100,r0,r100000,r100000,r0"),
        "zstd: reads of one byte and of none": (4, bytes(cramjam.zstd.compress(a).read()),
                                                "r1,a,r0,a,r1,r16384,r0,a,r16384,r0"),
    }
    return {n: {"codec": c, "payload": base64.b64encode(p).decode(), "ops": o} for n, (c, p, o) in cases.items()}


def _read_through_kafkas_wrap(case: dict) -> dict:
    """segdex's stream over the case, answered as the oracle's ``stream`` answers (its failure compared whole, the
    message included, so without ``io``)."""
    answer = read_as_kafka(case)
    answer.pop("io", None)
    return answer


def _available_answers(case: dict, javas: str) -> str:
    """segdex's stream over the case, answered as ``StreamAvailable`` answers; it stops at the first answer that
    differs from Java's ``javas`` (a stream that went wrong may not end)."""
    out: list[str] = []
    expected = javas.split(",")
    try:
        stream = STREAMS[case["codec"]](base64.b64decode(case["payload"]))
        for op in case["ops"].split(","):
            if op == "a":
                out.append(str(stream.available()))
            else:
                got = stream.read(int(op[1:]))
                out.append(str(-1 if got is None else len(got)))
            if out != expected[:len(out)]:
                break
    except JavaException as e:
        out.append(e.kafka_class)
    return ",".join(out)


def test_kafkas_answers_are_the_recorded_ones(kafka44, tmp_path: Path):
    """Kafka 4.4's streams (the oracle's ``stream``) and the Java streams' ``available()`` (``StreamAvailable``,
    compiled against Kafka 4.4's jars) over every kept case give the kept answers (``SEGDEX_RECORD_GOLDEN=1``
    draws the cases and records the answers)."""
    recording = os.environ.get("SEGDEX_RECORD_GOLDEN") == "1"
    kept = json.loads(ANSWERS.read_text()) if ANSWERS.exists() else {}
    streams = _stream_cases() if recording else kept["streams"]
    availables = _available_cases() if recording else kept["available"]
    answers: dict[str, dict] = {"streams": {}, "available": {}}
    for name, case in streams.items():
        path = tmp_path / "payload"
        path.write_bytes(base64.b64decode(case["payload"]))
        answer = kafka44.stream(case["codec"], case["magic"], path, case["reads"])
        if "opening" not in answer:
            answer = summary(answer["counts"], answer["data"], answer["end"])
        answers["streams"][name] = {**case, "kafka": answer}
    source = tmp_path / "StreamAvailable.java"
    source.write_text(_JAVA)
    subprocess.run(["javac", "-cp", kafka44.install.classpath(), "-d", str(tmp_path), str(source)], check=True)
    lines = []
    for i, case in enumerate(availables.values()):
        (tmp_path / f"{i}.bin").write_bytes(base64.b64decode(case["payload"]))
        lines.append(f"{case['codec']}\t{tmp_path / f'{i}.bin'}\t{case['ops']}")
    (tmp_path / "manifest").write_text("\n".join(lines) + "\n")
    # a broker's heap (kafka-server-start.sh: -Xmx1G): the oracle's 512 MiB cannot allocate a chunk of 512 MiB
    # (snappy-java then throws SnappyError "[INVALID_CHUNK_SIZE] Java heap space")
    run = subprocess.run(kafka44.install.java("StreamAvailable", str(tmp_path / "manifest"), extra_cp=(tmp_path,),
                                              heap="1g"),
                         capture_output=True, text=True, check=True, timeout=120)
    for (name, case), line in zip(availables.items(), run.stdout.splitlines(), strict=True):
        answers["available"][name] = {**case, "java": line}
    if recording:
        ANSWERS.write_text(json.dumps(answers, indent=0, sort_keys=True) + "\n")
        kept = answers
    assert {n: a["kafka"] for n, a in answers["streams"].items()} == {
        n: a["kafka"] for n, a in kept["streams"].items()}
    assert {n: a["java"] for n, a in answers["available"].items()} == {
        n: a["java"] for n, a in kept["available"].items()}


def _kept(part: str) -> dict[str, dict]:
    return json.loads(ANSWERS.read_text())[part] if ANSWERS.exists() else {}


@pytest.mark.parametrize("name", sorted(_kept("streams")))
def test_every_stream_reads_as_kafkas(name: str):
    """The same bytes from each read as Kafka's, and the same failure (class and message) at the same read."""
    case = _kept("streams")[name]
    assert _read_through_kafkas_wrap(case) == case["kafka"]


@pytest.mark.parametrize("name", sorted(_kept("available")))
def test_every_available_answers_as_javas(name: str):
    """``available()`` after each read: what the Java stream answers, and each read's count."""
    case = _kept("available")[name]
    assert _available_answers(case, case["java"]) == case["java"]


def test_the_recorded_cases_hold_what_they_are_for():
    """The kept cases still reach the states they were drawn for (a changed compressor would draw others)."""
    streams = _kept("streams")
    wrong = streams["snappy: 4 wrong concatenated headers, then a stream (1)"]["kafka"]
    assert wrong["end"] is None and wrong["counts"][-2:] == [1, 10]  # the stream after the wrong headers is read
    assert streams["snappy: a raw block of nothing"]["kafka"]["counts"] == [-1, 0, -1]
    cut = streams["zstd: a block, then the payload ends in the next"]["kafka"]
    assert cut["counts"] and cut["end"] == "com.github.luben.zstd.ZstdIOException: Truncated source"
    past = streams["zstd: one byte past the source buffer completes a corrupt block"]
    assert len(base64.b64decode(past["payload"])) == SRC_BUFF_SIZE + 1
    assert past["kafka"]["counts"] == [] and past["kafka"]["end"] is not None


def test_a_raw_snappy_length_past_an_int_is_not_an_io_exception():
    """snappy-java's ``readFully`` allocates ``new byte[uncompressedLength]``: a varint length read as a negative
    int throws ``NegativeArraySizeException``, a ``RuntimeException``, which Kafka's record readers pass on rather
    than wrap as they wrap an ``IOException`` (the opening text is in ``decompressing_streams.json``)."""
    with pytest.raises(JavaException) as raised:
        SnappyInputStream(b"\xff\xff\xff\xff\x0f" + bytes(10))
    assert (raised.value.kafka_class, str(raised.value)) == ("java.lang.NegativeArraySizeException", "-1")
    assert not raised.value.io


@pytest.mark.parametrize("length", [-5, (512 << 20) + 1], ids=["negative", "past 512 MiB"])
def test_a_snappy_error_passes_through_the_record_reader(length: int):
    """snappy-java's ``SnappyError`` (a chunk length below 0 or past 512 MiB: the stream's own failure is in
    ``decompressing_streams.json``) is a ``java.lang.Error``: ``StreamRecordIterator.readNext`` wraps only an
    ``IOException`` ("Failed to decompress record stream"), so the error leaves the record reader as it is."""
    stream = wrap_for_input(2, _xerial() + struct.pack(">i", length) + bytes(8))
    with pytest.raises(JavaException) as raised:
        list(stream_records(stream, 1, 0, 0, None))
    assert raised.value.kafka_class == "org.xerial.snappy.SnappyError"


@pytest.mark.parametrize("magic", [0, 1])
def test_a_legacy_lz4_wrapper_is_opened_with_its_own_magic(magic: int):
    """``DeepRecordsIterator`` opens the wrapper's value with the wrapper's magic (``wrapForInput(buffer,
    wrapperMagic, ...)``): a v0 frame's descriptor checksum is not checked, a v1 frame's is (Kafka's answers for
    the frame itself: 'lz4: a wrong descriptor checksum, magic 0/1' in the golden)."""
    kafkas = _kept("streams")[f"lz4: a wrong descriptor checksum, magic {magic}"]["kafka"]
    data = _legacy_lz4_wrapper(magic)
    if magic == 0:
        assert kafkas["end"] is None and kafkas["counts"][0] == len(_inner(magic))
        assert [(r.offset, r.key, r.value) for r in deep(data)] == [(0, b"k0", b"v0"), (1, b"k1", b"v1")]
    else:
        assert kafkas == {"opening": "org.apache.kafka.common.KafkaException: java.io.IOException: Stream frame "
                                    "descriptor corrupted"}
        with pytest.raises(KafkaReadException) as raised:
            deep(data)
        assert str(raised.value) == kafkas["opening"].split(": ", 1)[1]


@pytest.mark.parametrize("flg, bd", [(0x61, 0x40), (0x40, 0x40), (0xA0, 0x40), (0x60, 0x41), (0x60, 0x30),
                                     (0x60, 0xC0)])
def test_an_lz4_descriptor_refused_is_not_an_io_exception(flg: int, bd: int):
    """``KafkaLZ4BlockInputStream``'s ``FLG.validate`` and ``BD.validate`` throw ``RuntimeException`` (their texts,
    which opening the stream gives, are in ``decompressing_streams.json``): not an ``IOException``."""
    frame = struct.pack("<iBB", 0x184D2204, flg, bd) + bytes(10)
    with pytest.raises(JavaException) as raised:
        Lz4BlockInputStream(frame)
    assert raised.value.kafka_class == "java.lang.RuntimeException" and not raised.value.io


def _lz4_stored_block(size: int, flg: int = 0x60, tail: bytes | None = None) -> bytes:
    """A frame of version 1, independent blocks, 64 KiB blocks (BD 0x40), no checksums unless ``flg`` says so,
    holding one block of ``size`` bytes stored as they are (the incompressible bit), then ``tail``: by default the
    end mark."""
    head = bytes([flg, 0x40])
    return (struct.pack("<i", 0x184D2204) + head + bytes([xxhash.xxh32_intdigest(head, 0) >> 8 & 0xFF])
            + struct.pack("<I", size | 0x80000000) + bytes(range(256)) * (size // 256) + bytes(size % 256)
            + (struct.pack("<i", 0) if tail is None else tail))


def test_an_lz4_block_of_the_frames_maximum_size_reads_and_one_byte_more_throws():
    """``KafkaLZ4BlockInputStream.readBlock``: a block of at most ``maxBlockSize`` (64 KiB for BD 0x40) is read;
    a larger one throws ``IOException("Block size %d exceeded max: %d")`` before its bytes are read."""
    stream = Lz4BlockInputStream(_lz4_stored_block(65536))
    assert stream.read(1 << 20) == bytes(range(256)) * 256 and stream.read(1) is None
    with pytest.raises(JavaException) as raised:
        Lz4BlockInputStream(_lz4_stored_block(65537)).read(1)
    assert raised.value.to_string() == "java.io.IOException: Block size 65537 exceeded max: 65536"
    assert raised.value.io


def test_an_lz4_frame_cut_in_a_block_or_before_its_checksum():
    """``readBlock``: fewer than 4 bytes for a block's size, or fewer bytes than its size, throw
    ``IOException("Stream ended prematurely")``; a block checksum the frame promises (FLG bit 4) but does not hold
    is read by ``ByteBuffer.getInt``, which throws ``BufferUnderflowException``: no ``IOException``."""
    whole = _lz4_stored_block(100)
    for cut in (whole[:9], whole[:11 + 95]):
        with pytest.raises(JavaException) as raised:
            Lz4BlockInputStream(cut).read(1)
        assert raised.value.to_string() == "java.io.IOException: Stream ended prematurely" and raised.value.io
    # FLG 0x70: block checksums promised; two bytes of the block's four
    with pytest.raises(JavaException) as raised:
        Lz4BlockInputStream(_lz4_stored_block(4, flg=0x70, tail=b"\0\0")).read(1)
    assert raised.value.kafka_class == "java.nio.BufferUnderflowException" and not raised.value.io
