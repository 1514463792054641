"""Choice of the scan kernel used by ``log_segment.recover``.

The native kernel (``indexcore._fastscan``, a C extension built with the
package) has the signature of ``log_segment.scan_simple`` and the same effect
on the state array and index bytearrays. It computes CRC-32C with the
``crc32c_extend`` function of Google's crc32c library, found in the
``google-crc32c`` wheel and handed to the kernel as a function pointer.
"""

from __future__ import annotations

import os
from collections.abc import Callable

_native: Callable | None = None
_native_error: str | None = None


def _load_native() -> Callable | None:
    global _native, _native_error
    if _native is not None or _native_error is not None:
        return _native
    if os.environ.get("SEGDEX_NO_NATIVE"):
        _native_error = "disabled by SEGDEX_NO_NATIVE"
        return None
    try:
        from . import _fastscan  # type: ignore[attr-defined]

        _native = _fastscan.make_kernel()
    except Exception as e:  # ImportError, or the crc32c library could not be found
        _native_error = f"{type(e).__name__}: {e}"
    return _native


def native_available() -> bool:
    return _load_native() is not None


def kernel(native: bool | None = None) -> Callable:
    """The kernel to use: native when available (or required), the Python twin otherwise."""
    if native is False:
        from .log_segment import scan_simple

        return scan_simple
    k = _load_native()
    if k is None:
        if native:
            raise RuntimeError(f"native scan kernel unavailable: {_native_error}")
        from .log_segment import scan_simple

        return scan_simple
    return k
