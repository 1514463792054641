"""The ``segdex`` command. Each subcommand lives in its own ``jobs`` module, imported only when chosen,
so that ``rebuild`` and ``dump`` never import Spark.

A subcommand module defines ``HELP`` (one line), ``add_arguments(parser)`` and ``run(args) -> int``.
Exit status: 0 all clean, 1 something needs attention, 2 usage error.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

COMMANDS = {
    "rebuild": "jobs.rebuild",
    "dump": "jobs.dump",
    "reindex": "jobs.reindex",
    "verify": "jobs.verify",
    "sql": "jobs.sql",
    "retention": "jobs.retention",
    "compact": "jobs.compact",
    "demo": "jobs.demo",
}

EXIT_OK = 0
EXIT_ATTENTION = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3


def _available() -> dict[str, object]:
    mods = {}
    for name, module in COMMANDS.items():
        try:
            mods[name] = importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name != module:
                raise
    return mods


def build_parser(command: str | None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="segdex", description="Kafka segment index rebuilder and auditor")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    if command in COMMANDS:
        try:
            module = importlib.import_module(COMMANDS[command])
        except ModuleNotFoundError:
            module = None
        if module is not None:
            p = sub.add_parser(command, help=module.HELP, description=module.HELP)
            module.add_arguments(p)
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
        return EXIT_USAGE
    try:
        return args._run(args)
    except KeyboardInterrupt:
        print("segdex: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # never a traceback for the operator; SEGDEX_DEBUG=1 shows it
        if os.environ.get("SEGDEX_DEBUG"):
            raise
        print(f"segdex {args.command}: error: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
