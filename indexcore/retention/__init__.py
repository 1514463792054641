"""Kafka's retention (``UnifiedLog.deleteOldSegments``), offline.

``policy`` (the passes as pure predicates over segment facts), ``apply`` (carrying a plan out crash-safely),
``log_dirs`` (whole log dirs: facts from disk, plan, apply under the ``.lock``).
"""
