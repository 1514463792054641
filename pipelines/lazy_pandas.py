"""pyarrow without pandas, until something in the process imports pandas.

pyarrow imports pandas whole the first time it converts Python values (``pa.array``, ``Table.from_pylist``),
only to tell a pandas Series from a list: 0.22-0.28 s of CPU on this project's 2-core hosts, a fifth of an
embedded ``segdex recover`` of 4.3 GB. The one-host engine's commands hand pyarrow lists and Arrow tables,
never pandas objects, so ``defer_pandas`` answers pyarrow's question "no" before pyarrow asks it, then watches:
the moment something imports pandas after all (a Spark session's Arrow conversion, a test, a user's code),
pyarrow is told, so a Series handed to it from then on is read as a Series again. pyarrow's own pandas
features (``to_pandas``, ``from_pandas``) import pandas themselves whatever the answer was.
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import sys
import threading
from typing import Any

_GUARD = threading.Lock()
_DEFERRED = False


class _Refuse:
    """A meta path finder under which ``import pandas`` fails, as on a host without pandas."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"segdex defers pandas (no module named {name!r})", name=name)
        return None


class _Watch:
    """A meta path finder that finds nothing itself: on the first import of pandas it leaves ``sys.meta_path``
    and has the import tell pyarrow once pandas is loaded."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "pandas":
            return None
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _TellPyarrow(spec.loader)
        return spec


class _TellPyarrow:
    """pandas' own loader, and once pandas has run, pyarrow told it exists (then the loader steps aside)."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        tell_pyarrow()


def tell_pyarrow() -> None:
    """Have pyarrow import pandas now (it is loaded: this costs nothing) and use it from here on."""
    with contextlib.suppress(Exception):  # a pyarrow without its shim, or a pandas it refuses: as before
        import pyarrow.lib

        pyarrow.lib._pandas_api.pd  # noqa: B018 (the property retries the import pyarrow was refused)


def defer_pandas() -> bool:
    """Answer pyarrow's "is pandas there?" with no, and watch for pandas (see the module doc); True when this
    call deferred it (False: pandas is loaded already, or it was deferred before). Call it from the main thread
    before other threads import anything."""
    global _DEFERRED
    with _GUARD:
        if _DEFERRED or "pandas" in sys.modules:
            return False
        refuse = _Refuse()
        sys.meta_path.insert(0, refuse)
        try:
            import pyarrow as pa

            pa.array([0])  # pyarrow asks now, once per process, and hears no
        finally:
            sys.meta_path.remove(refuse)
        sys.meta_path.insert(0, _Watch())
        _DEFERRED = True
        return True
