"""Kafka's file and directory names (``LogFileUtils``, ``UnifiedLog.parseTopicPartitionName``)."""

from __future__ import annotations

import pytest

from segdex.indexcore.errors import (
    InvalidLayoutException,
)
from segdex.indexcore.log.layout import (
    TopicPartition,
    filename_prefix_from_offset,
    parse_partition_dir_name,
    parse_segment_file_name,
    segment_file_name,
)


def test_layout_names():
    assert segment_file_name(1000, ".log") == "00000000000000001000.log"
    parsed = parse_segment_file_name("00000000000000001000.timeindex.deleted")
    assert (parsed.base_offset, parsed.suffix, parsed.state_suffix) == (1000, ".timeindex", ".deleted")
    for bad in ("1000.log", "0000000000000000100a.log", "00000000000000001000", "x.log"):
        with pytest.raises(InvalidLayoutException):
            parse_segment_file_name(bad)
    tp = parse_partition_dir_name("my.topic-12.0123456789abcdef0123456789abcdef-future")
    assert (tp.topic, tp.partition, tp.kind) == ("my.topic", 12, "future")
    assert parse_partition_dir_name("orders-3-delete").kind == "delete"
    for bad in ("orders", "orders-", "bad topic-1", "-1"):
        with pytest.raises(InvalidLayoutException):
            parse_partition_dir_name(bad)


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
