"""A recording relay between the tool and the model server: real HTTP both ways.

It passes every request on unchanged and keeps what crossed it (the request's body, the
server's answer, when each started and ended, how many were in flight at once), so the tests
can compare what the tool recorded with what the server said: tokens, caps, concurrency.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
from werkzeug.wrappers import Request, Response

from tests.fakes.http import BackgroundServer


@dataclass
class Exchange:
    request: dict[str, Any]
    started: float
    status: int = 0
    answer: dict[str, Any] = field(default_factory=dict)
    ended: float | None = None

    @property
    def usage(self) -> dict[str, Any]:
        return self.answer.get("usage") or {}

    @property
    def finish_reason(self) -> str | None:
        choices = self.answer.get("choices") or [{}]
        return choices[0].get("finish_reason")


class Recorder:
    """``with Recorder(upstream) as relay:`` serves ``relay.url`` (ends in /v1)."""

    def __init__(self, upstream: str, api_key: str | None = None) -> None:
        self._upstream = upstream.rstrip("/")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(headers=headers, timeout=httpx.Timeout(900, connect=5))
        self._lock = threading.Lock()
        self.exchanges: list[Exchange] = []
        self.in_flight = 0
        self.peak = 0
        self._server = BackgroundServer(self._app, "Recorder")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.port}/v1"

    def __enter__(self) -> Recorder:
        self._server.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.stop()
        self._http.close()

    def since(self, mark: int) -> list[Exchange]:
        """The chat exchanges after the first ``mark`` ones (see ``len(exchanges)``)."""
        with self._lock:
            return list(self.exchanges[mark:])

    def _app(self, environ: dict, start_response: Any) -> Any:
        request = Request(environ)
        path = request.path.removeprefix("/v1")
        if request.method == "GET":
            answer = self._http.get(self._upstream + path)
            return self._relay(answer)(environ, start_response)
        exchange = Exchange(request=request.get_json(force=True), started=time.monotonic())
        with self._lock:
            self.exchanges.append(exchange)
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        try:
            answer = self._http.post(self._upstream + path, json=exchange.request)
        finally:
            with self._lock:
                self.in_flight -= 1
        exchange.status, exchange.ended = answer.status_code, time.monotonic()
        if answer.headers.get("content-type", "").startswith("application/json"):
            exchange.answer = answer.json()
        return self._relay(answer)(environ, start_response)

    @staticmethod
    def _relay(answer: httpx.Response) -> Response:
        return Response(
            answer.content,
            status=answer.status_code,
            content_type=answer.headers.get("content-type", "application/json"),
        )
