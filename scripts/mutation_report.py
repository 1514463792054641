"""The report of a mutmut run over indexcore/ (called by scripts/mutation.sh from the run's scratch directory).

Counts per module, then every surviving mutant with the line it changed and a category:

- ``message``: only the text of a message changed (an error's or a reason's wording, a string replaced by None
  where it is only shown). The tests check which error and which status, not the wording, by choice.
- ``logic``: anything else. Each needs a test that kills it, or a line in benchmarks/mutation/explained.md
  saying why it cannot be killed (an equivalent mutant) or why it is left.

Mutants whose functions no in-process test reaches are listed per function: they are reached only by tests of
Spark, Kafka's JVM, or a subprocess, which mutmut's per-test selection does not see.
"""

from __future__ import annotations

import argparse
import functools
import io
import json
import re
import sys
import tokenize
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

from mutmut.mutation.data import SourceFileMutationData
from mutmut.mutation.diff_apply import get_diff_for_mutant
from mutmut.stats import status_by_exit_code
from mutmut.utils.file_utils import walk_mutatable_files

STATUSES = ("killed", "survived", "no tests", "timeout", "suspicious", "segfault", "not checked")
KERNELS = "kernels.md"  # beside the report: how the C kernels' tests are shown able to fail, appended to it
EARLIER = "killed earlier"  # not run in this scratch copy; killed (or timed out) in the run --earlier reports
SURVIVED_EARLIER = "survived earlier"  # not run in this scratch copy; a survivor the --earlier report lists


Earlier = tuple[dict[str, dict[str, int]], set[str], dict[str, set[str]]]


def read_earlier(report: str) -> Earlier:
    """An earlier report's counts per module, the full names of its survivors and, per module, the functions no
    test reached there ("no tests"). With it, a mutant this run did not check counts as killed when that run
    checked every mutant of its module, every one ended killed or timed out but the listed survivors and the
    mutants of the listed untested functions, and the mutant is none of them (the source it mutates is
    unchanged)."""
    counts: dict[str, dict[str, int]] = {}
    survivors: set[str] = set()
    untested: dict[str, set[str]] = defaultdict(set)
    module = ""
    columns = list(STATUSES)
    for line in Path(report).read_text().splitlines():
        listed = re.match(r"- (indexcore/\S+): (.+)$", line)
        if listed and not module:  # "Functions no in-process test reaches": "- MODULE: f (n), g (n)"
            untested[listed[1]] |= {f.rsplit(" (", 1)[0] for f in listed[2].split(", ")}
        if line.startswith("## Functions no in-process"):
            module = ""
        if line.startswith("| | "):  # the header row: the statuses, "killed earlier" among them when carried
            columns = [c.strip() for c in line.strip("| ").split("|")]
        row = re.match(r"\| (indexcore/\S+) \| ([\d |]+)\|$", line)
        if row:
            counts[row[1]] = dict(zip(columns, map(int, row[2].split("|")), strict=True))
        head = re.match(r"### (indexcore/\S+)$", line)
        if head:
            module = head[1]
        item = re.match(r"- `([^`]+)` (logic|message):", line)
        if item and module:
            survivors.add("segdex." + module.replace("/", ".") + "." + item[1])
    return counts, survivors, untested


def _carried(module: str, name: str, earlier: Earlier | None, hashes: dict[str, dict[str, str]],
             survivor: bool = False) -> bool:
    """Whether the earlier run's result stands for this mutant: its module was checked in full there, it was
    not a survivor (``survivor``: it was one), no test reached its function there ("no tests", counted by
    function), and its function is unchanged since (``source-hashes.json``, the function hashes mutmut took of
    that run's source; with none, every function counts as unchanged)."""
    if earlier is None:
        return False
    counts, survivors, untested = earlier
    c = counts.get(module)
    if not c or c["not checked"] or (name in survivors) != survivor:
        return False
    if c["no tests"] and (module not in untested or _function(name).rsplit(".", 1)[1] in untested[module]):
        return False
    function = name.rsplit(".", 1)[1].rsplit("__mutmut_", 1)[0]
    then = hashes.get(module, {}).get(function) if hashes else None
    return not hashes or (then is not None and then == _current_hashes(module).get(function))


@functools.cache
def _current_hashes(module: str) -> dict[str, str]:
    data = SourceFileMutationData(path=Path("segdex") / f"{module}.py")
    data.load()
    return data.hash_by_function_name


def _tokens(line: str) -> list[tuple[int, str]] | None:
    """The line's tokens; a line cut from a longer statement (an open bracket) gives the tokens up to its end."""
    out = []
    try:
        for t in tokenize.generate_tokens(io.StringIO(line.strip() + "\n").readline):
            if t.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER,
                              tokenize.COMMENT):
                out.append((t.type, t.string))
    except tokenize.TokenError:
        return out or None  # EOF inside an open bracket: every token of the line was read
    except (IndentationError, SyntaxError):
        return None
    return out


_TEXT = {tokenize.STRING, getattr(tokenize, "FSTRING_START", -1), getattr(tokenize, "FSTRING_MIDDLE", -1),
         getattr(tokenize, "FSTRING_END", -1)}


def _human(token: tuple[int, str]) -> bool:
    """A string literal that reads as text for a person (a message, a reason): it has a space in it. A literal
    without one (a suffix, a key, a struct format, a codec name) is logic."""
    return token[0] in _TEXT and " " in token[1]


def _only_text(old: str, new: str) -> bool:
    """True when ``new`` differs from ``old`` only inside message text: a literal that reads as text changed,
    or such a literal replaced by ``None`` or dropped in a message's construction (raise, Reason, a warning)."""
    a, b = _tokens(old), _tokens(new)
    if a is None or b is None:
        return False
    if len(a) == len(b):
        return all(x == y or (_human(x) and y[0] in _TEXT) for x, y in zip(a, b, strict=True))
    if not re.search(r"\b(raise|Reason|Exception|Error|warn|print)\b", old):
        return False
    if any(t[0] in _TEXT and not _human(t) for t in a if t not in b):
        return False
    rest_a = [t for t in a if t[0] not in _TEXT]
    rest_b = [t for t in b if t[0] not in _TEXT]
    if rest_b == rest_a:
        return True
    return any(rest_b[:i] + rest_b[i + 1:] == rest_a for i, t in enumerate(rest_b) if t == (tokenize.NAME, "None"))


def _changed(diff: str) -> tuple[list[str], list[str]]:
    old = [x[1:] for x in diff.splitlines() if x.startswith("-") and not x.startswith("---")]
    new = [x[1:] for x in diff.splitlines() if x.startswith("+") and not x.startswith("+++")]
    return old, new


def categorize(diff: str) -> str:
    old, new = _changed(diff)
    if len(old) == len(new) and old and all(_only_text(o, n) for o, n in zip(old, new, strict=True)):
        return "message"
    if old and new and _only_text(" ".join(x.strip() for x in old), " ".join(x.strip() for x in new)):
        return "message"
    return "logic"


def _function(mutant: str) -> str:
    return mutant.rsplit("__mutmut_", 1)[0].replace("ǁ", ".").replace(".x_", ".").replace(".x.", ".")


def _mutants() -> Iterator[tuple[Path, str, str, str]]:
    """Every mutant of the scratch copy as (source path, module, name, status), module by module, each module's
    in function order and then by number."""
    for path in sorted(walk_mutatable_files()):
        data = SourceFileMutationData(path=path)
        data.load()
        module = str(path).removeprefix("segdex/").removesuffix(".py")
        for name, code in sorted(data.exit_code_by_key.items(),
                                 key=lambda kv: (kv[0].rsplit("__mutmut_", 1)[0], int(kv[0].rsplit("_", 1)[1]))):
            yield path, module, name, status_by_exit_code[code]


def _scratch_scope() -> str:
    """What the scratch copy mutates (its ``only_mutate``, written by scripts/mutation.sh for named modules)."""
    import tomllib

    try:
        only = tomllib.loads(Path("pyproject.toml").read_text())["tool"]["mutmut"].get("only_mutate", [])
    except (OSError, KeyError, ValueError):
        only = []
    rooms = [p.removeprefix("segdex/indexcore/").removesuffix("*").removesuffix(".py") for p in only]
    return ", ".join(rooms) if rooms else "every module of indexcore/"


def print_pending(earlier: Earlier | None, hashes: dict[str, dict[str, str]], keep_survivors: bool = False
                  ) -> None:
    """The mutants a run still owes: survived, no tests, suspicious or interrupted (new tests may kill them),
    and not checked unless the earlier run's result stands (``_carried``; with ``keep_survivors``, an earlier
    survivor's too: it is not run again). Killed, timed out and crashed ones were noticed."""
    for _, module, name, status in _mutants():
        if status not in ("killed", "timeout", "segfault", "not checked") or (
                status == "not checked" and not _carried(module, name, earlier, hashes) and not (
                keep_survivors and _carried(module, name, earlier, hashes, survivor=True))):
            print(name)


def print_names(wanted: set[str]) -> None:
    """The names of the mutants whose status is one of ``wanted``, one per line (for ``mutmut run``)."""
    for _, _, name, status in _mutants():
        if status in wanted:
            print(name)


def collect(earlier: Earlier | None, only_run: bool, hashes: dict[str, dict[str, str]] | None = None
            ) -> tuple[dict[str, Counter], dict[str, list[tuple[str, str, str]]], dict[str, Counter]]:
    """Counts per module and status, survivors per module (name, category, change), untested functions."""
    counts: dict[str, Counter] = defaultdict(Counter)
    survivors: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    untested: dict[str, Counter] = defaultdict(Counter)
    for path, module, name, status in _mutants():
        if status == "not checked" and _carried(module, name, earlier, hashes or {}):
            status = EARLIER
        if status == "not checked" and _carried(module, name, earlier, hashes or {}, survivor=True):
            status = SURVIVED_EARLIER
        if status == "not checked" and only_run:
            continue
        counts[module][status] += 1
        if status in ("survived", SURVIVED_EARLIER):
            diff = get_diff_for_mutant(name, path=path)
            old, new = _changed(diff)
            change = " / ".join(x.strip() for x in old) + "  ->  " + " / ".join(x.strip() for x in new)
            survivors[module].append((name.rsplit(".", 1)[1], categorize(diff), change))
        elif status == "no tests":
            untested[module][_function(name).rsplit(".", 1)[1]] += 1
    return counts, survivors, untested


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seconds", type=int, default=0)
    ap.add_argument("--names", default="", help="print the names of the mutants with these statuses "
                    "(comma-separated, e.g. 'survived,no tests') instead of writing the report")
    ap.add_argument("--earlier", default="", help="an earlier report over the same source: mutants not run "
                    "here that it shows killed count as 'killed earlier'")
    ap.add_argument("--source-hashes", default="", help="mutmut's function hashes of the source the earlier "
                    "report ran on: a function changed since does not keep its earlier result")
    ap.add_argument("--pending", action="store_true", help="print the names of the mutants still to run: "
                    "survived, no tests, suspicious, or not checked and not settled by --earlier")
    ap.add_argument("--keep-survivors", action="store_true", help="with --pending: an earlier survivor in a "
                    "function unchanged since is not owed (it keeps its status: 'survived earlier')")
    ap.add_argument("modules", nargs="*")
    args = ap.parse_args(argv)
    if args.names:
        print_names(set(args.names.split(",")))
        return 0

    earlier = read_earlier(args.earlier) if args.earlier else None
    hashes = json.loads(Path(args.source_hashes).read_text()) if args.source_hashes else {}
    if args.pending:
        print_pending(earlier, hashes, args.keep_survivors)
        return 0
    statuses = STATUSES + ((EARLIER, SURVIVED_EARLIER) if earlier else ())
    counts, survivors, untested = collect(earlier, bool(args.modules), hashes)
    total: Counter = Counter()
    for c in counts.values():
        total.update(c)
    cats = Counter(cat for rows in survivors.values() for _, cat, _ in rows)
    out = io.StringIO()
    scope = ", ".join(args.modules) if args.modules else _scratch_scope()
    out.write("# Mutation report: indexcore/\n\n")
    out.write(f"`bash scripts/mutation.sh` (mutmut 3.8.1) over {scope}: {sum(total.values())} mutants"
              + (f", {args.seconds // 60} min {args.seconds % 60} s on this machine" if args.seconds else "")
              + ".\n\n")
    if earlier:
        out.write(f"`{EARLIER}`: not run again here; killed or timed out in the run of "
                  f"{Path(args.earlier).name}, in functions unchanged since. `{SURVIVED_EARLIER}`: not run again "
                  f"here (`SEGDEX_MUTATION_KEEP_SURVIVORS`); a survivor of that run, in a function unchanged "
                  f"since, listed below with the survivors.\n\n")
    out.write("| | " + " | ".join(statuses) + " |\n|---|" + "---|" * len(statuses) + "\n")
    out.write("| **all** | " + " | ".join(str(total[s]) for s in statuses) + " |\n")
    for module in sorted(counts):
        out.write(f"| {module} | " + " | ".join(str(counts[module][s]) for s in statuses) + " |\n")
    out.write(f"\nSurvivors: {cats['logic']} `logic`, {cats['message']} `message` (wording only). "
              "Why each remains: benchmarks/mutation/explained.md.\n")
    out.write("\n## Survivors\n")
    for module in sorted(survivors):
        out.write(f"\n### {module}\n\n")
        for name, cat, change in survivors[module]:
            out.write(f"- `{name}` {cat}: `{change.replace('`', chr(39))}`\n")
    out.write("\n## Functions no in-process test reaches (mutants marked \"no tests\")\n\n")
    for module in sorted(untested):
        funcs = ", ".join(f"{f} ({n})" for f, n in sorted(untested[module].items()))
        out.write(f"- {module}: {funcs}\n")
    kernels = Path(args.out).parent / KERNELS
    if Path(args.out).name != "null" and kernels.is_file():  # the C kernels, out of mutmut's reach: shown by hand
        out.write("\n" + kernels.read_text())
    Path(args.out).write_text(out.getvalue())
    print(f"{sum(total.values())} mutants: " + ", ".join(f"{total[s]} {s}" for s in statuses if total[s]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
