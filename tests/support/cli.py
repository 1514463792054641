"""The one way tests run the ``segdex`` command line as a process of its own.

``segdex(*args)`` runs ``python -m segdex.jobs.cli ARGS`` with this interpreter, from the repository's root,
output captured as text, and returns the ``CompletedProcess``; ``segdex_popen(*args)`` starts it and returns the
``Popen`` (runs side by side, a signal sent mid-run). Both take ``env``: values over this process's environment
(a value of None removes that variable), or the whole environment with ``inherit=False``. ``segdex_here(*args)``
runs the command inside this process (``segdex.jobs.cli.main``), with the same ``CompletedProcess`` answer.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

from tests.support.fixtures import REPO_ROOT

DEFAULT_TIMEOUT_S = 600.0


def command(*args: str | os.PathLike) -> list[str]:
    """The command line that runs ``segdex ARGS`` with this interpreter (the worktree's code, as the tests')."""
    return [sys.executable, "-m", "segdex.jobs.cli", *map(str, args)]


def environment(env: Mapping[str, str | None] | None = None, inherit: bool = True) -> dict[str, str]:
    """``env`` over this process's environment (None removes a variable), or ``env`` alone with ``inherit=False``."""
    merged: dict[str, str | None] = {**os.environ, **(env or {})} if inherit else dict(env or {})
    return {k: v for k, v in merged.items() if v is not None}


def segdex(*args: str | os.PathLike, env: Mapping[str, str | None] | None = None, inherit: bool = True,
           timeout: float | None = DEFAULT_TIMEOUT_S, cwd: str | os.PathLike = REPO_ROOT,
           no_traceback: bool = False, **kw: Any) -> subprocess.CompletedProcess:
    """Run ``segdex ARGS`` to its end; stdout and stderr captured as text. ``no_traceback``: fail the test when
    the command printed a Python traceback (a crash, not an error it reports). ``kw`` goes to ``subprocess.run``
    (``input=``, ``stdin=``...)."""
    kw.setdefault("capture_output", "stdout" not in kw and "stderr" not in kw)
    proc = subprocess.run(command(*args), cwd=cwd, env=environment(env, inherit), text=True, timeout=timeout, **kw)
    if no_traceback:
        assert "Traceback" not in (proc.stderr or "") + (proc.stdout or ""), proc.stderr
    return proc


def segdex_popen(*args: str | os.PathLike, env: Mapping[str, str | None] | None = None, inherit: bool = True,
                 cwd: str | os.PathLike = REPO_ROOT, **kw: Any) -> subprocess.Popen:
    """Start ``segdex ARGS`` and return at once; stdout and stderr are pipes of text unless ``kw`` says otherwise
    (``start_new_session=True``, ``stdout=subprocess.DEVNULL``...)."""
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.PIPE)
    kw.setdefault("text", True)
    return subprocess.Popen(command(*args), cwd=cwd, env=environment(env, inherit), **kw)



def segdex_here(*args: str | os.PathLike) -> subprocess.CompletedProcess:
    """``segdex ARGS`` inside this process (``segdex.jobs.cli.main``: no interpreter start, the test's own
    imports): its exit status and what it printed, as a ``CompletedProcess``."""
    from segdex.jobs.cli import main

    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    return subprocess.CompletedProcess(["segdex", *argv], status, out.getvalue(), err.getvalue())
