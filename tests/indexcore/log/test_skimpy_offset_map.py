"""``SkimpyOffsetMap``: Kafka's slot count (what bounds a cleaning round), the latest offset, MD5 key digests."""

from __future__ import annotations

import pytest

from segdex.indexcore.log.skimpy_offset_map import SkimpyOffsetMap


def test_slots_are_kafkas_for_md5_and_sha256():
    assert SkimpyOffsetMap(134_217_728).slots == 5_592_405  # 24 bytes an entry (16 of MD5 + 8 of offset)
    assert int(SkimpyOffsetMap(134_217_728).slots * 0.9) == 5_033_164  # the keys one round may take by default
    assert SkimpyOffsetMap(134_217_728, "SHA-256").slots == 3_355_443


def test_put_get_and_the_latest_offset():
    m = SkimpyOffsetMap(24 * 3)
    assert (m.get(b"a"), m.latest_offset, m.size) == (-1, -1, 0)
    m.put(b"a", 5)
    m.put(b"b", 6)
    m.put(b"a", 9)  # an overwrite: no new entry
    assert (m.get(b"a"), m.get(b"b"), m.size, m.latest_offset) == (9, 6, 2, 9)
    m.update_latest_offset(20)
    assert m.latest_offset == 20 and m.utilization == 2 / 3
    m.put(b"c", 21)
    with pytest.raises(ValueError, match="full offset map"):
        m.put(b"a", 22)  # Kafka checks the entry count before it looks the key up
    m.clear()
    assert (m.size, m.latest_offset, m.get(b"a")) == (0, -1, -1)
