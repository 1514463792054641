"""Regular files only: the kinds of file refused, named."""

from __future__ import annotations

import stat

from segdex.indexcore.fs.file_access import _kind


def test_file_kinds_named_in_refusals():
    assert _kind(stat.S_IFBLK | 0o660) == "a block device"
    assert _kind(stat.S_IFCHR | 0o660) == "a character device"
    assert _kind(0) == "not a regular file"
