"""Loading the native kernel (``_fastscan``) and the CRC-32C function it calls.

Finding a shared library is Python's job. First choice: the hardware ``_crc32c_hw_adler`` of the ``crc32c`` package
(Mark Adler's three interleaved SSE4.2 streams, the function the package's own ``crc32c()`` runs), when its CPU
probe says the instruction is there: 10.2 GB/s over page-cache data on this machine kind, where Google's
``crc32c_extend`` from the ``google-crc32c`` wheel's copy gives 5.8 GB/s. Else that ``crc32c_extend``, else a system
``libcrc32c`` (``ctypes.util.find_library``, slow, only when the wheel has none). The address goes to
``_fastscan.make_kernel``, which checks it computes CRC-32C in the convention given.
"""

from __future__ import annotations

import glob
import importlib
import os
from collections.abc import Callable, Iterator
from typing import NamedTuple

_native: Callable | None = None
_native_error: str | None = None


class CrcFunction(NamedTuple):
    """A CRC-32C function found in a shared library: ``raw`` ones take and return the uninverted register."""

    library: object  # the ctypes CDLL (keeps the library loaded)
    address: int
    path: str
    symbol: str
    raw: bool


def _adler_candidate() -> Iterator[tuple[str, str, bool]]:
    """The ``crc32c`` package's hardware function, when the CPU has SSE4.2 (its own probe). Its extension is found
    without importing the package (see ``record.crc32c``)."""
    import ctypes

    from segdex.indexcore.record.crc32c import extension_path

    try:
        path = extension_path()
        lib = ctypes.CDLL(path)
        if not lib._crc32c_intel_probe():
            return
        lib.crc32c_init_hw_adler()  # its shift tables (the extension's own init builds them too)
    except (ImportError, OSError, AttributeError):
        return
    yield path, "_crc32c_hw_adler", True


def _candidates() -> Iterator[tuple[str, str, bool]]:
    """(library path, symbol, raw) in order of preference."""
    if not os.environ.get("SEGDEX_CRC32C_EXTEND"):  # set: Google's crc32c_extend only (tests compare both)
        yield from _adler_candidate()
    try:
        import google_crc32c
    except ImportError:
        pass
    else:
        pkg = os.path.dirname(os.path.abspath(google_crc32c.__file__))
        for pattern in (os.path.join(os.path.dirname(pkg), "google_crc32c.libs", "libcrc32c*.so*"),
                        os.path.join(pkg, "libcrc32c*.so*")):
            for path in sorted(glob.glob(pattern)):
                yield path, "crc32c_extend", False
    import ctypes.util

    system = ctypes.util.find_library("crc32c")
    if system:
        yield system, "crc32c_extend", False


def find_crc32c() -> CrcFunction:
    """The CRC-32C function the kernel calls (see the module doc); ImportError when none is found."""
    import ctypes

    errors = []
    for path, symbol, raw in _candidates():
        try:
            lib = ctypes.CDLL(path)
            fn = getattr(lib, symbol)
        except (OSError, AttributeError) as e:
            errors.append(f"{path}: {e}")
            continue
        return CrcFunction(lib, ctypes.cast(fn, ctypes.c_void_p).value, path, symbol, raw)
    raise ImportError("no CRC-32C function found (crc32c package, google-crc32c wheel or system libcrc32c): "
                      + ("; ".join(errors) or "no candidate library"))


def load() -> Callable | None:
    """The native kernel, or None (with ``error()`` saying why): not built, disabled, or no CRC library."""
    global _native, _native_error
    if _native is not None or _native_error is not None:
        return _native
    if os.environ.get("SEGDEX_NO_NATIVE"):
        _native_error = "disabled by SEGDEX_NO_NATIVE"
        return None
    try:
        _native = _make_kernel()
    except Exception as e:  # ImportError (not built), or the crc32c library could not be found
        _native_error = f"{type(e).__name__}: {e}"
    return _native


def error() -> str | None:
    return _native_error


_single: Callable | None = None


def load_single_threaded() -> Callable | None:
    """The native kernel without its CRC helper thread (None where ``load`` gives none): for a process that
    is one of as many scanning as there are CPUs, where a helper thread only takes a CPU from another scan."""
    global _single
    k = load()
    if k is None or k.threads == 1:
        return k
    if _single is None:
        _single = _make_kernel(threads=1)
    return _single


_crc: CrcFunction | None = None


def _make_kernel(threads: int = 0) -> Callable:
    """A kernel over the CRC-32C function found once per process (``threads`` 0: the default)."""
    global _crc
    # By name: a static ``from . import _fastscan`` reads, to import-graph tools that cannot see a compiled
    # module, as an import of this package by this module (a false cycle with ``__init__``).
    fastscan = importlib.import_module(f"{__package__}._fastscan")
    if _crc is None:
        _crc = find_crc32c()
    return fastscan.make_kernel(_crc.address, _crc.library, _crc.path, threads=threads, raw=_crc.raw)
