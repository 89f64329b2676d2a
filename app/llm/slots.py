"""How many calls may be in flight to one model server at once, across every worker.

A server on a school's own machine (llama.cpp, Ollama) usually computes one reply at a time and
queues the rest. Time spent in its queue counts against our per-request timeout, so five calls
sent at once time out one after another although the server is only busy, and a timed-out
request goes on computing on the server. Holding our own line instead keeps the server's queue
empty: a call waits for a free slot here, where waiting costs nothing, then has the server to
itself for its whole timeout.

Slots are counted in Redis when the caller has a connection (every RQ work horse is a process
of its own, so a count in memory would be one per job): a sorted set per server whose members
are leases that expire, so a worker killed while holding one frees it within a request's
timeout. Without Redis (``evaluaitor grade``), or while Redis is away, the count is this
process's.
"""

from __future__ import annotations

import ipaddress
import logging
import random
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import httpx
from redis.exceptions import RedisError

from app.llm.errors import LLMTimeoutError

log = logging.getLogger(__name__)

#: Calls in flight to one server when EVALUAITOR_LLM_MAX_IN_FLIGHT is unset: one for a server on
#: this machine or the school's network (it computes one reply at a time unless set up with
#: more slots), a few for a hosted service.
LOCAL_DEFAULT = 1
HOSTED_DEFAULT = 8
#: Host names that are a school's own network, not a hosted service.
_LOCAL_SUFFIXES = (".local", ".lan", ".internal", ".home.arpa", ".localdomain")
#: Seconds between two looks at a full server: short enough that a freed slot is taken soon.
_POLL = (0.05, 0.5)
#: Seconds a server's slots are counted in this process after Redis failed to answer: asking
#: it again at every call would cost each call the client's reconnection attempts (seconds).
REDIS_RETRY_AFTER = 30.0

# Drop the leases that expired, then take a slot if one is free: one step, so two workers
# cannot both take the last slot.
_TAKE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[4])
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
  return 1
end
return 0
"""

_local_lock = threading.Lock()
_local: dict[str, threading.BoundedSemaphore] = {}
#: By slot key, the time.monotonic() until which Redis is not asked (it was away).
_redis_away_until: dict[str, float] = {}


def default_limit(base_url: str) -> int:
    """LOCAL_DEFAULT for a server on loopback, a private address or a local host name,
    HOSTED_DEFAULT otherwise."""
    host = (httpx.URL(base_url).host or "").lower().rstrip(".")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        local = host == "localhost" or "." not in host or host.endswith(_LOCAL_SUFFIXES)
    else:
        local = not address.is_global
    return LOCAL_DEFAULT if local else HOSTED_DEFAULT


class ServerSlots:
    """At most ``limit`` calls in flight to the server at ``base_url``; a caller that waits
    longer than ``max_wait`` seconds for a slot gets LLMTimeoutError (the server is busy: the
    grading waits and is tried again later, like any timeout)."""

    def __init__(
        self,
        base_url: str,
        limit: int,
        *,
        redis: Any = None,
        lease_seconds: float = 150.0,
        max_wait: float = 600.0,
        prefix: str = "evaluaitor",
    ) -> None:
        self.limit = max(1, limit)
        self._key = f"{prefix}:llm-slots:{base_url.rstrip('/')}"
        self._redis = redis
        self._lease = lease_seconds
        self._max_wait = max_wait
        with _local_lock:
            self._semaphore = _local.setdefault(
                f"{self._key}#{self.limit}", threading.BoundedSemaphore(self.limit)
            )
        self._take = redis.register_script(_TAKE) if redis is not None else None

    @contextmanager
    def hold(self) -> Iterator[float]:
        """Hold one slot for one request; yields the seconds spent waiting for it."""
        started = time.monotonic()
        token = self._acquire(started + self._max_wait)
        try:
            yield time.monotonic() - started
        finally:
            self._release(token)

    def _acquire(self, deadline: float) -> str | None:
        """A Redis lease's token, or None when the slot is this process's semaphore."""
        if self._take is not None and time.monotonic() >= _redis_away_until.get(self._key, 0.0):
            token = uuid.uuid4().hex
            try:
                while True:
                    now = time.time()
                    # The set outlives its newest lease by nothing: PEXPIRE takes a duration.
                    args = [now, self.limit, now + self._lease, token, int(self._lease * 1000)]
                    if self._take(keys=[self._key], args=args):
                        return token
                    self._wait_or_give_up(deadline)
            except RedisError as exc:
                _redis_away_until[self._key] = time.monotonic() + REDIS_RETRY_AFTER
                log.warning("model server slots: Redis is away (%s); counting in this process", exc)
        if not self._semaphore.acquire(timeout=max(0.0, deadline - time.monotonic())):
            self._give_up()
        return None

    def _wait_or_give_up(self, deadline: float) -> None:
        if time.monotonic() >= deadline:
            self._give_up()
        time.sleep(random.uniform(*_POLL))  # nosec B311: spreading the looks, not secrecy

    def _give_up(self) -> None:
        raise LLMTimeoutError(
            f"the model server stayed busy: no free slot of {self.limit} within "
            f"{self._max_wait:.0f}s",
            attempts=0,
        )

    def _release(self, token: str | None) -> None:
        if token is None:
            self._semaphore.release()
            return
        with suppress(RedisError):  # the lease expires by itself
            self._redis.zrem(self._key, token)
