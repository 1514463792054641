"""Kafka's protocol messages (``common.protocol``, ``common.message``): the generated message format its internal
topics and its metadata log are written in."""
