"""Kafka's tools and segdex's own, offline, over the layers below.

``dump_log`` (``kafka-dump-log``), ``list_offsets`` (what ListOffsets answers), ``rebuild`` (``segdex rebuild``),
``index_verifier`` (existing index files against a rebuild), ``index_trim`` (over-long index files trimmed as
Kafka trims them) and ``segment_writer`` (Kafka's segment bytes written without a broker, for samples and tests).
"""
