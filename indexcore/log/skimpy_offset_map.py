"""Kafka's ``SkimpyOffsetMap``: the cleaner's map from a key's hash to the latest offset seen for it.

Kafka keeps ``slots = memory // (hash size + 8)`` slots of (hash, offset) in one buffer and probes it; what a
cleaning's result depends on is only which keys it holds, its ``size`` (distinct keys put), its ``slots`` (how many
keys a round may take: ``int(slots * load factor)``, ``Cleaner.buildOffsetMap``) and ``latest_offset`` (the last
offset put or skipped past, which ends the round). This map keeps the same answers with a dict keyed by the same
digest (MD5 in Kafka 4.4, 16 bytes), so two keys Kafka would confuse are confused here too.
"""

from __future__ import annotations

import hashlib


class SkimpyOffsetMap:
    """``SkimpyOffsetMap(memory, hashAlgorithm)`` as the cleaner uses it."""

    def __init__(self, memory: int, hash_algorithm: str = "MD5") -> None:
        self.hash_algorithm = hash_algorithm
        self.hash_size = hashlib.new(hash_algorithm).digest_size
        self.bytes_per_entry = self.hash_size + 8
        self.slots = memory // self.bytes_per_entry
        self._offsets: dict[bytes, int] = {}
        self.latest_offset = -1

    def _digest(self, key: bytes) -> bytes:
        return hashlib.new(self.hash_algorithm, key).digest()

    def put(self, key: bytes, offset: int) -> None:
        """``put``: the key's latest offset; ``latest_offset`` moves to it."""
        if len(self._offsets) >= self.slots:
            raise ValueError("attempted to add a new entry to a full offset map")
        self._offsets[self._digest(key)] = offset
        self.latest_offset = offset

    def get(self, key: bytes) -> int:
        """``get``: the key's latest offset, -1 when absent."""
        return self._offsets.get(self._digest(key), -1)

    def update_latest_offset(self, offset: int) -> None:
        self.latest_offset = offset

    @property
    def size(self) -> int:
        return len(self._offsets)

    @property
    def utilization(self) -> float:
        return len(self._offsets) / self.slots

    def clear(self) -> None:
        self._offsets.clear()
        self.latest_offset = -1
