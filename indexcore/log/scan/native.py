"""Loading the native kernel (``_fastscan``) and the CRC-32C function it calls.

Finding a shared library is Python's job: ``crc32c_extend`` of Google's crc32c library comes from the copy shipped
in the ``google-crc32c`` wheel, else from a system ``libcrc32c`` (``ctypes.util.find_library``, slow, only when the
wheel has none). Its address is handed to ``_fastscan.make_kernel``, which checks it computes CRC-32C.
"""

from __future__ import annotations

import glob
import importlib
import os
from collections.abc import Callable, Iterator

_native: Callable | None = None
_native_error: str | None = None


def _candidates() -> Iterator[str]:
    try:
        import google_crc32c
    except ImportError:
        pass
    else:
        pkg = os.path.dirname(os.path.abspath(google_crc32c.__file__))
        for pattern in (os.path.join(os.path.dirname(pkg), "google_crc32c.libs", "libcrc32c*.so*"),
                        os.path.join(pkg, "libcrc32c*.so*")):
            yield from sorted(glob.glob(pattern))
    import ctypes.util

    system = ctypes.util.find_library("crc32c")
    if system:
        yield system


def find_crc32c() -> tuple[object, int, str]:
    """(the loaded library, the address of its ``crc32c_extend``, its path); ImportError when none is found."""
    import ctypes

    errors = []
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
            fn = lib.crc32c_extend
        except (OSError, AttributeError) as e:
            errors.append(f"{path}: {e}")
            continue
        return lib, ctypes.cast(fn, ctypes.c_void_p).value, path
    raise ImportError("crc32c_extend not found (google-crc32c wheel or system libcrc32c): "
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
        # By name: a static ``from . import _fastscan`` reads, to import-graph tools that cannot see a compiled
        # module, as an import of this package by this module (a false cycle with ``__init__``).
        fastscan = importlib.import_module(f"{__package__}._fastscan")
        lib, address, path = find_crc32c()
        _native = fastscan.make_kernel(address, lib, path)
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
        fastscan = importlib.import_module(f"{__package__}._fastscan")
        lib, address, path = find_crc32c()
        _single = fastscan.make_kernel(address, lib, path, threads=1)
    return _single
