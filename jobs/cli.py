"""The ``segdex`` command. Each subcommand lives in its own ``jobs`` module, imported only when chosen,
so that ``rebuild`` and ``dump`` never import Spark.

A subcommand module defines ``HELP`` (one line), ``add_arguments(parser)`` and ``run(args) -> int``.

Exit status (also in ``segdex --help``):
  0    everything clean
  1    something needs attention: a problem line per finding on stderr, and a status in the tables
  2    usage error, or a check made before any change failed (nothing was changed)
  3    the run failed midway: stderr says what it had already changed
  130  stopped by Ctrl-C (SIGINT), 143 stopped by SIGTERM: temporary files removed, files already replaced whole
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
from typing import Any

from segdex.indexcore.errors import NothingChangedError
from segdex.indexcore.status import ExitStatus

# numpy (loaded with pyarrow) starts OpenBLAS with a thread per core that spins about 0.1 s before it sleeps:
# CPU taken from the scan's workers on a small host, for linear algebra segdex never does. Before any import
# of numpy; a value the user set stays.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

COMMANDS = {
    "rebuild": "segdex.jobs.rebuild",
    "dump": "segdex.jobs.dump",
    "offsets": "segdex.jobs.offsets",
    "groups": "segdex.jobs.groups",
    "transactions": "segdex.jobs.transactions",
    "reindex": "segdex.jobs.reindex",
    "verify": "segdex.jobs.verify",
    "recover": "segdex.jobs.recover",
    "sql": "segdex.jobs.sql",
    "retention": "segdex.jobs.retention",
    "compact": "segdex.jobs.compact",
    "clean": "segdex.jobs.clean",
    "demo": "segdex.jobs.demo",
}

EXIT_STATUS_HELP = ("exit status: 0 clean; 1 something needs attention; 2 usage error or a pre-check failed (nothing "
                    "changed); 3 failed midway (stderr says what changed); 130 Ctrl-C, 143 SIGTERM (stopped cleanly)")


class _PipeSafeStream:
    """stdout that goes quiet when its reader has gone (``segdex rebuild ... | head``): the command still
    finishes its work and exits with its own status; only the rest of the output is dropped."""

    def __init__(self, stream) -> None:
        self._stream = stream
        self.closed_by_reader = False

    def write(self, text: str) -> int:
        if self.closed_by_reader:
            return len(text)
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._close()
            return len(text)

    def flush(self) -> None:
        if self.closed_by_reader:
            return
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._close()

    def _close(self) -> None:
        self.closed_by_reader = True
        try:  # the interpreter's final flush must not raise either
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        except (OSError, ValueError):
            pass

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


class _Terminated(BaseException):
    """SIGTERM outside a Spark run: unwinds like Ctrl-C, so that temporary files and locks are released."""


def _on_sigterm(_signum, _frame) -> None:
    raise _Terminated()


def _available() -> dict[str, object]:
    mods = {}
    for name, module in COMMANDS.items():
        try:
            mods[name] = importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name != module:
                raise
    return mods


def segdex_version() -> str:
    """The installed package's version (``pyproject.toml``), as ``segdex --version`` prints it."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("segdex")
    except PackageNotFoundError:
        return "unknown (not installed)"


class _VersionAction(argparse.Action):
    """``--version``, as argparse's own, but the version is looked up only when asked: ``importlib.metadata``
    takes 0.02 s to import, at every command's start otherwise."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="show program's version number and exit")

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        parser._print_message(f"segdex {segdex_version()}\n", sys.stdout)
        parser.exit()


def build_parser(command: str | None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="segdex", description="Kafka segment index rebuilder and auditor",
                                     epilog=EXIT_STATUS_HELP)
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    if command in COMMANDS:
        try:
            module = importlib.import_module(COMMANDS[command])
        except ModuleNotFoundError:
            module = None
        if module is not None:
            p = sub.add_parser(command, help=module.HELP, description=module.HELP, epilog=EXIT_STATUS_HELP)
            module.add_arguments(p)
            if getattr(module, "SPARK", False):
                p.add_argument("--remote", metavar="sc://HOST:PORT", default=None,
                               help="run on a Spark Connect server (default: $SPARK_REMOTE when no --master)")
                if "-v" not in p._option_string_actions:  # compact/retention's own -v also shows Spark's lines
                    p.add_argument("-v", "--verbose", action="store_true",
                                   help="show Spark's and the JVM's own log lines (default: in a log file, named on "
                                        "failure)")
            p.set_defaults(_run=module.run)
            return parser
    for name, module in _available().items():
        sub.add_parser(name, help=module.HELP)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(command)
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    if not getattr(args, "_run", None):
        parser.print_help(sys.stderr)
        return ExitStatus.USAGE
    problem = _spark_options_problem(args)
    if problem:
        print(f"segdex {args.command}: {problem}", file=sys.stderr)
        return ExitStatus.USAGE
    if not isinstance(sys.stdout, _PipeSafeStream):
        sys.stdout = _PipeSafeStream(sys.stdout)
    # delta-rs logs its AWS credential chain's warnings to stderr by itself; segdex says what failed in one line
    os.environ.setdefault("RUST_LOG", "error")
    if getattr(args, "metadata", None) and not getattr(args, "no_progress", False):
        from segdex.pipelines import metadata_store

        metadata_store.report_waits(lambda line: print(line, file=sys.stderr, flush=True))
    previous = _install_sigterm()
    try:
        return _run(args)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        sys.stdout.flush()


def _run(args: argparse.Namespace) -> int:
    """The command, its failures as one line and an exit status: a signal (128 + its number), a check before any
    change (2: ``NothingChangedError``), anything else (3, Spark's log named)."""
    try:
        return args._run(args)
    except KeyboardInterrupt:
        print(f"segdex {args.command}: interrupted by SIGINT (Ctrl-C)", file=sys.stderr)
        return ExitStatus.SIGNAL_BASE + signal.SIGINT
    except _Terminated:
        print(f"segdex {args.command}: interrupted by SIGTERM", file=sys.stderr)
        return ExitStatus.SIGNAL_BASE + signal.SIGTERM
    except NothingChangedError as e:  # a check before any change failed (Spark unreachable, no room, ...)
        if os.environ.get("SEGDEX_DEBUG"):
            raise
        print(f"segdex {args.command}: {e}", file=sys.stderr)
        return ExitStatus.USAGE
    except Exception as e:  # never a traceback for the operator; SEGDEX_DEBUG=1 shows it
        if os.environ.get("SEGDEX_DEBUG"):
            raise
        print(f"segdex {args.command}: error: {type(e).__name__}: {_first_line(e)}", file=sys.stderr)
        log = _spark_log()
        if log:
            print(f"segdex {args.command}: Spark's log: {log}", file=sys.stderr)
        return ExitStatus.FAILED


def _spark_options_problem(args: argparse.Namespace) -> str | None:
    """A Spark command's ``--master``/``--remote``/``-v``: what is wrong with them, else None (``-v`` is passed
    on to the session through the environment)."""
    remote = getattr(args, "remote", None)
    if remote and getattr(args, "master", None):
        return "--master and --remote are two ways to reach Spark: give one"
    if remote and not remote.startswith("sc://"):
        return f"--remote {remote}: a Spark Connect URL is sc://HOST:PORT"
    if getattr(args, "verbose", False):
        os.environ["SEGDEX_VERBOSE"] = "1"
    return None


def _first_line(e: BaseException) -> str:
    """An exception in one line: the JVM's stack traces that py4j appends stay in Spark's log."""
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _spark_log() -> str | None:
    """The log file an embedded Spark wrote to in this process, if it started one."""
    module = sys.modules.get("segdex.pipelines.spark_session")
    return getattr(module, "LOG_PATH", None) if module is not None else None


def _install_sigterm():
    """SIGTERM raises ``_Terminated`` (main thread only); returns the previous handler, or None."""
    try:
        return signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread
        return None


if __name__ == "__main__":
    sys.exit(main())
