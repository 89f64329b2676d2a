"""Fixed-window rate limits in Redis, shared by every web process.

``hit(redis, key, limit, window)`` counts one call under ``key``; past ``limit`` calls in the
current window of ``window`` seconds it answers how long to wait, for a 429 and its
``Retry-After`` header. A fixed window lets at most twice the limit through around a window's
edge, which is enough to stop a scanner or a password guesser and costs one round trip.
Redis errors reach the caller, which decides whether to fail open or closed.
"""

from __future__ import annotations

from dataclasses import dataclass

from redis import Redis

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
    fails (sign-in lockouts, see app.admin.auth)."""
    name = PREFIX + key
    with redis.pipeline(transaction=False) as pipe:
        pipe.get(name)
        pipe.ttl(name)
        count, ttl = pipe.execute()
    if count is None or int(count) < limit:
        return None
    return RetryAfter(max(int(ttl), 1))
