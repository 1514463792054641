"""Kafka's ``common.utils``: the byte-level helpers the record format and the protocol share."""
