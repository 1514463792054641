"""The typed seams of ``pipelines`` (issue 39, point 6), enforced over the source as written.

No function or method in ``pipelines/`` takes more than ``MAX_PARAMETERS`` parameters (self and cls aside, ``*args``
and ``**kwargs`` counted): a run's options travel in a ``RunRequest``, small records carry the rest. No engine is
typed ``Any``: the one-host engine and a Spark session are both an ``Engine``.
"""

from __future__ import annotations

import ast
import dataclasses
import re

import pytest

from segdex.pipelines.engine import Engine, is_local
from segdex.pipelines.local_engine import LocalEngine
from segdex.pipelines.run_context import RunRequest
from tests.support.fixtures import REPO_ROOT

PIPELINES = REPO_ROOT / "pipelines"
MAX_PARAMETERS = 6


def _parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> list[str]:
    a = fn.args
    names = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]
    if names and names[0] in ("self", "cls"):
        names = names[1:]
    return names + [f"*{p.arg}" for p in (a.vararg, a.kwarg) if p is not None]


def _long_parameter_lists() -> dict[str, list[str]]:
    found = {}
    for path in sorted(PIPELINES.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                names = _parameters(node)
                if len(names) > MAX_PARAMETERS:
                    found[f"{path.name}:{node.lineno}:{getattr(node, 'name', 'lambda')}"] = names
    return found


def test_no_parameter_list_in_pipelines_is_longer_than_six():
    assert len(list(PIPELINES.glob("*.py"))) > 20  # the check reads the modules it means to
    assert _long_parameter_lists() == {}


def test_the_count_sees_every_kind_of_parameter():
    tree = ast.parse("class C:\n    def m(self, a, /, b, *c, d, **e): ...\nf = lambda a, b: a")
    method, lam = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.Lambda))]
    assert _parameters(method) == ["a", "b", "d", "*c", "*e"]
    assert _parameters(lam) == ["a", "b"]


def test_no_engine_is_typed_any():
    pattern = re.compile(r"\b(spark|engine)\s*:\s*Any\b")
    found = [f"{p.relative_to(REPO_ROOT)}:{i}" for folder in ("pipelines", "jobs")
             for p in sorted((REPO_ROOT / folder).glob("*.py"))
             for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert found == []


def test_the_one_host_engine_is_an_engine():
    with LocalEngine(1) as engine:
        assert isinstance(engine, Engine) and is_local(engine)
    assert not is_local(None)


@pytest.mark.spark
def test_a_spark_session_is_an_engine(spark):
    assert isinstance(spark, Engine) and not is_local(spark)


def test_a_run_request_is_frozen_and_names_its_log_dirs():
    request = RunRequest(["/d1", "/d2"], "/meta")
    assert request.log_dirs == ["/d1", "/d2"] and request.topic_configs == {} and request.arguments == []
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.now_ms = 1  # type: ignore[misc]
    with pytest.raises(TypeError, match="list of log dirs"):
        RunRequest("/d1", "/meta")
