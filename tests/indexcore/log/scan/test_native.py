"""Loading the native scan kernel (``scan.native.load``) in the test process, from a clean slate.

The kernel is loaded once per process and cached; each test here starts from an unloaded module (the cache
reset, then restored by monkeypatch). Expected answers: the CRC-32C check value of "123456789" (0xE3069283, the
value every CRC catalogue gives for CRC-32C/Castagnoli), and the Python kernel's recovery of the same bytes."""

from __future__ import annotations

import ctypes
import os

import pytest

from segdex.indexcore.log.log_segment import recover
from segdex.indexcore.log.scan import kernel, native, use_single_threaded
from segdex.indexcore.tools.segment_writer import build_batch

CHECK = 0xE3069283  # CRC-32C("123456789")


@pytest.fixture
def unloaded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native, "_native", None)
    monkeypatch.setattr(native, "_native_error", None)
    monkeypatch.setattr(native, "_crc", None)
    monkeypatch.setattr(native, "_single", None)
    monkeypatch.delenv("SEGDEX_NO_NATIVE", raising=False)
    monkeypatch.delenv("SEGDEX_SCAN_THREADS", raising=False)


def _segment() -> bytes:
    return b"".join(build_batch(i * 3, [(1_700_000_000_000 + i, b"k", b"v" * (40 * i + 1))] * 3) for i in range(40))


def test_disabled_by_the_environment_for_the_whole_process(unloaded, monkeypatch):
    monkeypatch.setenv("SEGDEX_NO_NATIVE", "1")
    assert native.load() is None
    assert native.error() == "disabled by SEGDEX_NO_NATIVE"
    with pytest.raises(RuntimeError) as e:
        kernel(True)
    assert str(e.value) == "native scan kernel unavailable: disabled by SEGDEX_NO_NATIVE"
    with pytest.raises(RuntimeError):  # asked for by name, the native kernel is not replaced by the Python one
        recover(_segment(), 0, native=True)
    assert recover(_segment(), 0).valid_bytes == len(_segment())  # not asked for: the Python kernel
    monkeypatch.delenv("SEGDEX_NO_NATIVE")
    assert native.load() is None  # the first answer stands for the process


def test_loaded_once_and_scans_as_the_python_kernel(unloaded):
    k = native.load()
    assert k is not None and native.error() is None
    assert native.load() is k and kernel(None) is k
    assert repr(k).endswith(f"crc32c_hw (raw) from {native.find_crc32c().path!r}>")  # where its CRC comes from
    # by default a CRC helper thread where the host has a second CPU
    assert k.threads == (2 if os.sysconf("SC_NPROCESSORS_ONLN") > 1 else 1)
    buf = _segment()
    ours, python = recover(buf, 0, index_interval_bytes=256, native=True), recover(buf, 0, index_interval_bytes=256,
                                                                                     native=False)
    assert ours.offset_index.to_bytes() == python.offset_index.to_bytes() != b""
    assert ours.time_index.to_bytes() == python.time_index.to_bytes() != b""
    assert (ours.valid_bytes, ours.last_offset, ours.batch_count) == (len(buf), 119, 40)


def test_the_crc32c_functions_found_compute_crc32c(monkeypatch: pytest.MonkeyPatch):
    """First the crc32c package's hardware function (the register in and out, uninverted), then, when asked
    (SEGDEX_CRC32C_EXTEND), Google's crc32c_extend; both give CRC-32C's check value, and kernels made on either
    recover the same bytes alike."""
    from segdex.indexcore.log.scan import _fastscan

    fast = native.find_crc32c()
    assert (fast.symbol, fast.raw) == ("_crc32c_hw_adler", True) and "crc32c" in fast.path
    assert fast.address == ctypes.cast(getattr(fast.library, fast.symbol), ctypes.c_void_p).value
    fn = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_uint32, ctypes.c_char_p, ctypes.c_size_t)(fast.address)
    assert fn(0xFFFFFFFF, b"123456789", 9) ^ 0xFFFFFFFF == CHECK
    monkeypatch.setenv("SEGDEX_CRC32C_EXTEND", "1")
    google = native.find_crc32c()
    assert (google.symbol, google.raw) == ("crc32c_extend", False) and "crc32c" in google.path
    extend = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_uint32, ctypes.c_char_p, ctypes.c_size_t)(google.address)
    assert extend(0, b"123456789", 9) == CHECK
    kernels = [_fastscan.make_kernel(c.address, c.library, c.path, threads=1, raw=c.raw) for c in (fast, google)]
    with pytest.raises(ImportError, match="does not compute CRC-32C in the convention given"):
        _fastscan.make_kernel(fast.address, fast.library, fast.path, raw=False)  # the wrong convention is refused
    from array import array

    from segdex.indexcore.log.scan.state import N_SLOTS, S_END, S_LAST_OFFSET, S_POSITION

    buf = _segment()
    for k in kernels:
        state = array("q", [0] * N_SLOTS)
        state[S_END], state[S_LAST_OFFSET] = len(buf), -1
        k(state, buf, bytearray(), 1000, bytearray(), 1000)
        assert state[S_POSITION] == len(buf)
    corrupt = bytearray(buf)
    corrupt[70] ^= 1  # a byte of the first batch's records: its CRC no longer matches
    for k in kernels:
        state = array("q", [0] * N_SLOTS)
        state[S_END], state[S_LAST_OFFSET] = len(buf), -1
        k(state, bytes(corrupt), bytearray(), 1000, bytearray(), 1000)
        assert state[S_POSITION] == 0


def test_the_single_threaded_kernel(unloaded, monkeypatch: pytest.MonkeyPatch):
    """``use_single_threaded(True)`` (one scan per CPU): the kernel runs without its CRC helper thread, made once
    and scanning as the Python kernel; where the default kernel has one thread already, it is that kernel."""
    monkeypatch.setattr("segdex.indexcore.log.scan._single_threaded", False)
    use_single_threaded(True)
    single = kernel(None)
    assert single.threads == 1 and native.load_single_threaded() is single
    buf = _segment()
    ours, python = recover(buf, 0, index_interval_bytes=256), recover(buf, 0, index_interval_bytes=256,
                                                                      native=False)
    assert ours.offset_index.to_bytes() == python.offset_index.to_bytes() != b""
    use_single_threaded(False)
    assert kernel(None) is native.load() is not single
    monkeypatch.setattr(native, "_native", None)
    monkeypatch.setattr(native, "_single", None)
    monkeypatch.setenv("SEGDEX_SCAN_THREADS", "1")
    assert native.load_single_threaded() is native.load() and native.load().threads == 1
