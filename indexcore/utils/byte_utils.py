"""Kafka's ``ByteUtils``: the varints of the record format and of the protocol's flexible versions, read as Java
reads them. A varint is at most five bytes into a Java ``int`` (its bits past 32 dropped), a varlong at most ten
into a ``long``; a fifth (tenth) byte with its high bit set is refused with ``IllegalArgumentException``. Bytes come
from ``get``: a signed byte each (``ByteBuffer.get``, or ``(byte) InputStream.read``, -1 at a stream's end)."""

from __future__ import annotations

from collections.abc import Callable

_MASK32, _MASK64 = 0xFFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF


class IllegalArgument(Exception):
    """Java's ``IllegalArgumentException`` (its message), which the callers turn into their own."""


def int8(u: int) -> int:
    """The Java ``byte`` of these low 8 bits (``ByteBuffer.get``, ``(byte) in.read()``)."""
    u &= 0xFF
    return u - 256 if u > 127 else u


def int32(u: int) -> int:
    """The Java ``int`` of these low 32 bits."""
    u &= _MASK32
    return u - (1 << 32) if u >> 31 else u


def int64(u: int) -> int:
    """The Java ``long`` of these low 64 bits."""
    u &= _MASK64
    return u - (1 << 64) if u >> 63 else u


def read_unsigned_varint(get: Callable[[], int]) -> int:
    """``ByteUtils.readUnsignedVarint``: up to five bytes into a Java ``int``; a fifth byte with its high bit set
    is refused (``IllegalArgumentException``)."""
    tmp = get()
    if tmp >= 0:
        return tmp
    result = tmp & 127
    for shift in (7, 14, 21):
        tmp = get()
        if tmp >= 0:
            return int32(result | tmp << shift)
        result |= (tmp & 127) << shift
    tmp = get()
    result = (result | tmp << 28) & _MASK32
    if tmp < 0:
        raise IllegalArgument(f"Varint is too long, the most significant bit in the 5th byte is set, converted "
                               f"value: {result:x}")
    return int32(result)


def read_varint(get: Callable[[], int]) -> int:
    """``ByteUtils.readVarint``: the zig-zag ``int``."""
    u = read_unsigned_varint(get) & _MASK32
    return int32((u >> 1) ^ (-(u & 1) & _MASK32))


def read_varlong(get: Callable[[], int]) -> int:
    """``ByteUtils.readVarlong``: up to ten bytes into a Java ``long``, zig-zag; a tenth byte with its high bit set
    is refused."""
    value, shift = 0, 0
    while (b := get()) & 0x80:
        value = (value | (b & 0x7F) << shift) & _MASK64
        shift += 7
        if shift > 63:
            raise IllegalArgument(f"Varlong is too long, most significant bit in the 10th byte is set, converted "
                                   f"value: {value:x}")
    raw = (value | b << shift) & _MASK64
    return int64((raw >> 1) ^ (-(raw & 1) & _MASK64))
