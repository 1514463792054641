"""CRC-32C as Kafka computes it (``org.apache.kafka.common.utils.Crc32C``): record batches, producer snapshots.

The function is the ``crc32c`` package's (hardware where the CPU has the instruction), taken from its extension
module ``crc32c._crc32c`` without running the package's ``__init__``: from 2.9 that imports
``importlib.metadata`` for its ``__version__``, 60 ms of a process, paid once by each of a scan's workers before
their first byte. Where the package was imported already, its module is the one used.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from types import ModuleType

PACKAGE = "crc32c"
EXTENSION = f"{PACKAGE}._crc32c"

_compute = None  # the extension's crc32c function, once looked up (``crc32c``)


def extension_path() -> str:
    """The file of the package's ``_crc32c`` extension, found without importing the package; ImportError where
    the package or its extension is not installed."""
    loaded = sys.modules.get(EXTENSION)
    if loaded is not None and getattr(loaded, "__file__", None):
        return loaded.__file__
    try:
        spec = importlib.util.find_spec(PACKAGE)  # a top-level package: found, not executed
    except ValueError:  # a module object without a spec stands in sys.modules under that name
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"the {PACKAGE} package (2.5 or later) is not installed", name=PACKAGE)
    for folder in spec.submodule_search_locations:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, f"_crc32c{suffix}")
            if os.path.isfile(path):
                return path
    raise ImportError(f"the {PACKAGE} package has no _crc32c extension in {list(spec.submodule_search_locations)}",
                      name=EXTENSION)


def _extension() -> ModuleType:
    """The package's extension module: the one imported already, else loaded from its file (no ``__init__``)."""
    module = sys.modules.get(EXTENSION)
    if module is None:
        path = extension_path()
        loader = importlib.machinery.ExtensionFileLoader(EXTENSION, path)
        spec = importlib.util.spec_from_file_location(EXTENSION, path, loader=loader)
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
    return module


def crc32c(data, value: int = 0) -> int:
    """``Crc32C.compute``: the CRC-32C of ``data`` (any buffer), continuing from ``value``."""
    return (_compute or _bind())(data, value)


def _bind():
    global _compute
    _compute = _extension().crc32c
    return _compute
