"""Who is calling: the admin (one token from the settings) or an organization (its own tokens).

Organization tokens are random strings shown once; only their SHA-256 is stored, so a leaked
database does not leak working tokens. A SHA-256 lookup is enough (no slow hash): the tokens
carry 256 bits of randomness, nothing to guess.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from flask import current_app, g, request
from redis import Redis
from redis.exceptions import RedisError
from sqlalchemy import select
from sqlalchemy.orm import joinedload

from app import ratelimit
from app.api.errors import AdminNotConfigured, ApiForbidden, Unauthorized
from app.extensions import db, redis_connection
from app.models import ApiToken, Organization

log = logging.getLogger(__name__)

TOKEN_PREFIX = "evk_"
#: The sign-in lockout scope of bearer tokens (the admin's and organizations').
LOCKOUT_SCOPE = "api"
#: ``last_used_at`` is refreshed at most this often, so status polls do not each write a row.
LAST_USED_RESOLUTION = timedelta(minutes=5)


@dataclass(frozen=True)
class Caller:
    """The authenticated caller: the admin, or one organization (``organization`` set)."""

    organization: Organization | None = None

    @property
    def is_admin(self) -> bool:
        return self.organization is None


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def create_token(organization: Organization, name: str = "") -> tuple[ApiToken, str]:
    """A new token for ``organization`` and its plain text (never stored). Uncommitted."""
    plain = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken(
        organization=organization, name=name, token_hash=hash_token(plain), prefix=plain[:12]
    )
    db.session.add(token)
    return token, plain


def new_callback_secret() -> str:
    return secrets.token_hex(32)


def authenticate() -> Caller:
    """The caller of this request; raises Unauthorized for a missing, unknown or revoked
    token and for an inactive organization (all alike, so a token's state is not revealed).

    A token that fails counts against the client's address (the lockout of
    :mod:`app.ratelimit`, scope ``api``); a locked-out address gets TooManyAttempts (429),
    whatever token it sends.
    """
    if "api_caller" in g:
        return g.api_caller
    _lockout(ratelimit.refuse_if_locked_out)
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise Unauthorized()
    admin = current_app.config.get("EVALUAITOR_ADMIN_TOKEN")
    if admin and hmac.compare_digest(token.encode(), admin.encode()):
        g.api_caller = Caller()
        return g.api_caller
    row = db.session.scalar(
        select(ApiToken)
        .options(joinedload(ApiToken.organization))  # one query: every request needs both
        .where(ApiToken.token_hash == hash_token(token))
    )
    if row is None or row.revoked_at is not None or not row.organization.is_active:
        _lockout(ratelimit.count_failure)
        raise Unauthorized("The token is unknown, revoked, or its organization is inactive.")
    now = datetime.now(UTC)
    last = row.last_used_at
    if last is None or _aware(last) < now - LAST_USED_RESOLUTION:
        row.last_used_at = now
        db.session.commit()
    g.api_caller = Caller(row.organization)
    return g.api_caller


def require_admin() -> Caller:
    if not current_app.config.get("EVALUAITOR_ADMIN_TOKEN"):
        raise AdminNotConfigured()
    caller = authenticate()
    if not caller.is_admin:
        raise ApiForbidden("This endpoint needs the admin token.")
    return caller


def require_organization() -> Organization:
    """The calling organization; the admin token is refused here (least privilege: it
    manages organizations, it does not submit or read students' work)."""
    caller = authenticate()
    if caller.organization is None:
        raise ApiForbidden("Evaluations are reached with an organization's token.")
    return caller.organization


def _lockout(step: Callable[[Redis, str], None]) -> None:
    """Run a lockout step; without Redis, skip it (fail open, logged): organization tokens
    carry 256 random bits, so the lockout only slows guessing down, and clients must keep
    reading their results while Redis is briefly down."""
    try:
        step(redis_connection(), LOCKOUT_SCOPE)
    except RedisError as exc:
        log.error("API sign-in lockout skipped, Redis unavailable: %s", exc)


def _aware(moment: datetime) -> datetime:
    """SQLite gives naive datetimes back; they were stored in UTC."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
