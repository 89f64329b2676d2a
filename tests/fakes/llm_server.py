"""A real OpenAI-compatible chat-completions server for tests.

It runs werkzeug's threaded server on 127.0.0.1 (free port) so the client is exercised over
real HTTP: status codes, headers, timeouts and dropped connections behave as in production.
Responses are scripted with ``reply`` / ``fail`` / ``delay`` / ``raw`` and consumed in order;
when the queue is empty the ``set_default`` reply is used.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from werkzeug.http import HTTP_STATUS_CODES
from werkzeug.wrappers import Request, Response

from tests.fakes.http import BackgroundServer

Script = Callable[[dict], Response]
Default = Callable[[dict], str | Response] | str | None


def _json(payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(
        json.dumps(payload), status=status, headers=headers, content_type="application/json"
    )


def error(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    """An error in OpenAI's envelope; a ``set_default`` function may answer some requests so."""
    body = {"error": {"message": message, "type": "fake_error", "code": status}}
    return _json(body, status, headers)


# GPT-style pre-tokenisation: contractions, words and punctuation runs with their leading
# space, digits in groups of three, other whitespace runs.
_PIECES = re.compile(r"'(?:[sdmt]|ll|ve|re)| ?[^\W\d_]+| ?\d{1,3}| ?[^\s\w]+|\s+|_+")
#: OpenAI's chat format adds about 3 tokens around each message and 3 to prime the reply.
MESSAGE_OVERHEAD = 3
REPLY_PRIMING = 3


def estimate_tokens(text: str) -> int:
    """An approximation of a BPE tokenizer's count, not a real one: no tokenizer works offline
    here (tiktoken downloads its encodings on first use). Each pre-tokenised piece counts one
    token per 6 characters, at least one: common English words are one token, long ones two
    or three. Spanish, Catalan and code tokenise denser than this."""
    pieces = _PIECES.findall(text)
    return sum(max(1, math.ceil(len(piece.strip() or piece) / 6)) for piece in pieces)


def estimated_usage(messages: list, content: str) -> dict[str, int]:
    """The ``usage`` a server would report, estimated (see estimate_tokens)."""
    texts = [str(m.get("content", "")) for m in messages if isinstance(m, dict)]
    prompt = sum(estimate_tokens(t) + MESSAGE_OVERHEAD for t in texts) + REPLY_PRIMING
    completion = estimate_tokens(content)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def capped(content: str, max_tokens: object) -> tuple[str, str]:
    """``content`` cut where a server stops at ``max_tokens`` (by estimate_tokens' pieces),
    with the finish reason it gives: "length" when cut, else "stop"."""
    if not isinstance(max_tokens, int) or estimate_tokens(content) <= max_tokens:
        return content, "stop"
    kept, used = [], 0
    for piece in _PIECES.findall(content):
        used += max(1, math.ceil(len(piece.strip() or piece) / 6))
        if used > max_tokens:
            break
        kept.append(piece)
    return "".join(kept), "length"


def _completion(request: dict, content: str, usage: dict | None) -> Response:
    content, finish_reason = capped(content, request.get("max_tokens"))
    if usage is None:
        usage = estimated_usage(request.get("messages") or [], content)
    return _json(
        {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model") or "fake-model",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": finish_reason,
                }
            ],
            "usage": usage,
        }
    )


class FakeLLM:
    """Scriptable OpenAI-compatible server; use as ``with FakeLLM() as fake: ...``.

    ``requests`` holds the JSON body of every chat-completion request received and
    ``headers`` the matching request headers (lower-cased names), index for index.
    """

    def __init__(self, port: int | None = None) -> None:
        """On ``port`` of 127.0.0.1, or a free one: a given port stands for a server started
        where something waits for one (a local server's default port)."""
        self.requests: list[dict] = []
        #: The ids ``GET /v1/models`` lists, in order.
        self.models: list[str] = ["fake-model"]
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._queue: deque[Script] = deque()
        self._default: Default = None
        self._stopping = threading.Event()
        self._http = BackgroundServer(self._app, "FakeLLM", port=port)

    @property
    def url(self) -> str:
        """Base URL ending in /v1; still valid after stop(), which makes a refusing port."""
        if self._http.port is None:
            raise RuntimeError("FakeLLM has not been started")
        return f"http://127.0.0.1:{self._http.port}/v1"

    def start(self) -> FakeLLM:
        self._stopping.clear()
        self._http.start()
        return self

    def stop(self) -> None:
        """Stop accepting requests; delayed replies still pending are released at once."""
        self._stopping.set()
        self._http.stop()

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def reply(self, content: str, *, usage: dict | None = None) -> None:
        """Queue a normal completion; usage defaults to an estimate (see estimate_tokens)."""
        self._enqueue(lambda request: _completion(request, content, usage))

    def fail(
        self, status: int, *, body: str | dict | None = None, retry_after: str | None = None
    ) -> None:
        """Queue an HTTP error; a str body is wrapped in OpenAI's error envelope."""
        headers = {"Retry-After": retry_after} if retry_after is not None else None
        if isinstance(body, dict):
            self._enqueue(lambda _request: _json(body, status, headers))
        else:
            message = body or HTTP_STATUS_CODES.get(status, "error")
            self._enqueue(lambda _request: error(status, message, headers))

    def delay(self, seconds: float, content: str) -> None:
        """Queue a completion sent only after ``seconds`` (to provoke client timeouts)."""

        def script(request: dict) -> Response:
            self._stopping.wait(seconds)
            return _completion(request, content, None)

        self._enqueue(script)

    def raw(self, body: bytes, status: int = 200, content_type: str = "application/json") -> None:
        """Queue an arbitrary body, e.g. truncated JSON or an HTML error page."""
        self._enqueue(lambda _request: Response(body, status=status, content_type=content_type))

    def set_default(self, fn: Default) -> None:
        """Reply used when the queue is empty: text, a function of the request body (giving
        text, or a whole response such as :func:`error`), or None for a 500 "no scripted
        reply"."""
        with self._lock:
            self._default = fn

    def _enqueue(self, script: Script) -> None:
        with self._lock:
            self._queue.append(script)

    def _app(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        return self._route(Request(environ))(environ, start_response)

    def _route(self, request: Request) -> Response:
        if request.path == "/v1/models":
            if request.method != "GET":
                return error(405, "method not allowed")
            models = [
                {"id": m, "object": "model", "owned_by": "evaluaitor-tests"} for m in self.models
            ]
            return _json({"object": "list", "data": models})
        if request.path != "/v1/chat/completions":
            return error(404, f"unknown path {request.path}")
        if request.method != "POST":
            return error(405, "method not allowed")
        try:
            body = json.loads(request.get_data())
        except ValueError:
            return error(400, "request body is not valid JSON")
        if not isinstance(body, dict):
            return error(400, "request body must be a JSON object")
        with self._lock:
            self.requests.append(body)
            self.headers.append({k.lower(): v for k, v in request.headers.items()})
            script = self._queue.popleft() if self._queue else None
            default = self._default
        if script is not None:
            return script(body)
        if default is None:
            return error(500, "no scripted reply")
        answer = default(body) if callable(default) else default
        return answer if isinstance(answer, Response) else _completion(body, answer, None)
