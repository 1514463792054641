"""Coordinator records built byte by byte from Kafka's message schemas: a consumer group member's key and its
``ConsumerGroupMemberMetadataValue`` v0 (flexible, with a tagged-field section the caller gives), and a topic id.

Shared because segdex's decoding of such records is checked twice: against the schemas in the test process
(tests/indexcore/coordinator/test_records.py) and against Kafka 4.4.0's own ``kafka-dump-log --offsets-decoder``
on a segment holding them (tests/kafka/test_dump_data_log.py)."""

from __future__ import annotations

from tests.support.kafka_bytes import cstr, i16, i32, s16, uv

TOPIC_ID = bytes(range(16))
MEMBER_KEY = i16(5) + s16("g") + s16("m")


def member_metadata(tags: bytes) -> bytes:
    """ConsumerGroupMemberMetadataValue v0 (flexible) with the given tagged-field section."""
    return (i16(0) + cstr(None) + cstr("r1") + cstr("c") + cstr("/h") + uv(2) + cstr("data") + cstr("d.*")
            + i32(300000) + cstr("uniform") + tags)
