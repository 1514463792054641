"""A TCP forwarder between a client and a server that the test can close or slow down: a real network path to the
S3 server that goes down at a chosen moment (after N connections were accepted, or when told), as a store that
becomes unreachable in the middle of a run, or whose answers come late (``delay``: seconds before each chunk of
the server's answer is passed on), as a slow store."""

from __future__ import annotations

import socket
import threading


class TcpGate:
    """Listens on 127.0.0.1 (``port``) and forwards each connection to ``target_port``; after ``allow``
    connections (None: no limit) or ``close()``, new connections are refused and open ones are cut."""

    def __init__(self, target_port: int, allow: int | None = None, delay: float = 0.0) -> None:
        self.target_port = target_port
        self.allow = allow
        self.delay = delay
        self.accepted = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._open: list[socket.socket] = []
        self._closed = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            self.accepted += 1
            if self.allow is not None and self.accepted > self.allow:
                client.close()
                self.close()
                return
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            self._open += [client, upstream]
            for a, b, delay in ((client, upstream, 0.0), (upstream, client, self.delay)):
                threading.Thread(target=self._pipe, args=(a, b, delay), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket, delay: float) -> None:
        try:
            while data := src.recv(65536):
                if delay:
                    self._closed.wait(delay)  # a slow answer (a closed gate cuts it at once)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        """Refuse new connections from now on and cut the open ones."""
        self._closed.set()
        self._listener.close()
        for s in self._open:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
