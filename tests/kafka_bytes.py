"""Kafka's protocol primitives written out from the protocol guide, for tests that build message bytes by hand
(expected values must not come from segdex's own readers): big-endian integers, unsigned varints, non-flexible
strings and bytes (int16/int32 length, -1 for null) and compact strings (uvarint length + 1, 0 for null)."""

from __future__ import annotations

import struct


def uv(n: int) -> bytes:
    """Kafka's ``ByteUtils.writeUnsignedVarint``: 7 bits a byte, low first, high bit = more."""
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def s16(text: str | None) -> bytes:
    """A non-flexible string: int16 length (-1: null) + UTF-8."""
    if text is None:
        return struct.pack(">h", -1)
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def cstr(text: str | None) -> bytes:
    """A flexible (compact) string: uvarint length + 1 (0: null) + UTF-8."""
    if text is None:
        return uv(0)
    raw = text.encode()
    return uv(len(raw) + 1) + raw


def b32(raw: bytes | None) -> bytes:
    """Non-flexible bytes: int32 length (-1: null) + the bytes."""
    return struct.pack(">i", -1) if raw is None else struct.pack(">i", len(raw)) + raw


def i8(v: int) -> bytes:
    return struct.pack(">b", v)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)
