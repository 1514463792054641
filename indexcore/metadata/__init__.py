"""Kafka's metadata log (``__cluster_metadata``, ``org.apache.kafka.image``): its records and the image a broker
builds from them, replayed offline."""
