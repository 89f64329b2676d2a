"""Raw TCP peers on loopback for the outbound tests: one that counts connections and answers
as told, one that drips its answer a byte a second, one that answers garbage."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

#: No peer here keeps a connection longer than this, so a test of old code ends, failing.
MAX_HOLD_SECONDS = 30.0

Handler = Callable[[socket.socket, threading.Event], None]


class RawServer:
    """Listens on 127.0.0.1 and, when the host has IPv6, on [::1] with the same port; each
    connection is counted and handed to ``handler`` in its own thread."""

    def __init__(self, handler: Handler) -> None:
        self._handler = handler
        self._stopping = threading.Event()
        self._listeners: list[socket.socket] = []
        self._lock = threading.Lock()
        self.connections = 0
        self.port = 0

    def __enter__(self) -> RawServer:
        self._listeners = _listen_on_loopback()
        self.port = self._listeners[0].getsockname()[1]
        for listener in self._listeners:
            threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stopping.set()
        for listener in self._listeners:
            listener.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _accept(self, listener: socket.socket) -> None:
        while not self._stopping.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        with connection:
            try:
                connection.settimeout(MAX_HOLD_SECONDS)
                connection.recv(65536)  # the request (enough of it)
                self._handler(connection, self._stopping)
            except OSError:
                pass  # the client gave up: that is what the tests want


def _listen_on_loopback() -> list[socket.socket]:
    for _ in range(20):
        ipv4 = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ipv4.bind(("127.0.0.1", 0))
        ipv4.listen(16)
        if not socket.has_ipv6:
            return [ipv4]
        ipv6 = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        try:
            ipv6.bind(("::1", ipv4.getsockname()[1]))
        except OSError:
            ipv4.close()
            ipv6.close()
            continue
        ipv6.listen(16)
        return [ipv4, ipv6]
    raise RuntimeError("no port free on both 127.0.0.1 and ::1")


def drip(prefix: bytes) -> Handler:
    """Send ``prefix`` at once, then one byte a second until the client gives up."""

    def handler(connection: socket.socket, stopping: threading.Event) -> None:
        connection.sendall(prefix)
        started = time.monotonic()
        while not stopping.wait(1.0) and time.monotonic() - started < MAX_HOLD_SECONDS:
            connection.sendall(b"a")

    return handler


#: Headers that never end.
DRIP_HEADERS = drip(b"HTTP/1.1 200 OK\r\nX-Slow: ")
#: Headers at once, then a body that never ends.
DRIP_BODY = drip(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{")


def garbage(connection: socket.socket, stopping: threading.Event) -> None:
    """An open port that does not speak HTTP."""
    connection.sendall(b"SSH-2.0-OpenSSH_9.6\r\n\x00\x01\x02 not http\r\n\r\n")


def silent(connection: socket.socket, stopping: threading.Event) -> None:
    """Accept, read, never answer."""
    stopping.wait(MAX_HOLD_SECONDS)


def http_answer(status: int, body: bytes, *, announced: bool = True) -> Handler:
    """A complete HTTP answer, then the connection is closed; without ``announced`` there is
    no Content-Length (the body ends when the connection does)."""

    def handler(connection: socket.socket, stopping: threading.Event) -> None:
        length = f"Content-Length: {len(body)}\r\n" if announced else ""
        head = f"HTTP/1.1 {status} X\r\n{length}Connection: close\r\n\r\n"
        connection.sendall(head.encode() + body)

    return handler
