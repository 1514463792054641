"""The records of Kafka's coordinators' internal topics (``__consumer_offsets``, ``__transaction_state``).

``message_format`` (Kafka's generated message schemas: the reader and the JSON converter's rules) and ``records``
(the coordinator record types and the parsers ``kafka-dump-log`` uses).
"""
