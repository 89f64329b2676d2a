"""Signing in to /admin with EVALUAITOR_ADMIN_TOKEN.

The session holds an HMAC of the token, not the token: changing the token signs every
admin out, and a leaked cookie does not reveal it. Comparisons are constant-time.
"""

from __future__ import annotations

import hashlib
import hmac

from flask import current_app, session

_SESSION_KEY = "admin"


def configured_token() -> str | None:
    return current_app.config.get("EVALUAITOR_ADMIN_TOKEN") or None


def _fingerprint(token: str) -> str:
    key = current_app.config["SECRET_KEY"].encode()
    return hmac.new(key, b"evaluaitor.admin:" + token.encode(), hashlib.sha256).hexdigest()


def sign_in(submitted: str) -> bool:
    """Start an admin session if ``submitted`` is the configured token."""
    token = configured_token()
    if not token or not hmac.compare_digest(submitted.encode(), token.encode()):
        return False
    session.clear()  # a fresh session (and CSRF token) after signing in
    session.permanent = True  # expires after EVALUAITOR_ADMIN_SESSION_HOURS
    session[_SESSION_KEY] = _fingerprint(token)
    return True


def sign_out() -> None:
    session.clear()


def is_signed_in() -> bool:
    token = configured_token()
    held = session.get(_SESSION_KEY)
    return bool(token and isinstance(held, str)) and hmac.compare_digest(held, _fingerprint(token))
