"""verify's startup preview (``log_loader.preview_start``: ``LogLoader``'s dry run) judged against Kafka's own
load: one generated compacted partition (``compacted_partition``, transactions among its producers), started and
stopped cleanly by Kafka (its indexes and producer snapshots written), then one batch damaged below the log end
(``damage_batch``: a CRC, magic byte, size field or compression id, a size field below the batch's fields, or
the segment cut in it). The next start is a
clean one (the clean-shutdown marker, the recovery point at the log end: no segment re-read) or an unclean one
below a drawn recovery point (the segments from its floor recovered). segdex's preview of that start against
Kafka 4.4's ``LogLoader`` on the same files: whether the start fails, else the log end offset it serves.

Shared by ``tests/indexcore/log/test_log_loader_dry_run.py`` (a few cases) and ``scripts/differential.py
--preview`` (hundreds)."""

from __future__ import annotations

import random
import shutil
from dataclasses import dataclass
from pathlib import Path

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.log.layout import index_paths
from segdex.indexcore.log.log_loader import ACTION_FAIL, SegmentOnDisk, preview_start
from segdex.indexcore.log.log_segments import PartitionRecovery
from tests.support.cleaner_cases import CODECS, DRAWN_DAMAGES, damage_batch, draw_case
from tests.support.kafka_harness import KafkaOracle


@dataclass
class PreviewVerdict:
    """One case: its kind (``<damage> clean|unclean``), whether Kafka's start failed, and how segdex's preview
    differs (None: it does not)."""

    kind: str
    kafka_fails: bool = False
    mismatch: str | None = None


def on_disk(part: Path) -> list[SegmentOnDisk]:
    """The segments as ``verify`` hands them to the preview: recovered in order, with whether ``.index`` exists."""
    recovery = PartitionRecovery(LogConfig())
    out = []
    for log in sorted(part.glob("*.log")):
        base = int(log.name[:20])
        seg = recovery.recover_segment(str(log), base)
        out.append(SegmentOnDisk(base, str(log), seg.result, Path(index_paths(str(log))[".index"]).exists()))
    return out


def judge_preview(rng: random.Random, oracle: KafkaOracle, work: Path,
                  damages: tuple[str, ...] = DRAWN_DAMAGES) -> PreviewVerdict:
    """Draw a case from ``rng`` under ``work`` (emptied first), preview its next start, ask Kafka's load."""
    ours, theirs, config, now, _ = draw_case(rng, work, CODECS, wide=False, magic=2)
    kafka_config = {"cleanup.policy": "compact", "index.interval.bytes": config.index_interval_bytes,
                    "internal.segment.bytes": config.segment_bytes}
    started = oracle.load(theirs, now, config=kafka_config)
    if "exception" in started:
        return PreviewVerdict("not started")
    shutil.rmtree(ours)
    shutil.copytree(theirs, ours)
    damage = damage_batch(rng, ours, theirs, kinds=damages)
    leo = started["logEndOffset"]
    clean = rng.random() < 0.5
    bases = sorted(int(p.name[:20]) for p in ours.glob("*.log"))
    recovery_point = leo if clean else rng.choice([*bases[1:], leo])
    preview = preview_start(on_disk(ours), clean, recovery_point, None)
    answer = oracle.load(theirs, now + 1000, recovery_point=recovery_point, clean=clean, config=kafka_config)
    verdict = PreviewVerdict(f"{damage} {'clean' if clean else 'unclean'}", "exception" in answer)
    fails = preview.action == ACTION_FAIL
    if fails != verdict.kafka_fails:
        verdict.mismatch = (f"segdex's preview: {preview.action} ({'; '.join(preview.notes)[:300]}); Kafka's load: "
                            f"{answer.get('exception', 'started')}")
    elif not fails and preview.log_end_offset != answer["logEndOffset"]:
        verdict.mismatch = f"log end offset {preview.log_end_offset} != Kafka's {answer['logEndOffset']}"
    return verdict
