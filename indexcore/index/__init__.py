"""Kafka's index files (``storage.internals.log``'s ``AbstractIndex``, ``OffsetIndex``, ``TimeIndex``,
``TransactionIndex``), each module with its entry layout.

``abstract_index`` (what offset and time indexes share: relative offsets, the floor lookup Kafka does),
``offset_index``, ``time_index``, ``transaction_index``. Built on ``record`` only.
"""
