"""``record.crc32c``: Kafka's CRC-32C from the crc32c package's extension, without the package's import."""

from __future__ import annotations

import importlib.machinery
import json
import os
import subprocess
import sys
import types

import crc32c as package
import pytest

from segdex.indexcore.record import crc32c


def test_check_value_and_continuation_match_the_package():
    assert crc32c.crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    assert crc32c.crc32c(b"6789", crc32c.crc32c(b"12345")) == 0xE3069283
    data = os.urandom(10_000)
    assert crc32c.crc32c(memoryview(data)[21:]) == package.crc32c(data[21:])
    assert crc32c.crc32c(bytearray(data)) == package.crc32c(data)
    assert crc32c.crc32c(b"") == 0


def test_extension_path_is_the_packages_own_extension():
    assert os.path.dirname(crc32c.extension_path()) == os.path.dirname(package.__file__)


def _fresh(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return json.loads(out.splitlines()[-1])


# what a new interpreter imports: under mutmut every mutated module imports mutmut's trampolines (and
# importlib.metadata with them), so scripts/mutation.sh leaves this test out (it still runs in the suite)
@pytest.mark.fresh_process
def test_a_scan_process_imports_neither_the_package_nor_importlib_metadata():
    """The kernel found, a segment's record CRC and a producer snapshot computed: the package's ``__init__``
    (which imports ``importlib.metadata``, 60 ms) never ran."""
    seen = _fresh(
        "import json, sys\n"
        "from segdex.indexcore.log.scan import native\n"
        "from segdex.indexcore.log.producer_snapshot import snapshot_bytes\n"
        "from segdex.indexcore.record import crc32c\n"
        "kernel = native.load()\n"
        "check = crc32c.crc32c(b'123456789') == 0xE3069283 and crc32c.crc32c(b'6789', crc32c.crc32c(b'12345'))"
        " == 0xE3069283\n"
        "snapshot_bytes([])\n"
        "print(json.dumps({'kernel': kernel is not None, 'check': check, 'package': 'crc32c' in sys.modules,\n"
        "                  'metadata': 'importlib.metadata' in sys.modules}))\n")
    assert seen == {"kernel": True, "check": True, "package": False, "metadata": False}


def test_a_package_imported_first_is_the_one_used():
    seen = _fresh(
        "import json, sys, crc32c as package\n"
        "from segdex.indexcore.record import crc32c\n"
        "ok = crc32c.crc32c(b'123456789') == 0xE3069283\n"
        "print(json.dumps({'ok': ok, 'same': crc32c._extension() is sys.modules['crc32c._crc32c']}))\n")
    assert seen == {"ok": True, "same": True}


def test_no_package_is_an_import_error_at_the_first_crc():
    """Without the package (its name blocked in ``sys.modules``, as an import of a missing one fails): the
    module still imports, and the first CRC raises ImportError naming it; the native kernel falls back to
    another library."""
    seen = _fresh(
        "import json, sys\n"
        "sys.modules['crc32c'] = None\n"
        "from segdex.indexcore.record import crc32c\n"
        "from segdex.indexcore.log.scan import native\n"
        "try:\n    crc32c.crc32c(b'x')\n    error = None\n"
        "except ImportError as e:\n    error = str(e)\n"
        "kernel = native.load()\n"
        "print(json.dumps({'error': error, 'symbol': native._crc.symbol if kernel else None}))\n")
    assert seen == {"error": "the crc32c package (2.5 or later) is not installed", "symbol": "crc32c_extend"}


# In-process: the extension's lookup, the package's module objects standing in where a case needs them gone
# (pytest's monkeypatch puts sys.modules back).

def test_the_function_is_bound_once_from_the_extension(monkeypatch):
    monkeypatch.setattr(crc32c, "_compute", None)
    bound = crc32c._bind()
    assert bound is sys.modules[crc32c.EXTENSION].crc32c and crc32c._compute is bound
    assert crc32c.crc32c(b"123456789") == 0xE3069283


def test_the_extension_imported_already_is_the_one_used():
    assert crc32c._extension() is sys.modules[crc32c.EXTENSION]


def test_the_extension_is_loaded_from_its_file_when_not_imported(monkeypatch):
    path = crc32c.extension_path()
    monkeypatch.delitem(sys.modules, crc32c.EXTENSION)
    module = crc32c._extension()
    assert module is not package._crc32c and module.__name__ == crc32c.EXTENSION and module.__file__ == path
    assert module.crc32c(b"123456789", 0) == 0xE3069283


def test_the_path_of_an_extension_module_in_sys_modules_is_its_file(monkeypatch):
    found = os.path.join(os.path.dirname(package.__file__), os.path.basename(crc32c.extension_path()))
    stand_in = types.ModuleType(crc32c.EXTENSION)
    stand_in.__file__ = "/elsewhere/_crc32c.so"
    monkeypatch.setitem(sys.modules, crc32c.EXTENSION, stand_in)
    assert crc32c.extension_path() == "/elsewhere/_crc32c.so"
    monkeypatch.setitem(sys.modules, crc32c.EXTENSION, types.ModuleType(crc32c.EXTENSION))  # no __file__
    assert crc32c.extension_path() == found


@pytest.mark.parametrize("package_module", [None, types.ModuleType("crc32c")])  # absent; a module without a spec
def test_no_package_is_an_import_error_naming_it(monkeypatch, package_module):
    monkeypatch.delitem(sys.modules, crc32c.EXTENSION)
    monkeypatch.setitem(sys.modules, crc32c.PACKAGE, package_module)
    with pytest.raises(ImportError) as e:
        crc32c.extension_path()
    assert str(e.value) == "the crc32c package (2.5 or later) is not installed" and e.value.name == "crc32c"


def test_a_package_without_the_extension_is_an_import_error_naming_it(monkeypatch, tmp_path):
    monkeypatch.delitem(sys.modules, crc32c.EXTENSION)
    empty = types.ModuleType("crc32c")
    empty.__spec__ = importlib.machinery.ModuleSpec("crc32c", None, is_package=True)
    empty.__spec__.submodule_search_locations = [str(tmp_path)]
    monkeypatch.setitem(sys.modules, crc32c.PACKAGE, empty)
    with pytest.raises(ImportError) as e:
        crc32c.extension_path()
    assert str(e.value) == f"the crc32c package has no _crc32c extension in {[str(tmp_path)]}"
    assert e.value.name == "crc32c._crc32c"
