"""Kafka's file and directory names (``LogFileUtils``, ``LocalLog.parseTopicPartitionName``)."""

from __future__ import annotations

import pytest

from segdex.indexcore.errors import (
    InvalidLayoutException,
    NotTopicPartitionDirException,
    NumberFormatException,
)
from segdex.indexcore.log.layout import (
    TopicPartition,
    filename_prefix_from_offset,
    kafka_file_name_prefix,
    kafka_topic_partition,
    offset_from_file_name,
    parse_partition_dir_name,
    parse_segment_file_name,
    segment_file_name,
)


def test_layout_names():
    assert segment_file_name(1000, ".log") == "00000000000000001000.log"
    parsed = parse_segment_file_name("00000000000000001000.timeindex.deleted")
    assert (parsed.base_offset, parsed.suffix, parsed.state_suffix) == (1000, ".timeindex", ".deleted")
    for bad in ("1000.log", "0000000000000000100a.log", "00000000000000001000", "x.log", "99999999999999999999.log",
                "09223372036854775808.index"):
        with pytest.raises(InvalidLayoutException):
            parse_segment_file_name(bad)
    tp = parse_partition_dir_name("my.topic-12.0123456789abcdef0123456789abcdef-future")
    assert (tp.topic, tp.partition, tp.kind) == ("my.topic", 12, "future")
    assert parse_partition_dir_name("orders-3.zz-delete").kind == "delete"  # any unique id, as Kafka's pattern
    for bad in ("orders", "orders-", "bad topic-1", "-1", "orders-3-delete"):
        with pytest.raises(InvalidLayoutException):
            parse_partition_dir_name(bad)


NOT_IN_THE_FORM = ("Found directory /d/{0}, '{0}' is not in the form of topic-partition or "
                   "topic-partition.uniqueId-delete (if marked for deletion).\nKafka's log directories (and children) "
                   "should only contain Kafka topic data.")


@pytest.mark.parametrize("name", ["lost+found", "foo", ".hidden", "orders-x", "orders-", "-1", "orders-99999999999",
                                  "orders-2147483648",
                                  "orders-0-delete", "orders-0-future", "orders-0-stray", "orders-0.a b-delete",
                                  "orders-0.a.b-delete", "orders-0.-delete"])
def test_names_kafkas_parse_refuses(name: str):
    """``LocalLog.parseTopicPartitionName`` (Kafka 4.4): a dash; a marked directory only as
    ``<topic>-<n>.<uniqueId>-<kind>`` (Java's ``\\S``: no white space); an int partition after the last dash. The
    message is Kafka's, naming the canonical path it is given."""
    with pytest.raises(NotTopicPartitionDirException) as e:
        kafka_topic_partition(name, f"/d/{name}")
    assert str(e.value) == NOT_IN_THE_FORM.format(name)
    assert e.value.kafka_class == "org.apache.kafka.common.KafkaException"
    with pytest.raises(NotTopicPartitionDirException) as e:  # no canonical path given: the name stands for it
        kafka_topic_partition(name)
    assert str(e.value) == NOT_IN_THE_FORM.format(name).replace(f"/d/{name}", name, 1)


@pytest.mark.parametrize("name, parsed", [
    ("orders-0", TopicPartition("orders", 0)),
    ("orders-0.zz-delete", TopicPartition("orders", 0, "delete")),
    ("my.topic-12.0123-future", TopicPartition("my.topic", 12, "future")),
    ("orders-+1", TopicPartition("orders", 1)),  # Integer.parseInt takes a plus sign
    ("orders--1", TopicPartition("orders-", 1)),  # the last dash splits
    ("a b-0", TopicPartition("a b", 0)),  # no topic check in the parse: a stray partition to the start
    ("orders-\u0663", TopicPartition("orders", 3)),  # Character.digit: any Unicode decimal digit
])
def test_names_kafkas_parse_takes(name: str, parsed: TopicPartition):
    assert kafka_topic_partition(name) == parsed


@pytest.mark.parametrize("name, offset", [
    ("00000000000000000010.log", 10), ("5.log", 5), ("+5.log", 5), ("-1.log", -1), ("7.foo.log", 7),
    ("9223372036854775807.index", 9223372036854775807), ("-9223372036854775808.log", -9223372036854775808),
])
def test_offsets_kafka_reads_from_file_names(name: str, offset: int):
    """``LogFileUtils.offsetFromFileName``: ``Long.parseLong`` of the name up to its first dot."""
    assert offset_from_file_name(name) == offset


@pytest.mark.parametrize("name, text", [
    ("junk.log", "junk"), (".log", ""), (".foo.log", ""), ("-.log", "-"), ("+.snapshot", "+"),
    ("99999999999999999999.log", "99999999999999999999"), ("9223372036854775808.log", "9223372036854775808"),
    ("-9223372036854775809.log", "-9223372036854775809"),
    ("0000000000000000000a.index", "0000000000000000000a"), ("1_0.log", "1_0"), (" 1.log", " 1"),
])
def test_file_names_kafka_throws_on(name: str, text: str):
    """The JDK's message for what ``Long.parseLong`` refuses (Python's ``int`` would take ``1_0`` and `` 1``)."""
    with pytest.raises(NumberFormatException) as e:
        offset_from_file_name(name)
    assert str(e.value) == f'For input string: "{text}"'
    assert e.value.kafka_class == "java.lang.NumberFormatException"


def test_the_file_kafka_opens_for_an_offset():
    """``filenamePrefixFromOffset`` formats any long with 20 digits at least, the sign before them: the broker on
    ``-1.log`` created ``-00000000000000000001.log``."""
    assert kafka_file_name_prefix(0) == "00000000000000000000"
    assert kafka_file_name_prefix(5) == "00000000000000000005"
    assert kafka_file_name_prefix(-1) == "-00000000000000000001"


# ------------------------------------------------------------------ from test_small_modules_units.py


def test_a_topic_name_of_249_characters_is_legal():
    """``Topic.validate``: at most 249 characters."""
    assert parse_partition_dir_name("a" * 249 + "-7") == TopicPartition("a" * 249, 7, "")
    with pytest.raises(InvalidLayoutException) as e:
        parse_partition_dir_name("a" * 250 + "-7")
    assert str(e.value) == repr("a" * 250 + "-7") + " does not name a legal Kafka topic"


@pytest.mark.parametrize("topic", [".", ".."])
def test_dot_topics_are_not_legal(topic: str):
    """``Topic.validate``: "." and ".." are refused although their characters are legal; "..." is a topic."""
    with pytest.raises(InvalidLayoutException) as e:
        parse_partition_dir_name(f"{topic}-0")
    assert str(e.value) == f"'{topic}-0' does not name a legal Kafka topic"
    assert parse_partition_dir_name("...-0") == TopicPartition("...", 0, "")


def test_segment_names_refused_with_their_reason():
    """``LogFileUtils.filenamePrefixFromOffset`` zero-pads a non-negative offset to 20 digits; anything else is
    refused, as are names that are not <20 digits><suffix>."""
    assert filename_prefix_from_offset(42) == "00000000000000000042"
    with pytest.raises(InvalidLayoutException) as e:
        filename_prefix_from_offset(-1)
    assert str(e.value) == "Segment base offset must be non-negative, got -1"
    with pytest.raises(InvalidLayoutException) as e:
        parse_segment_file_name("42.log")
    assert str(e.value) == ("'42.log' is not a Kafka segment file name (20-digit base offset, then "
                            ".log/.index/.timeindex/...)")


def test_a_name_without_a_partition_number():
    with pytest.raises(InvalidLayoutException) as e:
        parse_partition_dir_name("orders")
    assert str(e.value) == "'orders' is not a partition directory name (<topic>-<partition>)"
