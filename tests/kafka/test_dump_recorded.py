"""``segdex dump`` of logs a real Kafka 4.4.0 broker wrote, kept in tests/kafka/golden/broker_logs/ (recorded by
tests/kafka/test_dump_data_log.py's broker run with ``SEGDEX_RECORD_GOLDEN=1``), against Kafka 4.4.0's own
``kafka-dump-log`` on the same files: the coordinator decoders and the data log without a broker to start, so
in the test process and within a mutation run's reach."""

from __future__ import annotations

import pytest

from tests.support.dump_compare import RECORDED, assert_same, kafka_dump, logs, segdex_dump
from tests.support.kafka_harness import KafkaInstall


def _same_as_kafka(partition: str, *options: str) -> str:
    files = logs(RECORDED / partition)
    assert files
    kafka = kafka_dump(KafkaInstall("4.4.0").check(), files, *options)
    ours, status = segdex_dump(files, *options)
    assert assert_same(kafka, ours) == 0 and status == 0
    return "\n".join(line for lines in ours.values() for line in lines)


def test_offsets_decoder_on_recorded_consumer_offsets():
    text = _same_as_kafka("__consumer_offsets-0", "--offsets-decoder")
    for record_type in ('"type":"1"', '"type":"2"', '"type":"3"', '"type":"5"', '"type":"8"'):
        assert record_type in text  # offset commits, a classic group, a consumer group's records
    assert '"subscription":{"topics":["data"]' in text and '"metadata":"meta é' in text
    assert "payload: <DELETE>" in text


def test_transaction_log_decoder_on_recorded_transaction_state():
    text = _same_as_kafka("__transaction_state-0", "--transaction-log-decoder")
    for state in ("Empty", "Ongoing", "PrepareCommit", "CompleteCommit", "PrepareAbort", "CompleteAbort"):
        assert f'"transactionStatus":"{state}"' in text


@pytest.mark.parametrize("options", [("--print-data-log",), ("--deep-iteration",)])
def test_data_log_of_every_codec(options: tuple[str, ...]):
    text = _same_as_kafka("data-0", *options)
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        assert f"compresscodec: {codec}" in text
    assert "endTxnMarker: ABORT" in text and "endTxnMarker: COMMIT" in text
