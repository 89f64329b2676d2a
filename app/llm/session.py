"""One grading job's access to the model: a cache, a concurrency bound, and a record of calls.

Plugins call :meth:`LLMSession.complete` exactly as they would the client. The session

- answers from a content-addressed cache (model + messages + parameters) so regrading
  unchanged text costs no call; a fresh grading (a person's regrade) replays only replies
  received since it was asked for, so when one of its calls fails and the grading is tried
  again later, the replies already received are kept and only the failed call is made again;
  the cache is the tenant's own and bounded in size and age (:mod:`app.llm.cache`);
- caps every reply (:meth:`LLMSession.reply_cap`) and records when a reply was cut there;
- runs at most ``max_concurrency`` calls at once, also through :meth:`map`;
- records every call (model, prompt hash, parameters, tokens, time, cache hit) for the
  grade's provenance, and the messages of each distinct prompt, so a teacher can read exactly
  what the model read (:meth:`LLMSession.prompts`, bounded in size).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

from app.llm.cache import CacheLimits, ReplyCache
from app.llm.client import Completion, LLMClient, client_from_config
from app.llm.errors import LLMNotConfiguredError

T = TypeVar("T")
R = TypeVar("R")

DEFAULT_TEMPERATURE = 0.1
#: Bounds of what :meth:`LLMSession.prompts` keeps of a job's prompts for its page: each
#: message's text, and all the texts together. A submission can be a million characters and
#: a criteria grading sends it once per criterion; the text itself is stored once already.
MAX_MESSAGE_CHARS = 20_000
MAX_PROMPTS_CHARS = 200_000
CUT_NOTE = "\n[... {n} characters not kept here ...]\n"


@dataclass(frozen=True)
class CallRecord:
    model: str
    prompt_hash: str
    temperature: float
    seed: int | None
    max_tokens: int | None
    json_mode: bool
    prompt_tokens: int | None
    completion_tokens: int | None
    total_tokens: int | None
    elapsed_ms: int
    attempts: int
    cached: bool
    #: Why the reply ended ("stop", "length"...), as the server said; None if it did not.
    finish_reason: str | None = None
    #: The reply was cut at ``max_tokens``: what it says may be incomplete.
    truncated: bool = False
    #: Of ``elapsed_ms``, waiting for a free slot of the server (app.llm.slots).
    queued_ms: int = 0


class LLMSession:
    def __init__(
        self,
        client: LLMClient | None,
        *,
        model: str | None = None,
        temperature: float = DEFAULT_TEMPERATURE,
        seed: int | None = None,
        cache: ReplyCache | None = None,
        fresh_since: float | None = None,
        max_concurrency: int = 4,
        secret: str = "",
        max_tokens: int = 0,
    ) -> None:
        self._client = client
        self._secret = secret.encode()
        self.model = model
        self.temperature = temperature
        self.seed = seed
        self._cache = cache
        self._fresh_since = fresh_since
        self._max_tokens = max_tokens
        self._slots = threading.BoundedSemaphore(max(1, max_concurrency))
        self._max_concurrency = max(1, max_concurrency)
        self._lock = threading.Lock()
        self.calls: list[CallRecord] = []
        self._prompts: dict[str, list[dict]] = {}

    @property
    def is_configured(self) -> bool:
        return self._client is not None

    def check_allowed(self) -> None:
        """Raise LLMForbiddenError when an allowlist forbids the session's server (nothing
        to check without one: a call raises LLMNotConfiguredError then)."""
        if self._client is not None:
            self._client.check_allowed()

    def reply_cap(self, fits: int) -> int:
        """The ``max_tokens`` of a call whose answer ``fits`` in that many tokens, unless the
        administrator set one for every call (EVALUAITOR_LLM_MAX_TOKENS)."""
        return self._max_tokens or fits

    def marker(self, text: str) -> str:
        """A delimiter code for ``text`` that its author cannot predict (keyed by a secret)
        but that stays the same for the same text, so cached replies still match."""
        return hmac.new(self._secret, text.encode(), hashlib.sha256).hexdigest()[:16]

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
        if self._client is None:
            raise LLMNotConfiguredError("no LLM base URL configured")
        # Before the cache too: a forbidden server's old replies are not served either, so a
        # grading's outcome does not depend on what happens to be cached.
        self.check_allowed()
        params = {
            "model": model or self.model,
            "temperature": self.temperature if temperature is None else temperature,
            "max_tokens": max_tokens,
            "seed": self.seed if seed is None else seed,
            "json_mode": json_mode,
        }
        prompt_hash = _digest(messages)
        key = _digest({"messages": prompt_hash, **params})
        cached = None if self._cache is None else self._cache.get(key, since=self._fresh_since)
        if cached is None:
            with self._slots:
                completion = self._client.complete(messages, **params)
            if self._cache is not None:
                self._cache.put(key, completion)
        else:
            completion = cached
        self._record(completion, messages, prompt_hash, params, cached=cached is not None)
        return completion

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
        """``[fn(item) ...]`` run concurrently (bounded like the calls), results in order."""
        items = list(items)
        if len(items) <= 1:
            return [fn(item) for item in items]
        with ThreadPoolExecutor(min(self._max_concurrency, len(items))) as pool:
            return list(pool.map(fn, items))

    def provenance(self) -> dict[str, Any]:
        with self._lock:
            calls = list(self.calls)
        return {
            "models": sorted({c.model for c in calls}),
            "calls": [asdict(c) for c in calls],
            "llm_calls": sum(not c.cached for c in calls),
            "cache_hits": sum(c.cached for c in calls),
            "truncated_replies": sum(c.truncated for c in calls),
            "prompt_tokens": sum(c.prompt_tokens or 0 for c in calls if not c.cached),
            "completion_tokens": sum(c.completion_tokens or 0 for c in calls if not c.cached),
            "total_tokens": sum(c.total_tokens or 0 for c in calls if not c.cached),
        }

    def sent(self, text: str) -> bool:
        """Whether a message sent in this session contains ``text``: whether a model read it
        (a strategy may send only part of the work: the main file, its start)."""
        with self._lock:
            prompts = list(self._prompts.values())
        return any(text in str(m.get("content", "")) for messages in prompts for m in messages)

    def prompts(self) -> list[dict[str, Any]]:
        """Each distinct prompt sent, in the order first sent: ``{"prompt_hash", "messages"}``
        (role and content). Long texts keep their start and end (MAX_MESSAGE_CHARS); once
        MAX_PROMPTS_CHARS are kept, later prompts keep their hash only (``messages`` empty)."""
        with self._lock:
            prompts = list(self._prompts.items())
        kept, budget = [], MAX_PROMPTS_CHARS
        for prompt_hash, messages in prompts:
            shown = [
                {"role": str(m.get("role", "")), "content": _shortened(str(m.get("content", "")))}
                for m in messages
            ]
            size = sum(len(m["content"]) for m in shown)
            if size > budget:
                shown, size = [], 0
            budget -= size
            kept.append({"prompt_hash": prompt_hash, "messages": shown})
        return kept

    def _record(
        self,
        completion: Completion,
        messages: list[dict],
        prompt_hash: str,
        params: dict,
        *,
        cached: bool,
    ):
        usage = completion.usage
        record = CallRecord(
            model=completion.model,
            prompt_hash=prompt_hash,
            temperature=params["temperature"],
            seed=params["seed"],
            max_tokens=params["max_tokens"],
            json_mode=params["json_mode"],
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            total_tokens=usage.total_tokens,
            elapsed_ms=0 if cached else completion.elapsed_ms,
            attempts=0 if cached else completion.attempts,
            cached=cached,
            finish_reason=completion.finish_reason,
            truncated=completion.truncated,
            queued_ms=0 if cached else completion.queued_ms,
        )
        with self._lock:
            self.calls.append(record)
            self._prompts.setdefault(prompt_hash, messages)


@contextmanager
def llm_session(
    config: Mapping[str, Any],
    *,
    cache_scope: str,
    model: str | None = None,
    fresh_since: float | None = None,
    redis: Any = None,
    allowed: Sequence[str] = (),
) -> Iterator[LLMSession]:
    """A session from settings; without ``EVALUAITOR_LLM_BASE_URL`` it has no client and
    any call raises LLMNotConfiguredError (strategies that need no model still run).

    Its cached replies are the tenant's named by ``cache_scope`` (see :mod:`app.llm.cache`);
    with ``fresh_since`` (a time.time()) only those stored since then are replayed. With a
    ``redis`` connection, calls in flight to the server are counted across workers.
    ``allowed`` is the organization's allowlist of model servers (app.llm.endpoints).
    """
    client = client_from_config(config, redis=redis, allowed=allowed)
    cache_dir = config.get("EVALUAITOR_LLM_CACHE_DIR")
    limits = CacheLimits(
        max_bytes=int(config["EVALUAITOR_LLM_CACHE_MAX_MB"] * 1024 * 1024),
        max_age_seconds=config["EVALUAITOR_LLM_CACHE_MAX_DAYS"] * 86400,
    )
    try:
        yield LLMSession(
            client,
            model=model or config.get("EVALUAITOR_LLM_MODEL"),
            cache=ReplyCache(cache_dir, scope=cache_scope, limits=limits) if cache_dir else None,
            fresh_since=fresh_since,
            max_concurrency=int(config["EVALUAITOR_LLM_CONCURRENCY"]),
            secret=str(config.get("SECRET_KEY") or ""),
            max_tokens=int(config.get("EVALUAITOR_LLM_MAX_TOKENS") or 0),
        )
    finally:
        if client is not None:
            client.close()


def _shortened(text: str) -> str:
    """``text`` within MAX_MESSAGE_CHARS: its start and end, with how much was left out."""
    if len(text) <= MAX_MESSAGE_CHARS:
        return text
    half = MAX_MESSAGE_CHARS // 2
    return text[:half] + CUT_NOTE.format(n=len(text) - 2 * half) + text[-half:]


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()
