"""Failures injected into the next requests of one kind, for retry and timeout tests."""

from __future__ import annotations

import json
import socket
import threading
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any

from werkzeug.wrappers import Response

FAULT_KINDS = frozenset(
    {
        "token",
        "scores",
        "lineitems",
        "lineitem",
        "results",
        "memberships",
        "auth",
        "jwks",
        "asset",
        "report",
        "notice_handlers",  # the Platform Notification Service (notice_service.py)
    }
)


@dataclass(frozen=True)
class Fault:
    """status None: answer normally after `delay`; 0: hang for `delay`, then hang up."""

    status: int | None
    body: Any = None
    delay: float = 0
    headers: dict[str, str] = field(default_factory=dict)


class Faults:
    def __init__(self) -> None:
        self._queued: dict[str, deque[Fault]] = defaultdict(deque)
        self._slow: dict[str, float] = {}
        self._lock = threading.Lock()

    def add(self, kind: str, fault: Fault, times: int) -> None:
        _check_kind(kind)
        with self._lock:
            self._queued[kind].extend([fault] * times)

    def slow_down(self, kind: str, seconds: float) -> None:
        _check_kind(kind)
        with self._lock:
            self._slow[kind] = seconds

    def delay(self, kind: str) -> float:
        """How long every request of ``kind`` waits before it is answered."""
        with self._lock:
            return self._slow.get(kind, 0)

    def take(self, kind: str) -> Fault | None:
        with self._lock:
            queue = self._queued.get(kind)
            return queue.popleft() if queue else None

    def clear(self) -> None:
        with self._lock:
            self._queued.clear()
            self._slow.clear()


def _check_kind(kind: str) -> None:
    if kind not in FAULT_KINDS:
        raise ValueError(f"unknown fault kind {kind!r}; use one of {sorted(FAULT_KINDS)}")


def fault_response(kind: str, fault: Fault, environ: dict[str, Any]) -> Response:
    """The injected answer; for status 0 the connection is closed without one."""
    if fault.status == 0:
        environ["werkzeug.socket"].shutdown(socket.SHUT_RDWR)
        raise ConnectionAbortedError("injected hang-up")  # werkzeug drops it silently
    body = fault.body
    if body is None:
        body = (
            {"error": "server_error", "error_description": "injected failure"}
            if kind == "token"
            else {"status": fault.status, "reason": "Injected failure"}
        )
    if isinstance(body, str | bytes):
        return Response(body, status=fault.status, headers=fault.headers, content_type="text/plain")
    return Response(
        json.dumps(body),
        status=fault.status,
        headers=fault.headers,
        content_type="application/json",
    )
