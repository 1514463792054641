"""Generated segments and damaged variants, judged by Kafka's own recovery (``KafkaOracle``) against segdex.

One generator serves two drivers: Hypothesis in ``tests/kafka/test_oracle.py`` (a few hundred derandomized
cases per Kafka version) and ``scripts/differential.py`` (10,000 seeded cases, mismatches counted by class).
Both hand it a ``Draw``: integers, booleans and choices from Hypothesis's ``data.draw`` or a seeded
``random.Random``.

The damage is stated from the protocol, not from segdex's own layout code: the v2 header fields
(baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta, baseTimestamp,
maxTimestamp, producerId, producerEpoch, baseSequence, recordsCount) and the legacy message fields (offset,
size, crc, magic, attributes, timestamp) at the offsets the Kafka protocol guide gives.
"""

from __future__ import annotations

import random
import shutil
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import crc32c

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.log.log_segments import PartitionRecovery, segment_logs
from segdex.indexcore.record.records import Record
from segdex.indexcore.status import SegmentStatus
from segdex.indexcore.tools.segment_writer import build_batch, segment_name

# v2 record batch header: (name, offset, size)
V2_FIELDS = [("baseOffset", 0, 8), ("batchLength", 8, 4), ("partitionLeaderEpoch", 12, 4), ("magic", 16, 1),
             ("crc", 17, 4), ("attributes", 21, 2), ("lastOffsetDelta", 23, 4), ("baseTimestamp", 27, 8),
             ("maxTimestamp", 35, 8), ("producerId", 43, 8), ("producerEpoch", 51, 2), ("baseSequence", 53, 4),
             ("recordsCount", 57, 4)]
V2_HEADER = 61
V2_CRC_FROM = 21
# legacy message (magic 0/1): offset, size, crc, magic, attributes, then (v1) timestamp
LEGACY_FIELDS = [("offset", 0, 8), ("size", 8, 4), ("crc", 12, 4), ("magic", 16, 1), ("attributes", 17, 1),
                 ("timestamp", 18, 8)]
INT32_MAX = 2**31 - 1
CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


class Draw:
    """What the generator asks for; Hypothesis or a seeded Random answers."""

    def __init__(self, integer: Callable[[int, int], int]) -> None:
        self.integer = integer

    @classmethod
    def from_random(cls, rng: random.Random) -> Draw:
        return cls(rng.randint)

    @classmethod
    def from_hypothesis(cls, data) -> Draw:
        from hypothesis import strategies as st
        return cls(lambda lo, hi: data.draw(st.integers(lo, hi)))

    def boolean(self, p_true_in: int = 2) -> bool:
        return self.integer(1, p_true_in) == 1

    def choice(self, seq: Sequence):
        return seq[self.integer(0, len(seq) - 1)]

    def bytes(self, n: int) -> bytes:
        """``n`` bytes from one drawn seed (drawing each byte would make Hypothesis's buffer huge)."""
        return random.Random(self.integer(0, 2**32 - 1)).randbytes(n)


@dataclass
class Case:
    """One partition dir to judge: its segments' bytes, the topic config, and what was done to it."""

    segments: dict[int, bytes]  # base offset -> .log bytes
    index_interval_bytes: int
    segment_index_bytes: int
    kind: str  # e.g. "v2/clean", "v2/bitflip:attributes+crc", "v1/truncate"
    notes: list[str] = field(default_factory=list)

    def write(self, directory: Path) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        for base, data in self.segments.items():
            (directory / segment_name(base)).write_bytes(data)
        return directory


def _records(draw: Draw, n: int, ts: int, jitter: int) -> tuple[list[tuple], int]:
    recs = []
    for _ in range(n):
        ts += draw.integer(-jitter, jitter * 2) if jitter else 0
        size = draw.choice([0, 1, 10, 100, draw.integer(0, 3000)])
        key = None if draw.boolean(3) else draw.bytes(draw.integer(0, 20))
        recs.append((ts, key, draw.bytes(size)))
    return recs, ts


def v2_batches(draw: Draw, base_offset: int) -> list[bytes]:
    """Batches as producers and the broker write them: codecs, producers, transactions, control batches,
    leader epochs going up, LogAppendTime, timestamps going back and forth."""
    out: list[bytes] = []
    offset = base_offset
    ts = draw.choice([0, 1_600_000_000_000, 1_700_000_000_000 + draw.integer(0, 10**9)])
    jitter = draw.choice([0, 5, 5000])
    epoch = draw.choice([-1, 0, 0, 3])
    log_append = draw.boolean(6)
    producers = {4000 + i: {"epoch": draw.integer(0, 3), "seq": 0, "txn": False} for i in range(draw.integer(0, 3))}
    for _ in range(draw.integer(1, 14)):
        if draw.boolean(5) and epoch >= 0:
            epoch += draw.integer(1, 2)
        kind = draw.integer(0, 9)
        pids = sorted(producers)
        if pids and kind >= 6:
            pid = draw.choice(pids)
            p = producers[pid]
            if p["txn"] and kind >= 8:
                control = ("ABORT" if draw.boolean() else "COMMIT", draw.integer(0, 5))
                out.append(build_batch(offset, [], producer_id=pid, producer_epoch=p["epoch"],
                                       partition_leader_epoch=epoch, control=control,
                                       control_timestamp=ts, log_append_time=ts if log_append else None))
                p["txn"] = False
                offset += 1
                continue
            p["txn"] = p["txn"] or draw.boolean()
            n = draw.integer(1, 6)
            recs, ts = _records(draw, n, ts, jitter)
            out.append(build_batch(offset, [Record(offset + i, *r) for i, r in enumerate(recs)],
                                   compression=draw.integer(0, 4), producer_id=pid, producer_epoch=p["epoch"],
                                   base_sequence=p["seq"], partition_leader_epoch=epoch,
                                   is_transactional=p["txn"], log_append_time=ts if log_append else None))
            p["seq"] += n
            offset += n
            continue
        n = draw.integer(1, 8)
        recs, ts = _records(draw, n, ts, jitter)
        gap = draw.choice([0, 0, 0, 2])  # compacted logs have offset gaps inside batches
        out.append(build_batch(offset, [Record(offset + i * (1 + gap), *r) for i, r in enumerate(recs)],
                               compression=draw.integer(0, 4), partition_leader_epoch=epoch,
                               log_append_time=ts if log_append else None))
        offset += (n - 1) * (1 + gap) + 1
    return out


def legacy_batches(draw: Draw, magic: int, base_offset: int) -> list[bytes]:
    out: list[bytes] = []
    offset = base_offset
    ts = 1_600_000_000_000 + draw.integer(0, 10**6)
    for _ in range(draw.integer(1, 10)):
        n = draw.integer(1, 5)
        recs, ts = _records(draw, n, ts, draw.choice([0, 50]))
        codec = draw.integer(0, 3)  # legacy formats have no zstd
        out.append(build_batch(offset, [Record(offset + i, *r) for i, r in enumerate(recs)], magic=magic,
                               compression=codec))
        offset += n
    return out


def batch_spans(data: bytes) -> list[tuple[int, int]]:
    """(position, size) of each whole batch, read from the length fields only."""
    spans, pos = [], 0
    while pos + 12 <= len(data):
        size = struct.unpack_from(">i", data, pos + 8)[0] + 12
        if size < 12 or pos + size > len(data):
            break
        spans.append((pos, size))
        pos += size
    return spans


def _repair_crc(buf: bytearray, pos: int, size: int) -> None:
    if buf[pos + 16] >= 2:
        struct.pack_into(">I", buf, pos + 17, crc32c.crc32c(bytes(buf[pos + V2_CRC_FROM:pos + size])))
    else:
        import zlib
        struct.pack_into(">I", buf, pos + 12, zlib.crc32(bytes(buf[pos + 16:pos + size])) & 0xFFFFFFFF)


def damage(draw: Draw, data: bytes, magic: int) -> tuple[bytes, str]:
    """One damaged variant of a segment's bytes, and its class."""
    spans = batch_spans(data)
    buf = bytearray(data)
    how = draw.choice(["bitflip", "bitflip", "truncate", "tail", "insert", "duplicate", "swap", "length",
                       "offset", "control"])
    if how == "bitflip" and spans:
        pos, size = draw.choice(spans)
        fields = V2_FIELDS if magic >= 2 else LEGACY_FIELDS[: 6 if magic == 1 else 5]
        name, off, width = draw.choice(fields)
        bit = draw.integer(0, width * 8 - 1)
        buf[pos + off + bit // 8] ^= 1 << (bit % 8)
        repaired = draw.boolean() and name not in ("crc", "batchLength", "size")
        if repaired:
            _repair_crc(buf, pos, size)
        return bytes(buf), f"bitflip:{name}{'+crc' if repaired else ''}"
    if how == "truncate" and data:
        return data[: draw.integer(0, len(data) - 1)], "truncate"
    if how == "tail":
        n = draw.integer(1, 200)
        return data + (bytes(n) if draw.boolean() else draw.bytes(n)), "tail"
    if how in ("insert", "duplicate", "swap") and len(spans) >= 2:
        i, j = draw.integer(0, len(spans) - 1), draw.integer(0, len(spans) - 1)
        parts = [data[p:p + s] for p, s in spans] + ([data[spans[-1][0] + spans[-1][1]:]])
        if how == "duplicate":
            parts.insert(j, parts[i])
        elif how == "swap":
            parts[i], parts[j] = parts[j], parts[i]
        else:
            parts.insert(j, draw.bytes(draw.integer(1, 80)))
        return b"".join(parts), how
    if how == "length" and spans:
        pos, _ = draw.choice(spans)
        struct.pack_into(">i", buf, pos + 8, draw.choice([-1, -12, 0, 5, INT32_MAX, 2**30, 1 << 20]))
        return bytes(buf), "length"
    if how == "offset" and spans and magic >= 2:
        pos, size = draw.choice(spans)
        base = struct.unpack_from(">q", buf, pos)[0]
        struct.pack_into(">q", buf, pos, base + draw.choice([INT32_MAX, INT32_MAX + 1, 2**40]))
        _repair_crc(buf, pos, size)  # baseOffset is outside the v2 CRC anyway
        return bytes(buf), "offset"
    if how == "control" and spans and magic >= 2:
        return control_damage(draw, buf, spans)
    return bytes(buf), "none"


def control_damage(draw: Draw, buf: bytearray, spans: list[tuple[int, int]]) -> tuple[bytes, str]:
    """CRC-valid but malformed control content: the control bit on a data batch, negative key or value
    versions, an unknown control type, a control batch with zero records."""
    markers = [(p, s) for p, s in spans if struct.unpack_from(">h", buf, p + 21)[0] & 0x27 == 0x20]
    how = draw.choice(["control-bit", "key-version", "value-version", "type", "zero-records"])
    pos, size = draw.choice(markers if markers and how != "control-bit" else spans)
    attrs = struct.unpack_from(">h", buf, pos + 21)[0]
    uncompressed = attrs & 0x07 == 0
    if how == "control-bit" or not (attrs & 0x20) or not uncompressed:
        struct.pack_into(">h", buf, pos + 21, attrs | 0x20 | (0x10 if draw.boolean() else 0))
        _repair_crc(buf, pos, size)
        return bytes(buf), "control:control-bit"
    # record: length varint, attributes int8, timestampDelta varint, offsetDelta varint, keyLength varint, key
    rec = pos + V2_HEADER
    key_at = rec + 4  # single-byte varints for a control record: length, attrs, ts delta, offset delta
    key_at += 1  # key length varint (4 -> 1 byte)
    if how == "zero-records":
        struct.pack_into(">i", buf, pos + 57, 0)
    elif how == "key-version":
        struct.pack_into(">h", buf, key_at, draw.choice([-1, -32768, 1]))
    elif how == "type":
        struct.pack_into(">h", buf, key_at + 2, draw.choice([2, 3, -1, 100]))
    else:
        value_at = key_at + 4 + 1  # after the key and the value-length varint
        struct.pack_into(">h", buf, value_at, draw.choice([-1, -32768, 1]))
    _repair_crc(buf, pos, size)
    return bytes(buf), f"control:{how}"


def generate(draw: Draw) -> Case:
    """A partition of one to three segments, possibly damaged."""
    magic = draw.choice([2, 2, 2, 2, 1, 0])
    base = draw.choice([0, 0, 1000, 2**31 + 5, 2**40])
    interval = draw.choice([0, 1, 100, 4096, draw.integer(0, 20000)])
    index_bytes = draw.choice([10 * 1024 * 1024, 10 * 1024 * 1024, 4096, draw.integer(1, 40) * 12])
    segments: dict[int, bytes] = {}
    offset = base
    for _ in range(draw.choice([1, 1, 1, 2, 3]) if magic == 2 else 1):
        batches = v2_batches(draw, offset) if magic == 2 else legacy_batches(draw, magic, offset)
        data = b"".join(batches)
        segments[offset] = data
        spans = batch_spans(data)
        last = spans[-1][0] if spans else None
        offset = _next_offset(data, last, magic) if last is not None else offset + 1
    kind = f"v{magic}/clean"
    if draw.boolean():
        target = draw.choice(sorted(segments))
        segments[target], how = damage(draw, segments[target], magic)
        kind = f"v{magic}/{how}"
    return Case(segments, interval, index_bytes, kind)


def _next_offset(data: bytes, last_pos: int, magic: int) -> int:
    if magic >= 2:
        base = struct.unpack_from(">q", data, last_pos)[0]
        return base + struct.unpack_from(">i", data, last_pos + 23)[0] + 1
    return struct.unpack_from(">q", data, last_pos)[0] + 1


@dataclass
class Verdict:
    mismatches: list[str]
    kafka: dict


def judge(case: Case, oracle, work: Path, native: bool | None = None) -> Verdict:
    """Recover ``case`` with Kafka (``oracle``) and with segdex; list every difference."""
    if work.exists():
        shutil.rmtree(work)
    kafka_dir = case.write(work / "kafka" / "topic-0")
    segdex_dir = case.write(work / "segdex" / "topic-0")
    kafka = oracle.recover(kafka_dir, case.index_interval_bytes, case.segment_index_bytes)
    config = LogConfig(index_interval_bytes=case.index_interval_bytes,
                       segment_index_bytes=case.segment_index_bytes)
    logs, _ = segment_logs(segdex_dir)
    ours = {s.base_offset: s for s in PartitionRecovery(config).recover_all(logs, native=native)}
    mismatches = []
    for seg in kafka["segments"]:
        base = seg["baseOffset"]
        mine = ours[base]
        kafka_failed = seg["truncated"] > 0 or seg["exception"] is not None
        segdex_failed = mine.status is not SegmentStatus.OK
        if kafka_failed != segdex_failed:
            mismatches.append(f"status: Kafka {'truncated/threw' if kafka_failed else 'clean'} "
                              f"({seg['exception'] or seg['truncated']}), segdex {mine.status} "
                              f"({mine.reason.cause if mine.reason else ''})")
            continue
        if seg["exception"] is not None:
            continue  # Kafka's load fails: no index files to compare
        if mine.result.valid_bytes != seg["validBytes"]:
            mismatches.append(f"valid bytes {base}: Kafka {seg['validBytes']}, segdex {mine.result.valid_bytes}")
        for suffix, data in mine.files.items():
            theirs = kafka_dir / (segment_name(base)[:-4] + suffix)
            expected = theirs.read_bytes() if theirs.exists() else None
            if data != expected:
                mismatches.append(f"{suffix} {base}: Kafka {None if expected is None else len(expected)} bytes, "
                                  f"segdex {None if data is None else len(data)} bytes, differ")
    return Verdict(mismatches, kafka)
