"""Fixed-window rate limits in Redis, shared by every web process.

``hit(redis, key, limit, window)`` counts one call under ``key``; past ``limit`` calls in the
current window of ``window`` seconds it answers how long to wait, for a 429 and its
``Retry-After`` header. A fixed window lets at most twice the limit through around a window's
edge, which is enough to stop a scanner or a password guesser and costs one round trip.
Redis errors reach the caller, which decides whether to fail open or closed.

The sign-in lockout is built on it: failed sign-ins (on /admin, with REST API bearer tokens)
are counted per client address and scope; past EVALUAITOR_SIGN_IN_MAX_FAILURES in a window of
EVALUAITOR_SIGN_IN_FAILURE_WINDOW seconds the address is refused (429, the right token
included) until the window ends.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from flask import current_app, request
from redis import Redis

from app.errors import TooManyAttempts

log = logging.getLogger(__name__)

PREFIX = "evaluaitor:ratelimit:"


@dataclass(frozen=True)
class RetryAfter:
    """The caller is over its limit; ``seconds`` until its window ends (at least 1)."""

    seconds: int

    @property
    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.seconds)}


def hit(redis: Redis, key: str, limit: int, window: int) -> RetryAfter | None:
    """Count one call under ``key``; None while within ``limit`` calls per ``window`` s."""
    name = PREFIX + key
    with redis.pipeline(transaction=True) as pipe:
        pipe.set(name, 0, ex=window, nx=True)  # the window starts with its first call
        pipe.incr(name)
        pipe.ttl(name)
        _, count, ttl = pipe.execute()
    if count <= limit:
        return None
    return RetryAfter(max(int(ttl), 1))


def peek(redis: Redis, key: str, limit: int) -> RetryAfter | None:
    """Whether ``key`` has used up its ``limit`` calls in the current window, without counting
    one: for limits on failures, which are checked before an attempt and counted only when it
    fails (the sign-in lockout below)."""
    name = PREFIX + key
    with redis.pipeline(transaction=False) as pipe:
        pipe.get(name)
        pipe.ttl(name)
        count, ttl = pipe.execute()
    if count is None or int(count) < limit:
        return None
    return RetryAfter(max(int(ttl), 1))


# --- the sign-in lockout ---------------------------------------------------------------------


def refuse_if_locked_out(redis: Redis, scope: str) -> None:
    """Raise TooManyAttempts while the client's address has used up its failed sign-ins."""
    limit = current_app.config["EVALUAITOR_SIGN_IN_MAX_FAILURES"]
    wait = peek(redis, _failures_key(scope), limit)
    if wait is not None:
        raise TooManyAttempts(wait.seconds, detail=f"{scope} locked out for {request.remote_addr}")


def count_failure(redis: Redis, scope: str) -> None:
    """Count and log a failed sign-in: the address and the time, never what was submitted."""
    config = current_app.config
    hit(
        redis,
        _failures_key(scope),
        config["EVALUAITOR_SIGN_IN_MAX_FAILURES"],
        config["EVALUAITOR_SIGN_IN_FAILURE_WINDOW"],
    )
    log.warning("failed %s from %s", scope, request.remote_addr)


def _failures_key(scope: str) -> str:
    # request.remote_addr is the client's own address once ProxyFix trusts the proxy.
    return f"sign-in-failures:{scope}:{request.remote_addr}"
