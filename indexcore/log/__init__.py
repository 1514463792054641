"""Kafka's log layer (``storage.internals.log`` and ``storage.internals.checkpoint``): a partition on disk.

``log_segment`` (``LogSegment``: recover, readNextOffset, largestTimestamp, lookups), ``log_segments`` (a
partition's segments recovered in order), ``log_loader`` (``LogLoader``: a partition's load, its dry run what the
broker's next start does, its real run ``segdex recover``), ``log_manager`` (``LogManager``: a log dir's
checkpoints, partition states and clean-shutdown marker), ``producer_state`` and ``producer_snapshot``
(``ProducerStateManager`` and its snapshot files), ``leader_epoch_cache``, ``checkpoints``, ``layout``
(``LogFileUtils`` naming), ``log_dir`` (a log dir, its ``.lock``, leftovers), ``quarantine`` (what a truncation
removes, kept), and ``scan`` (the recovery scan kernels, Python and C).
"""
