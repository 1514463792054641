"""``CleanerConfig``: Kafka 4.4's defaults and each thread's share, from a broker's properties."""

from __future__ import annotations

import pytest

from segdex.indexcore.config.cleaner_config import CleanerConfig


def test_defaults_and_each_threads_share():
    c = CleanerConfig()
    assert (c.offset_map_memory, c.thread_io_buffer_size, c.dedupe_buffer_load_factor, c.hash_algorithm) == (
        134_217_728, 262_144, 0.9, "MD5")
    four = CleanerConfig.from_properties({"log.cleaner.threads": "4", "log.cleaner.dedupe.buffer.size": "4194308",
                                          "log.cleaner.io.buffer.size": "800", "log.cleaner.enable": "false"})
    assert (four.offset_map_memory, four.thread_io_buffer_size, four.enable_cleaner) == (1_048_577, 100, False)
    huge = CleanerConfig.from_properties({"log.cleaner.dedupe.buffer.size": str(8 << 30)})
    assert huge.offset_map_memory == 2**31 - 1  # capped at Integer.MAX_VALUE per thread


def test_a_value_kafka_refuses():
    with pytest.raises(ValueError, match="log.cleaner.io.buffer.size=-1: must be at least 0"):
        CleanerConfig.from_properties({"log.cleaner.io.buffer.size": "-1"})
    with pytest.raises(ValueError):
        CleanerConfig.from_properties({"log.cleaner.threads": "two"})
    # KafkaConfig: more than 1 MiB per thread (the real-broker test saw Kafka 4.4 refuse exactly 1 MiB)
    with pytest.raises(ValueError, match="must be at least 1MB per cleaner thread"):
        CleanerConfig.from_properties({"log.cleaner.dedupe.buffer.size": str(1 << 20)})
    with pytest.raises(ValueError, match="2 threads"):
        CleanerConfig.from_properties({"log.cleaner.dedupe.buffer.size": str(2 << 20), "log.cleaner.threads": "2"})


def test_a_read_buffer_of_no_bytes_is_refused():
    """``log.cleaner.io.buffer.size`` below 2 bytes a thread leaves each thread a read buffer of 0 bytes, which
    reads no batch: Kafka starts, and its cleaner loops on its first segment forever. segdex refuses it up front."""
    with pytest.raises(ValueError, match=r"log.cleaner.io.buffer.size=3: each cleaner thread's read buffer would be 0 "
                                         r"bytes \(the size / 2 threads / 2\)"):
        CleanerConfig.from_properties({"log.cleaner.io.buffer.size": "3", "log.cleaner.threads": "2",
                                       "log.cleaner.dedupe.buffer.size": str(4 << 20)})
    assert CleanerConfig.from_properties({"log.cleaner.io.buffer.size": "2"}).thread_io_buffer_size == 1


def test_message_max_bytes_is_how_far_the_buffers_grow():
    assert CleanerConfig.from_properties({"message.max.bytes": "5000000"}).max_message_size == 5_000_000
    assert CleanerConfig.from_properties({}).max_message_size == 1_048_588
