"""``segdex recover``: a log dir left as Kafka's recovery followed by a clean shutdown leaves it.

Judged three ways: against the fixtures Kafka wrote (``recovered/`` index bytes, ``broker/`` snapshots and
leader-epoch-checkpoint, ``loader_check`` offsets); against Kafka's own load (``KafkaOracle load``: the full
``UnifiedLog``/``LogLoader`` start of 4.4.0 and 3.9.2, then a clean close) over generated partitions with many
idempotent and transactional producers, expiry at ``--now`` and several segments; and by Kafka starting on
segdex's output with the clean-shutdown marker and finding nothing to change.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from segdex.indexcore.config.log_config import LogConfig
from segdex.indexcore.log.checkpoints import read_offset_checkpoint
from segdex.indexcore.log.producer_snapshot import read_snapshot
from segdex.indexcore.tools.segment_writer import segment_name
from segdex.jobs.cli import main as segdex_main
from segdex.pipelines import recover, reindex
from segdex.pipelines.run_context import RunRequest
from tests.support.fixtures import fixture_case_names, load_case
from tests.support.generated_partitions import generated_partition
from tests.support.recovery_cases import INDEX_SUFFIXES, TXN_CASE_NOW, case_log_config

MARKER = b'{"version":0,"brokerEpoch":-1}'


def _topic(case: str) -> str:
    return case.replace("_", "-")


def _stage_fixtures(root: Path, fixtures: Path, corrupt: bool) -> dict[str, str]:
    """A log dir of fixture partitions holding only their ``.log`` files; returns {partition dir name: case}."""
    root.mkdir(parents=True)
    out = {}
    for case in fixture_case_names():
        if case.startswith("corrupt") != corrupt:
            continue
        src = fixtures / case / ("input" if (fixtures / case / "input").is_dir() else "broker")
        d = root / f"{_topic(case)}-0"
        d.mkdir()
        for log in src.glob("*.log"):
            shutil.copy(log, d)
        out[d.name] = case
    return out


def _topic_configs(cases: dict[str, str]) -> dict[str, LogConfig]:
    return {_topic(case): case_log_config(load_case(case)) for case in cases.values()}


def _files(d: Path) -> dict[str, bytes]:
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def test_recover_leaves_what_kafka_leaves_for_every_fixture(spark, kafka_fixtures: Path, tmp_path: Path):
    log_dir = tmp_path / "logs"
    cases = _stage_fixtures(log_dir, kafka_fixtures, corrupt=False)
    assert len(cases) >= 22
    summary = recover.run(spark, RunRequest([str(log_dir)], str(tmp_path / "meta"), LogConfig(), _topic_configs(cases),
                                            now_ms=TXN_CASE_NOW))
    assert summary.exit_status == 0, [o.messages for o in summary.run.outcomes]
    assert [d.marker for d in summary.log_dirs] == [True]
    assert (log_dir / ".kafka_cleanshutdown").read_bytes() == MARKER
    recovery_points = read_offset_checkpoint(log_dir / "recovery-point-offset-checkpoint")
    assert read_offset_checkpoint(log_dir / "log-start-offset-checkpoint") == {}  # every LSO is its first base
    snapshots_compared = 0
    for name, case in cases.items():
        part, fx = log_dir / name, kafka_fixtures / case
        c = load_case(case)
        # index files: recovered/ byte for byte, and no other
        mine = {p.name: p.read_bytes() for p in part.iterdir() if p.suffix in INDEX_SUFFIXES}
        want = {p.name: p.read_bytes() for p in (fx / "recovered").iterdir() if p.suffix in INDEX_SUFFIXES}
        assert mine == want, case
        # producer snapshots: broker/'s names and entries, except one at the log start offset, which Kafka's
        # load deletes (truncateAndReload: offsets <= logStartOffset); checked against Kafka in the oracle test
        lso = c["loader_check"]["logStartOffset"]
        broker_snaps = {p.name: p.read_bytes() for p in (fx / "broker").glob("*.snapshot")
                        if int(p.name[:20]) > lso}
        my_snaps = {p.name: p.read_bytes() for p in part.glob("*.snapshot")}
        assert sorted(my_snaps) == sorted(broker_snaps), case
        for snap, data in my_snaps.items():
            assert read_snapshot(data) == read_snapshot(broker_snaps[snap]), f"{case}/{snap}"
            assert data == broker_snaps[snap], f"{case}/{snap}"
            snapshots_compared += 1
        # leader-epoch-checkpoint as the broker left it, none where it has none (message.format.version 0.x)
        lec = fx / "broker" / "leader-epoch-checkpoint"
        if lec.exists():
            assert (part / "leader-epoch-checkpoint").read_bytes() == lec.read_bytes(), case
        else:
            assert not (part / "leader-epoch-checkpoint").exists(), case
        assert recovery_points[(_topic(case), 0)] == c["loader_check"]["logEndOffset"], case
    assert snapshots_compared >= 40
    # a second run changes nothing
    before = _files(log_dir)
    again = recover.run(spark, RunRequest([str(log_dir)], str(tmp_path / "meta"), LogConfig(), _topic_configs(cases),
                                          now_ms=TXN_CASE_NOW))
    assert again.exit_status == 0 and again.run.run_row.files_written == 0
    after = _files(log_dir)
    assert {k: v for k, v in after.items() if k != ".lock"} == {k: v for k, v in before.items() if k != ".lock"}


def test_txn_fixture_snapshot_keeps_the_producers_kafka_keeps(spark, kafka_fixtures: Path, tmp_path: Path):
    """v2_txn_two_producers keeps pids 4001-4003 (4001 with its transaction open at 952). A day later the
    single segment's end snapshot is the same: Kafka drops idle producers when it loads a snapshot (at the next
    segment, or the next start), not when it writes one after replaying a segment."""
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    part = log_dir / "txn-0"
    part.mkdir()
    shutil.copy(kafka_fixtures / "v2_txn_two_producers" / "broker" / segment_name(0), part)
    recover.run(spark, RunRequest([str(log_dir)], str(tmp_path / "meta"), LogConfig(), {}, now_ms=TXN_CASE_NOW))
    [snap] = part.glob("*.snapshot")
    first = snap.read_bytes()
    entries = read_snapshot(first)
    assert [e.producer_id for e in entries] == [4001, 4002, 4003]
    assert [e.current_txn_first_offset for e in entries] == [952, None, None]
    recover.run(spark,
                RunRequest([str(log_dir)], str(tmp_path / "meta"), LogConfig(), {}, now_ms=TXN_CASE_NOW + 86_400_000))
    assert snap.read_bytes() == first


@pytest.mark.spark
def test_a_corrupt_partition_gets_no_marker_and_keeps_its_log(kafka_fixtures: Path, tmp_path: Path, capsys):
    log_dir = tmp_path / "logs"
    cases = _stage_fixtures(log_dir, kafka_fixtures, corrupt=True)
    clean = log_dir / "fine-0"
    clean.mkdir()
    shutil.copy(kafka_fixtures / "v2_gzip" / "broker" / segment_name(0), clean)
    (log_dir / ".kafka_cleanshutdown").write_bytes(MARKER)  # a stale marker must go first
    logs = {p: p.read_bytes() for p in log_dir.rglob("*.log")}
    code = segdex_main(["recover", "--no-progress", "--metadata", str(tmp_path / "meta"), str(log_dir)])
    err = capsys.readouterr().err
    assert code == 1
    assert not (log_dir / ".kafka_cleanshutdown").exists()
    assert {p: p.read_bytes() for p in log_dir.rglob("*.log")} == logs
    for name in cases:
        assert f"{name}/00000000000000000000.log" in err
        assert not list((log_dir / name).glob("*.snapshot"))
    assert "not clean:" in err and "no clean-shutdown marker" in err
    # the clean partition is done, its recovery point at its end; the corrupt ones keep theirs (none: 0)
    rp = read_offset_checkpoint(log_dir / "recovery-point-offset-checkpoint")
    assert rp == {("fine", 0): 1533}
    assert list(clean.glob("*.snapshot"))


def test_bad_input_gets_a_clear_error(tmp_path: Path, capsys):
    assert segdex_main(["recover", "--now", "-5", str(tmp_path)]) == 2
    assert "Invalid value -5 for --now: Value must be at least 0" in capsys.readouterr().err
    assert segdex_main(["recover", str(tmp_path / "missing")]) == 2
    assert "missing" in capsys.readouterr().err


def test_a_corrupt_leader_epoch_checkpoint_is_an_error_row(spark, kafka_fixtures: Path, tmp_path: Path):
    log_dir = tmp_path / "logs"
    part = log_dir / "t-0"
    part.mkdir(parents=True)
    shutil.copy(kafka_fixtures / "v2_gzip" / "broker" / segment_name(0), part)
    (part / "leader-epoch-checkpoint").write_text("0\n5\n0 0\n")
    summary = recover.run(spark, RunRequest([str(log_dir)], str(tmp_path / "meta"), LogConfig(), {}, now_ms=0))
    assert summary.exit_status == 1 and not summary.log_dirs[0].marker
    [o] = summary.run.outcomes
    assert o.partition.status == "error" and "leader-epoch-checkpoint" in o.partition.reason


# ------------------------------------------------------------------ against Kafka's own load

def _same_index(kafka: bytes, mine: bytes) -> bool:
    """Kafka 4.x leaves the active segment's index at its preallocated size (zeros after the entries)."""
    return kafka[: len(mine)] == mine and not kafka[len(mine):].strip(b"\0")


@pytest.fixture(scope="module")
def generated_log_dirs(tmp_path_factory, spark):
    """40 generated partitions in one log dir, recovered by segdex (one Spark run); a pristine copy beside."""
    root = tmp_path_factory.mktemp("generated")
    rng = random.Random(20261124)
    t0 = 1_700_000_000_000
    now = t0 + 4 * 86_400_000  # a clock at which some producers are idle for more than a day
    pristine, mine = root / "pristine", root / "segdex"
    configs = {}
    for i in range(40):
        d = pristine / f"gen{i}-0"
        d.mkdir(parents=True)
        for base, data in generated_partition(rng, t0).items():
            (d / segment_name(base)).write_bytes(data)
        configs[f"gen{i}"] = LogConfig().with_overrides({"index.interval.bytes": str(rng.choice([1, 200, 4096]))})
    shutil.copytree(pristine, mine)
    summary = recover.run(spark, RunRequest([str(mine)], str(root / "meta"), LogConfig(), configs, now_ms=now))
    assert summary.exit_status == 0, [o.messages for o in summary.run.outcomes]
    # the same partitions split into one task per segment, completed in order by a second wave (issue 29)
    split = root / "segdex-split"
    shutil.copytree(pristine, split)
    spans: list = []
    plan = reindex.plan_spans

    def plan_spans(tasks, slots):
        planned = plan(tasks, 100_000)
        spans.extend(planned[1])
        return planned

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(reindex, "SPAN_MIN_BYTES", 0)
        patch.setattr(reindex, "plan_spans", plan_spans)
        summary = recover.run(spark,
                              RunRequest([str(split)], str(root / "meta-split"), LogConfig(), configs, now_ms=now))
    assert summary.exit_status == 0, [o.messages for o in summary.run.outcomes]
    assert len(spans) > 40  # most generated partitions have several segments
    return pristine, {"whole": mine, "split": split}, configs, now


@pytest.mark.parametrize("tasks", ["whole", "split"])
def test_recover_equals_kafkas_own_load_and_kafka_starts_clean_on_it(oracle, generated_log_dirs, tmp_path, tasks):
    """Kafka's own load of each generated partition against segdex's recover, with each partition one task
    (``whole``) and split into one task per segment (``split``)."""
    pristine, recovered, configs, now = generated_log_dirs
    mine = recovered[tasks]
    kafka_dir, started = tmp_path / "kafka", tmp_path / "started"
    shutil.copytree(pristine, kafka_dir)
    shutil.copytree(mine, started)
    recovery_points = read_offset_checkpoint(mine / "recovery-point-offset-checkpoint")
    producers = 0
    for part in sorted(pristine.iterdir()):
        cfg = configs[part.name[:-2]]
        kafka_cfg = {"index.interval.bytes": cfg.index_interval_bytes}
        answer = kafka_oracle_load(oracle, kafka_dir / part.name, now, kafka_cfg)
        theirs, ours = kafka_dir / part.name, mine / part.name
        assert recovery_points[(part.name[:-2], 0)] == answer["logEndOffset"], part.name
        snaps = sorted(p.name for p in theirs.glob("*.snapshot"))
        assert snaps == sorted(p.name for p in ours.glob("*.snapshot")), part.name
        for name in snaps:
            assert (ours / name).read_bytes() == (theirs / name).read_bytes(), f"{part.name}/{name}"
            producers += len(read_snapshot((ours / name).read_bytes()))
        assert (ours / "leader-epoch-checkpoint").read_bytes() == (theirs / "leader-epoch-checkpoint").read_bytes()
        for p in theirs.iterdir():
            if p.suffix in INDEX_SUFFIXES:
                assert _same_index(p.read_bytes(), (ours / p.name).read_bytes()), f"{part.name}/{p.name}"
        assert sorted(p.name for p in ours.iterdir() if p.suffix in INDEX_SUFFIXES) == sorted(
            p.name for p in theirs.iterdir() if p.suffix in INDEX_SUFFIXES)
        # Kafka starting on segdex's dir with the marker: same offsets, no snapshot or epoch file rewritten
        before = {p.name: p.read_bytes() for p in (started / part.name).iterdir()
                  if p.suffix == ".snapshot" or p.name == "leader-epoch-checkpoint"}
        clean = kafka_oracle_load(oracle, started / part.name, now, kafka_cfg, clean=True,
                                  recovery_point=recovery_points[(part.name[:-2], 0)])
        assert (clean["logStartOffset"], clean["logEndOffset"]) == (answer["logStartOffset"], answer["logEndOffset"])
        after = {p.name: p.read_bytes() for p in (started / part.name).iterdir()
                 if p.suffix == ".snapshot" or p.name == "leader-epoch-checkpoint"}
        assert after == before, part.name
    assert producers > 100  # the comparison covered real producer tables, not empty files


def kafka_oracle_load(oracle, d: Path, now: int, config: dict, clean: bool = False, recovery_point: int = 0) -> dict:
    answer = oracle.load(d, now, recovery_point=recovery_point, clean=clean, config=config)
    assert "exception" not in answer, answer
    return answer


def test_fixture_snapshots_equal_kafkas_load(oracle, kafka_fixtures: Path, spark, tmp_path: Path):
    """Where a fixture's broker/ differs from a load (v2_base_offset_1000000's snapshot at the log start
    offset), Kafka's load is the judge: segdex leaves exactly the snapshot files Kafka's load leaves."""
    log_dir = tmp_path / "logs"
    cases = _stage_fixtures(log_dir, kafka_fixtures, corrupt=False)
    kafka_dir = tmp_path / "kafka"
    shutil.copytree(log_dir, kafka_dir)
    configs = _topic_configs(cases)
    recover.run(spark, RunRequest([str(log_dir)], str(tmp_path / "meta"), LogConfig(), configs, now_ms=TXN_CASE_NOW))
    for name, case in cases.items():
        c = load_case(case)
        cfg = {k: c["topic_config"][k] for k in ("index.interval.bytes", "segment.index.bytes")}
        kafka_oracle_load(oracle, kafka_dir / name, TXN_CASE_NOW, cfg)
        theirs = {p.name: p.read_bytes() for p in (kafka_dir / name).glob("*.snapshot")}
        assert {p.name: p.read_bytes() for p in (log_dir / name).glob("*.snapshot")} == theirs, case
        if not configs[_topic(case)].legacy_record_version:
            assert ((log_dir / name / "leader-epoch-checkpoint").read_bytes()
                    == (kafka_dir / name / "leader-epoch-checkpoint").read_bytes()), case


# ------------------------------------------------------------------ --truncate --quarantine

def _corrupt_middle_of_multi_segment(kafka_fixtures: Path, part: Path, indexes: bool) -> tuple[int, list[str]]:
    """multi_segment_partition_retention's logs with one byte of a batch in the third segment inverted. With
    the broker's index files beside them, Kafka's recovery pass cuts that segment there and deletes the five
    after it; with ``.log`` files only, Kafka recovers the segment as it opens it, cuts it, and keeps the later
    ones (an offset gap). Returns (cut position, later log names)."""
    part.mkdir(parents=True)
    for f in sorted((kafka_fixtures / "multi_segment_partition_retention" / "broker").iterdir()):
        if f.suffix == ".log" or (indexes and f.suffix in (".index", ".timeindex")):
            shutil.copy(f, part)
    logs = sorted(p.name for p in part.glob("*.log"))
    target = part / logs[2]
    data = bytearray(target.read_bytes())
    pos = 0
    for _ in range(5):  # the sixth batch
        pos += 12 + int.from_bytes(data[pos + 8:pos + 12], "big")
    data[pos + 70] ^= 0xFF  # inside its records: the CRC no longer matches
    target.write_bytes(bytes(data))
    return pos, logs[3:]


@pytest.mark.spark
def test_truncate_cuts_as_kafka_and_keeps_every_byte(kafka_fixtures: Path, tmp_path: Path, capsys):
    log_dir, quarantine = tmp_path / "logs", tmp_path / "quarantine"
    cases = _stage_fixtures(log_dir, kafka_fixtures, corrupt=True)
    cut_at, later = _corrupt_middle_of_multi_segment(kafka_fixtures, log_dir / "multi-0", indexes=True)
    before = {p.relative_to(log_dir).as_posix(): p.read_bytes() for p in log_dir.rglob("*.log")}
    topic_args = [f"--topic-config={_topic(case)}:{k}={load_case(case)['topic_config'][k]}"
                  for case in cases.values() for k in ("index.interval.bytes", "segment.index.bytes")]
    code = segdex_main(["recover", "--no-progress", "--truncate", "--quarantine", str(quarantine), *topic_args,
                        "--metadata", str(tmp_path / "meta"), str(log_dir)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert (log_dir / ".kafka_cleanshutdown").read_bytes() == MARKER
    assert "truncated:" in err
    for name, case in cases.items():  # each .log and its indexes exactly as Kafka's recovery left recovered/
        for p in (kafka_fixtures / case / "recovered").iterdir():
            if p.suffix in (".log", *INDEX_SUFFIXES):
                assert (log_dir / name / p.name).read_bytes() == p.read_bytes(), f"{case}/{p.name}"
    multi = log_dir / "multi-0"
    assert sorted(p.name for p in multi.glob("*.log")) == sorted(before_name.split("/")[1] for before_name in before
                                                                 if before_name.startswith("multi-0/"))[:3]
    assert len((multi / segment_name(410)).read_bytes()) == cut_at
    # every removed byte is in the quarantine, and the manifest's commands put it back
    manifests = sorted(quarantine.rglob("manifest.json"))
    assert len(manifests) == len(cases) + 1
    restored = tmp_path / "restored"
    shutil.copytree(log_dir, restored)
    for m in manifests:
        manifest = json.loads(m.read_text())
        for piece in manifest["pieces"]:
            assert hashlib.sha256(Path(piece["quarantined"]).read_bytes()).hexdigest() == piece["sha256"]
            cmd = piece["restore"].replace(str(log_dir), str(restored))
            subprocess.run(["bash", "-c", cmd], check=True)
    assert {p.relative_to(restored).as_posix(): p.read_bytes() for p in restored.rglob("*.log")} == before
    assert {piece["source"].split("/")[-1] for piece in json.loads(
        (quarantine.glob("*/multi-0/manifest.json").__next__()).read_text())["pieces"] if piece["kind"] == "file"
            and piece["source"].endswith(".log")} == set(later)


@pytest.mark.spark
def test_truncate_needs_a_quarantine_outside_the_log_dir(tmp_path: Path, capsys):
    log_dir = tmp_path / "logs"
    (log_dir / "t-0").mkdir(parents=True)
    assert segdex_main(["recover", "--truncate", str(log_dir)]) == 2
    assert "go together" in capsys.readouterr().err
    assert segdex_main(["recover", "--truncate", "--quarantine", str(log_dir / "q"), "--no-progress",
                        "--metadata", str(tmp_path / "meta"), str(log_dir)]) == 2
    assert "outside every log dir" in capsys.readouterr().err
    assert not (log_dir / "q").exists()


@pytest.mark.parametrize("indexes", [True, False], ids=["with-indexes", "logs-only"])
def test_truncated_dirs_equal_kafkas_own_load(oracle, kafka_fixtures: Path, spark, tmp_path: Path, indexes: bool):
    """Kafka's load of the damaged dirs (truncation included) and segdex's --truncate leave the same .log bytes,
    segments, snapshots and leader epochs, with and without index files (Kafka's two truncation paths)."""
    log_dir = tmp_path / "logs"
    cases = _stage_fixtures(log_dir, kafka_fixtures, corrupt=True)
    _corrupt_middle_of_multi_segment(kafka_fixtures, log_dir / "multi-0", indexes)
    kafka_dir = tmp_path / "kafka"
    shutil.copytree(log_dir, kafka_dir)
    summary = recover.run(spark, RunRequest([str(log_dir)], str(tmp_path / "meta"), LogConfig(), _topic_configs(cases),
                                            now_ms=TXN_CASE_NOW, quarantine=str(tmp_path / "q")))
    assert summary.exit_status == 0
    for part in sorted(p for p in log_dir.iterdir() if p.is_dir()):
        case = cases.get(part.name, "multi_segment_partition_retention")
        cfg = {k: load_case(case)["topic_config"][k] for k in ("index.interval.bytes", "segment.index.bytes")}
        kafka_oracle_load(oracle, kafka_dir / part.name, TXN_CASE_NOW, cfg)
        mine = {p.name: p.read_bytes() for p in part.iterdir() if p.suffix in (".log", ".snapshot")}
        theirs = {p.name: p.read_bytes() for p in (kafka_dir / part.name).iterdir()
                  if p.suffix in (".log", ".snapshot")}
        assert mine == theirs, part.name
        assert ((part / "leader-epoch-checkpoint").read_bytes()
                == (kafka_dir / part.name / "leader-epoch-checkpoint").read_bytes()), part.name
