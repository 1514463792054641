"""Kafka's ``SkimpyOffsetMap``: the cleaner's map from a key's hash to the latest offset seen for it.

Kafka keeps ``slots = memory // (hash size + 8)`` slots of (hash, offset) in one buffer and probes it; what a
cleaning's result depends on is only which keys it holds, its ``size`` (distinct keys put), its ``slots`` (how many
keys a round may take: ``int(slots * load factor)``, ``Cleaner.buildOffsetMap``) and ``latest_offset`` (the last
offset put or skipped past, which ends the round). This map keeps the same answers keyed by the same digest (MD5 in
Kafka 4.4, 16 bytes), so two keys Kafka would confuse are confused here too.

With MD5 the map lives in the cleaner's native kernel (``_cleaner.c``: a table that grows with the keys, MD5 from
libcrypto), which also runs the round's loops over plain batches (``native``); otherwise, or where the kernel is
not built (or ``SEGDEX_NO_NATIVE`` is set), in a dict.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib
import os

from segdex.indexcore.errors import OffsetMapFullException

_md5: tuple[object, int] | None = None  # (the library, MD5's address), found once per process


def _libcrypto_paths() -> list[str]:
    """The libcrypto ``hashlib`` already loaded (its OpenSSL), then the system's."""
    import _hashlib  # noqa: F401 - maps libcrypto into this process

    paths = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if "/libcrypto.so" in path and path not in paths:
                paths.append(path)
    import ctypes.util

    system = ctypes.util.find_library("crypto")
    return paths + ([system] if system else [])


def md5_address() -> int:
    """libcrypto's one-shot ``MD5(data, length, digest)``, checked against ``hashlib``; OSError when none is
    found."""
    global _md5
    if _md5 is None:
        for path in _libcrypto_paths():
            try:
                lib = ctypes.CDLL(path)
                fn = lib.MD5
            except (OSError, AttributeError):
                continue
            fn.restype, fn.argtypes = ctypes.c_void_p, (ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p)
            out = ctypes.create_string_buffer(16)
            fn(b"segdex", 6, out)
            if out.raw == hashlib.md5(b"segdex").digest():
                _md5 = (lib, ctypes.cast(fn, ctypes.c_void_p).value)
                break
        else:
            raise OSError("no libcrypto with MD5 found")
    return _md5[1]


def native_next_txn():
    """The kernel's ``next_txn(buf, position)`` (the next transactional or control batch), or None."""
    if os.environ.get("SEGDEX_NO_NATIVE"):
        return None
    try:
        return importlib.import_module(f"{__package__}._cleaner").next_txn
    except (ImportError, AttributeError):
        return None


def native_offset_map(slots: int, hash_algorithm: str):
    """The kernel's ``OffsetMap`` for ``slots`` keys, or None (another digest, not built, disabled, no libcrypto)."""
    if hash_algorithm.upper() != "MD5" or os.environ.get("SEGDEX_NO_NATIVE"):
        return None
    try:
        # by name, as the scan kernel: a compiled module an import-graph tool cannot see
        module = importlib.import_module(f"{__package__}._cleaner")
        md5 = md5_address()
    except (ImportError, OSError):
        return None
    try:  # the scan kernel's CRC-32C function lets the kernel rebuild plain batches too
        from segdex.indexcore.log.scan.native import find_crc32c

        crc = find_crc32c()
        return module.OffsetMap(slots, md5, crc.address, crc.raw)
    except (ImportError, ValueError):
        return module.OffsetMap(slots, md5)


class SkimpyOffsetMap:
    """``SkimpyOffsetMap(memory, hashAlgorithm)`` as the cleaner uses it."""

    def __init__(self, memory: int, hash_algorithm: str = "MD5") -> None:
        self.hash_algorithm = hash_algorithm
        self.hash_size = hashlib.new(hash_algorithm).digest_size
        self.bytes_per_entry = self.hash_size + 8
        self.slots = memory // self.bytes_per_entry
        self.native = native_offset_map(self.slots, hash_algorithm)
        self._offsets: dict[bytes, int] = {}
        self._latest_offset = -1

    def _digest(self, key: bytes) -> bytes:
        return hashlib.new(self.hash_algorithm, key).digest()

    def put(self, key: bytes, offset: int) -> None:
        """``put``: the key's latest offset; ``latest_offset`` moves to it. A map holding ``slots`` entries refuses
        any put, a key it holds too (``OffsetMapFullException``, Kafka's check comes first)."""
        if self.size >= self.slots:
            raise OffsetMapFullException(f"Attempted to add a new entry to a full offset map, entries: {self.size}, "
                                         f"slots: {self.slots}")
        if self.native is not None:
            self.native.put(key, offset)
            return
        self._offsets[self._digest(key)] = offset
        self._latest_offset = offset

    def get(self, key: bytes) -> int:
        """``get``: the key's latest offset, -1 when absent."""
        if self.native is not None:
            return self.native.get(key)
        return self._offsets.get(self._digest(key), -1)

    @property
    def latest_offset(self) -> int:
        return self.native.latest_offset if self.native is not None else self._latest_offset

    def update_latest_offset(self, offset: int) -> None:
        if self.native is not None:
            self.native.latest_offset = offset
        else:
            self._latest_offset = offset

    @property
    def size(self) -> int:
        return self.native.size if self.native is not None else len(self._offsets)

    @property
    def utilization(self) -> float:
        return self.size / self.slots

    def fresh(self) -> SkimpyOffsetMap:
        """An empty map like this one (its memory, digest and kernel): a range's partial map."""
        other = SkimpyOffsetMap.__new__(SkimpyOffsetMap)
        other.hash_algorithm, other.hash_size, other.bytes_per_entry = (self.hash_algorithm, self.hash_size,
                                                                        self.bytes_per_entry)
        other.slots = self.slots
        other.native = native_offset_map(self.slots, self.hash_algorithm) if self.native is not None else None
        other._offsets, other._latest_offset = {}, -1
        return other

    def merge(self, later: SkimpyOffsetMap, limit: int) -> bool:
        """``later``'s keys put into this map with their offsets (the partial map of a later range: its offsets
        win), its latest offset taken, when this map then holds fewer than ``limit`` keys; False (nothing changed)
        otherwise."""
        if self.native is not None:
            return self.native.merge(later.native, limit)
        if len(self._offsets) + sum(1 for d in later._offsets if d not in self._offsets) >= limit:
            return False
        self._offsets.update(later._offsets)
        self._latest_offset = later._latest_offset
        return True

    def clear(self) -> None:
        if self.native is not None:
            self.native.clear()
        self._offsets.clear()
        self._latest_offset = -1
