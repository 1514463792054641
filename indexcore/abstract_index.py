"""What OffsetIndex and TimeIndex share, as Kafka's ``AbstractIndex`` does."""

from __future__ import annotations

from .errors import IndexOffsetOverflowException

INT32_MAX = 2**31 - 1
# Kafka's default segment.index.bytes.
DEFAULT_MAX_INDEX_SIZE = 10 * 1024 * 1024


def relative_offset(base_offset: int, offset: int) -> int:
    """``offset - baseOffset``; it must fit a non-negative int32 (``AbstractIndex.relativeOffset``)."""
    relative = offset - base_offset
    if relative < 0 or relative > INT32_MAX:
        raise IndexOffsetOverflowException(
            f"Integer overflow for offset: {offset} (base offset {base_offset}): relative offset {relative} "
            f"does not fit in an int32")
    return relative


def can_append_offset(base_offset: int, offset: int) -> bool:
    relative = offset - base_offset
    return 0 <= relative <= INT32_MAX


def round_down(number: int, factor: int) -> int:
    return factor * (number // factor)
