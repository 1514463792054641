"""Kafka's log layer (``storage.internals.log`` and ``storage.internals.checkpoint``): a partition on disk.

``log_segment`` (``LogSegment``: recover, readNextOffset, largestTimestamp, lookups), ``log_segments`` (a
partition's segments recovered in order), ``log_loader`` (``LogLoader``), ``producer_state`` and
``producer_snapshot`` (``ProducerStateManager`` and its snapshot files), ``leader_epoch_cache``,
``checkpoints``, ``layout`` (``LogFileUtils`` naming), ``log_dir`` (a log dir, its ``.lock``, leftovers),
``startup_preview`` (what the broker's next start does), ``quarantine`` (what a truncation removes, kept), and
``scan`` (the recovery scan kernels, Python and C).
"""
