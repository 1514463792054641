"""``java_hash_map.hash_map_order`` against Java 17's own ``HashMap<Long, V>``: the order Kafka's producer
snapshots list producers in (``ProducerStateManager.writeSnapshot`` iterates that map). Seeded key sets of every
size up to 300 over the whole long range, and sets crowded into one bucket so that the table doubles early
(``treeifyBin`` below capacity 64). And ``timeline_capacity``/``timeline_hash_order`` against Kafka 4.4's own
``TimelineHashMap`` (the members of a consumer-protocol group): over seeded histories of puts and removals."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from segdex.indexcore.log.java_hash_map import (
    hash_map_order,
    java_long_hash,
    java_string_hash,
    timeline_capacity,
    timeline_hash_order,
    timeline_slot,
)
from tests.support.kafka_harness import KafkaInstall

JAVA = """
import java.io.*;
import java.util.*;

public class HashOrder {
  public static void main(String[] args) throws IOException {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
    StringBuilder out = new StringBuilder();
    for (String line; (line = in.readLine()) != null; ) {
      HashMap<Long, Integer> map = new HashMap<>();
      for (String k : line.trim().split(" ")) if (!k.isEmpty()) map.put(Long.parseLong(k), 0);
      StringJoiner j = new StringJoiner(" ");
      for (Long k : map.keySet()) j.add(Long.toString(k));
      out.append(j).append('\\n');
    }
    System.out.print(out);
  }
}
"""

_JAVA_ORDERS: dict[tuple[tuple[int, ...], ...], list[list[int]]] = {}


def java_orders(key_sets: list[list[int]], tmp_path: Path) -> list[list[int]]:
    """Java's iteration order of each key set (kept per process: a mutation run asks it once)."""
    key = tuple(tuple(s) for s in key_sets)
    if key not in _JAVA_ORDERS:
        (tmp_path / "HashOrder.java").write_text(JAVA)
        subprocess.run(["javac", "-d", str(tmp_path), str(tmp_path / "HashOrder.java")], check=True, timeout=120)
        proc = subprocess.run(["java", "-cp", str(tmp_path), "HashOrder"], check=True, timeout=120, text=True,
                              capture_output=True, input="".join(" ".join(map(str, s)) + "\n" for s in key_sets))
        _JAVA_ORDERS[key] = [[int(k) for k in line.split()] for line in proc.stdout.split("\n")[:len(key_sets)]]
    return _JAVA_ORDERS[key]


def _key_sets() -> list[list[int]]:
    rng = random.Random(15)
    sets = [[]]
    for size in list(range(1, 40)) + [rng.randint(40, 300) for _ in range(60)]:
        pool = rng.choice([(0, 2**16), (0, 2**40), (-2**63, 2**63 - 1)])
        sets.append(rng.sample(range(*pool), size) if pool[1] - pool[0] < 2**20 else
                    list(dict.fromkeys(rng.randint(*pool) for _ in range(size))))
    # crowded: up to 32 keys sharing their bucket at capacity 16, at most 8 per bucket at 64 (beyond that Java
    # makes a tree, whose order hash_map_order does not model)
    candidates = [rng.randint(0, 2**62) for _ in range(40_000)]
    for low in (3, 11):
        quarters = [[k for k in candidates if java_long_hash(k) & 63 == low + 16 * q][:8] for q in range(4)]
        for take in (9, 10, 17, 25, 32):
            crowded = [quarters[i % 4][i // 4] for i in range(take)]
            rng.shuffle(crowded)
            sets.append(list(dict.fromkeys(crowded + rng.sample(candidates, rng.randint(0, 12)))))
    return sets


def test_order_is_javas_hash_map_order(tmp_path: Path):
    sets = _key_sets()
    assert len(sets) >= 100 and max(map(len, sets)) >= 200
    java = java_orders(sets, tmp_path)
    assert [hash_map_order(s) for s in sets] == java
    assert sum(j != s for j, s in zip(java, sets, strict=True)) >= 90  # Java's order is not the put order


def test_java_long_hash():
    """``Long.hashCode`` spread as ``HashMap.hash`` does, on values whose words cancel or carry a sign."""
    assert java_long_hash(0) == 0
    assert java_long_hash(1) == 1
    assert java_long_hash(1 << 32) == 1  # high word 1, low word 0
    assert java_long_hash((1 << 32) | 1) == 0  # the words cancel
    assert java_long_hash(-1) == 0  # 0xFFFFFFFF ^ 0xFFFFFFFF
    assert java_long_hash(0x1_0000) == 0x1_0001  # h ^ (h >>> 16)
    assert java_long_hash(-2) == 1  # 0xFFFFFFFE ^ 0xFFFFFFFF = 1
    assert java_long_hash(2**63 - 1) == 0x8000_8000  # 0x7FFFFFFF ^ 0xFFFFFFFF = 0x80000000, spread


# ------------------------------------------------------------------ from test_small_modules_units.py


# The 9th key of bucket 5 (at 16) is 117, bucket 21 at 32: the table doubles to 32 with 5 keys in bucket 5 and
# 4 in bucket 21; four more keys of bucket 21 make 8 there (no resize), a fifth makes 9 (capacity 64).
_TREEIFY_KEYS = [5, 37, 69, 101, 133, 21, 53, 85, 117, 149, 181, 213, 245]


def test_eight_keys_in_one_bucket_do_not_resize_the_table():
    """A bin is treeified (at capacity < 64: the table doubled) only when a 9th node joins it."""
    keys = [5, 21, 37, 53, 69, 85, 101, 117]  # all in bucket 5 of 16
    assert hash_map_order(keys) == keys


def test_a_ninth_key_in_a_bucket_doubles_a_small_table():
    keys = [5, 21, 37, 53, 69, 85, 101, 117, 133]
    # capacity 32: bucket 5 holds 5, 37, 69, 101, 133; bucket 21 holds 21, 53, 85, 117
    assert hash_map_order(keys) == [5, 37, 69, 101, 133, 21, 53, 85, 117]


def test_bucket_counts_after_a_load_factor_resize():
    """At 13 keys the table goes from 16 to 32; bucket 5 then holds 7 keys, and an 8th keeps capacity 32."""
    keys = [0, 1, 2, 3, 4, 6, 5, 37, 69, 101, 133, 165, 197, 229]
    assert hash_map_order(keys) == [0, 1, 2, 3, 4, 5, 37, 69, 101, 133, 165, 197, 229, 6]


def test_bucket_counts_after_a_treeify_resize():
    assert hash_map_order(_TREEIFY_KEYS) == [5, 37, 69, 101, 133, 21, 53, 85, 117, 149, 181, 213, 245]


def test_a_ninth_key_after_a_treeify_resize_doubles_again():
    # capacity 64: bucket 5: 5, 69, 133; 21: 21, 85, 149, 213, 277; 37: 37, 101; 53: 53, 117, 181, 245
    assert hash_map_order(_TREEIFY_KEYS + [277]) == [5, 69, 133, 21, 85, 149, 213, 277, 37, 101, 53, 117, 181,
                                                     245]


# --- Kafka's TimelineHashMap (org.apache.kafka.timeline, kafka-server-common 4.4.0), asked by reflection -----------
# BaseHashTable.findSlot(key, capacity) of keys whose hashCode is the dict's key, at each of TIMELINE_CAPACITIES
TIMELINE_CAPACITIES = [2, 4, 8, 16, 64, 1024, 65536, 1048576, 1073741824]
TIMELINE_SLOTS = {
    0: [0, 0, 0, 0, 0, 0, 0, 0, 0],
    1: [1, 2, 4, 9, 39, 632, 40503, 648055, 663608942],
    -1: [0, 1, 3, 6, 24, 391, 25032, 400520, 410132881],
    7: [0, 1, 2, 5, 20, 334, 21380, 342085, 350295300],
    42: [1, 3, 7, 15, 61, 980, 62745, 1003935, 1028029979],
    12345: [1, 2, 5, 10, 40, 644, 41260, 660174, 676018314],
    -12345: [0, 1, 2, 5, 23, 379, 24275, 388401, 397723509],
    2147483647: [0, 0, 1, 2, 8, 133, 8557, 136924, 140210452],
    -2147483648: [0, 1, 2, 4, 16, 257, 16474, 263596, 269922429],
    2147462093: [0, 0, 0, 0, 1, 26, 1703, 27250, 27904020],
    -2147478988: [0, 1, 2, 4, 18, 296, 18990, 303848, 311140773],
    1431655765: [1, 3, 7, 15, 61, 982, 62897, 1006352, 1030504498],
    -1431655766: [0, 1, 3, 6, 27, 432, 27671, 442744, 453370207],
    987654321: [1, 2, 4, 8, 32, 526, 33665, 538652, 551580138],
    -987654321: [0, 1, 3, 7, 31, 497, 31870, 509923, 522161685],
    31: [0, 0, 1, 2, 10, 162, 10423, 166779, 170782557],
    65536: [0, 1, 3, 7, 30, 486, 31161, 498583, 510549970],
    65537: [0, 0, 0, 1, 5, 95, 6128, 98063, 100417088],
}


def test_a_timeline_slot_is_kafkas_find_slot():
    """``timeline_slot`` gives ``BaseHashTable.findSlot``'s slot for hash codes of every sign and size, from 2 slots
    to 2^30 (Kafka 4.4's answers, by reflection)."""
    for hash_code, expected in TIMELINE_SLOTS.items():
        assert [timeline_slot(hash_code, c) for c in TIMELINE_CAPACITIES] == expected, hash_code


def test_a_timeline_table_grows_as_kafkas():
    """``BaseHashTable``'s slots after each of 200 puts (Kafka 4.4's ``elements.length``): 2 up to 2 keys, then
    doubled while (size + 1) * 0.75 exceeds them."""
    grown = {2: 2, 5: 4, 10: 8, 21: 16, 42: 32, 85: 64, 170: 128, 200: 256}  # the last key count of each size
    previous = 0
    for last, slots in grown.items():
        for keys in range(previous + 1, last + 1):
            assert timeline_capacity(keys - 1) == slots, keys
        previous = last


@pytest.mark.parametrize(("keys", "kafkas"), [
    ([0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [5, 0, 2, 7, 4, 9, 1, 6, 3, 8]),
    ([42, 7, 12345, -1, 31, 65536, 987654321], [31, 7, 65536, -1, 987654321, 12345, 42]),
    ([5, 5000, 500000, 50, 500, 50000, 5000000, 3, 30, 300, 3000, 30000],
     [30000, 500, 3000, 5, 5000, 300, 30, 50000, 3, 50, 5000000, 500000]),
])
def test_a_timeline_hash_map_iterates_as_kafkas(keys: list[int], kafkas: list[int]):
    """``timeline_hash_order`` of Integer keys put in this order is the order Kafka 4.4's ``TimelineHashMap.keySet``
    gives them (a map made with ``new TimelineHashMap<>(registry, 0)``)."""
    assert timeline_hash_order(keys, lambda k: k, timeline_capacity(len(keys) - 1)) == kafkas


# --- a TimelineHashMap's history of puts and removals, against Kafka 4.4's own class ---------------------------------
TIMELINE_JAVA = """
import java.io.*;
import java.lang.reflect.Field;
import java.util.*;
import org.apache.kafka.common.utils.internals.LogContext;
import org.apache.kafka.timeline.SnapshotRegistry;
import org.apache.kafka.timeline.TimelineHashMap;

public class TimelineOrder {
  public static void main(String[] args) throws Exception {
    Field elements = Class.forName("org.apache.kafka.timeline.BaseHashTable").getDeclaredField("elements");
    elements.setAccessible(true);
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
    StringBuilder out = new StringBuilder();
    for (String line; (line = in.readLine()) != null; ) {
      SnapshotRegistry registry = new SnapshotRegistry(new LogContext());
      TimelineHashMap<String, Integer> map = new TimelineHashMap<>(registry, 0);
      long epoch = 0;
      for (String op : line.trim().split(" ")) {
        if (op.isEmpty()) continue;
        if (op.charAt(0) == '+') map.put(op.substring(1), 0); else map.remove(op.substring(1));
        registry.idempotentCreateSnapshot(++epoch);  // as the coordinator does after each write
        registry.deleteSnapshotsUpTo(epoch - 1);
      }
      StringJoiner latest = new StringJoiner(" "), atSnapshot = new StringJoiner(" ");
      for (String k : map.keySet()) latest.add(k);
      for (String k : map.keySet(epoch)) atSnapshot.add(k);
      out.append(((Object[]) elements.get(map)).length).append('|').append(latest).append('|').append(atSnapshot)
         .append('\\n');
    }
    System.out.print(out);
  }
}
"""


def _timeline_histories() -> list[list[tuple[str, str]]]:
    """Seeded histories of puts (``+``) and removals (``-``) of member-id-like keys: groups that grow, shrink and
    grow again, keys removed and put again (to their slot's end), replacing puts, removals of absent keys."""
    rng = random.Random(848)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    histories = []
    for n in range(160):
        pool = ["".join(rng.choice(alphabet) for _ in range(rng.choice((2, 5, 22)))) for _ in range(rng.randint(2, 40))]
        pool = list(dict.fromkeys(pool))
        present: list[str] = []
        ops = []
        for _ in range(rng.randint(1, 120)):
            shrinking = (n % 3 == 0 and len(ops) > 40) or rng.random() < 0.3
            if present and shrinking and rng.random() < 0.8:
                k = present.pop(rng.randrange(len(present)))
                ops.append(("-", k))
            elif present and rng.random() < 0.25:
                ops.append(("+", rng.choice(present)))  # a replacing put: grows the table, keeps the key's place
            elif rng.random() < 0.05:
                ops.append(("-", rng.choice(pool)))  # perhaps absent: changes nothing
                present = [k for k in present if k != ops[-1][1]]
            else:
                k = rng.choice(pool)
                if k not in present:
                    present.append(k)
                ops.append(("+", k))
        histories.append(ops)
    return histories


def _replayed(history: list[tuple[str, str]]) -> tuple[int, list[str]]:
    """The slot count and order segdex gives a ``TimelineHashMap`` after ``history``: ``timeline_capacity`` before
    each put, the keys in a ``dict`` that took the same puts and removals."""
    keys: dict[str, None] = {}
    slots = timeline_capacity(0)
    for op, k in history:
        if op == "+":
            slots = timeline_capacity(len(keys), slots)
            keys.setdefault(k)
        else:
            keys.pop(k, None)
    return slots, timeline_hash_order(keys, java_string_hash, slots)


def test_a_timeline_hash_map_after_puts_and_removals_is_kafkas(tmp_path: Path):
    """``timeline_capacity`` put by put and ``timeline_hash_order`` over the keys left give Kafka 4.4's own
    ``TimelineHashMap`` (kafka-server-common-4.4.0.jar, a snapshot taken after each operation as the coordinator
    takes one after each write): its slot count (``BaseHashTable.elements.length``) and its ``keySet()`` order, at
    the latest epoch and at the last snapshot, after seeded histories of puts, replacing puts and removals. A table
    keeps the slots it grew to while it held more keys (in most of these histories more than its keys now need),
    and a key removed and put again iterates from its slot's end: both change the order here."""
    histories = _timeline_histories()
    (tmp_path / "TimelineOrder.java").write_text(TIMELINE_JAVA)
    classpath = KafkaInstall("4.4.0").check().classpath(tmp_path)
    subprocess.run(["javac", "-cp", classpath, "-d", str(tmp_path), str(tmp_path / "TimelineOrder.java")], check=True,
                   timeout=120)
    proc = subprocess.run(["java", "-cp", classpath, "TimelineOrder"], check=True, timeout=120, text=True,
                          capture_output=True, input="".join(" ".join(op + k for op, k in h) + "\n" for h in histories))
    kafka = []
    for line in proc.stdout.split("\n")[:len(histories)]:
        slots, latest, at_snapshot = line.split("|")
        assert latest == at_snapshot
        kafka.append((int(slots), latest.split()))
    assert [_replayed(h) for h in histories] == kafka
    # the histories tell apart a table sized for the keys it holds now, and a dict's order ignoring removals
    now_sized = [timeline_hash_order(order, java_string_hash, timeline_capacity(len(order))) for _, order in kafka]
    assert sum(now_sized[i] != kafka[i][1] for i in range(len(histories))) >= 80
    assert sum(slots > timeline_capacity(len(order)) for slots, order in kafka) >= 50
    first_put = [timeline_hash_order(list(dict.fromkeys(k for op, k in h if op == "+" and k in order)),
                                     java_string_hash, slots)
                 for h, (slots, order) in zip(histories, kafka, strict=True)]
    assert sum(first_put[i] != kafka[i][1] for i in range(len(histories))) >= 40
