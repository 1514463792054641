"""``Cleaner``'s round against Kafka 4.4's own ``Cleaner.doClean`` (``KafkaOracle cleanable`` with a dedupe buffer):
generated compacted partitions (keys overwritten and deleted, idempotent and transactional producers with
committed, aborted and open transactions, 3 in 5 data batches gzip, lz4 or zstd), loaded by both at the same clock,
then one round each with the same offset map size, topic configs and checkpoint: the round's end offset, and every
file of every cleaned segment (``.log``, ``.index``, ``.timeindex``, ``.txnindex``) byte for byte with the
``.log``'s modification time."""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.log.cleaner import Cleaner
from segdex.indexcore.log.log_cleaner import load_for_cleaning
from segdex.indexcore.log.log_cleaner_manager import SegmentFacts, cleaning_view, last_stable_offset
from segdex.indexcore.log.skimpy_offset_map import SkimpyOffsetMap
from segdex.indexcore.tools.segment_writer import segment_name
from tests.support.compacted_partitions import HOUR_MS, compacted_partition
from tests.support.kafka_harness import KafkaInstall, KafkaOracle

T0 = 1_700_000_000_000
DAY_MS = 24 * HOUR_MS


@pytest.fixture(scope="module")
def kafka44(tmp_path_factory):
    o = KafkaOracle(KafkaInstall("4.4.0"), tmp_path_factory.mktemp("oracle-cleaner"))
    yield o
    o.close()


def load(part: Path, config: LogConfig, now: int):
    """segdex's load of the partition (Kafka's LogLoader at ``now``): the cleaner's segments, the active
    producers' last records, the log start and end offsets and the first unstable offset."""
    loaded = load_for_cleaning(str(part), config, now)
    return (loaded.segments, loaded.active_producers(), loaded.log_start_offset, loaded.log_end_offset,
            loaded.producer_state.first_unstable_offset(loaded.log_start_offset))


def apply_round(part: Path, round_) -> None:
    """Our round's segments into our copy, as Kafka's swap leaves them (the replaced segments' files and
    snapshots gone)."""
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


def compare(i: int, round_, theirs: Path) -> None:
    for cleaned in round_.segments:
        stem = theirs / segment_name(cleaned.base_offset)[:-4]
        assert cleaned.log == Path(f"{stem}.log").read_bytes(), (i, cleaned.base_offset)
        assert cleaned.offset_index == Path(f"{stem}.index").read_bytes(), (i, cleaned.base_offset)
        assert cleaned.time_index == Path(f"{stem}.timeindex").read_bytes(), (i, cleaned.base_offset)
        theirs_txn = Path(f"{stem}.txnindex")
        assert cleaned.txn_index == (theirs_txn.read_bytes() if theirs_txn.exists() else None), i
        assert cleaned.mtime_ms == os.stat(f"{stem}.log").st_mtime_ns // 1_000_000, i
        for gone in cleaned.replaces[1:]:
            assert not (theirs / segment_name(gone)).exists(), (i, gone)


def test_two_rounds_equal_kafkas_for_generated_partitions(kafka44, tmp_path: Path):
    """Two rounds each: the second from the first's end offset, at a clock past the horizons the first stamped
    for some, so that tombstones and markers then go."""
    rng = random.Random(28)
    rounds = rebuilt = txn_files = grouped = full = emptied = 0
    recompressed: dict[int, int] = {}
    for i in range(50):
        data, last_ts = compacted_partition(rng, T0, codecs=(0, 0, 1, 3, 4))  # gzip and lz4 batches too
        ours, theirs = tmp_path / f"ours{i}" / "c-0", tmp_path / f"theirs{i}" / "c-0"
        ours.mkdir(parents=True)
        for n, (base, seg) in enumerate(sorted(data.items())):
            (ours / segment_name(base)).write_bytes(seg)
            os.utime(ours / segment_name(base), ns=(T0 * 10**6, (T0 + n * HOUR_MS) * 10**6))
        shutil.copytree(ours, theirs)
        segment_bytes = rng.choice([1 << 20, 1500, 600])
        config = LogConfig(cleanup_policy="compact", index_interval_bytes=rng.choice([1, 100, 4096]),
                           segment_bytes=segment_bytes, delete_retention_ms=rng.choice([0, HOUR_MS, DAY_MS]))
        now = last_ts + rng.choice([0, HOUR_MS, 2 * DAY_MS])
        dedupe = 24 * rng.choice([3, 12, 10_000])
        checkpoint = None
        for second in (False, True):
            if second:
                now += rng.choice([0, config.delete_retention_ms + 1])
            segs, active, start, leo, unstable = load(ours, config, now)
            if not second:
                checkpoint = rng.choice([None, None, rng.randint(start, leo)])
            # the high watermark: the log end, or a segment boundary (the batch ending there stays, 4.4)
            hw = leo if len(segs) < 3 or rng.random() < 0.6 else rng.choice(segs[1:-1]).base_offset
            facts = [SegmentFacts(s.base_offset, s.size, 0) for s in segs]
            view = cleaning_view(facts, start, leo, last_stable_offset(unstable, hw), checkpoint, now, config)
            if not view.log.cleanable_bytes:  # Kafka's cleaner never takes it (and its doClean would throw)
                continue
            answer = kafka44.cleanable(theirs, now, start, hw, checkpoint, dedupe, config={
                "cleanup.policy": "compact", "index.interval.bytes": config.index_interval_bytes,
                "internal.segment.bytes": segment_bytes, "delete.retention.ms": config.delete_retention_ms})
            assert "exception" not in answer, (i, answer)
            assert answer["lastStableOffset"] == last_stable_offset(unstable, hw), i
            round_ = Cleaner(SkimpyOffsetMap(dedupe)).clean(segs, view.log, start, hw, active, config, now)
            assert round_.end_offset == answer["endOffset"], i
            compare(i, round_, theirs)
            apply_round(ours, round_)
            checkpoint = round_.end_offset
            rounds += bool(round_.segments)
            rebuilt += round_.stats.batches_rebuilt
            full += round_.end_offset < view.log.first_uncleanable_offset
            txn_files += sum(c.txn_index is not None for c in round_.segments)
            grouped += sum(len(c.replaces) > 1 for c in round_.segments)
            emptied += round_.stats.empty_batches
            for codec, n in round_.stats.compressed_rebuilt.items():
                recompressed[codec] = recompressed.get(codec, 0) + n
    assert rounds > 50 and rebuilt > 100 and grouped > 5 and full > 5 and txn_files >= 3 and emptied >= 1, (
        rounds, rebuilt, grouped, full, txn_files, emptied)
    # gzip (java.util.zip over the same libz), lz4 (Kafka's frame) and zstd (zstd-jni's stream) batches rebuilt
    assert all(recompressed.get(c, 0) > 5 for c in (1, 3, 4)), recompressed


def test_a_round_counts_what_it_removes_and_stamps_the_horizon(tmp_path: Path):
    """a's tombstone is superseded (removed); b's is the latest (kept, its batch rebuilt with the horizon
    now + delete.retention.ms in the base timestamp and attribute bit 6)."""
    from segdex.indexcore.record.file_records import batches
    from segdex.indexcore.record.records import records
    from segdex.indexcore.tools.segment_writer import build_batch

    part = tmp_path / "c-0"
    part.mkdir()
    (part / segment_name(0)).write_bytes(build_batch(0, [(T0, b"a", None), (T0 + 1, b"a", b"x"),
                                                         (T0 + 2, b"b", None)]))
    (part / segment_name(3)).write_bytes(build_batch(3, [(T0 + 3, b"c", b"y")]))
    config = LogConfig(cleanup_policy="compact", delete_retention_ms=1000)
    now = T0 + 10
    segs, active, start, leo, unstable = load(part, config, now)
    facts = [SegmentFacts(s.base_offset, s.size, 0) for s in segs]
    view = cleaning_view(facts, start, leo, last_stable_offset(unstable, leo), None, now, config)
    round_ = Cleaner(SkimpyOffsetMap(24 * 100)).clean(segs, view.log, start, leo, active, config, now)
    s = round_.stats
    assert (s.records_read, s.records_kept, s.tombstones_removed, s.tombstones_kept, s.batches_rebuilt) == (
        3, 2, 1, 1, 1)
    (cleaned,) = round_.segments
    (batch,) = list(batches(cleaned.log, 0))
    assert batch.attributes & 0x40 and int.from_bytes(cleaned.log[27:35], "big") == now + 1000
    assert [(r.offset, r.key, r.value) for r in records(cleaned.log, batch)] == [(1, b"a", b"x"), (2, b"b", None)]
    assert round_.end_offset == 3
