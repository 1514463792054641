"""The native scan kernel against its Python twin ``scan_simple``: same state, same index bytes, same recovery."""

from __future__ import annotations

import dataclasses
import mmap
import random
import threading
import zlib
from array import array
from pathlib import Path

import pytest

from segdex.indexcore.index.abstract_index import DEFAULT_MAX_INDEX_SIZE
from segdex.indexcore.log import scan
from segdex.indexcore.log.log_segment import recover
from segdex.indexcore.log.producer_state import ProducerStateManager
from segdex.indexcore.log.scan import native as native_loader
from segdex.indexcore.log.scan.python_kernel import scan_simple
from segdex.indexcore.log.scan.state import N_SLOTS, S_END
from segdex.indexcore.record.file_records import open_log
from segdex.indexcore.record.record_batch import CompressionType
from segdex.indexcore.tools.segment_writer import build_batch, build_legacy, uniform_batches
from tests.support.scan_states import scan_state

INTERVALS = [0, 1, 100, 4096]
INDEX_SIZES = [DEFAULT_MAX_INDEX_SIZE, 64, 24, 8]


@pytest.fixture(scope="module")
def native():
    """The native kernel; its absence is a failure (the set-up builds it), not a reason to skip."""
    assert scan.native_available(), f"native kernel not built: {native_loader.error()}"
    return scan.kernel(True)


def _both(native, buf, state: array, offset_data: bytes = b"", time_data: bytes = b"",
          max_index_size: int = DEFAULT_MAX_INDEX_SIZE) -> tuple:
    """Run both kernels from copies of the same inputs; return (native outputs, python outputs)."""
    outs = []
    for k in (native, scan_simple):
        st, od, td = array("q", state), bytearray(offset_data), bytearray(time_data)
        k(st, buf, od, max_index_size // 8, td, max_index_size // 12)
        outs.append((list(st), bytes(od), bytes(td)))
    return outs[0], outs[1]


def _fields(r) -> dict:
    out = {}
    for f in dataclasses.fields(r):
        v = getattr(r, f.name)
        if f.name in ("offset_index", "time_index"):
            v = bytes(v.data)
        elif f.name == "txn_index":
            v = v.to_bytes()
        out[f.name] = v
    return out


def _recover_both(buf, base: int, **kwargs) -> tuple[dict, dict]:
    results = []
    for native in (True, False):
        kw = dict(kwargs)
        if "producer_state" in kw:
            kw["producer_state"] = kw["producer_state"].reloaded(None)  # a copy each kernel may change
        if "leader_epochs" in kw:
            kw["leader_epochs"] = list(kw["leader_epochs"])
        results.append(_fields(recover(buf, base, native=native, **kw)))
    return results[0], results[1]


def _assert_same(buf, base: int, label: str = "", **kwargs) -> dict:
    a, b = _recover_both(buf, base, **kwargs)
    assert a == b, f"{label}: native and Python recovery differ"
    return a


def _check_kernel(native, buf, base: int, interval: int, max_index_size: int, epochs=(-1, 0)) -> None:
    """Kernel-level diff from position 0 (recover() exercises later start positions), for two leader epochs."""
    for epoch in epochs:
        state = scan_state(len(buf), base, interval, epoch)
        n, p = _both(native, buf, state, max_index_size=max_index_size)
        assert n == p


# ---------------------------------------------------------------- Kafka fixtures


def test_fixture_cases(native, kafka_fixtures: Path, fixture_case: str):
    """Every fixture log (broker copy, damaged input, recovered copy) under several configurations."""
    logs = sorted((kafka_fixtures / fixture_case).glob("*/*.log"))
    for log in logs:
        base = int(log.name[:20])
        with open_log(log) as buf:
            for interval in INTERVALS:
                for size in INDEX_SIZES:
                    _check_kernel(native, buf, base, interval, size)
                    _assert_same(buf, base, f"{log} interval={interval} index={size}",
                                 index_interval_bytes=interval, max_index_size=size)


def test_fixture_partitions_in_order(native, kafka_fixtures: Path, fixture_case: str):
    """Producer state and leader epochs carried across a partition's segments, as partition recovery does."""
    for part in sorted({p.parent for p in (kafka_fixtures / fixture_case).glob("broker/*.log")}):
        interval = 4096
        states = [ProducerStateManager(), ProducerStateManager()]
        epochs: list[list] = [[], []]
        for log in sorted(part.glob("*.log")):
            base = int(log.name[:20])
            with open_log(log) as buf:
                got = [
                    _fields(recover(buf, base, interval, producer_state=states[i], leader_epochs=epochs[i],
                                    native=nat))
                    for i, nat in enumerate((True, False))
                ]
            assert got[0] == got[1], str(log)
        assert states[0] == states[1] and epochs[0] == epochs[1]


# ---------------------------------------------------------------- generated segments


def _mixed_segment(seed: int, base: int = 0, n: int = 120, epoch_every: int = 0, txn: bool = False,
                   codecs: bool = False, legacy: bool = False, jitter: int = 0) -> bytes:
    rng = random.Random(seed)
    out = bytearray()
    offset, ts, epoch = base, 1_700_000_000_000, 0
    open_txn = False
    for i in range(n):
        if epoch_every and i and i % epoch_every == 0:
            epoch += rng.choice([1, 1, 2])
        ts += rng.randint(0, 40)
        count = rng.randint(1, 3)
        recs = [(ts + rng.randint(-jitter, jitter), b"k%d" % j, rng.randbytes(rng.randint(0, 300)))
                for j in range(count)]
        kind = rng.random()
        if legacy and kind < 0.1:
            out += build_legacy(offset, recs, magic=1, compression=rng.choice([0, 1]))
        elif txn and kind < 0.35:
            if open_txn and rng.random() < 0.5:
                out += build_batch(offset, [], control=(rng.choice(["ABORT", "COMMIT"]), 3), control_timestamp=ts,
                                   producer_id=77, producer_epoch=0, partition_leader_epoch=epoch)
                open_txn = False
                offset += 1
                continue
            out += build_batch(offset, recs, producer_id=77, producer_epoch=0, base_sequence=i,
                               is_transactional=True, partition_leader_epoch=epoch)
            open_txn = True
        else:
            codec = rng.choice(list(CompressionType)) if codecs else 0
            pid = rng.choice([-1, 5]) if txn else -1
            out += build_batch(offset, recs, compression=codec, partition_leader_epoch=epoch, producer_id=pid,
                               producer_epoch=0 if pid >= 0 else -1, base_sequence=i if pid >= 0 else -1)
        offset += count
    return bytes(out)


GENERATED = {
    "plain": dict(),
    "jitter": dict(jitter=5000),
    "epochs": dict(epoch_every=17),
    "txn": dict(txn=True, epoch_every=40),
    "codecs": dict(codecs=True),
    "legacy_mixed": dict(legacy=True),
    "base_offset": dict(base=1_000_000),
}


def _corruptions(data: bytes, rng: random.Random):
    yield "intact", data
    for _ in range(12):
        i = rng.randrange(len(data))
        flipped = bytearray(data)
        flipped[i] ^= 1 << rng.randrange(8)
        yield f"flip@{i}", bytes(flipped)
    for _ in range(6):
        cut = rng.randrange(len(data))
        yield f"truncate@{cut}", data[:cut]
    yield "zero_tail", data + bytes(5000)
    yield "short_zero_tail", data + bytes(30)
    yield "garbage_tail", data + rng.randbytes(200)


@pytest.mark.parametrize("name", list(GENERATED))
def test_generated_with_corruptions(native, name: str):
    kwargs = GENERATED[name]
    base = kwargs.get("base", 0)
    seed = zlib.crc32(name.encode())  # stable across runs, unlike hash(name)
    rng = random.Random(seed)
    data = _mixed_segment(seed & 0xFFFF, **kwargs)
    for label, buf in _corruptions(data, rng):
        for interval in (0, 100, 4096):
            for size in (DEFAULT_MAX_INDEX_SIZE, 64):
                _check_kernel(native, buf, base, interval, size)
                _assert_same(buf, base, f"{name}/{label}/{interval}/{size}", index_interval_bytes=interval,
                             max_index_size=size)


def test_index_full_tiny_index(native):
    data = b"".join(uniform_batches(400, value_size=50))
    for size in (0, 8, 12, 16, 24, 36, 64, 100):
        r = _assert_same(data, 0, f"index bytes {size}", index_interval_bytes=0, max_index_size=size)
        if size < 100:
            assert r["error"] and "Full" in r["error"]


def test_offset_overflow_and_backwards(native):
    parts = [build_batch(0, [(1, b"a", b"b")]), build_batch(1, [(2, b"a", b"b")]),
             build_batch(2**31, [(3, b"a", b"b")])]
    for interval in (0, 4096):
        r = _assert_same(b"".join(parts), 0, "overflow", index_interval_bytes=interval)
        assert r["error"] and "Overflow" in r["error"]
    # A batch below the segment's base offset (negative relative offset).
    r = _assert_same(b"".join([build_batch(100, [(1, b"a", b"b")]), build_batch(5, [(2, b"a", b"b")])]), 100, "neg")
    assert r["error"]
    # Offsets going backwards: the offset index refuses the entry.
    back = b"".join(build_batch(o, [(t, b"k", b"v" * 20)]) for t, o in enumerate([10, 20, 30, 15, 40]))
    r = _assert_same(back, 0, "backwards", index_interval_bytes=0)
    assert r["error"]
    # Time index offsets going backwards while timestamps grow.
    tb = b"".join(build_batch(o, [(t, b"k", b"v")]) for o, t in [(10, 1), (20, 2), (15, 5), (30, 9)])
    _assert_same(tb, 0, "time backwards", index_interval_bytes=0)
    # int64 wrap-around of baseOffset + lastOffsetDelta: the kernel leaves it to the reference loop.
    wrap = build_batch(2**63 - 2, [(1, b"a", b"b"), (2, b"a", b"b")])
    fixed = bytearray(wrap)
    fixed[23:27] = (10).to_bytes(4, "big")
    st = scan_state(len(wrap), 2**63 - 20, 0, 0)
    native(st, bytes(fixed), bytearray(), 100, bytearray(), 100)
    assert st[0] == 0


def test_prefilled_indexes_and_midfile_start(native):
    """The kernel continues an index it did not write and a state Python left mid-file."""
    data = b"".join(uniform_batches(300, value_size=40, start_timestamp=5000))
    state = scan_state(len(data), 0, 200, 0)
    scan_simple(state, data, od := bytearray(), 1000, td := bytearray(), 1000)
    assert od
    mid = array("q", state)
    # Rewind to the middle: take Python's state after a scan of the first half.
    half = scan_state(len(data) // 2, 0, 200, 0)
    od1, td1 = bytearray(), bytearray()
    scan_simple(half, data, od1, 1000, td1, 1000)
    half[S_END] = len(data)
    n, p = _both(native, data, half, bytes(od1), bytes(td1), 8000)
    assert n == p and n[1] == bytes(od) and n[2] == bytes(td) and list(mid) == n[0]


@pytest.mark.parametrize("kind", ["bytes", "bytearray", "mmap", "memoryview"])
def test_buffer_types(native, tmp_path: Path, kind: str):
    data = _mixed_segment(3, n=60)
    path = tmp_path / "x.log"
    path.write_bytes(data)
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        buf = {"bytes": data, "bytearray": bytearray(data), "mmap": m, "memoryview": memoryview(data)}[kind]
        n, p = _both(native, buf, scan_state(len(data), 0, 100, 0))
        assert n == p and n[0][0] == len(data)


def test_argument_checks(native):
    data = b"".join(uniform_batches(3))
    with pytest.raises(TypeError):
        native(array("i", [0] * N_SLOTS), data, bytearray(), 10, bytearray(), 10)
    with pytest.raises(TypeError):
        native(scan_state(len(data), 0, 0, 0), data, b"", 10, bytearray(), 10)
    with pytest.raises(ValueError):
        native(scan_state(len(data) + 1, 0, 0, 0), data, bytearray(), 10, bytearray(), 10)


def test_threads(native):
    """The scan releases the GIL; concurrent scans of different buffers stay independent and correct."""
    datas = [b"".join(uniform_batches(3000, value_size=100, seed=s, timestamp_step=s + 1)) for s in range(4)]
    expected = [_both(native, d, scan_state(len(d), 0, 100, 0))[1] for d in datas]
    got: list = [None] * 4

    def run(i: int) -> None:
        st, od, td = scan_state(len(datas[i]), 0, 100, 0), bytearray(), bytearray()
        native(st, datas[i], od, 10**6, td, 10**6)
        got[i] = (list(st), bytes(od), bytes(td))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == expected


def test_large_index_growth(native):
    """Many entries: the kernel grows its bytearrays past the first reservation."""
    data = b"".join(uniform_batches(20000, value_size=10))
    n, p = _both(native, data, scan_state(len(data), 0, 0, 0))
    assert n == p and len(n[1]) == 8 * 19999


# ---------------------------------------------------------------- the CRC helper thread (ranges >= 4 MiB)

HELPER_BLOCK = 256 << 10


@pytest.fixture(scope="module")
def kernels(native):
    from segdex.indexcore.log.scan import _fastscan

    crc = native_loader.find_crc32c()
    return {1: _fastscan.make_kernel(crc.address, crc.library, crc.path, threads=1, raw=crc.raw),
            2: _fastscan.make_kernel(crc.address, crc.library, crc.path, threads=2, raw=crc.raw)}


@pytest.fixture(scope="module")
def big_segment() -> bytes:
    """~6 MiB of batches of varied sizes (so block edges fall anywhere inside batches)."""
    rng = random.Random(11)
    out = bytearray()
    offset, ts = 0, 1_700_000_000_000
    while len(out) < 6 << 20:
        n = rng.randint(1, 4)
        out += build_batch(offset, [(ts + rng.randint(-50, 50), b"k", rng.randbytes(rng.randint(10, 3000)))
                                    for _ in range(n)])
        offset += n
        ts += 7
    return bytes(out)


def _batch_starts(data: bytes) -> list[int]:
    starts, pos = [], 0
    while pos < len(data):
        starts.append(pos)
        pos += int.from_bytes(data[pos + 8:pos + 12], "big") + 12
    return starts


def _kernel_diff(kernels, buf, start_state: array, max_index_size: int = DEFAULT_MAX_INDEX_SIZE) -> tuple:
    ref = None
    for k in (scan_simple, kernels[1], kernels[2]):
        st, od, td = array("q", start_state), bytearray(), bytearray()
        k(st, buf, od, max_index_size // 8, td, max_index_size // 12)
        got = (list(st), bytes(od), bytes(td))
        if ref is None:
            ref = got
        assert got == ref, f"{k!r} differs from scan_simple"
    return ref


def test_helper_thread_corruptions(kernels, big_segment: bytes):
    """Damage in blocks the helper checks (odd) and blocks the scan checks itself (even), at block edges too."""
    data = big_segment
    starts = _batch_starts(data)
    rng = random.Random(5)
    spots = [100, HELPER_BLOCK - 3, HELPER_BLOCK + 5, 3 * HELPER_BLOCK + 1000, 2 * HELPER_BLOCK + 7,
             len(data) - 20] + [rng.randrange(len(data)) for _ in range(8)]
    cases = [("intact", data), ("truncated", data[:len(data) - 1000]), ("zero_tail", data + bytes(100_000))]
    for spot in spots:
        flipped = bytearray(data)
        flipped[spot] ^= 0x40
        cases.append((f"flip@{spot}", bytes(flipped)))
    # A length field that breaks the walk inside an odd block.
    b = next(s for s in starts if s > HELPER_BLOCK * 5)
    broken = bytearray(data)
    broken[b + 8:b + 12] = (10).to_bytes(4, "big")
    cases.append(("bad_length", bytes(broken)))
    for label, buf in cases:
        for start in (0, starts[3]):
            state = scan_state(len(buf), 0, 4096, 0)
            state[0] = start
            final = _kernel_diff(kernels, buf, state)
            assert final[0][0] <= len(buf), label
        _assert_same(buf, 0, label)


def test_helper_thread_early_stops(kernels, big_segment: bytes):
    """The scan stops early (epoch change, full index, transactional batch) while the helper runs ahead."""
    data = big_segment
    # Full index after a few entries: the scan stops long before the end.
    for size in (8, 64, 4096):
        _kernel_diff(kernels, data, scan_state(len(data), 0, 0, 0), max_index_size=size)
    # The accepted epoch differs from every batch: nothing is scanned.
    _kernel_diff(kernels, data, scan_state(len(data), 0, 4096, 3))
    # A transactional batch and a new epoch in the middle.
    starts = _batch_starts(data)
    middle = starts[len(starts) // 2]
    offset = int.from_bytes(data[middle:middle + 8], "big")
    end_of_middle = starts[len(starts) // 2 + 1]
    for extra in (dict(is_transactional=True, producer_id=3, producer_epoch=0, base_sequence=0),
                  dict(partition_leader_epoch=1)):
        rebuilt = build_batch(offset, [(1, b"k", b"v" * (end_of_middle - middle - 80))], **extra)
        buf = data[:middle] + rebuilt + data[end_of_middle:]
        final = _kernel_diff(kernels, buf, scan_state(len(buf), 0, 4096, 0))
        assert final[0][0] == middle
        _assert_same(buf, 0, str(extra))
