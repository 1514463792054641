"""Kafka's ``common.record``: the bytes of a ``.log`` file.

``batch_header`` (the v2 ``DefaultRecordBatch`` header as named, chained offsets), ``record_batch`` (shallow batch
views, v0/v1 message sets, ``ensureValid``), ``file_records`` (``FileLogInputStream``: batch iteration and the
"valid bytes" rule), ``records`` (records inside a batch, control records) and ``compression`` (the codecs).
Nothing here knows about segments, indexes or partitions.
"""
