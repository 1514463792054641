"""The docs say what the code does: each command's page names every flag of its ``--help`` and no other, every
table's page lists its columns, every relative link resolves, no page carries history, and every example in
docs/ runs as written against the sample log dir ``segdex demo`` makes.

The conventions the checks read are written down in CONTRIBUTING.md ("The docs").
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from segdex.jobs.cli import COMMANDS, build_parser
from segdex.jobs.cli import main as segdex_main
from tests.support.cli import segdex
from tests.support.fixtures import GOLDEN, REPO_ROOT

DOCS = REPO_ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
LINKED = [REPO_ROOT / "README.md", REPO_ROOT / "CONTRIBUTING.md", REPO_ROOT / "benchmarks" / "README.md", *PAGES]
HISTORY = re.compile(r"Since 20|issue [0-9]|Then \(|before this change|\b20\d\d-\d\d-\d\d\b")

FENCE = re.compile(r"^```(\S*)\s*$")
NOT_RUN = re.compile(r"^<!-- not run: .+ -->$")
SPAN = re.compile(r"`([^`\n]+)`")
LONG, SHORT = re.compile(r"^--[a-z][a-z0-9-]*$"), re.compile(r"^-[A-Za-z]$")
IN_PROCESS = ("sql", "demo")  # commands that always start Spark: run on the test session's, not a JVM each


# ---------------------------------------------------------------------------------------------- reading pages


def blocks(path: Path) -> list[tuple[str, list[str], bool]]:
    """The fenced blocks of a page: (language, lines, marked not to run)."""
    out, lines = [], path.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        marked = i > 0 and bool(NOT_RUN.match(lines[i - 1].strip()))
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        out.append((m.group(1), lines[i + 1:end], marked))
        i = end + 1
    return out


def prose(path: Path) -> str:
    """A page without its fenced blocks."""
    kept, inside = [], False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            inside = not inside
        elif not inside:
            kept.append(line)
    return "\n".join(kept)


def logical_lines(lines: list[str]) -> list[str]:
    """Lines with their ``\\`` continuations joined, comments and blanks dropped."""
    out, pending = [], ""
    for line in lines:
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        line, pending = pending + line, ""
        if line.strip() and not line.strip().startswith("#"):
            out.append(line.strip())
    return out


def _words(text: str) -> list[str]:
    try:
        return shlex.split(text, comments=True)
    except ValueError:
        return text.split()


def _flag(word: str) -> str | None:
    word = word.strip("[]()|.,;").split("=", 1)[0]
    return word if LONG.match(word) or SHORT.match(word) else None


def segdex_flags(words: list[str]) -> tuple[str, set[str]] | None:
    """``segdex COMMAND ...`` as (command, the flags it gives); None for anything else."""
    if len(words) < 2 or words[0] != "segdex" or words[1] not in COMMANDS:
        return None
    flags = set()
    for word in words[2:]:
        if word in ("|", ">", "&&", ";"):
            break
        if (flag := _flag(word)) is not None:
            flags.add(flag)
    return words[1], flags


def mentioned_flags(path: Path, own: str | None) -> dict[str, set[str]]:
    """command -> the flags a page gives it: in ``segdex COMMAND ...`` code lines and spans, and (for the page's
    own command) in code spans that start with a flag."""
    found: dict[str, set[str]] = {}
    for _, lines, _ in blocks(path):
        for line in logical_lines(lines):
            hit = segdex_flags(_words(line))
            if hit:
                found.setdefault(hit[0], set()).update(hit[1])
    for span in SPAN.findall(prose(path)):
        words = span.split()
        hit = segdex_flags(words)
        if hit:
            found.setdefault(hit[0], set()).update(hit[1])
        elif own is not None and (flag := _flag(words[0])) is not None and words[0].startswith("-"):
            found.setdefault(own, set()).add(flag)
    return found


def help_flags(command: str) -> set[str]:
    """Every option string of ``segdex COMMAND --help`` (and of its actions' ``--help``), but ``-h/--help``."""
    sub = next(a for a in build_parser(command)._actions if isinstance(a, argparse._SubParsersAction))
    parsers, flags = [sub.choices[command]], set()
    while parsers:
        parser = parsers.pop()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers.extend(action.choices.values())
            elif not isinstance(action, argparse._HelpAction):
                flags.update(action.option_strings)
    return flags


# ----------------------------------------------------------------------------------------- help and pages


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_help_flag_is_on_the_commands_page_and_every_page_flag_exists(command):
    page = DOCS / "commands" / f"{command}.md"
    assert page.is_file(), f"no page for `segdex {command}`: {page.relative_to(REPO_ROOT)}"
    flags = help_flags(command)
    given = mentioned_flags(page, command).get(command, set())
    assert sorted(flags - given) == [], f"{page.name} leaves out flags of `segdex {command} --help`"
    assert sorted(given - flags) == [], f"{page.name} gives flags `segdex {command} --help` does not have"


def test_every_segdex_line_of_the_docs_uses_flags_its_command_has():
    wrong = []
    for path in [REPO_ROOT / "README.md", REPO_ROOT / "CONTRIBUTING.md", *PAGES]:
        for command, flags in mentioned_flags(path, None).items():
            wrong += [(path.name, command, f) for f in sorted(flags - help_flags(command))]
    assert wrong == []


def test_every_table_column_is_on_the_tables_page():
    from segdex.pipelines import fleet, schemas

    text = (DOCS / "tables.md").read_text()
    specs = {s.name: fleet.with_origin(s) for s in vars(schemas).values() if isinstance(s, schemas.TableSpec)}
    sections = dict(re.findall(r"^## `(\w+)`\n(.*?)(?=^## |\Z)", text, re.M | re.S))
    assert sorted(sections) == sorted(specs)
    for name, spec in specs.items():
        listed = set()
        for row in re.findall(r"^\| ([^|]+) \|", sections[name], re.M):
            listed.update(SPAN.findall(row))
        assert sorted(set(spec.schema.names) - listed) == [], f"{name}: columns not listed"
        assert sorted(listed - set(spec.schema.names)) == [], f"{name}: listed columns the table does not have"


# ------------------------------------------------------------------------------------------ links, history


def _anchors(path: Path) -> set[str]:
    """GitHub's anchors of a page's headings."""
    heads = re.findall(r"^#+ (.+)$", prose(path), re.M)
    return {re.sub(r"[^\w\- ]", "", h.replace("`", "").strip().lower()).replace(" ", "-") for h in heads}


def test_every_relative_link_resolves():
    broken = []
    for path in LINKED:
        for target in re.findall(r"\]\(([^)\s]+)\)", prose(path)):
            if re.match(r"[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            dest = (path.parent / file).resolve() if file else path
            if not dest.exists():
                broken.append((str(path.relative_to(REPO_ROOT)), target))
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                broken.append((str(path.relative_to(REPO_ROOT)), target))
    assert broken == []


def test_the_docs_say_what_is_true_now():
    found = [(str(p.relative_to(REPO_ROOT)), n, line.strip())
             for p in [REPO_ROOT / "README.md", REPO_ROOT / "benchmarks" / "README.md", *PAGES]
             for n, line in enumerate(p.read_text().splitlines(), 1) if HISTORY.search(line)]
    assert found == []
    assert len((REPO_ROOT / "README.md").read_text().splitlines()) <= 300


def test_the_two_commands_of_the_readme_are_what_ci_runs():
    readme = (REPO_ROOT / "README.md").read_text()
    assert "bash scripts/demo.sh" in readme and "bash scripts/test.sh" in readme
    assert "bash scripts/test.sh" in (REPO_ROOT / ".ci" / "run").read_text()


# ---------------------------------------------------------------------------------------- examples that run


def examples(path: Path) -> list[str]:
    return [line for lang, lines, marked in blocks(path) if lang == "bash" and not marked
            for line in logical_lines(lines)]


def _in_process(line: str) -> bool:
    """A command that always starts Spark (``sql``, ``demo``, ``retention --from-metadata``), alone on its line."""
    words = _words(line)
    if len(words) < 2 or words[0] != "segdex" or any(w in ("|", ">", "&&", ";") for w in words):
        return False
    return words[1] in IN_PROCESS or (words[1] == "retention" and "--from-metadata" in words)


RUNNABLE = [p for p in PAGES if examples(p)]


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    """What ``segdex demo`` leaves in the repository's root, made without its Spark session: the demo's sample
    log dir (``sample/kafka-logs``, the tail of ``clicks-1`` cut) verified then reindexed into
    ``sample/metadata``; and the broker-written logs of ``tests/kafka/golden/broker_logs``."""
    from segdex.pipelines.demo import damage_tail, prepare
    from segdex.pipelines.sample_logdir import generate_sample

    root = tmp_path_factory.mktemp("docs-root")
    logs, meta = prepare(root / "sample")
    generate_sample(logs)
    damage_tail(logs)
    for command in ("verify", "reindex"):
        proc = segdex(command, "--no-progress", "--metadata", str(meta), str(logs), timeout=300)
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr  # 1: the cut tail
    shutil.copytree(GOLDEN / "broker_logs", root / "tests" / "kafka" / "golden" / "broker_logs")
    return root


@pytest.mark.parametrize("page", [pytest.param(p, id=str(p.relative_to(DOCS)),
                                               marks=[pytest.mark.spark] if any(map(_in_process, examples(p)))
                                               else []) for p in RUNNABLE])
def test_every_example_of_the_docs_runs_as_written(page, sample, tmp_path, request, monkeypatch, capsys):
    """Each ``bash`` line of the page, in order, from a fresh copy of the sample: exit status 0 or 1, no
    traceback. The commands that always start Spark run in this process on the tests' SparkSession."""
    root = tmp_path / "root"
    shutil.copytree(sample, root, symlinks=True)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    for line in examples(page):
        if _in_process(line):
            request.getfixturevalue("spark")
            monkeypatch.chdir(root)
            code = segdex_main(_words(line)[1:])
            out = capsys.readouterr()
            output = out.out + out.err
        else:
            proc = subprocess.run(["bash", "-c", line], cwd=root, env=env, capture_output=True, text=True,
                                  timeout=300)
            code, output = proc.returncode, proc.stdout + proc.stderr
        assert code in (0, 1) and "Traceback" not in output, f"{page.name}: {line}\nexit {code}\n{output[-3000:]}"
