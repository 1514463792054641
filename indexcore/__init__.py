"""Kafka's on-disk log formats and rules, in pure Python (plus a C scan kernel), no Spark.

The rooms follow Kafka's own packages, from the bottom up (``lint-imports`` keeps each above only what it uses):

- ``errors``, ``status``: the exceptions (Kafka's names) and segdex's status vocabulary;
- ``fs``: atomic replacement and regular-file access;
- ``config``: ``LogConfig`` and where topic configs come from;
- ``record``: ``common.record``, the bytes of a ``.log``;
- ``index``: the offset, time and transaction indexes;
- ``log``: segments, the loader, producer state, checkpoints, log dirs, the scan kernels;
- ``retention``, ``coordinator``: retention offline; the internal topics' records;
- ``tools``: dump, offsets, rebuild, verification, trimming, the segment writer.
"""
