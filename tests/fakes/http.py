"""Serving a WSGI app over real HTTP on 127.0.0.1 from a background thread, for tests."""

from __future__ import annotations

import threading
from typing import Any

from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server


class QuietHandler(WSGIRequestHandler):
    """No access log; errors (a bug in the served app) still show."""

    def log(self, type: str, message: str, *args: Any) -> None:
        if type == "error":
            super().log(type, message, *args)


class BackgroundServer:
    """``start()`` binds ``port`` (a free one when None) and serves ``app`` until ``stop()``."""

    def __init__(self, app: Any, name: str, *, quiet: bool = True, port: int | None = None) -> None:
        self._app = app
        self._name = name
        self._handler = QuietHandler if quiet else WSGIRequestHandler
        self._server: BaseWSGIServer | None = None
        self._thread: threading.Thread | None = None
        self._wanted = port
        self.port: int | None = None

    @property
    def is_running(self) -> bool:
        return self._server is not None

    def start(self) -> int:
        if self._server is not None:
            raise RuntimeError(f"{self._name} is already running")
        self._server = make_server(
            "127.0.0.1", self._wanted or 0, self._app, threaded=True, request_handler=self._handler
        )
        self.port = self._server.server_port
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"{self._name}:{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self.port

    def stop(self) -> None:
        if self._server is None or self._thread is None:
            return
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
        self._server = self._thread = None
