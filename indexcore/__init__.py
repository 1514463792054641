"""Kafka's on-disk log formats and rules, in pure Python (no Spark).

One concept per module, named as in Kafka's storage module so that a Kafka
engineer finds their way: ``record_batch`` (RecordBatch / FileLogInputStream),
``offset_index`` (OffsetIndex), ``time_index`` (TimeIndex),
``transaction_index`` (TransactionIndex), ``producer_state``
(ProducerStateManager), ``log_segment`` (LogSegment.recover),
``log_segments`` (a partition's segments in offset order), ``checkpoints``
(OffsetCheckpointFile, LeaderEpochCheckpointFile) and ``layout`` (LogFileUtils
file naming and log-dir structure).
"""
