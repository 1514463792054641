"""Loading the native scan kernel (``scan.native.load``) in the test process, from a clean slate.

The kernel is loaded once per process and cached; each test here starts from an unloaded module (the cache
reset, then restored by monkeypatch). Expected answers: the CRC-32C check value of "123456789" (0xE3069283, the
value every CRC catalogue gives for CRC-32C/Castagnoli), and the Python kernel's recovery of the same bytes."""

from __future__ import annotations

import ctypes

import pytest

from segdex.indexcore.log.log_segment import recover
from segdex.indexcore.log.scan import kernel, native
from segdex.indexcore.tools.segment_writer import build_batch

CHECK = 0xE3069283  # CRC-32C("123456789")


@pytest.fixture
def unloaded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native, "_native", None)
    monkeypatch.setattr(native, "_native_error", None)
    monkeypatch.delenv("SEGDEX_NO_NATIVE", raising=False)


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
    assert repr(k).endswith(f"crc32c_extend from {native.find_crc32c()[2]!r}>")  # where its CRC comes from
    buf = _segment()
    ours, python = recover(buf, 0, index_interval_bytes=256, native=True), recover(buf, 0, index_interval_bytes=256,
                                                                                     native=False)
    assert ours.offset_index.to_bytes() == python.offset_index.to_bytes() != b""
    assert ours.time_index.to_bytes() == python.time_index.to_bytes() != b""
    assert (ours.valid_bytes, ours.last_offset, ours.batch_count) == (len(buf), 119, 40)


def test_the_crc32c_library_found_computes_crc32c():
    lib, address, path = native.find_crc32c()
    assert address == ctypes.cast(lib.crc32c_extend, ctypes.c_void_p).value
    extend = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_uint32, ctypes.c_char_p, ctypes.c_size_t)(address)
    assert extend(0, b"123456789", 9) == CHECK
    assert "crc32c" in path
