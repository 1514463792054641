"""The codecs of batch payloads: xerial snappy framing."""

from __future__ import annotations

import gzip
import struct
import zlib

import cramjam
import pytest

from segdex.indexcore.errors import JavaException, KafkaReadException
from segdex.indexcore.record.compression import wrap_for_input
from tests.support.kafka_bytes import decompress

XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)


def _xerial(*blocks: bytes) -> bytes:
    """SnappyOutputStream's framing: the header, then [int32 length][raw snappy block] per block."""
    out = XERIAL_HEADER
    for b in blocks:
        raw = bytes(cramjam.snappy.compress_raw(b))
        out += struct.pack(">i", len(raw)) + raw
    return out


def test_every_xerial_block_is_kept():
    """``SnappyInputStream`` delivers every block of the xerial framing, in order, then ends."""
    parts = [b"first block " * 20, b"second " * 30, b"third"]
    assert _drain(2, _xerial(*parts)) == (b"".join(parts), None)


def test_snappy_is_snappy_javas_for_every_batch_kafka_wrote():
    """The ``_snappy`` kernel in SnappyOutputStream's framing gives back the very payload of each snappy batch of
    Kafka's fixture (written through snappy-java): decompressed, then compressed again, byte for byte."""
    from segdex.indexcore.record.compression import snappy_java_raw, xerial_snappy
    from segdex.indexcore.record.file_records import batches
    from tests.support.fixtures import FIXTURES

    raw = snappy_java_raw()
    assert raw is not None  # built by setup.py
    log = (FIXTURES / "v2_snappy" / "broker" / "00000000000000000000.log").read_bytes()
    n = 0
    for batch in batches(log):
        payload = log[batch.position + 61:batch.position + batch.size_in_bytes]
        assert xerial_snappy(decompress(2, payload), raw) == payload, batch.base_offset
        n += 1
    assert n >= 100
    # cramjam's snappy (snappy 1.1.8's hash) is not snappy-java's: what made the kernel necessary
    assert any(xerial_snappy(decompress(2, log[b.position + 61:b.position + b.size_in_bytes]),
                             lambda d: bytes(cramjam.snappy.compress_raw(d)))
               != log[b.position + 61:b.position + b.size_in_bytes] for b in batches(log))


def test_snappy_output_stream_blocks_are_32_kib():
    from segdex.indexcore.record.compression import XERIAL_BLOCK_SIZE, xerial_snappy

    data = bytes(range(256)) * 300  # 76,800 bytes: blocks of 32 KiB, 32 KiB and 11,264 bytes
    out = xerial_snappy(data)
    assert out[:16] == XERIAL_HEADER and decompress(2, out) == data
    pos, sizes = 16, []
    while pos < len(out):
        (length,) = struct.unpack_from(">i", out, pos)
        sizes.append(len(cramjam.snappy.decompress_raw(out[pos + 4:pos + 4 + length])))
        pos += 4 + length
    assert sizes == [XERIAL_BLOCK_SIZE, XERIAL_BLOCK_SIZE, 76_800 - 2 * XERIAL_BLOCK_SIZE]
    assert xerial_snappy(b"") == XERIAL_HEADER  # an empty stream: the header alone


def test_a_snappy_payload_without_xerial_framing_is_one_raw_block():
    """snappy-java's ``SnappyInputStream`` reads a stream that does not start with the xerial magic as one raw
    snappy block (``Snappy.compress``'s output), as some old clients wrote it."""
    data = b"kafka " * 500
    assert _drain(2, bytes(cramjam.snappy.compress_raw(data))) == (data, None)


def test_xerial_framing_falls_back_to_cramjam_where_the_kernel_is_not_built(monkeypatch):
    """Without the ``_snappy`` kernel, cramjam's raw snappy compresses each block: other bytes than snappy-java's
    for some inputs, the same data once decompressed, in the same framing."""
    from segdex.indexcore.record import compression

    monkeypatch.setattr(compression, "snappy_java_raw", lambda: None)
    data = bytes(range(256)) * 200
    out = compression.xerial_snappy(data)
    assert out[:16] == XERIAL_HEADER and decompress(2, out) == data
    assert out == compression.xerial_snappy(data, lambda b: bytes(cramjam.snappy.compress_raw(b)))


# --- wrap_for_input: a compressed payload as Kafka's decompressing stream delivers it -------------------------------
# (every codec's stream against Kafka's own: test_decompressing_streams.py)

_RECORDS = bytes(range(256)) * 40  # 10,240 bytes that gzip does not shrink to nothing


def _drain(codec: int, data: bytes) -> tuple[bytes, JavaException | None]:
    """Every byte the stream delivers, read a byte at a time, and the failure that ended it (None: its end)."""
    stream, out = wrap_for_input(codec, data), bytearray()
    try:
        while (b := stream.read()) >= 0:
            out.append(b)
    except JavaException as e:
        return bytes(out), e
    return bytes(out), None


def test_a_whole_gzip_stream_delivers_every_byte_and_ends():
    assert _drain(1, gzip.compress(_RECORDS, mtime=0)) == (_RECORDS, None)


def test_a_gzip_stream_cut_short_delivers_what_its_inflater_made_then_fails():
    """Cut inside the deflate data: the bytes made so far, then "Unexpected end of ZLIB input stream"; only the
    trailer cut: every byte, then the trailer's read meets the end."""
    whole = gzip.compress(_RECORDS, mtime=0)
    made = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(whole[:len(whole) // 2])
    data, failure = _drain(1, whole[:len(whole) // 2])
    assert data == made and 0 < len(made) < len(_RECORDS)
    assert failure.to_string() == "java.io.EOFException: Unexpected end of ZLIB input stream" and failure.io
    data, failure = _drain(1, whole[:-3])
    assert data == _RECORDS and failure.to_string() == "java.io.EOFException"


def test_a_gzip_trailer_that_does_not_match_fails_after_every_byte():
    whole = bytearray(gzip.compress(_RECORDS, mtime=0))
    whole[-8] ^= 0xFF  # the trailer's CRC-32
    data, failure = _drain(1, bytes(whole))
    assert data == _RECORDS and failure.to_string() == "java.util.zip.ZipException: Corrupt GZIP trailer"


@pytest.mark.parametrize(("data", "opening"), [
    (b"\x1f", "java.io.EOFException"),  # the magic cut
    (b"\x1e\x8b", "java.util.zip.ZipException: Not in GZIP format"),
    (b"\x1f\x8b", "java.io.EOFException"),  # the method cut
    (b"\x1f\x8b\x07", "java.util.zip.ZipException: Unsupported compression method"),
    (b"\x1f\x8b\x08", "java.io.EOFException"),
    (b"\x1f\x8b\x08\x00" + bytes(5), "java.io.EOFException"),  # 9 bytes: the header's last byte cut
])
def test_a_gzip_header_kafka_refuses_fails_the_opening(data: bytes, opening: str):
    """``GZIPInputStream.readHeader`` in the stream's constructor: the magic, then the method; a header cut short is
    an ``EOFException``. ``wrapForInput`` wraps it in a ``KafkaException`` whose text is its ``toString``."""
    with pytest.raises(KafkaReadException) as e:
        wrap_for_input(1, data)
    assert str(e.value) == opening


def test_a_ten_byte_gzip_header_opens_and_its_first_read_fails():
    assert _drain(1, gzip.compress(b"", mtime=0)[:10])[1].to_string() == (
        "java.io.EOFException: Unexpected end of ZLIB input stream")


def test_a_zstd_stream_ends_after_its_frame_and_refuses_what_is_not_one():
    assert _drain(4, cramjam.zstd.compress(b"abc").read()) == (b"abc", None)
    data, failure = _drain(4, b"not zstd")
    assert data == b"" and failure.to_string() == "com.github.luben.zstd.ZstdIOException: Unknown frame descriptor"
