"""Kafka's ``TransactionIndex``: one 34-byte ``AbortedTxn`` per aborted transaction."""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass

from segdex.indexcore.errors import CorruptIndexException, InvalidOffsetException

# AbortedTxn: version int16, producerId int64, firstOffset int64, lastOffset int64, lastStableOffset int64.
ABORTED_TXN = struct.Struct(">hqqqq")
ENTRY_SIZE = ABORTED_TXN.size
CURRENT_VERSION = 0


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = CURRENT_VERSION

    def to_bytes(self) -> bytes:
        return ABORTED_TXN.pack(self.version, self.producer_id, self.first_offset, self.last_offset,
                                self.last_stable_offset)


class TransactionIndex:
    """Aborted transactions whose ABORT marker lies in this segment, in marker order."""

    def __init__(self, start_offset: int) -> None:
        self.start_offset = start_offset
        self.aborted: list[AbortedTxn] = []

    def __len__(self) -> int:
        return len(self.aborted)

    def append(self, txn: AbortedTxn) -> None:
        if self.aborted and txn.last_offset <= self.aborted[-1].last_offset:
            raise InvalidOffsetException(
                f"The last offset of appended transactions must increase sequentially, but {txn.last_offset} "
                f"is not greater than current last offset {self.aborted[-1].last_offset} of index")
        self.aborted.append(txn)

    def to_bytes(self) -> bytes:
        return b"".join(t.to_bytes() for t in self.aborted)

    @staticmethod
    def sanity_check(path: str, start_offset: int) -> tuple[str, str] | None:
        """``TransactionIndex.sanityCheck`` of the ``.txnindex`` at ``path`` as a broker's load opens it
        (``LogSegment.sanityCheck`` in ``LogLoader.loadSegmentFiles``): None when it passes (or there is no file),
        else ("corrupt", why) for an aborted transaction ending below ``start_offset`` (the ``CorruptIndexException``
        the load answers by recovering the segment) or ("fail", why) for an entry of an unknown version (an
        exception the load does not catch). Whole 34-byte entries only, in order; a partial last entry is not
        read. The version rule is Kafka 4.x's (any but 0 fails); 3.x reads the first byte only and fails on it
        above 0."""
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return None
        whole = len(data) // ENTRY_SIZE * ENTRY_SIZE
        for version, _pid, _first, last, _lso in ABORTED_TXN.iter_unpack(data[:whole]):
            if version != CURRENT_VERSION:
                return "fail", f"unexpected aborted transaction version {version} in {os.path.basename(path)}"
            if last < start_offset:
                return "corrupt", (f"aborted transaction ending at {last} below the base offset {start_offset} in "
                                   f"{os.path.basename(path)}")
        return None


def parse_transaction_index(data: bytes) -> list[AbortedTxn]:
    if len(data) % ENTRY_SIZE != 0:
        raise CorruptIndexException(
            f"Unexpected end of transaction index: size {len(data)} is not a multiple of {ENTRY_SIZE}")
    out = []
    for version, pid, first, last, lso in ABORTED_TXN.iter_unpack(data):
        if version != CURRENT_VERSION:
            raise CorruptIndexException(f"Unexpected aborted transaction version {version}")
        out.append(AbortedTxn(pid, first, last, lso, version))
    return out

