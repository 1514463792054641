"""Each Kafka method segdex mirrors is written once in indexcore (issue 26, point 2).

A docstring that opens with a Kafka method (``LogSegment.readNextOffset``: ...) claims to be that method's
counterpart; two definitions claiming one method, or two module-level functions of one name in different
modules, are the same logic written twice. ``read_next_offset`` and ``largest_timestamp`` live on ``LogSegment``,
the index floor lookup on ``AbstractIndex``, the sequence arithmetic in ``record_batch``.
"""

from __future__ import annotations

import ast
import collections
import re
from pathlib import Path

import pytest

from tests.support.fixtures import REPO_ROOT

# These read indexcore's source as text. In the mutation run it is mutmut's rewrite (every function again for each of
# its mutants, docstring and all), and reading text calls no function: scripts/mutation.sh leaves them out.
pytestmark = pytest.mark.source_text

INDEXCORE = REPO_ROOT / "indexcore"
CLAIM = re.compile(r"^(?:Kafka's )?``([A-Z][A-Za-z0-9]+\.[a-z][A-Za-z0-9]*)``")


def _definitions() -> list[tuple[Path, ast.AST, bool]]:
    found = []
    for path in sorted(INDEXCORE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        top = set(tree.body)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                found.append((path, node, node in top))
    return found


def _claims() -> dict[str, list[str]]:
    claims = collections.defaultdict(list)
    for path, node, _ in _definitions():
        doc = ast.get_docstring(node) or ""
        m = CLAIM.match(doc)
        if m:
            claims[m.group(1)].append(f"{path.relative_to(REPO_ROOT)}:{node.name}")
    return claims


def test_no_kafka_method_is_claimed_twice():
    claims = _claims()
    assert len(claims) > 20  # the check reads the docstrings it means to
    assert {k: v for k, v in claims.items() if len(v) > 1} == {}


def test_the_load_is_written_once():
    """One model of Kafka's load (issue 39, point 5): ``LogLoader.load`` and ``UnifiedLog.rebuildProducerState``
    each claimed by exactly one docstring in indexcore, on ``LogLoader``, whose dry run is the startup preview and
    whose real run is recovery; no module of its own for the preview."""
    claims = _claims()
    assert claims["LogLoader.load"] == ["indexcore/log/log_loader.py:LogLoader"]
    assert claims["UnifiedLog.rebuildProducerState"] == ["indexcore/log/log_loader.py:rebuild_producer_state"]
    assert claims["TransactionIndex.sanityCheck"] == ["indexcore/index/transaction_index.py:sanity_check"]
    assert not (INDEXCORE / "log" / "startup_preview.py").exists()


# Per-class counterparts, as in Kafka: OffsetIndex.sanityCheck and TimeIndex.sanityCheck, each over its own entries.
PER_INDEX = {"sanity_check", "trimmed_entry_count"}
INDEX_MODULES = {"indexcore/index/offset_index.py", "indexcore/index/time_index.py"}


def test_no_module_level_function_is_written_in_two_modules():
    where = collections.defaultdict(set)
    for path, node, top in _definitions():
        if top and isinstance(node, ast.FunctionDef) and node.name != "main":
            where[node.name.lstrip("_")].add(str(path.relative_to(REPO_ROOT)))
    twice = {name: paths for name, paths in where.items() if len(paths) > 1}
    assert {name: paths for name, paths in twice.items() if not (name in PER_INDEX and paths == INDEX_MODULES)} == {}


def test_the_moved_kafka_methods_live_on_their_objects():
    from segdex.indexcore.index.abstract_index import AbstractIndex
    from segdex.indexcore.log.log_segment import LogSegment

    assert callable(LogSegment.read_next_offset) and callable(LogSegment.largest_timestamp)
    assert callable(AbstractIndex.largest_lower_bound_slot)
    names = {node.name for _, node, _ in _definitions()}
    assert not names & {"next_offset_of", "_largest_lower_bound_slot", "_largest_timestamp", "read_next_offset_of"}
