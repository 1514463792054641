"""``SkimpyOffsetMap``: Kafka's slot count (what bounds a cleaning round), the latest offset, MD5 key digests."""

from __future__ import annotations

import pytest

from segdex.indexcore.errors import OffsetMapFullException
from segdex.indexcore.log.skimpy_offset_map import SkimpyOffsetMap


def test_slots_are_kafkas_for_md5_and_sha256():
    assert SkimpyOffsetMap(134_217_728).slots == 5_592_405  # 24 bytes an entry (16 of MD5 + 8 of offset)
    assert int(SkimpyOffsetMap(134_217_728).slots * 0.9) == 5_033_164  # the keys one round may take by default
    assert SkimpyOffsetMap(134_217_728, "SHA-256").slots == 3_355_443


def _map(memory: int, native: bool) -> SkimpyOffsetMap:
    m = SkimpyOffsetMap(memory)
    assert m.native is not None  # the kernel is built (setup.py) and libcrypto's MD5 found
    if not native:
        m.native = None  # the dict
    return m


@pytest.mark.parametrize("native", [True, False])
def test_put_get_and_the_latest_offset(native: bool):
    m = _map(24 * 3, native)
    assert (m.get(b"a"), m.latest_offset, m.size) == (-1, -1, 0)
    m.put(b"a", 5)
    m.put(b"b", 6)
    m.put(b"a", 9)  # an overwrite: no new entry
    assert (m.get(b"a"), m.get(b"b"), m.size, m.latest_offset) == (9, 6, 2, 9)
    m.update_latest_offset(20)
    assert m.latest_offset == 20 and m.utilization == 2 / 3
    m.put(b"c", 21)
    with pytest.raises(OffsetMapFullException, match="full offset map, entries: 3, slots: 3"):
        m.put(b"a", 22)  # Kafka checks the entry count before it looks the key up
    m.clear()
    assert (m.size, m.latest_offset, m.get(b"a")) == (0, -1, -1)


def test_the_kernel_and_the_dict_refuse_a_full_map_in_kafkas_words():
    """``SkimpyOffsetMap.put`` into a map holding ``slots`` entries throws before it looks at the key, a key the
    map holds too, with Kafka's ``IllegalArgumentException`` text; the kernel's map and the dict alike."""
    for native in (True, False):
        m = _map(24, native)
        assert (m.native is not None) == native
        m.put(b"a", 1)
        for key in (b"b", b"a"):
            with pytest.raises(OffsetMapFullException) as e:
                m.put(key, 2)
            assert (e.value.kafka_class, str(e.value)) == (
                "java.lang.IllegalArgumentException",
                "Attempted to add a new entry to a full offset map, entries: 1, slots: 1"), native
        assert (m.size, m.get(b"a")) == (1, 1)


def test_the_kernels_table_answers_as_the_dict_past_its_growth():
    """The kernel's table starts at 1,024 entries and doubles: 50,000 keys, overwritten, read back."""
    kernel, plain = _map(24 * 60_000, True), _map(24 * 60_000, False)
    for m in (kernel, plain):
        for i in range(100_000):
            m.put(b"key-%d" % (i % 50_000), i)
    assert kernel.size == plain.size == 50_000
    assert all(kernel.get(b"key-%d" % i) == plain.get(b"key-%d" % i) == 50_000 + i for i in range(0, 50_000, 7))
    assert kernel.get(b"absent") == -1 and kernel.latest_offset == 99_999
    with pytest.raises(TypeError):
        kernel.native.put("not bytes", 1)


@pytest.mark.parametrize("native", [True, False])
def test_a_fresh_map_is_empty_and_alike(native: bool):
    m = _map(24 * 5, native)
    m.put(b"a", 3)
    fresh = m.fresh()
    assert (fresh.slots, fresh.hash_algorithm, fresh.hash_size, fresh.bytes_per_entry) == (5, "MD5", 16, 24)
    assert (fresh.size, fresh.latest_offset, fresh.get(b"a")) == (0, -1, -1)
    assert (fresh.native is not None) == native and (fresh.native is None or fresh.native is not m.native)
    for i in range(5):  # its own slots, all of them
        fresh.put(b"k%d" % i, i)
    with pytest.raises(OffsetMapFullException):
        fresh.put(b"k5", 5)
    assert (m.size, m.get(b"a")) == (1, 3)


@pytest.mark.parametrize("native", [True, False])
def test_a_later_partial_map_merges_while_under_the_limit(native: bool):
    """Its keys put with its offsets (they win), its latest offset taken; refused, nothing changed, when the map
    would then hold ``limit`` keys (keys both hold count once)."""
    m = _map(24 * 10, native)
    m.put(b"a", 1)
    m.put(b"b", 2)
    later = m.fresh()
    later.put(b"a", 6)
    later.put(b"b", 7)
    later.put(b"c", 8)
    later.update_latest_offset(9)
    assert not m.merge(later, 3)  # a, b, c: 3 keys
    assert (m.size, m.get(b"a"), m.get(b"c"), m.latest_offset) == (2, 1, -1, 2)
    assert m.merge(later, 4)
    assert (m.size, m.get(b"a"), m.get(b"b"), m.get(b"c"), m.latest_offset) == (3, 6, 7, 8, 9)
