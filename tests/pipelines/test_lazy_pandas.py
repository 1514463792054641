"""pyarrow without pandas in the one-host engine, and with it again the moment something imports pandas.

Each case runs in a fresh interpreter: whether pandas is loaded is a property of a whole process.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from segdex.indexcore.tools.segment_writer import segment_name, uniform_segment

REPO_ROOT = Path(__file__).resolve().parents[2]


def _python(code: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          cwd=REPO_ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_conversions_leave_pandas_unloaded_and_an_import_tells_pyarrow():
    out = _python("""
        import json, sys
        from segdex.pipelines.lazy_pandas import defer_pandas
        first, again = defer_pandas(), defer_pandas()
        import pyarrow as pa
        from segdex.pipelines.metadata_store import to_arrow
        from segdex.pipelines.schemas import SEGMENTS_SCHEMA
        rows = [{"log_dir": "/d", "topic": "t", "partition": 0, "base_offset": 0, "status": "ok"}]
        table = to_arrow(rows, SEGMENTS_SCHEMA)
        loaded_after_rows = "pandas" in sys.modules
        import pandas as pd
        categorical = str(pa.array(pd.Categorical(["a", "b", "a"])).type)
        print(json.dumps({"first": first, "again": again, "rows": table.num_rows,
                          "loaded_after_rows": loaded_after_rows, "categorical": categorical}))
    """)
    assert out == {"first": True, "again": False, "rows": 1, "loaded_after_rows": False,
                   "categorical": "dictionary<values=string, indices=int8, ordered=0>"}


def test_without_the_watch_pyarrow_would_misread_a_series():
    """What the watch is for: refused once and never told, pyarrow reads a pandas object as a plain sequence
    (a categorical becomes strings). If pyarrow stops behaving so, this fails and the deferral can go."""
    out = _python("""
        import json, sys
        from segdex.pipelines import lazy_pandas
        lazy_pandas.defer_pandas()
        sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, lazy_pandas._Watch)]
        import pandas as pd
        import pyarrow as pa
        before = str(pa.array(pd.Categorical(["a", "b", "a"])).type)
        lazy_pandas.tell_pyarrow()
        after = str(pa.array(pd.Categorical(["a", "b", "a"])).type)
        print(json.dumps({"before": before, "after": after}))
    """)
    assert out == {"before": "string", "after": "dictionary<values=string, indices=int8, ordered=0>"}


def test_pyarrow_pandas_features_still_work_after_deferring():
    out = _python("""
        import json, sys
        from segdex.pipelines.lazy_pandas import defer_pandas
        defer_pandas()
        import pyarrow as pa
        frame = pa.table({"a": [1, 2]}).to_pandas()
        back = pa.Table.from_pandas(frame).column("a").to_pylist()
        print(json.dumps({"type": type(frame).__name__, "back": back}))
    """)
    assert out == {"type": "DataFrame", "back": [1, 2]}


def test_a_deferral_is_skipped_when_pandas_is_loaded():
    out = _python("""
        import json, sys
        import pandas
        from segdex.pipelines import lazy_pandas
        print(json.dumps({"deferred": lazy_pandas.defer_pandas(),
                          "watching": any(isinstance(f, lazy_pandas._Watch) for f in sys.meta_path)}))
    """)
    assert out == {"deferred": False, "watching": False}


def test_an_embedded_verify_writes_its_tables_without_loading_pandas(tmp_path):
    for p in range(2):
        (tmp_path / "data" / f"t-{p}").mkdir(parents=True)
        uniform_segment(tmp_path / "data" / f"t-{p}" / segment_name(0), 64 << 10, base_offset=0)
    out = _python(f"""
        import json, sys, contextlib, io
        from segdex.jobs.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            code = main(["verify", "--no-progress", "--metadata", {str(tmp_path / "meta")!r},
                         {str(tmp_path / "data")!r}])
        loaded = "pandas" in sys.modules
        from segdex.pipelines.metadata_store import MetadataStore
        segments = MetadataStore({str(tmp_path / "meta")!r}, None).read("segments").num_rows
        print(json.dumps({{"code": code, "loaded": loaded, "segments": segments}}))
    """)
    assert out == {"code": 1, "loaded": False, "segments": 2}  # 1: the indexes are missing
