"""Cleaning rounds judged against Kafka's own cleaner: one generated compacted partition (``compacted_partition``)
with drawn topic configs, clock, offset map size, checkpoint and high watermark, cleaned for two rounds by segdex
(``Cleaner``) and by Kafka 4.x (``KafkaOracle cleanable``: ``LogCleanerManager.cleanableOffsets``,
``LogToClean`` and ``Cleaner.doClean``) at the same clock, the second round from the first's end offset.

What is compared, round by round: the cleaner's view (first dirty and uncleanable offsets, the checkpoint's
forced update, the compaction delay, clean and cleanable bytes, the ratio), the last stable offset, the round's
end offset, and every file of every cleaned segment (``.log``, ``.index``, ``.timeindex``, ``.txnindex``) byte
for byte with the ``.log``'s modification time; replaced segments gone on both sides. segdex's round is the
applied one (``clean_partition``'s writer): each group streamed into its ``.cleaned`` files and swapped into
segdex's copy before the next, the files compared as they lie there.

Damaged cases (``damage``): the partition is first started and stopped cleanly by Kafka (its indexes and producer
snapshots written), then one batch below the log end (not a segment's first, not in the active segment) is damaged
in both copies: a flipped CRC byte, a bad magic byte, a bad size field (below 14, or past the segment's end), the
segment cut short inside it, or (when asked for) a compression id Kafka does not know. Both then load as after a
clean shutdown with the recovery point at the log end, so that the cleaner meets the batch as it is: Kafka's round
throws (the same exception from segdex, and segdex's copy left as it was) or carries it through (the same bytes).

Shared by ``tests/indexcore/log/test_cleaner.py`` (50 cases in the suite) and ``scripts/differential.py
--cleaner`` (thousands). ``RecordingOracle`` keeps Kafka's answers (each call, its answer, the digests of the files
its round left; for a damaged case's start, the files Kafka's load wrote); ``RecordedOracle`` gives them back in the
test process, where segdex's files are compared by digest (``tests/kafka/golden/cleaner_rounds.json``: the mutation
run cannot fork a JVM)."""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import os
import random
import re
import shutil
import struct
from dataclasses import dataclass, field, replace
from pathlib import Path

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.fs.atomic_file import is_temporary
from segdex.indexcore.log.cleaner import Cleaner, CleaningRound, LogCleaningException
from segdex.indexcore.log.log_cleaner import SwapWriter, load_for_cleaning
from segdex.indexcore.log.log_cleaner_manager import cleaning_view, last_stable_offset
from segdex.indexcore.log.skimpy_offset_map import SkimpyOffsetMap
from segdex.indexcore.record.compression import KNOWN_CODECS, compress
from segdex.indexcore.record.file_records import batches
from segdex.indexcore.record.record_batch import LOG_OVERHEAD
from segdex.indexcore.record.records import LegacyRecord, records
from segdex.indexcore.tools.segment_writer import build_batch, legacy_message, segment_name
from tests.support.compacted_partitions import HOUR_MS, compacted_partition
from tests.support.fixtures import GOLDEN
from tests.support.kafka_bytes import decompress
from tests.support.kafka_harness import KafkaOracle

T0 = 1_700_000_000_000
DAY_MS = 24 * HOUR_MS
CODECS = (0, 0, 1, 2, 3, 4)  # none twice as often, gzip, snappy, lz4, zstd


@dataclass
class CleanerVerdict:
    """One case's outcome: its mismatches (empty when Kafka and segdex agree) and what it covered."""

    kind: str = ""
    mismatches: list[str] = field(default_factory=list)
    rounds: int = 0
    rebuilt: int = 0
    full: int = 0  # rounds that stopped before the first uncleanable offset (the offset map filled)
    txn_files: int = 0
    grouped: int = 0
    emptied: int = 0
    recompressed: dict[int, int] = field(default_factory=dict)
    kafka_threw: str | None = None  # the exception both Kafka's round and segdex's ended with
    threw: dict[str, int] = field(default_factory=dict)  # over cases added: those exceptions, by their text's kind

    def count(self, round_: CleaningRound, first_uncleanable_offset: int, part: Path) -> None:
        """What one round covered (its segments written in ``part``)."""
        self.rounds += bool(round_.segments)
        self.rebuilt += round_.stats.batches_rebuilt
        self.full += round_.end_offset < first_uncleanable_offset
        self.txn_files += sum((part / (segment_name(c.base_offset)[:-4] + ".txnindex")).exists()
                              for c in round_.segments)
        self.grouped += sum(len(c.replaces) > 1 for c in round_.segments)
        self.emptied += round_.stats.empty_batches
        self.add_recompressed(round_.stats.compressed_rebuilt)

    def add(self, other: CleanerVerdict) -> None:
        """Another case's coverage added to this one's."""
        for name in ("rounds", "rebuilt", "full", "txn_files", "grouped", "emptied"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.add_recompressed(other.recompressed)
        for kind, n in ({_kind(other.kafka_threw): 1} if other.kafka_threw else other.threw).items():
            self.threw[kind] = self.threw.get(kind, 0) + n

    def add_recompressed(self, by_codec: dict[int, int]) -> None:
        for codec, n in by_codec.items():
            self.recompressed[codec] = self.recompressed.get(codec, 0) + n


def _kind(exception: str) -> str:
    """An exception's text without its numbers: its kind."""
    return re.sub(r"-?\d+", "N", exception)


def judge_cleaning(rng: random.Random, oracle: KafkaOracle, work: Path, codecs: tuple[int, ...] = CODECS,
                   wide: bool = False, tight: bool = False, magic: int = 2, damage: bool = False,
                   buffers: bool = False, damages: tuple[str, ...] | None = None,
                   wrapper: bool = False) -> CleanerVerdict:
    """Draw a case from ``rng``, clean it twice both ways under ``work`` (emptied first), compare.

    ``wide`` draws more of the configs too: ``min.compaction.lag.ms`` and small ``segment.index.bytes``
    (the cleaner's grouping by index size). ``tight`` (with ``wide``) sets ``segment.index.bytes`` at the edge of
    a merge: two neighbours' indexes just fit it, so the merged segment's can outgrow it and Kafka's round throw
    (``Cleaner``'s module docs). ``magic`` 0 or 1: a log of a message format before 0.11. ``damage``: one batch
    damaged below the recovery point of a clean start (the module's docs), in one of the ``damages``
    ways (``damage_batch``; default ``DAMAGES``). ``buffers`` draws the cleaner's read
    buffer too: where it starts (``log.cleaner.io.buffer.size``'s share), the broker's ``message.max.bytes`` and
    the topic's ``max.message.bytes``, which decide how it grows (``cleaner.IoBuffers``): the buffers a round
    appends at once, and what a damaged batch throws. ``wrapper`` (``magic`` 0 or 1): one compressed wrapper's
    inner messages flawed before the start (``malform_wrapper``)."""
    ours, theirs, config, now, dedupe = draw_case(rng, work, codecs, wide, tight, magic)
    config, io_buffers = _draw_buffers(rng, config) if buffers else (config, (262_144, 1_048_588))
    kind = _case_kind(rng, ours, theirs, magic, tight, wide, wrapper)
    kafka_config = {"cleanup.policy": "compact", "index.interval.bytes": config.index_interval_bytes,
                    "internal.segment.bytes": config.segment_bytes, "delete.retention.ms": config.delete_retention_ms,
                    "min.compaction.lag.ms": config.min_compaction_lag_ms,
                    "segment.index.bytes": config.segment_index_bytes, "max.message.bytes": config.max_message_bytes}
    kind, recovery_point = _started_and_damaged(rng, oracle, ours, theirs, now, kafka_config, kind, damage,
                                                damages or DAMAGES)
    verdict = CleanerVerdict(kind=f"{kind}/map of {dedupe // 24} keys{' (buffers drawn)' if buffers else ''}")
    checkpoint = None
    for second in (False, True):
        if second:
            now += rng.choice([0, config.delete_retention_ms + 1])
        where = f"round {int(second) + 1}"
        try:
            loaded = load_for_cleaning(str(ours), config, now, clean_shutdown=damage, recovery_point=recovery_point)
        except LogCleaningException as e:  # the load throws: Kafka's must too
            answer = oracle.cleanable(theirs, now, config=kafka_config, recovery_point=recovery_point or 0,
                                      clean=damage)
            if "exception" not in answer:
                verdict.mismatches.append(f"{where}: segdex's load failed ({e}), Kafka's did not")
            else:
                verdict.kafka_threw = f"the load: {answer['exception']}"
            return verdict
        segs, start, leo = loaded.segments, loaded.log_start_offset, loaded.log_end_offset
        unstable = loaded.first_unstable_offset
        if not second:
            checkpoint = rng.choice([None, None, rng.randint(start, leo)])
        # the high watermark: the log end, or a segment boundary (the batch ending there stays, 4.4)
        hw = leo if len(segs) < 3 or rng.random() < 0.6 else rng.choice(segs[1:-1]).base_offset
        view = cleaning_view(loaded.facts, start, leo, last_stable_offset(unstable, hw), checkpoint, now, config)
        answer = oracle.cleanable(theirs, now, start, hw, checkpoint,
                                  dedupe if view.log.cleanable_bytes else 0, config=kafka_config,
                                  recovery_point=recovery_point or 0, clean=damage, io_buffers=io_buffers)
        differ = _view_differs(view, last_stable_offset(unstable, hw), leo, answer)
        if differ:
            verdict.mismatches.append(f"{where}: {differ}")
            return verdict
        if not view.log.cleanable_bytes:  # Kafka's cleaner never takes it (and its doClean would throw)
            continue
        before = {f.name: f.read_bytes() for f in ours.glob("*.log")}
        cleaner = Cleaner(SkimpyOffsetMap(dedupe), io_buffer_size=io_buffers[0], max_io_buffer_size=io_buffers[1])
        round_, failed = _round(functools.partial(cleaner.clean, segs, view.log, start, hw,
                                                  loaded.active_producers(), config, now,
                                                  SwapWriter(str(ours), None, None)), answer, verdict, ours, theirs)
        if failed is not None:
            if failed:
                verdict.mismatches.append(f"{where}: {failed}")
            return verdict
        if round_.end_offset != answer["endOffset"]:
            verdict.mismatches.append(f"{where}: end offset {round_.end_offset} != Kafka's {answer['endOffset']}")
            return verdict
        compared = oracle.compare(round_, ours) if isinstance(oracle, RecordedOracle) else _compare(round_, theirs,
                                                                                                   ours)
        verdict.mismatches += [f"{where}: {m}" for m in compared + _counts_differ(round_, before, ours)]
        if verdict.mismatches:
            return verdict
        checkpoint = round_.end_offset
        verdict.count(round_, view.log.first_uncleanable_offset, ours)
    return verdict


DAMAGES = ("crc", "magic", "size", "cut")
DRAWN_DAMAGES = (*DAMAGES, "codec", "short", "inner")  # the differentials' damaged cases


def _started_and_damaged(rng: random.Random, oracle: KafkaOracle, ours: Path, theirs: Path, now: int,
                         kafka_config: dict, kind: str, damage: bool,
                         damages: tuple[str, ...] = ()) -> tuple[str, int | None]:
    """With ``damage``: Kafka's start and clean stop of ``theirs`` (its indexes and producer snapshots written),
    copied to ``ours``, then one batch damaged in both. (The case's kind, the recovery point: the log end; None
    without ``damage``.) A load that fails leaves the partition undamaged: the rounds' views then differ."""
    if not damage:
        return kind, None
    started = oracle.load(theirs, now, config=kafka_config)
    if "exception" in started:
        return f"damaged {kind} not loaded", 0
    shutil.rmtree(ours)
    shutil.copytree(theirs, ours)
    return f"damaged {kind} {damage_batch(rng, ours, theirs, kinds=damages)}", started["logEndOffset"]


def damage_batch(rng: random.Random, *parts: Path, kinds: tuple[str, ...] = ()) -> str:
    """One batch of a segment before the active one, not the segment's first, damaged alike in each of ``parts``
    (copies of one partition), in one of the ``kinds`` (default ``DAMAGES``): a CRC byte flipped, the magic byte
    set outside 0..2, the size field below 14 or past the segment's end, the segment cut inside the batch, or
    (drawn only when asked for) the attributes' compression id set to one Kafka does not know (``codec``), the
    size field set to 14-48, inside the batch, below a v2 header's 61 bytes (``short``), or past the v2 header but
    short of its records (``inner``: a v2 batch, its compressed payload then cut short; another's size is set past
    the segment's end).
    Returns the damage's kind ("none": no segment has a second batch)."""
    logs = sorted(parts[0].glob("*.log"))[:-1]
    found = [(log, b) for log in logs for b in list(batches(log.read_bytes()))[1:]]
    if not found:
        return "none"
    log, batch = rng.choice(found)
    kind = rng.choice(kinds or DAMAGES)
    data = bytearray(log.read_bytes())
    p, size = batch.position, batch.size_in_bytes
    if kind == "crc":  # v2: the CRC field; v0/v1: the message's CRC
        data[p + (17 if batch.magic >= 2 else 12) + rng.randrange(4)] ^= 1 << rng.randrange(8)
    elif kind == "magic":
        data[p + 16] = rng.choice([3, 7, 127, 0x80, 0xFF])
    elif kind == "codec":  # the attributes' compression bits set to an id Kafka does not know (5..7)
        at = p + (22 if batch.magic >= 2 else 17)
        data[at] = (data[at] & ~0x07) | rng.choice([5, 6, 7])
    elif kind == "short":  # a size field within the batch, below its own header or fields
        data[p + 8:p + 12] = struct.pack(">i", rng.choice([14, 20, 33, 48]))
    elif kind == "inner" and batch.magic >= 2 and size > 62:  # past the v2 header, short of the batch's records
        data[p + 8:p + 12] = struct.pack(">i", rng.randint(62, size - 1) - LOG_OVERHEAD)
    elif kind == "inner":  # no v2 batch drawn: its size past the segment's end instead
        data[p + 8:p + 12] = struct.pack(">i", len(data) - p + rng.randint(1, 100))
    elif kind == "size":
        left = len(data) - p - 12
        data[p + 8:p + 12] = struct.pack(">i", rng.choice([0, 5, 13, -1, left + rng.randint(1, 100), 2_000_000]))
    else:
        data = data[:p + rng.choice([rng.randint(1, 16), rng.randint(17, size - 1)])]
    kept = log.stat()  # the damaged file keeps its modification time (a recorded case's replay sees the same)
    for part in parts:
        (part / log.name).write_bytes(bytes(data))
        os.utime(part / log.name, ns=(kept.st_atime_ns, kept.st_mtime_ns))
    return kind


WRAPPER_FLAWS = ("cut", "tail", "tiny", "null", "empty", "nested")


def malform_wrapper(rng: random.Random, *parts: Path) -> str:
    """One compressed v0/v1 wrapper of a segment rewritten alike in each of ``parts`` (copies of one partition,
    before any start), its message's CRC right, its inner message set flawed in one of the ``WRAPPER_FLAWS``: the
    last inner message cut short, bytes after the last one too few for a header, a header after the last one whose
    size is below 14, a null value, a value holding no message, or an inner message compressed itself. Kafka's
    recovery checks a wrapper's own CRC only, so the log loads; its cleaner opens the wrapper. Returns the flaw
    ("none": no compressed wrapper)."""
    found = [(log, b) for log in sorted(parts[0].glob("*.log")) for b in batches(log.read_bytes())
             if b.magic < 2 and b.compression_type]
    if not found:
        return "none"
    log, batch = rng.choice(found)
    flaw = rng.choice(WRAPPER_FLAWS)
    data = log.read_bytes()
    outer = LegacyRecord.read(data, batch.position, batch.position + batch.size_in_bytes)
    codec = outer.attributes & 0x07
    inner = decompress(codec, outer.value)
    spans = [(pos, LOG_OVERHEAD + struct.unpack_from(">i", inner, pos + 8)[0]) for pos in _inner_starts(inner)]
    last_at, last_size = spans[-1]
    value: bytes | None = None
    if flaw == "cut":
        value = compress(codec, inner[:last_at + rng.randint(LOG_OVERHEAD, last_size - 1)])
    elif flaw == "tail":
        value = compress(codec, inner + bytes(rng.randint(1, LOG_OVERHEAD - 1)))
    elif flaw == "tiny":
        value = compress(codec, inner + struct.pack(">qi", 0, rng.choice([0, 5, 13])) + bytes(13))
    elif flaw == "empty":
        value = compress(codec, b"")
    elif flaw == "nested":
        at, size = rng.choice(spans)
        one = inner[at:at + size]
        nested = legacy_message(struct.unpack_from(">q", one)[0], None, compress(codec, one), magic=outer.magic,
                                attributes=codec)
        value = compress(codec, inner[:at] + nested + inner[at + size:])
    rewritten = legacy_message(outer.offset, outer.key, value, magic=outer.magic, attributes=outer.attributes,
                               timestamp=outer.timestamp)
    data = data[:batch.position] + rewritten + data[batch.position + batch.size_in_bytes:]
    kept = log.stat()
    for part in parts:
        (part / log.name).write_bytes(data)
        os.utime(part / log.name, ns=(kept.st_atime_ns, kept.st_mtime_ns))
    return flaw


def _inner_starts(inner: bytes) -> list[int]:
    starts, pos = [], 0
    while pos < len(inner):
        starts.append(pos)
        pos += LOG_OVERHEAD + struct.unpack_from(">i", inner, pos + 8)[0]
    return starts


def _listing(part: Path) -> dict[str, tuple[int, int]]:
    return {f.name: (f.stat().st_size, f.stat().st_mtime_ns) for f in part.iterdir()}


def _view_differs(view, lso: int, leo: int, answer: dict) -> str | None:
    """How the cleaner's view differs from Kafka's answer (None: it does not)."""
    if "exception" in answer or "unsupported" in answer:
        return f"Kafka answered {answer}"
    mine = {"lastStableOffset": lso, "logEndOffset": leo,
            "firstDirtyOffset": view.offsets.first_dirty_offset,
            "firstUncleanableDirtyOffset": view.offsets.first_uncleanable_dirty_offset,
            "forceUpdateCheckpoint": view.offsets.force_update_checkpoint,
            "maxCompactionDelay": view.max_compaction_delay,
            "firstUncleanableOffset": view.log.first_uncleanable_offset, "cleanBytes": view.log.clean_bytes,
            "cleanableBytes": view.log.cleanable_bytes, "totalBytes": view.log.total_bytes}
    differ = {k: (v, answer[k]) for k, v in mine.items() if answer[k] != v}
    return f"the view differs (ours, Kafka's): {differ}" if differ else None


def _round(clean, answer: dict, verdict: CleanerVerdict, ours: Path,
           theirs: Path) -> tuple[CleaningRound | None, str | None]:
    """segdex's round (``clean()``) against Kafka's answer: (the round, None) when both cleaned; (None, "") when
    both threw the same (``verdict.kafka_threw`` then says what; a path in it is Kafka's copy's, ``theirs``, where
    segdex's names ``ours``); (None, why) when they differ. A damaged batch segdex's round throws on leaves its
    copy as it was."""
    before = _listing(ours)
    try:
        round_ = clean()
    except LogCleaningException as e:
        if e.kafka_exception != answer.get("cleanException", "").replace(str(theirs), str(ours)):
            return None, f"segdex's round failed ({e}), Kafka's {answer.get('cleanException', 'did not')}"
        if e.path is not None and _listing(ours) != before:
            return None, f"segdex's round threw on a damaged batch ({e.kafka_exception}) but changed its copy"
        left = sorted(name for name in _listing(ours) if is_temporary(name) or name.endswith((".cleaned", ".swap")))
        if left:
            return None, f"segdex's round threw ({e.kafka_exception}) and left {left}"
        verdict.kafka_threw = e.kafka_exception
        return None, ""
    except Exception as e:  # noqa: BLE001 - a differential run reports every failure and goes on
        return None, f"segdex raised {type(e).__name__}: {e}"
    if "cleanException" in answer:
        return None, f"Kafka's round threw {answer['cleanException']}, segdex's did not"
    return round_, None


def _case_kind(rng: random.Random, ours: Path, theirs: Path, magic: int, tight: bool, wide: bool,
               wrapper: bool) -> str:
    """The case's class; with ``wrapper``, after flawing a wrapper of both copies (its flaw in the class)."""
    kind = f"v{magic}" if magic < 2 else "tight" if tight else "wide" if wide else "base"
    return f"{kind} wrapper {malform_wrapper(rng, ours, theirs)}" if wrapper else kind


def draw_case(rng: random.Random, work: Path, codecs: tuple[int, ...], wide: bool, tight: bool = False,
          magic: int = 2) -> tuple[Path, Path, LogConfig, int, int]:
    """The case's two copies of one partition, its topic config, clock and offset map size."""
    shutil.rmtree(work, ignore_errors=True)
    # tight: few keys overwritten (cleaning keeps most entries), half of them with time indexes of few entries (the
    # offset index the first to fill)
    data, last_ts = compacted_partition(rng, T0, codecs=codecs, keys_at_least=5000 if tight else 0,
                                        still_clock=tight and rng.random() < 0.5, magic=magic)
    ours, theirs = work / "ours" / "c-0", work / "theirs" / "c-0"
    ours.mkdir(parents=True)
    for n, (base, seg) in enumerate(sorted(data.items())):
        (ours / segment_name(base)).write_bytes(seg)
        os.utime(ours / segment_name(base), ns=(T0 * 10**6, (T0 + n * HOUR_MS) * 10**6))
    shutil.copytree(ours, theirs)
    segment_bytes = rng.choice([1 << 20, 1500, 600])
    config = LogConfig(cleanup_policy="compact", index_interval_bytes=rng.choice([1, 100, 4096]),
                       segment_bytes=segment_bytes, delete_retention_ms=rng.choice([0, HOUR_MS, DAY_MS]))
    if wide:
        config = replace(config, min_compaction_lag_ms=rng.choice([0, 0, HOUR_MS, DAY_MS]))
        if rng.random() < 0.5:  # indexes just big enough for the segments as written (a broker rolls when full)
            segs = load_for_cleaning(str(ours), config, last_ts).segments
            need = max(max(len(s.offset_index) * 8, s.time_index_entries * 12) for s in segs)
            config = replace(config, segment_index_bytes=need + rng.choice([24, 48, 240]))
        if tight:  # indexes of some entries, segments merged, a map that holds every key: the round gets there
            config = replace(config, segment_bytes=1 << 20, min_compaction_lag_ms=0,
                             index_interval_bytes=rng.choice([1, 100]))
            config = replace(config, segment_index_bytes=_merge_edge(rng, ours, config))
    now = last_ts + rng.choice([0, HOUR_MS, 2 * DAY_MS])
    dedupe = 24 * (10_000 if tight else rng.choice([3, 12, 10_000]))
    return ours, theirs, config, now, dedupe


def _draw_buffers(rng: random.Random, config: LogConfig) -> tuple[LogConfig, tuple[int, int]]:
    """The topic's ``max.message.bytes`` in ``config``; the cleaner's read buffer at its start and the broker's
    ``message.max.bytes``."""
    config = replace(config, max_message_bytes=rng.choice([1_048_588, 600, 5000, 3_000_000]))
    return config, (rng.choice([262_144, 64, 1000, 4096]), rng.choice([1_048_588, 600, 2_500_000]))


def _merge_edge(rng: random.Random, part: Path, config: LogConfig) -> int:
    """A ``segment.index.bytes`` that the indexes of the log's first few segments (as a broker loads them) just fit
    together, a few bytes to spare at most, so that the cleaner's first group is those segments; every segment's
    own index fits too, as its recovery fills it."""
    segs = load_for_cleaning(str(part), replace(config, segment_index_bytes=10 * 1024 * 1024), T0).segments
    sizes = [(len(s.offset_index) * 8, s.time_index_entries * 12) for s in segs]
    # TimeIndex.maybeAppend checks fullness at every call, appending or not: two slots beyond the entries
    own = max(max(o, t + 24) for o, t in sizes)
    firsts = [max(sum(o for o, _ in sizes[:k]), sum(t for _, t in sizes[:k])) for k in range(2, len(sizes))]
    return max(own, rng.choice(firsts or [own])) + rng.choice([0, 0, 4, 8, 12])


def apply_round(part: Path, round_: CleaningRound) -> None:
    """A round cleaned in memory (``Cleaner(keep_files=True)``, no writer) into our copy, as Kafka's swap leaves
    it (the replaced segments' files and snapshots gone)."""
    for cleaned in round_.segments:
        for base in cleaned.replaces:
            for suffix in (".log", ".index", ".timeindex", ".txnindex", ".snapshot"):
                (part / (segment_name(base)[:-4] + suffix)).unlink(missing_ok=True)
        stem = part / segment_name(cleaned.base_offset)[:-4]
        files = {".log": cleaned.log, ".index": cleaned.offset_index, ".timeindex": cleaned.time_index,
                 ".txnindex": cleaned.txn_index}
        for suffix, data in files.items():
            if data is not None:
                Path(f"{stem}{suffix}").write_bytes(data)
                if suffix != ".txnindex":
                    os.utime(f"{stem}{suffix}", ns=(cleaned.mtime_ms * 10**6, cleaned.mtime_ms * 10**6))


def _compare(round_: CleaningRound, theirs: Path, ours: Path) -> list[str]:
    """Every cleaned segment's files, as segdex's round left them in ``ours``, against the ones Kafka's round
    left."""
    out = []
    for cleaned in round_.segments:
        name = segment_name(cleaned.base_offset)[:-4]
        for suffix in (".log", ".index", ".timeindex", ".txnindex"):
            mine, path = ours / f"{name}{suffix}", theirs / f"{name}{suffix}"
            mine_bytes = mine.read_bytes() if mine.exists() else None
            kafkas = path.read_bytes() if path.exists() else None
            if mine_bytes != kafkas:
                out.append(f"segment {cleaned.base_offset}{suffix}: {_first_difference(mine_bytes, kafkas)}")
        log, mine = theirs / f"{name}.log", ours / f"{name}.log"
        if log.exists() and mine.stat().st_mtime_ns // 1_000_000 != log.stat().st_mtime_ns // 1_000_000:
            out.append(f"segment {cleaned.base_offset}: mtime {mine.stat().st_mtime_ns // 1_000_000} != Kafka's "
                       f"{log.stat().st_mtime_ns // 1_000_000}")
        out += [f"segment {gone} left by Kafka's swap" for gone in cleaned.replaces[1:]
                if (theirs / segment_name(gone)).exists()]
        out += [f"segment {gone} left by segdex's swap" for gone in cleaned.replaces[1:]
                if (ours / segment_name(gone)).exists()]
    return out


def _tally(logs: list[bytes]) -> dict[str, int]:
    """What the round's counts count of these ``.log`` files: bytes, records, tombstones (null values of data
    records), batches without records (the records of a batch the round deleted unread: none)."""
    out = {"bytes": 0, "records": 0, "tombstones": 0, "empty": 0}
    for buf in logs:
        out["bytes"] += len(buf)
        for batch in batches(buf):
            # a batch whose compression id Kafka does not know: a round that went on deleted it unread
            recs = list(records(buf, batch)) if batch.compression_type in KNOWN_CODECS else []
            out["records"] += len(recs)
            out["tombstones"] += 0 if batch.is_control else sum(r.value is None for r in recs)
            out["empty"] += not recs
    return out


def _counts_differ(round_: CleaningRound, before: dict[str, bytes], ours: Path) -> list[str]:
    """The round's counts (``CleanerStats``) against the files it read and wrote: bytes and records read and kept,
    tombstones kept and removed, batches kept empty, batches rebuilt (compressed ones by codec)."""
    read = _tally([before[segment_name(b)] for c in round_.segments for b in c.replaces])
    kept = _tally([(ours / segment_name(c.base_offset)).read_bytes() for c in round_.segments])
    # a batch rebuilt: one with records whose bytes are no source batch's, by codec
    sources = {bytes(buf[b.position:b.position + b.size_in_bytes]) for buf in
               (before[segment_name(b)] for c in round_.segments for b in c.replaces) for b in batches(buf)}
    rebuilt: dict[int, int] = {}
    for c in round_.segments:
        buf = (ours / segment_name(c.base_offset)).read_bytes()
        for b in batches(buf):
            if bytes(buf[b.position:b.position + b.size_in_bytes]) not in sources and next(records(buf, b), None):
                rebuilt[b.compression_type] = rebuilt.get(b.compression_type, 0) + 1
    s = round_.stats
    mine = (s.bytes_read, s.bytes_written, s.records_read, s.records_kept, s.tombstones_kept,
            s.tombstones_removed, s.empty_batches, s.batches_rebuilt, s.compressed_rebuilt)
    files = (read["bytes"], kept["bytes"], read["records"], kept["records"], kept["tombstones"],
             read["tombstones"] - kept["tombstones"], kept["empty"], sum(rebuilt.values()),
             {codec: n for codec, n in rebuilt.items() if codec})
    return [] if mine == files else [f"counts (bytes read, written, records read, kept, tombstones kept, "
                                     f"removed, empty batches, batches rebuilt, by codec) {mine} != the files' "
                                     f"{files}"]


def _first_difference(mine: bytes | None, kafkas: bytes | None) -> str:
    if mine is None or kafkas is None:
        size = ["absent" if b is None else f"{len(b)} bytes" for b in (mine, kafkas)]
        return f"ours {size[0]}, Kafka's {size[1]}"
    at = next((i for i, (a, b) in enumerate(zip(mine, kafkas, strict=False)) if a != b), min(len(mine), len(kafkas)))
    return f"{len(mine)} vs {len(kafkas)} bytes, first difference at {at}"


LIVE = (".log", ".index", ".timeindex", ".txnindex")


def live_files(part: Path) -> dict[str, list]:
    """The partition's segment files as a recording keeps them: name -> [the SHA-256's first 16 hex digits, and
    for a ``.log`` its modification time in ms]."""
    return {f.name: [hashlib.sha256(f.read_bytes()).hexdigest()[:16]]
            + ([f.stat().st_mtime_ns // 1_000_000] if f.suffix == ".log" else [])
            for f in sorted(part.iterdir()) if f.suffix in LIVE}


def _call(args: tuple, kwargs: dict) -> dict:
    """A ``cleanable`` call as a recording keeps it: its arguments but the partition's path."""
    return json.loads(json.dumps({"args": list(args), "kwargs": kwargs}))


def _files(part: Path) -> dict[str, tuple[bytes, int]]:
    return {f.name: (f.read_bytes(), f.stat().st_mtime_ns) for f in sorted(part.iterdir()) if f.is_file()}


class RecordingOracle:
    """``KafkaOracle``'s cleaner answers, kept as ``judge_cleaning`` asks for them: each call's arguments, its
    answer (its timing dropped, the partition's path as ``{part}``) and the files Kafka's round left (none where
    it ran no round). A damaged case's start (``load``) keeps what Kafka's load changed in the partition: every
    file whose bytes it wrote and every one it removed, as a damaged case copies the partition Kafka started (a
    clean stop leaves the ``.log`` files, whose modification times the cleaner reads, as they were)."""

    def __init__(self, oracle: KafkaOracle) -> None:
        self.oracle = oracle
        self.recorded: list[dict] = []

    def load(self, part: Path, *args, **kwargs) -> dict:
        before = _files(part)
        answer = self.oracle.load(part, *args, **kwargs)
        after = _files(part)
        # a file as its bytes up to the last non-zero one and its size (an active segment's index files stay
        # preallocated, zeros to their maximum size); not its modification time, the load's own clock
        wrote = {name: [base64.b64encode(data.rstrip(b"\0")).decode("ascii"), len(data)]
                 for name, (data, _) in after.items() if before.get(name, (None,))[0] != data}
        self.recorded.append({"call": _call(("load", *args), kwargs),
                              "answer": json.loads(json.dumps(answer).replace(str(part), "{part}")),
                              "wrote": wrote, "removed": sorted(set(before) - set(after))})
        return answer

    def cleanable(self, part: Path, *args, **kwargs) -> dict:
        answer = self.oracle.cleanable(part, *args, **kwargs)
        kept = json.loads(json.dumps({k: v for k, v in answer.items() if k != "cleanMs"}).replace(str(part),
                                                                                                  "{part}"))
        self.recorded.append({"call": _call(args, kwargs), "answer": kept,
                              "files": live_files(part) if "endOffset" in answer else {}})
        return answer


class RecordedOracle:
    """Kafka's answers a ``RecordingOracle`` kept, given back in order, each only to the same call (a call with
    other arguments, or one more than recorded, is an ``AssertionError``: segdex's side drew or viewed otherwise);
    ``compare`` checks segdex's files against the digests of Kafka's."""

    def __init__(self, recorded: list[dict]) -> None:
        self.recorded = list(recorded)
        self.files: dict[str, list] = {}

    def load(self, part: Path, *args, **kwargs) -> dict:
        """A recorded start: the files Kafka's load wrote written into ``part``, the ones it removed removed."""
        assert self.recorded, "a call Kafka was not asked"
        kept = self.recorded.pop(0)
        assert _call(("load", *args), kwargs) == kept["call"], (_call(("load", *args), kwargs), kept["call"])
        for name, (data, size) in kept["wrote"].items():
            (part / name).write_bytes(base64.b64decode(data).ljust(size, b"\0"))
        for name in kept["removed"]:
            (part / name).unlink()
        return json.loads(json.dumps(kept["answer"]).replace("{part}", str(part)))

    def cleanable(self, part: Path, *args, **kwargs) -> dict:
        assert self.recorded, "a call Kafka was not asked"
        kept = self.recorded.pop(0)
        assert _call(args, kwargs) == kept["call"], (_call(args, kwargs), kept["call"])
        self.files = kept["files"]
        return json.loads(json.dumps(kept["answer"]).replace("{part}", str(part)))

    def compare(self, round_: CleaningRound, ours: Path) -> list[str]:
        """segdex's partition after its round against Kafka's: every ``.log`` (bytes and modification time), and
        every index file segdex's round wrote (Kafka's load writes the indexes of segments the round left)."""
        mine = live_files(ours)
        logs = {name: got for name, got in mine.items() if name.endswith(".log")}
        kafkas = {name: got for name, got in self.files.items() if name.endswith(".log")}
        out = [f"{name}: {logs.get(name)} != Kafka's {kafkas.get(name)}" for name in sorted(set(logs) | set(kafkas))
               if logs.get(name) != kafkas.get(name)]
        for cleaned in round_.segments:
            stem = segment_name(cleaned.base_offset)[:-4]
            out += [f"{stem}{s}: {mine.get(stem + s)} != Kafka's {self.files.get(stem + s)}" for s in LIVE[1:]
                    if mine.get(stem + s) != self.files.get(stem + s)]
        return out


RECORDED = GOLDEN / "cleaner_rounds.json"  # Kafka's answers to the suite's judged cases, by test


def recorded(name: str, path: Path = RECORDED) -> RecordedOracle:
    """Kafka's answers to the cases of ``name`` (``keep_recording``, in ``path``), to give back in the test
    process."""
    return RecordedOracle(json.loads(path.read_text())[name])


def keep_recording(name: str, recording: RecordingOracle, path: Path = RECORDED) -> None:
    """The answers Kafka just gave to the cases of ``name`` equal the recorded ones (in ``path``);
    ``SEGDEX_RECORD_GOLDEN=1`` records them instead."""
    kept = json.loads(path.read_text()) if path.exists() else {}
    if os.environ.get("SEGDEX_RECORD_GOLDEN") == "1":
        kept[name] = recording.recorded
        path.write_text(json.dumps(kept, sort_keys=True, separators=(",", ":")).replace('{"answer"', '\n{"answer"')
                        + "\n")
    assert kept.get(name) == recording.recorded


def judge_given(oracle: KafkaOracle, work: Path, segments: dict[int, bytes], config: LogConfig, now: int,
                dedupe: int, io_buffers: tuple[int, int], checkpoint: int | None,
                damage: dict[int, tuple[int, bytes]] | None = None, load_factor: float = 0.9) -> CleanerVerdict:
    """One round of a partition given whole (``segments``: base offset -> ``.log`` bytes), judged as a damaged
    case of ``judge_cleaning``: Kafka's clean start and stop writes its indexes and snapshots, then ``damage``
    (base offset -> (position, bytes written there)) is written into both copies; both load as after a clean
    shutdown with the recovery point at the log end, and one round from ``checkpoint`` (high watermark: the log
    end) with these buffers is compared: the view, what it throws, or every file it cleans. ``load_factor``: the
    round's ``log.cleaner.io.buffer.load.factor``."""
    shutil.rmtree(work, ignore_errors=True)
    ours, theirs = work / "ours" / "c-0", work / "theirs" / "c-0"
    theirs.mkdir(parents=True)
    for n, (base, data) in enumerate(sorted(segments.items())):
        (theirs / segment_name(base)).write_bytes(data)
        os.utime(theirs / segment_name(base), ns=(T0 * 10**6, (T0 + n * HOUR_MS) * 10**6))
    kafka_config = {"cleanup.policy": "compact", "index.interval.bytes": config.index_interval_bytes,
                    "internal.segment.bytes": config.segment_bytes, "delete.retention.ms": config.delete_retention_ms,
                    "min.compaction.lag.ms": config.min_compaction_lag_ms,
                    "segment.index.bytes": config.segment_index_bytes, "max.message.bytes": config.max_message_bytes}
    verdict = CleanerVerdict(kind="given")
    started = oracle.load(theirs, now, config=kafka_config)
    if "exception" in started:
        verdict.mismatches.append(f"Kafka's start failed: {started['exception']}")
        return verdict
    shutil.copytree(theirs, ours)
    for base, (position, data) in (damage or {}).items():
        for part in (ours, theirs):
            log = part / segment_name(base)
            kept = log.stat()
            with open(log, "r+b") as f:
                f.seek(position)
                f.write(data)
            os.utime(log, ns=(kept.st_atime_ns, kept.st_mtime_ns))
    leo = started["logEndOffset"]
    loaded = load_for_cleaning(str(ours), config, now, clean_shutdown=True, recovery_point=leo)
    start, segs = loaded.log_start_offset, loaded.segments
    view = cleaning_view(loaded.facts, start, leo, last_stable_offset(loaded.first_unstable_offset, leo), checkpoint,
                         now, config)
    answer = oracle.cleanable(theirs, now, start, leo, checkpoint, dedupe if view.log.cleanable_bytes else 0,
                              config=kafka_config, recovery_point=leo, clean=True, io_buffers=io_buffers,
                              **({} if load_factor == 0.9 else {"load_factor": load_factor}))
    differ = _view_differs(view, last_stable_offset(loaded.first_unstable_offset, leo), leo, answer)
    if differ or not view.log.cleanable_bytes:
        verdict.mismatches += [differ] if differ else []
        return verdict
    cleaner = Cleaner(SkimpyOffsetMap(dedupe), load_factor, io_buffer_size=io_buffers[0],
                      max_io_buffer_size=io_buffers[1])
    round_, failed = _round(functools.partial(cleaner.clean, segs, view.log, start, leo, loaded.active_producers(),
                                              config, now, SwapWriter(str(ours), None, None)),
                            answer, verdict, ours, theirs)
    if failed:
        verdict.mismatches.append(failed)
    elif round_ is not None:
        if round_.end_offset != answer["endOffset"]:
            verdict.mismatches.append(f"end offset {round_.end_offset} != Kafka's {answer['endOffset']}")
        else:
            compared = oracle.compare(round_, ours) if isinstance(oracle, RecordedOracle) else _compare(
                round_, theirs, ours)
            verdict.mismatches += compared
            verdict.rounds += 1
    return verdict


def judge_drawn(seed: int, oracle: KafkaOracle, work: Path) -> CleanerVerdict:
    """``judge_given`` on a partition drawn for the cleaner's read buffer: two to four segments of v2 batches (one
    to five records of 1 to 3,000 bytes, some gzip, snappy, lz4 or zstd), one batch's size field set past its end or
    inside it, a small offset map (3 to 12 keys, or 10,000), the read buffer starting at 64, 1,000 or 4,096 bytes,
    ``max.message.bytes`` 600, 5,000 or 1,048,588, and no checkpoint or one inside the log."""
    rng = random.Random(seed)
    segs, off = {}, 0
    for _ in range(rng.randint(2, 4)):
        base, data = off, []
        for _ in range(rng.randint(2, 7)):
            n = rng.choice([1, 1, 2, 3, 5])
            size = rng.choice([1, 1, 50, 300, 700, 1500, 3000])
            data.append(build_batch(off, [(T0 + off + i, f"k{rng.randrange(6)}".encode(), b"v" * size)
                                          for i in range(n)], compression=rng.choice([0, 0, 1, 1, 2, 3, 4])))
            off += n
        segs[base] = data
    bases = sorted(segs)
    damaged = rng.choice(bases[:-1])
    at = rng.randrange(1, len(segs[damaged])) if len(segs[damaged]) > 1 else 0
    rng.choice(["size", "size", "cut"])  # drawn for the cases' order; a cut is not judged here
    size = rng.choice([200, 900, 2000, 3100, 5000, 2_000_000])
    if rng.random() < 0.6:
        size = rng.randint(62, max(62, len(segs[damaged][at]) - 1))
    config = LogConfig(cleanup_policy="compact", index_interval_bytes=rng.choice([1, 100, 4096]),
                       max_message_bytes=rng.choice([600, 5000, 1_048_588]), segment_bytes=rng.choice([1 << 20, 5000]))
    io_buffers = (rng.choice([64, 1000, 4096]), rng.choice([600, 2_500_000, 1_048_588]))
    dedupe = 24 * rng.choice([3, 4, 5, 12, 10_000])
    checkpoint = rng.choice([None, None, rng.randrange(off)])
    position = sum(map(len, segs[damaged][:at]))
    return judge_given(oracle, work, {b: b"".join(d) for b, d in segs.items()}, config, T0 + 10 * HOUR_MS, dedupe,
                       io_buffers, checkpoint, damage={damaged: (position + 8, struct.pack(">i", size - 12))})
