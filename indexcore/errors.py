"""Errors raised by indexcore, mirroring Kafka's exception names where they fit."""

import os

# the Java exceptions Kafka throws that these errors name (``kafka_class``)
CORRUPT_RECORD = "org.apache.kafka.common.errors.CorruptRecordException"
ILLEGAL_ARGUMENT = "java.lang.IllegalArgumentException"
INDEX_OUT_OF_BOUNDS = "java.lang.IndexOutOfBoundsException"


class SegdexError(Exception):
    """Base class for every error indexcore raises on bad input.

    ``kafka_class``: the Java exception Kafka throws for the same condition, where the message is Kafka's too (so
    ``f"{e.kafka_class}: {e}"`` is the line a broker logs)."""

    kafka_class: str | None = None
    position: int | None = None  # the byte position in its file where it was met, where the raiser knows it


class CorruptRecordException(SegdexError):
    """A batch failed validation (size below the minimum overhead, CRC mismatch).

    Kafka's recovery truncates the segment at the start of such a batch.
    """


class BufferBoundsException(SegdexError):
    """A field Kafka reads past the end of a damaged batch or message: the exception ``java.nio.ByteBuffer`` throws
    there (``kafka_class``: ``IndexOutOfBoundsException``, which has no message, or ``IllegalArgumentException``),
    which no reader of Kafka's catches. ``str()`` is the message as Kafka's logs show it (``null`` for none);
    ``java_message`` is None where Java has none."""

    def __init__(self, kafka_class: str, java_message: str | None = None) -> None:
        super().__init__("null" if java_message is None else java_message)
        self.kafka_class = kafka_class
        self.java_message = java_message


class KafkaReadException(SegdexError):
    """Kafka's ``KafkaException`` met reading a batch: its bytes a file read could not load whole
    (``FileChannelRecordBatch.loadBatchWithSize``: the file ends first), or its compressed records' stream failing
    (``DefaultRecordBatch.StreamRecordIterator``)."""

    kafka_class = "org.apache.kafka.common.KafkaException"


class JavaException(SegdexError):
    """A Java exception as a decompressing stream (``InputStream``) throws it: ``kafka_class`` its class, ``str()``
    its message (``null`` for none), ``to_string()`` what Java's ``toString`` gives (the text a ``KafkaException``
    wrapping it carries). ``io``: an ``IOException`` (or a subclass), which Kafka's record readers wrap; any other
    (a ``RuntimeException``, an ``Error``) passes through them as it is."""

    def __init__(self, kafka_class: str, java_message: str | None = None, io: bool = True) -> None:
        super().__init__("null" if java_message is None else java_message)
        self.kafka_class, self.java_message, self.io = kafka_class, java_message, io

    def to_string(self) -> str:
        """``Throwable.toString``: the class, then ": " and the message where there is one."""
        return self.kafka_class if self.java_message is None else f"{self.kafka_class}: {self.java_message}"


class UnknownCompressionTypeException(SegdexError):
    """A batch whose attributes name no compression type Kafka knows (ids 5 to 7: ``CompressionType.forId``),
    met by a read of its records, or by a read of its base offset where the batch is read as a message of the
    formats before 0.11 (its magic byte below 2, as a signed byte)."""

    kafka_class = ILLEGAL_ARGUMENT


class OffsetOutOfRangeException(SegdexError):
    """A read asked for an offset past the log end (``LocalLog.read``)."""

    kafka_class = "org.apache.kafka.common.errors.OffsetOutOfRangeException"


class OffsetReadException(SegdexError):
    """What a read of the log from ``offset`` threw (``LogSegment.translateOffset``): ``cause`` is Kafka's
    exception (its ``kafka_class``, and its ``position`` where known), met in the segment ``log_path`` (None:
    before any)."""

    def __init__(self, cause: SegdexError, offset: int, log_path: str | None) -> None:
        kafka_class = cause.kafka_class or CORRUPT_RECORD
        where = ("" if log_path is None else f" in file {os.path.abspath(log_path)}." if cause.position is None else
                 f" (a damaged batch at byte {cause.position} of {os.path.abspath(log_path)}, met by the read from "
                 f"offset {offset})")
        super().__init__(f"{kafka_class}: {cause}{where}")
        self.cause, self.offset, self.log_path = cause, offset, log_path


class InvalidRecordException(SegdexError):
    """A batch is structurally invalid in a way Kafka also treats as a truncation point."""

    kafka_class = "org.apache.kafka.common.InvalidRecordException"


class IndexOffsetOverflowException(SegdexError):
    """An offset does not fit in the segment's relative (int32) offset space."""


class InvalidOffsetException(SegdexError):
    """An index append that would break the index's monotonic order."""


class IndexFullException(SegdexError):
    """An append to an index whose maximum entry count was reached (Kafka's ``OffsetIndex.append`` and
    ``TimeIndex.maybeAppend`` throw an ``IllegalArgumentException`` with this message)."""

    kafka_class = ILLEGAL_ARGUMENT


class OffsetMapFullException(SegdexError):
    """``SkimpyOffsetMap.put`` into a map already holding ``slots`` entries, a new key or not (reached only where
    ``log.cleaner.io.buffer.load.factor`` is above 1, which Kafka accepts: the build stops at the factor's share
    of the slots otherwise). Kafka's message."""

    kafka_class = ILLEGAL_ARGUMENT


class CorruptIndexException(SegdexError):
    """An index file that fails Kafka's sanity check."""


class InvalidLayoutException(SegdexError):
    """A path that is not a Kafka segment file, partition directory or log dir."""


class NumberFormatException(InvalidLayoutException):
    """A file name whose offset part Java's ``Long.parseLong`` refuses (``LogFileUtils.offsetFromFileName``); the
    message is the JDK's (``For input string: "junk"``)."""

    kafka_class = "java.lang.NumberFormatException"


class NotTopicPartitionDirException(InvalidLayoutException):
    """A directory in a log dir that ``LocalLog.parseTopicPartitionName`` refuses; the message is Kafka's."""

    kafka_class = "org.apache.kafka.common.KafkaException"


class InvalidTxnStateException(SegdexError):
    """Producer state that Kafka refuses (a non-transactional write inside an open transaction)."""


class RecoveryFailedException(SegdexError):
    """Bytes on which Kafka's ``LogSegment.recover`` throws instead of truncating.

    Recovery catches only ``CorruptRecordException`` and ``InvalidRecordException``; anything else (an
    ``IllegalArgumentException`` for a control record of an unknown type, a ``NullPointerException`` for an
    end-transaction marker without a key or value) escapes it and fails the broker's load of the log dir.
    """


class NothingChangedError(SegdexError):
    """A check made before any change failed (exit status 2): nothing was changed, the command may be run again
    once the cause is fixed."""


class UsageException(NothingChangedError):
    """A command given the wrong kind of path or argument (exit status 2), with a hint."""
