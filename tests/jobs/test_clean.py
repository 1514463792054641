"""``segdex clean`` (plan): every compacted partition of the log dirs planned as Kafka's cleaner would clean it,
printed and recorded in ``cleaning``; nothing on disk changes; what cannot be planned is an error line, a row and
exit 1; bad arguments are exit 2."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

from segdex.indexcore.config.cleaner_config import CleanerConfig
from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.log.log_cleaner import plan_cleaning
from segdex.indexcore.tools.segment_writer import build_batch, segment_name
from segdex.jobs.cli import main as segdex
from segdex.pipelines.metadata_store import MetadataStore
from segdex.pipelines.schemas import CLEANING_TABLE
from tests.support.compacted_partitions import (
    HOUR_MS,
    OUTGROWN_CONFIGS,
    OUTGROWN_ERROR,
    compacted_partition,
    outgrown_partition,
)

T0 = 1_700_000_000_000


def _tree(d: Path) -> dict[str, str]:
    return {str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.rglob("*"))
            if p.is_file()}


def test_clean_plans_every_compacted_partition_and_changes_nothing(tmp_path: Path, capsys):
    log_dir = tmp_path / "logs"
    rng = random.Random(5)
    last = 0
    for p in range(3):
        data, last_ts = compacted_partition(rng, T0)
        last = max(last, last_ts)
        (log_dir / f"orders-{p}").mkdir(parents=True)
        for base, seg in data.items():
            (log_dir / f"orders-{p}" / segment_name(base)).write_bytes(seg)
    (log_dir / "clicks-0").mkdir()  # a topic that only deletes: not planned
    (log_dir / "clicks-0" / segment_name(0)).write_bytes(build_batch(0, [(T0, b"k", b"v")]))
    (log_dir / "bad-0").mkdir()  # compacted, a corrupt batch (its CRC): Kafka's load would truncate it
    corrupt = bytearray(build_batch(0, [(T0, b"k", b"v"), (T0, b"j", b"w")]) + build_batch(2, [(T0, b"k", b"x")]))
    corrupt[-2] ^= 0xFF
    (log_dir / "bad-0" / segment_name(0)).write_bytes(bytes(corrupt))
    (log_dir / "bad-0" / segment_name(3)).write_bytes(build_batch(3, [(T0, b"j", b"y")]))
    before = _tree(log_dir)
    now = last + HOUR_MS
    meta = tmp_path / "meta"
    code = segdex(["clean", "--now", str(now), "--metadata", str(meta), "--topic-config",
                   "orders:cleanup.policy=compact", "--topic-config", "bad:cleanup.policy=compact",
                   "--dedupe-buffer-size", str(24 * 50), str(log_dir)])
    out, err = capsys.readouterr()
    assert code == 1, (out, err)  # bad-0 could not be planned
    assert "error: bad-0: not loaded: 00000000000000000000.log: " in err and "segdex recover first" in err
    assert _tree(log_dir) == before  # a plan writes nothing in the log dir
    rows = {(r["topic"], r["partition"]): r for r in MetadataStore(str(meta)).read(CLEANING_TABLE.name).to_pylist()}
    assert set(rows) == {("orders", 0), ("orders", 1), ("orders", 2), ("bad", 0)}
    assert rows[("bad", 0)]["status"] == "error"
    for p in range(3):
        want = plan_cleaning(str(log_dir / f"orders-{p}"), LogConfig(cleanup_policy="compact"),
                             CleanerConfig(dedupe_buffer_size=24 * 50), now)
        row = rows[("orders", p)]
        assert (row["end_offset"], row["bytes_before"], row["bytes_after"], row["records_after"],
                row["would_clean"]) == (want.end_offset, want.bytes_before, want.bytes_after, want.records_after,
                                        want.would_clean)
        assert row["status"] == ("planned" if want.would_clean else "not_due")
        assert f"orders-{p}: {'would clean' if want.would_clean else 'not now'}" in out
    assert sum(r["bytes_after"] < r["bytes_before"] for r in rows.values() if r["bytes_before"]) >= 2
    assert "compacted partitions" in out.splitlines()[-1]


def test_bad_arguments_are_usage_errors(tmp_path: Path, capsys):
    (tmp_path / "logs").mkdir()
    assert segdex(["clean", "--dedupe-buffer-size", "3", str(tmp_path / "logs")]) == 2
    assert "--dedupe-buffer-size must hold at least one key" in capsys.readouterr().err
    assert segdex(["clean", "--now", "-5", str(tmp_path / "logs")]) == 2
    assert segdex(["clean", str(tmp_path / "missing")]) == 2
    assert segdex(["clean"]) == 2


def _compacted_log_dir(root: Path, partitions: int = 2, seed: int = 8) -> tuple[Path, int]:
    rng = random.Random(seed)
    log_dir = root / "logs"
    last = 0
    for p in range(partitions):
        data, last_ts = compacted_partition(rng, T0)
        last = max(last, last_ts)
        (log_dir / f"orders-{p}").mkdir(parents=True)
        for base, seg in data.items():
            (log_dir / f"orders-{p}" / segment_name(base)).write_bytes(seg)
    return log_dir, last + HOUR_MS


def test_apply_cleans_keeps_what_it_replaced_and_writes_the_checkpoint(tmp_path: Path, capsys):
    from segdex.indexcore.log.checkpoints import read_offset_checkpoint

    log_dir, now = _compacted_log_dir(tmp_path)
    planned = {p: plan_cleaning(str(log_dir / f"orders-{p}"), LogConfig(cleanup_policy="compact"), CleanerConfig(),
                                now) for p in range(2)}
    args = ["clean", "--now", str(now), "--metadata", str(tmp_path / "meta"), "--topic-config",
            "orders:cleanup.policy=compact", str(log_dir)]
    assert segdex([*args, "--apply", "--quarantine", str(tmp_path / "q")]) == 0
    out = capsys.readouterr().out
    assert "orders-0: cleaned: " in out and "replaced files kept in" in out and " 2 cleaned, " in out
    assert read_offset_checkpoint(log_dir / "cleaner-offset-checkpoint") == {
        ("orders", p): planned[p].end_offset for p in range(2)}
    sizes = {p: sum(f.stat().st_size for f in (log_dir / f"orders-{p}").glob("*.log")) for p in range(2)}
    for p in range(2):  # the round's bytes are the live ones now
        part = log_dir / f"orders-{p}"
        last_base = max(int(f.name[:20]) for f in part.glob("*.log"))
        assert sizes[p] - (part / segment_name(last_base)).stat().st_size == planned[p].bytes_after
    manifests = list((tmp_path / "q").rglob("manifest.json"))
    assert len(manifests) == 2
    rows = MetadataStore(str(tmp_path / "meta")).read(CLEANING_TABLE.name).to_pylist()
    assert {r["status"] for r in rows} == {"applied"}
    # the next plan starts where the round ended, and has nothing to do
    assert segdex(args) == 0
    out = capsys.readouterr().out
    for p in range(2):
        assert f"orders-{p}: not now: nothing cleanable" in out or f"dirty offsets {planned[p].end_offset}" in out


def test_apply_needs_a_place_for_what_it_replaces_and_refuses_a_held_dir(tmp_path: Path, capsys):
    from tests.support.log_dir_locks import other_holder

    log_dir, now = _compacted_log_dir(tmp_path, 1)
    base = ["clean", "--now", str(now), "--no-record", "--topic-config", "orders:cleanup.policy=compact"]
    assert segdex([*base, "--apply", str(log_dir)]) == 2
    assert "--apply needs --quarantine DIR" in capsys.readouterr().err
    assert segdex([*base, "--apply", "--quarantine", str(log_dir / "q"), str(log_dir)]) == 2  # inside the log dir
    assert segdex([*base, "--discard", str(log_dir)]) == 2  # --discard without --apply
    (log_dir / ".lock").touch()
    before = _tree(log_dir)
    with other_holder(log_dir / ".lock"):  # every log dir held: nothing changed, exit 2
        assert segdex([*base, "--apply", "--discard", str(log_dir)]) == 2
    err = capsys.readouterr().err
    assert "refused" in err and ".lock is held by another process" in err
    assert _tree(log_dir) == before


def test_until_clean_repeats_rounds_while_the_offset_map_fills(tmp_path: Path, capsys):
    """An offset map of 5 keys over a partition of many: one round stops early (the map filled); --until-clean
    goes on, each round from the last one's end, until the range Kafka would clean is clean."""
    from segdex.indexcore.log.checkpoints import read_offset_checkpoint

    log_dir, now = _compacted_log_dir(tmp_path, 1, seed=11)
    one = plan_cleaning(str(log_dir / "orders-0"), LogConfig(cleanup_policy="compact"),
                        CleanerConfig(dedupe_buffer_size=24 * 5), now)
    assert one.map_full and one.end_offset < one.first_uncleanable_offset and one.rounds == 1
    # the plan of every round, in memory: what the applied rounds then leave on disk
    before = _tree(log_dir)
    told: list[int] = []  # each round as it is planned: the progress of a long plan
    planned = plan_cleaning(str(log_dir / "orders-0"), LogConfig(cleanup_policy="compact"),
                            CleanerConfig(dedupe_buffer_size=24 * 5), now, until_clean=True, on_round=told.append)
    assert planned.rounds > 1 and not planned.map_full and planned.end_offset > one.end_offset
    assert len(told) == planned.rounds and told[0] == one.bytes_before and all(b > 0 for b in told)
    assert planned.bytes_before > one.bytes_before and planned.records_before > one.records_before
    args = ["clean", "--now", str(now), "--no-record", "--dedupe-buffer-size", str(24 * 5), "--topic-config",
            "orders:cleanup.policy=compact", "--until-clean", str(log_dir)]
    assert segdex(args) == 0
    out = capsys.readouterr().out
    assert "orders-0: would clean: " in out and f"; {planned.rounds} rounds: " in out
    assert _tree(log_dir) == before  # a plan, however many rounds: nothing written
    assert segdex([*args[:-1], "--apply", "--discard", str(log_dir)]) == 0
    out = capsys.readouterr().out
    assert "orders-0: cleaned: " in out and f"; {planned.rounds} rounds: " in out
    assert "replaced files discarded" in out and " 0 bytes freed" not in out
    end = read_offset_checkpoint(log_dir / "cleaner-offset-checkpoint")[("orders", 0)]
    assert end == planned.end_offset
    below = [p for p in (log_dir / "orders-0").glob("*.log") if int(p.stem) < end]
    assert sum(p.stat().st_size for p in below) == planned.bytes_after
    assert f"{planned.segments_before} -> {planned.segments_after} segments" in out
    again = plan_cleaning(str(log_dir / "orders-0"), LogConfig(cleanup_policy="compact"),
                          CleanerConfig(dedupe_buffer_size=24 * 5), now, checkpoint=end)
    assert not again.would_clean or not again.map_full  # nothing left that needs another full round


def test_until_clean_keeps_each_original_once_and_restores_the_dir_as_before_the_run(tmp_path: Path, capsys):
    """``--until-clean --apply --quarantine``: of all the rounds' replaced files, only the originals are kept (a
    round's output a later round replaces is not), each once, in one manifest whose top-level restore lines put the
    partition back as it was before the run."""
    import json
    import subprocess

    log_dir, now = _compacted_log_dir(tmp_path, 1, seed=11)
    part = log_dir / "orders-0"
    originals = {p.name: p.read_bytes() for p in part.iterdir()}
    q = tmp_path / "q"
    assert segdex(["clean", "--now", str(now), "--no-record", "--dedupe-buffer-size", str(24 * 5), "--topic-config",
                   "orders:cleanup.policy=compact", "--until-clean", "--apply", "--quarantine", str(q),
                   str(log_dir)]) == 0
    out = capsys.readouterr().out
    rounds = int(out.split(" rounds: ")[0].rsplit("; ", 1)[1])
    assert rounds > 2, out
    (manifest,) = q.rglob("manifest.json")
    m = json.loads(manifest.read_text())
    assert m["earlier"] == []  # one run, one manifest: no round's record pushed aside
    sources = [Path(p["source"]).name for p in m["pieces"]]
    assert len(sources) == len(set(sources)) and set(sources) <= set(originals)
    for piece in m["pieces"]:  # each the original's bytes, not a later round's input
        assert Path(piece["quarantined"]).read_bytes() == originals[Path(piece["source"]).name]
    kept = sum(p.stat().st_size for p in manifest.parent.iterdir() if p.name != "manifest.json")
    assert kept <= sum(len(b) for b in originals.values())
    assert {p.name for p in manifest.parent.iterdir()} == {*sources, "manifest.json"}
    assert {p.name: p.read_bytes() for p in part.iterdir()} != originals
    for line in m["restore"]:
        subprocess.run(["sh", "-c", line], check=True)
    assert {p.name: p.read_bytes() for p in part.iterdir()} == originals


def test_a_corrupt_partition_is_left_alone_and_the_others_cleaned(tmp_path: Path, capsys):
    """A flipped byte in a compacted partition's cleanable range: that partition untouched (named with its file and
    why), exit 1; the other partition of the log dir cleaned."""
    log_dir, now = _compacted_log_dir(tmp_path)
    first = sorted((log_dir / "orders-1").glob("*.log"))[0]
    data = bytearray(first.read_bytes())
    data[70] ^= 0xFF  # inside the first batch: its CRC no longer matches
    first.write_bytes(bytes(data))
    before = {p.name: p.read_bytes() for p in (log_dir / "orders-1").iterdir()}
    code = segdex(["clean", "--now", str(now), "--no-record", "--topic-config", "orders:cleanup.policy=compact",
                   "--apply", "--discard", str(log_dir)])
    out, err = capsys.readouterr()
    assert code == 1
    assert f"error: orders-1: not loaded: {first.name}: corrupt_log_tail" in err
    assert {p.name: p.read_bytes() for p in (log_dir / "orders-1").iterdir()} == before
    assert "orders-0: cleaned: " in out


def test_a_round_kafkas_cleaner_fails_is_an_error_row_and_changes_nothing(tmp_path: Path, capsys):
    """Where Kafka's round throws (a merged segment outgrows its time index: ``outgrown_partition``), a plan and
    ``--apply`` both say so with Kafka's exception, the partition's ``cleaning`` row is ``error``, its files are
    untouched and no checkpoint is written for it; the log dir's other compacted partition is cleaned; exit 1."""
    from segdex.indexcore.log.checkpoints import read_offset_checkpoint

    log_dir, now = _compacted_log_dir(tmp_path, 1)
    outgrown_partition(log_dir / "outgrown-0", T0)
    before = _tree(log_dir / "outgrown-0")
    base = ["clean", "--now", str(now), "--metadata", str(tmp_path / "meta"), "--topic-config",
            "orders:cleanup.policy=compact", *[a for k, v in OUTGROWN_CONFIGS.items()
                                                for a in ("--topic-config", f"outgrown:{k}={v}")]]
    for apply in ([], ["--apply", "--discard"]):
        assert segdex([*base, *apply, str(log_dir)]) == 1
        out, err = capsys.readouterr()
        assert f"error: outgrown-0: Kafka's cleaner fails this round ({OUTGROWN_ERROR}): segments 0, 5 merged " \
               f"into one outgrow its index of segment.index.bytes=96" in err, err
        assert ("orders-0: cleaned: " if apply else "orders-0: would clean: ") in out
        assert _tree(log_dir / "outgrown-0") == before
    assert set(read_offset_checkpoint(log_dir / "cleaner-offset-checkpoint")) == {("orders", 0)}
    rows = MetadataStore(str(tmp_path / "meta")).read(CLEANING_TABLE.name).to_pylist()
    assert sorted((r["topic"], r["status"]) for r in rows) == [
        ("orders", "applied"), ("orders", "planned"), ("outgrown", "error"), ("outgrown", "error")]
    assert all(OUTGROWN_ERROR in r["error"] for r in rows if r["topic"] == "outgrown")


def test_stray_replicas_are_left_alone_by_clean_and_retention_and_verify_predicts_their_rename(tmp_path: Path,
                                                                                             capsys):
    """Partition dirs the log dir's metadata log makes stray (``stray_log_dir``: what a 4.4.0 broker renamed
    ``-stray`` at its start): ``clean --apply`` and ``retention --apply`` change no byte of them and say why, exit
    1; ``verify``'s startup preview says the broker renames them after its load; the topic's own partition is
    planned as usual."""
    from tests.support.metadata_log import stray_log_dir

    log_dir = stray_log_dir(tmp_path)
    strays = ("orders-5", "ghost-0", "nometa-0")
    before = {name: _tree(log_dir / name) for name in strays}
    configs = [a for t in ("orders", "ghost", "nometa") for a in ("--topic-config", f"{t}:cleanup.policy=compact")]
    assert segdex(["clean", "--no-record", "--apply", "--discard", "--now", str(T0 + 10 * HOUR_MS), *configs,
                   str(log_dir)]) == 1
    out, err = capsys.readouterr()
    for name in ("orders-5", "ghost-0"):
        assert f"stray: {log_dir / name}: left alone: its broker renames it -stray at its start" in err
    assert "orders-0: not now: " in out  # the topic's own partition is planned (its one segment is active)
    assert segdex(["retention", "--no-record", "--apply", "--config", "retention.ms=1", "--now",
                   str(T0 + 10 * HOUR_MS), str(log_dir)]) == 1
    captured = capsys.readouterr()
    err = captured.err + captured.out
    assert f"{log_dir / 'nometa-0'}: skipped: a stray replica: its broker renames it -stray at its start" in err
    assert {name: _tree(log_dir / name) for name in strays} == before
    assert segdex(["verify", "--no-progress", "--metadata", str(tmp_path / "meta"), str(log_dir)]) == 1
    err = capsys.readouterr().err
    for name in strays:
        assert f"startup: {name}: a stray replica (LogManager.isStrayKraftReplica): the broker renames it {name}." \
               f"<uuid>-stray after its load" in err
    assert "startup: orders-0:" not in err


def test_a_write_that_fails_mid_group_leaves_no_temporary(tmp_path: Path):
    """The disk refuses the cleaned segment's last bytes (a file-size limit: EFBIG, as a full disk's ENOSPC) at
    the group's flush: the run fails in one line, and the partition holds no temporary file of the streamed
    group; what is there is what Kafka's load takes (its segments, untouched, with --discard nothing kept)."""
    import resource
    import signal

    from tests.support.cli import segdex as segdex_process

    log_dir, now = _compacted_log_dir(tmp_path, partitions=1)
    part = log_dir / "orders-0"
    before = {p.name: p.read_bytes() for p in part.iterdir() if p.suffix == ".log"}
    limit = min(len(b) for b in before.values()) // 2  # smaller than any cleaned group's .log

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    proc = segdex_process("clean", "--now", str(now), "--no-record", "--no-progress", "--topic-config",
                          "orders:cleanup.policy=compact", "--apply", "--discard", str(log_dir),
                          preexec_fn=small_files, no_traceback=True)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)  # its first group failed: nothing was changed
    assert "File too large" in proc.stderr and "nothing was changed" in proc.stderr, proc.stderr
    assert not [p.name for p in part.iterdir() if p.name.startswith(".") or p.suffix == ".tmp"]
    assert {p.name: p.read_bytes() for p in part.iterdir() if p.suffix == ".log"} == before


def test_a_round_that_fails_after_groups_were_swapped_in_exits_3(tmp_path: Path):
    """One group per segment (``internal.segment.bytes`` at a segment's size): the first group's cleaned segment
    (2,644 bytes) is swapped in, the second's (3,843) outgrows the file-size limit at its flush. The groups before
    the failure stay, as Kafka's round leaves them; the run says so, no checkpoint is written, and the exit status
    is 3 (failed midway). (With ``--discard``: a quarantine's copies would outgrow the limit first.)"""
    import resource
    import signal

    from segdex.indexcore.log.checkpoints import read_offset_checkpoint
    from tests.support.cli import segdex as segdex_process

    log_dir, now = _compacted_log_dir(tmp_path, partitions=1, seed=10)
    part = log_dir / "orders-0"
    sizes = [p.stat().st_size for p in sorted(part.glob("*.log"))]
    assert sizes == [4362, 4651, 1450]  # the partition the figures above are for

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (3000, 3000))

    proc = segdex_process("clean", "--now", str(now), "--no-progress", "--no-record",  # Delta's files: over the limit
                          "--topic-config", "orders:cleanup.policy=compact", "--topic-config",
                          f"orders:internal.segment.bytes={max(sizes)}", "--apply", "--discard", str(log_dir),
                          preexec_fn=small_files, no_traceback=True)
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    assert "error: orders-0: not applied: " in proc.stderr and "File too large" in proc.stderr, proc.stderr
    assert "the 1 cleaned segments before it were swapped in" in proc.stderr, proc.stderr
    assert [p.stat().st_size for p in sorted(part.glob("*.log"))] == [2644, 4651, 1450]
    assert not (log_dir / "cleaner-offset-checkpoint").exists() or not read_offset_checkpoint(
        log_dir / "cleaner-offset-checkpoint")


def _served_as_is(log_dir: Path, damage) -> tuple[Path, int]:
    """Every segment's indexes written (as a broker leaves them), the log dir cleanly shut down, then ``damage``
    (a function of the batch's bytes and position) applied to the second batch of orders-1's first segment:
    (that segment, the batch's position)."""
    from segdex.indexcore.log.log_loader import LogLoader
    from segdex.indexcore.log.log_segments import segment_logs
    from segdex.indexcore.record.file_records import batches

    for part in log_dir.iterdir():
        loader = LogLoader(str(part), LogConfig(cleanup_policy="compact"))
        for base, path in segment_logs(part)[0]:
            for suffix, data in loader.recover_segment(path, base).files.items():
                if suffix != ".log" and data is not None:
                    Path(path[:-4] + suffix).write_bytes(data)
    (log_dir / ".kafka_cleanshutdown").touch()
    first = sorted((log_dir / "orders-1").glob("*.log"))[0]
    data = bytearray(first.read_bytes())
    position = list(batches(bytes(data)))[1].position
    damage(data, position)
    first.write_bytes(bytes(data))
    return first, position


def test_the_topics_and_the_brokers_message_limits_decide_what_a_damaged_batch_throws(tmp_path: Path, capsys):
    """A size field past its segment's end: the cleaner's read buffer grows (``growBuffersOrFail``) by doubling
    to the larger of the topic's ``max.message.bytes`` and the broker's ``message.max.bytes`` before Kafka's checks
    on the batch, so the limits decide its exception: with Kafka's defaults (1048588) the 2,000,012-byte batch is
    larger than the buffer (``CorruptRecordException``); with the topic at 3,000,000 and the broker at 5,000,000
    the buffer reaches 4,194,304 and holds its size (``IllegalStateException``)."""
    log_dir, now = _compacted_log_dir(tmp_path)
    first, position = _served_as_is(log_dir, lambda data, p: data.__setitem__(slice(p + 8, p + 12),
                                                                              (2_000_000).to_bytes(4, "big")))
    where = f"for log segment {first} at position {position}"
    base = ["clean", "--now", str(now), "--no-record", "--topic-config", "orders:cleanup.policy=compact"]
    assert segdex([*base, str(log_dir)]) == 1
    left = first.stat().st_size - position
    assert ("org.apache.kafka.common.errors.CorruptRecordException: Log segment may be corrupt, batch size 2000012 > "
            f"{left} bytes left in segment {where}") in capsys.readouterr().err
    broker = tmp_path / "server.properties"
    broker.write_text("message.max.bytes=5000000\n")
    assert segdex([*base, "--topic-config", "orders:max.message.bytes=3000000", "--broker-config", str(broker),
                   str(log_dir)]) == 1
    assert (f"java.lang.IllegalStateException: Batch size 2000012 < buffer size 4194304, but not processed {where}"
            in capsys.readouterr().err)
    # --config's broker name: every topic's max.message.bytes, and the cleaner's own limit
    assert segdex([*base, "--config", "message.max.bytes=3000000", str(log_dir)]) == 1
    assert "Batch size 2000012 < buffer size 3000000, but not processed" in capsys.readouterr().err


def test_a_damaged_batch_a_clean_start_serves_gets_what_kafkas_cleaner_makes_of_it(tmp_path: Path, capsys):
    """A damaged batch below the recovery point of a clean start: a bad magic byte fails Kafka's round (its
    ``CorruptRecordException``), so the partition is left as it was with an ``error`` row naming the file, the
    byte position and Kafka's exception, the other partition cleaned, exit 1, no traceback; a wrong CRC is read
    through (Kafka's cleaner checks none) and said so."""
    log_dir, now = _compacted_log_dir(tmp_path)
    first, position = _served_as_is(log_dir, lambda data, p: data.__setitem__(p + 16, 7))
    before = _tree(log_dir / "orders-1")
    args = ["clean", "--now", str(now), "--metadata", str(tmp_path / "meta"), "--topic-config",
            "orders:cleanup.policy=compact", "--apply", "--discard", str(log_dir)]
    assert segdex(args) == 1
    out, err = capsys.readouterr()
    kafka = "org.apache.kafka.common.errors.CorruptRecordException: Invalid magic found in record: 7"
    assert f"error: orders-1: Kafka's cleaner fails this round ({kafka}): a damaged batch at byte {position} of " \
           f"{first}" in err and "nothing was changed" in err, err
    assert "Traceback" not in err and "orders-0: cleaned: " in out
    assert _tree(log_dir / "orders-1") == before
    rows = MetadataStore(str(tmp_path / "meta")).read(CLEANING_TABLE.name).to_pylist()
    assert {r["partition"]: r["status"] for r in rows} == {0: "applied", 1: "error"}

    crc_dir, now = _compacted_log_dir(tmp_path / "crc")
    first, position = _served_as_is(crc_dir, lambda data, p: data.__setitem__(p + 18, data[p + 18] ^ 0x20))
    assert segdex(["clean", "--now", str(now), "--no-record", "--topic-config", "orders:cleanup.policy=compact",
                   str(crc_dir)]) == 0
    out = capsys.readouterr().out
    assert f"damaged, served as it is: {first} byte {position} (" in out, out
