"""tests.support.kafka_harness: the broker every Kafka test starts, when a port it chose is taken meanwhile."""

from __future__ import annotations

import socket

from tests.support.kafka_harness import KAFKA_VERSIONS, KafkaBroker, KafkaInstall


def test_a_first_start_on_a_taken_port_moves_to_free_ports(tmp_path):
    """A port chosen free can be taken before the broker binds it (a client's connection gets it as its local
    port): the broker exits on "Address already in use" and is started again on new ports."""
    broker = KafkaBroker(KafkaInstall(KAFKA_VERSIONS[0]), tmp_path / "b")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        broker.controller_port = taken.getsockname()[1]
        try:
            broker.start()
            assert broker.controller_port != taken.getsockname()[1]
            assert "Address already in use" in broker.log_text()  # the first attempt did meet the taken port
        finally:
            broker.kill()
