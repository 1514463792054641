"""``record.crc32c``: Kafka's CRC-32C from the crc32c package's extension, without the package's import."""

from __future__ import annotations

import json
import os
import subprocess
import sys

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
