"""Client for OpenAI-compatible chat-completions endpoints (OpenAI, vLLM, Ollama, LAMB, ...).

Only the small common subset of the protocol is used so that self-hosted servers work too.
Transient failures are retried with backoff, and every failure surfaces as an ``LLMError``
whose ``user_message`` can be shown to teachers and students as-is.
"""

from __future__ import annotations

import email.utils
import logging
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx

from app import metrics, outbound, safe_json
from app.catalogue import N_
from app.llm.endpoints import Allowlists
from app.llm.errors import (
    LLMConnectionError,
    LLMError,
    LLMNotConfiguredError,
    LLMRateLimitError,
    LLMRequestError,
    LLMResponseError,
    LLMServerError,
    LLMTimeoutError,
    request_error_message,
)
from app.llm.slots import ServerSlots, default_limit

log = logging.getLogger(__name__)

RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})


@dataclass(frozen=True)
class LLMSettings:
    base_url: str
    api_key: str | None = field(default=None, repr=False)  # keep the key out of logs/tracebacks
    model: str = ""
    timeout: float = 120.0  # httpx connect/read/write limit per request (not a total deadline)
    max_retries: int = 4
    backoff_base: float = 1.0
    backoff_max: float = 30.0
    temperature: float = 0.1
    #: Tokens a reply may run to when the caller names no cap (every strategy names one).
    max_tokens: int = 1024


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int | None
    completion_tokens: int | None
    total_tokens: int | None


@dataclass(frozen=True)
class Completion:
    content: str
    model: str
    usage: Usage
    attempts: int
    elapsed_ms: int
    finish_reason: str | None
    #: Of ``elapsed_ms``, the time spent waiting for a free slot of the server (app.llm.slots).
    queued_ms: int = 0

    @property
    def truncated(self) -> bool:
        """The reply stopped at its token cap, not where the model meant to end it."""
        return self.finish_reason == "length"


class LLMClient:
    """Thread-safe chat-completions client; reuse one instance to keep connections pooled."""

    def __init__(
        self,
        settings: LLMSettings,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        slots: ServerSlots | None = None,
        allowlists: Allowlists | None = None,
    ) -> None:
        self.settings = settings
        self.allowlists = allowlists or Allowlists()
        self._sleep = sleep
        self._queued = threading.local()
        self._url = f"{settings.base_url.rstrip('/')}/chat/completions"
        try:
            scheme = httpx.URL(self._url).scheme
        except httpx.InvalidURL as exc:
            raise LLMNotConfiguredError(f"invalid LLM base URL: {exc}") from exc
        if scheme not in ("http", "https"):
            raise LLMNotConfiguredError("LLM base URL must start with http:// or https://")
        self._slots = slots or ServerSlots(settings.base_url, default_limit(settings.base_url))
        headers = {"Accept": "application/json", "User-Agent": "Evaluaitor"}
        if settings.api_key:
            headers["Authorization"] = f"Bearer {settings.api_key}"
        self._http = httpx.Client(
            transport=transport,
            verify=outbound.ssl_context(),  # with no transport given: built once per process
            headers=headers,
            timeout=httpx.Timeout(settings.timeout),
        )
        self._json_mode_supported = True

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def check_allowed(self) -> None:
        """Raise LLMForbiddenError when an allowlist forbids this client's server (checked
        before every request, so a forbidden server never receives a byte of the work)."""
        self.allowlists.check(self.settings.base_url)

    def complete(
        self,
        messages: list[dict],
        *,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
        json_mode: bool = False,
    ) -> Completion:
        """Send one chat completion request and return the assistant's reply, at most
        ``max_tokens`` long (the settings' cap when None: a request never goes uncapped, or a
        small model rambles to the end of its context while the client times out).

        ``json_mode`` asks for ``response_format: {"type": "json_object"}``. Many
        OpenAI-compatible servers (vLLM, Ollama, LAMB, ...) reject that field with a 400, so
        we then retry once without it and stop sending it from this client: callers must
        still ask for JSON in the prompt and validate what comes back.
        """
        self.check_allowed()
        started = time.monotonic()
        self._queued.seconds = 0.0
        body: dict[str, Any] = {
            "model": model or self.settings.model,
            "messages": messages,
            "temperature": self.settings.temperature if temperature is None else temperature,
            "max_tokens": self.settings.max_tokens if max_tokens is None else max_tokens,
        }
        if seed is not None:
            body["seed"] = seed
        if json_mode and self._json_mode_supported:
            body["response_format"] = {"type": "json_object"}
        try:
            return self._send(body, started)
        except LLMError as exc:
            model = metrics.model_label(body["model"])
            metrics.MODEL_ERRORS.labels(model, type(exc).__name__).inc()
            raise

    def _send(self, body: dict[str, Any], started: float) -> Completion:
        response, attempts = self._post(body)
        if (
            response.status_code == 400
            and "response_format" in body
            and "response_format" in response.text.lower()
        ):
            log.info("LLM server rejected response_format; retrying without JSON mode")
            self._json_mode_supported = False
            del body["response_format"]
            response, more = self._post(body)
            attempts += more
        if not response.is_success:
            raise self._status_error(response, attempts)
        return self._parse(response, body["model"], attempts, started)

    def _post(self, body: dict[str, Any]) -> tuple[httpx.Response, int]:
        """POST, retrying transient failures so a busy server does not fail a grading run."""
        attempt = 0
        while True:
            attempt += 1
            can_retry = attempt <= self.settings.max_retries
            try:
                with self._slots.hold() as waited:
                    self._queued.seconds += waited
                    response = self._http.post(self._url, json=body)
            except httpx.ReadTimeout as exc:
                # Not sent again here: the server may still be computing it (llama.cpp and
                # Ollama go on for a client that has gone), and a copy would queue behind it.
                # The grading waits and is tried again later, keeping the replies it has.
                raise self._transport_error(exc, attempt) from exc
            except httpx.TransportError as exc:
                if not can_retry:
                    raise self._transport_error(exc, attempt) from exc
                self._backoff(attempt, None, type(exc).__name__)
                continue
            except httpx.HTTPError as exc:  # e.g. an undecodable body: retrying will not help
                raise LLMResponseError(f"unreadable response: {exc}", attempts=attempt) from exc
            if response.status_code in RETRYABLE_STATUSES and can_retry:
                retry_after = response.headers.get("Retry-After")
                self._backoff(attempt, retry_after, f"HTTP {response.status_code}")
                continue
            return response, attempt

    def _backoff(self, attempt: int, retry_after: str | None, reason: str) -> None:
        s = self.settings
        delay = _retry_after_seconds(retry_after)
        if delay is None:  # exponential backoff with full jitter
            delay = random.uniform(0, min(s.backoff_max, s.backoff_base * 2 ** (attempt - 1)))
        delay = min(delay, s.backoff_max)
        log.warning("LLM request failed (%s); retry %d in %.2fs", reason, attempt, delay)
        self._sleep(delay)

    def _transport_error(self, exc: httpx.TransportError, attempts: int) -> LLMError:
        if isinstance(exc, httpx.TimeoutException):
            detail = f"no response within {self.settings.timeout}s after {attempts} attempt(s)"
            return LLMTimeoutError(detail, attempts=attempts)
        detail = f"cannot reach LLM server after {attempts} attempt(s): {self._redact(str(exc))}"
        return LLMConnectionError(detail, attempts=attempts)

    def _status_error(self, response: httpx.Response, attempts: int) -> LLMError:
        status = response.status_code
        detail = f"HTTP {status} after {attempts} attempt(s): {self._redact(response.text[:500])}"
        if status == 429:
            return LLMRateLimitError(detail, attempts=attempts, status_code=status)
        if status >= 500:
            return LLMServerError(detail, attempts=attempts, status_code=status)
        return LLMRequestError(
            detail,
            user_message=request_error_message(status, response.text),
            attempts=attempts,
            status_code=status,
        )

    def _parse(
        self, response: httpx.Response, requested_model: str, attempts: int, started: float
    ) -> Completion:
        def bad(reason: str) -> LLMResponseError:
            return LLMResponseError(f"malformed completion: {reason}", attempts=attempts)

        try:
            data = safe_json.loads(response.content)
        except ValueError as exc:
            ctype = response.headers.get("Content-Type", "?")
            raise bad(f"body is not JSON (Content-Type {ctype})") from exc
        if not isinstance(data, dict):
            raise bad("body is not a JSON object")
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            error = data.get("error")
            raise bad(f"no choices (error: {self._redact(str(error))})" if error else "no choices")
        message = choices[0].get("message")
        if not isinstance(message, dict):
            raise bad("choice has no message object")
        content = _content_text(message.get("content"))
        if content is None:
            raise bad(f"content has unexpected type {type(message.get('content')).__name__}")
        if not content.strip():
            raise bad("empty content")
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        model = data.get("model")
        finish_reason = choices[0].get("finish_reason")
        return Completion(
            content=content,
            model=model if isinstance(model, str) and model else requested_model,
            usage=Usage(
                prompt_tokens=_int_or_none(usage.get("prompt_tokens")),
                completion_tokens=_int_or_none(usage.get("completion_tokens")),
                total_tokens=_int_or_none(usage.get("total_tokens")),
            ),
            attempts=attempts,
            elapsed_ms=int((time.monotonic() - started) * 1000),
            finish_reason=finish_reason if isinstance(finish_reason, str) else None,
            queued_ms=int(self._queued.seconds * 1000),
        )

    def _redact(self, text: str) -> str:
        """Servers sometimes echo the key back in error bodies; never let it reach logs."""
        key = self.settings.api_key
        return text.replace(key, "[redacted]") if key else text


def _content_text(content: object) -> str | None:
    """Return message text from a plain string or a list of content parts; None if neither."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and part.get("type") == "text":
                if not isinstance(part.get("text"), str):
                    return None
                parts.append(part["text"])
        return "".join(parts)
    return None


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _retry_after_seconds(value: str | None) -> float | None:
    """Parse Retry-After, given either as delay-seconds or as an HTTP-date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def client_from_config(
    config: Mapping[str, Any], *, redis: Any = None, allowed: Sequence[str] = ()
) -> LLMClient | None:
    """Build a client from Flask-style config; None when no base URL is configured. With a
    ``redis`` connection the calls in flight to the server are counted across all workers
    (app.llm.slots), otherwise in this process. Its calls go only to a server that both the
    site's allowlist (EVALUAITOR_LLM_ALLOWED_BASE_URLS) and ``allowed`` (the organization's)
    allow (app.llm.endpoints)."""
    base_url = str(config.get("EVALUAITOR_LLM_BASE_URL") or "").strip()
    if not base_url:
        return None
    defaults = LLMSettings(base_url=base_url)

    def number(key: str, default: float, kind: type[float] | type[int]) -> Any:
        raw = config.get(key)
        if raw is None or raw == "":
            return default
        try:
            return kind(raw)
        except (TypeError, ValueError) as exc:
            raise LLMNotConfiguredError(
                f"{key} must be a number, got {raw!r}",
                user_message=N_(
                    "The language model settings are invalid. Ask your administrator to check them."
                ),
            ) from exc

    timeout = number("EVALUAITOR_LLM_TIMEOUT", defaults.timeout, float)
    settings = LLMSettings(
        base_url=base_url,
        api_key=str(config.get("EVALUAITOR_LLM_API_KEY") or "").strip() or None,
        model=str(config.get("EVALUAITOR_LLM_MODEL") or "").strip(),
        timeout=timeout,
        max_retries=number("EVALUAITOR_LLM_MAX_RETRIES", defaults.max_retries, int),
        backoff_base=number("EVALUAITOR_LLM_BACKOFF_BASE", defaults.backoff_base, float),
        max_tokens=number("EVALUAITOR_LLM_MAX_TOKENS", 0, int) or defaults.max_tokens,
    )
    try:
        # An unset limit is 0: decided by where the server is (app.llm.slots.default_limit).
        limit = number("EVALUAITOR_LLM_MAX_IN_FLIGHT", 0, int) or default_limit(base_url)
    except httpx.InvalidURL as exc:
        raise LLMNotConfiguredError(f"invalid LLM base URL: {exc}") from exc
    slots = ServerSlots(
        base_url,
        limit,
        redis=redis,
        lease_seconds=timeout + 30,
        max_wait=number("EVALUAITOR_LLM_SLOT_WAIT", 300.0, float),
        prefix=str(config.get("EVALUAITOR_QUEUE_PREFIX") or "evaluaitor"),
    )
    try:
        allowlists = Allowlists.of(config, allowed)
    except ValueError as exc:
        raise LLMNotConfiguredError(
            f"an allowlist of model servers is invalid: {exc}",
            user_message=N_(
                "The language model settings are invalid. Ask your administrator to check them."
            ),
        ) from exc
    return LLMClient(settings, slots=slots, allowlists=allowlists)
