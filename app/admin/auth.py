"""Signing in to /admin with EVALUAITOR_ADMIN_TOKEN, and the lockout after failed sign-ins.

The cookie (Flask's signed session) holds only a random session id; the session itself is a
Redis record, named by the id's SHA-256 and expiring after EVALUAITOR_ADMIN_SESSION_HOURS,
that holds an HMAC of the token. Signing out deletes the record, so a copied cookie stops
working at once; changing the token signs everyone out (the HMAC no longer matches); neither
the cookie nor Redis reveals the token. Comparisons are constant-time. Without Redis no admin
page opens (:class:`AdminUnavailable`): sign-ins cannot be checked, so they fail closed.

Failed sign-ins lock the client's address out (:func:`app.ratelimit.count_failure`); the
REST API's bearer tokens use the same lockout under a scope of their own.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterator
from contextlib import contextmanager

from flask import current_app, session
from flask_babel import lazy_gettext as _l
from redis import Redis
from redis.exceptions import RedisError

from app import ratelimit
from app.errors import EvaluaitorError
from app.extensions import redis_connection

_SESSION_KEY = "admin"
_RECORD_PREFIX = "evaluaitor:admin-session:"
#: The lockout scope of /admin sign-ins.
SIGN_IN = "admin-sign-in"


class AdminUnavailable(EvaluaitorError):
    """Redis, which holds the admin sessions and the sign-in lockout, did not answer."""

    status_code = 503
    code = "admin_unavailable"
    user_message = _l(
        "The admin page cannot check sign-ins right now: its session store (Redis) is not "
        "reachable. Try again in a minute."
    )


def configured_token() -> str | None:
    return current_app.config.get("EVALUAITOR_ADMIN_TOKEN") or None


def _fingerprint(token: str) -> str:
    key = current_app.config["SECRET_KEY"].encode()
    return hmac.new(key, b"evaluaitor.admin:" + token.encode(), hashlib.sha256).hexdigest()


def _record_key(session_id: str) -> str:
    return _RECORD_PREFIX + hashlib.sha256(session_id.encode()).hexdigest()


@contextmanager
def _store() -> Iterator[Redis]:
    """Redis for the admin sessions; its errors become AdminUnavailable (fail closed)."""
    try:
        yield redis_connection()
    except RedisError as exc:
        raise AdminUnavailable(detail=f"admin session store: {exc}") from exc


def sign_in(submitted: str) -> bool:
    """Start an admin session if ``submitted`` is the configured token; False (and a failure
    counted) if not. Raises TooManyAttempts while this address is locked out."""
    token = configured_token()
    with _store() as redis:
        ratelimit.refuse_if_locked_out(redis, SIGN_IN)
        if not token or not hmac.compare_digest(submitted.encode(), token.encode()):
            ratelimit.count_failure(redis, SIGN_IN)
            return False
        _forget(redis)
        session_id = secrets.token_urlsafe(32)
        hours = current_app.config["EVALUAITOR_ADMIN_SESSION_HOURS"]
        redis.set(_record_key(session_id), _fingerprint(token), ex=int(hours * 3600))
    session.clear()  # a fresh session (and CSRF token) after signing in
    session.permanent = True  # the cookie expires with the record
    session[_SESSION_KEY] = session_id
    return True


def sign_out() -> None:
    """End the session on the server first: a copy of the cookie must not outlive it."""
    with _store() as redis:
        _forget(redis)
    session.clear()


def _forget(redis: Redis) -> None:
    session_id = session.get(_SESSION_KEY)
    if isinstance(session_id, str):
        redis.delete(_record_key(session_id))


def is_signed_in() -> bool:
    token = configured_token()
    session_id = session.get(_SESSION_KEY)
    if not token or not isinstance(session_id, str):
        return False
    with _store() as redis:
        held = redis.get(_record_key(session_id))
    return held is not None and hmac.compare_digest(held, _fingerprint(token).encode())
