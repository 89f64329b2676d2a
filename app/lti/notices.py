"""Receiving Platform Notification Service notices (``POST /lti/notices``).

A notice is a JWT the platform signs, like a launch's id_token, and it is checked as
strictly: RS256 only, the platform's key set (fetched and cached by
:class:`app.lti.launch.PlatformKeySets`, the launch's own), ``iss`` and ``aud`` naming an
active platform of an organization that is on (``azp`` when ``aud`` names several), an
active deployment of it, ``exp`` and ``iat`` within the configured clock skew, LTI version
1.3.0, a single-use ``nonce`` and a notice id the platform never sent before.

Canvas never sends a notice again, so an accepted submission notice is committed before the
platform is answered, and only then queued: if Redis cannot take it, the sweeper
(app.evaluation.sweeper) queues it later. Nothing slow happens here: no download, no
grading. Other notice types are acknowledged and dropped.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from typing import Any

import jwt
from flask import current_app
from redis.exceptions import RedisError
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from app import outbound, safe_json
from app.errors import LaunchError
from app.extensions import db, redis_connection
from app.jobs import queue
from app.lti import claims
from app.lti.launch import MAX_KEY_SET_BYTES, PlatformKeySets
from app.models import Deployment, Platform
from app.models.assets import LtiNotice

log = logging.getLogger(__name__)

#: A notice is a few kilobytes; Canvas sends one per request. Anything bigger is refused.
MAX_BODY_BYTES = 256 * 1024
MAX_NOTICES = 20
#: Notice types the tool knows: the one it acts on, and those it acknowledges and drops.
KNOWN_TYPES = frozenset({claims.SUBMISSION_NOTICE, "LtiHelloWorldNotice", "LtiContextCopyNotice"})
VERSION = "1.3.0"
NONCE_KEY = "evaluaitor:notice-nonce:"


class Refused(Exception):
    """A notice that is not accepted: ``status`` is its per-notice answer (docs/decisions.md)."""

    def __init__(self, detail: str, status: int = 401) -> None:
        super().__init__(detail)
        self.status = status


@dataclass(frozen=True)
class Verified:
    platform: Platform
    deployment: Deployment
    claims: dict[str, Any]

    @property
    def notice(self) -> dict[str, Any]:
        return self.claims[claims.NOTICE]


def read_body(raw: bytes) -> list[str]:
    """The notices' JWTs from a body ``{"notices": [{"jwt": ...}]}``; raises Refused(400)."""
    try:
        document = safe_json.loads(raw)
    except ValueError as exc:
        raise Refused(f"body is not JSON: {exc}", 400) from exc
    notices = document.get("notices") if isinstance(document, dict) else None
    if not isinstance(notices, list) or not notices:
        raise Refused("body has no notices", 400)
    if len(notices) > MAX_NOTICES:
        raise Refused(f"more than {MAX_NOTICES} notices", 413)
    tokens = [item.get("jwt") if isinstance(item, dict) else None for item in notices]
    if not all(isinstance(token, str) and token for token in tokens):
        raise Refused("a notice without its jwt", 400)
    return tokens


def receive(token: str) -> int:
    """Verify one notice; store and queue a submission notice. Its status: 204 accepted
    (stored, or acknowledged and dropped), else raises :class:`Refused`."""
    verified = verify(token)
    if verified.notice["type"] != claims.SUBMISSION_NOTICE:
        log.info(
            "notice %s of type %s acknowledged", verified.notice["id"], verified.notice["type"]
        )
        return 204
    notice = LtiNotice(
        platform_id=verified.platform.id,
        deployment_id=verified.deployment.id,
        notice_id=str(verified.notice["id"])[:255],
        notice_type=verified.notice["type"],
        claims=verified.claims,
    )
    db.session.add(notice)
    try:
        db.session.commit()
    except IntegrityError as exc:
        db.session.rollback()
        raise Refused(f"notice id {verified.notice['id']!r} already received", 409) from exc
    queue.dispatch_notice(notice.id)  # if Redis is away, the sweeper queues it
    return 204


def verify(token: str) -> Verified:
    """The notice's verified claims with its platform and deployment; raises Refused."""
    try:
        header, body = safe_json.jwt_parts(token)
    except ValueError as exc:
        raise Refused(f"unreadable notice: {exc}") from exc
    if header.get("alg") != "RS256":
        raise Refused(f"alg {header.get('alg')!r} is not RS256")
    platform = _platform(body)
    key = _public_key(platform, header.get("kid"))
    config = current_app.config
    try:
        verified = jwt.decode(
            token,
            key,
            algorithms=["RS256"],
            audience=platform.client_id,
            issuer=platform.issuer,
            leeway=config["EVALUAITOR_CLOCK_SKEW"],
            options={"require": ["exp", "iat", "iss", "aud", "nonce"]},
        )
    except jwt.InvalidTokenError as exc:
        raise Refused(f"notice rejected: {exc}") from exc
    audience = verified["aud"]
    if (
        isinstance(audience, list)
        and len(audience) > 1
        and verified.get("azp") != platform.client_id
    ):
        raise Refused("aud names several clients and azp is not ours")
    if verified.get(claims.VERSION) != VERSION:
        raise Refused(f"LTI version {verified.get(claims.VERSION)!r}")
    deployment = db.session.scalar(
        select(Deployment).where(
            Deployment.platform_id == platform.id,
            Deployment.deployment_id == str(verified.get(claims.DEPLOYMENT_ID, "")),
            Deployment.is_active.is_(True),
        )
    )
    if deployment is None:
        raise Refused(f"unknown or inactive deployment {verified.get(claims.DEPLOYMENT_ID)!r}")
    notice = verified.get(claims.NOTICE)
    if not isinstance(notice, dict) or not notice.get("id") or not notice.get("type"):
        raise Refused("no notice claim with id and type", 400)
    if notice["type"] not in KNOWN_TYPES:
        raise Refused(f"unknown notice type {notice['type']!r}", 400)
    _consume_nonce(platform, str(verified["nonce"]))
    return Verified(platform, deployment, verified)


def _platform(body: dict[str, Any]) -> Platform:
    issuer, audience = body.get("iss"), body.get("aud")
    audiences = audience if isinstance(audience, list) else [audience]
    if not isinstance(issuer, str) or not all(isinstance(a, str) for a in audiences):
        raise Refused("notice without iss or aud")
    platform = db.session.scalar(
        select(Platform).where(
            Platform.issuer == issuer,
            Platform.client_id.in_(audiences),
            Platform.is_active.is_(True),
        )
    )
    if platform is None:
        raise Refused(f"no active platform {issuer!r} with client {audiences!r}")
    if platform.organization is not None and not platform.organization.is_active:
        raise Refused(f"the organization of platform {platform.id} is switched off")
    return platform


def _public_key(platform: Platform, kid: Any) -> Any:
    """The platform's key named ``kid``, from the launch's cached key set (fetched again,
    at most once in a while, for a kid it does not hold: the platform rotated its keys)."""
    config = current_app.config
    key_sets = PlatformKeySets(
        redis_connection(),
        outbound.Limits(
            config["EVALUAITOR_JWKS_TIMEOUT"], MAX_KEY_SET_BYTES, outbound.private_access(config)
        ),
    )
    try:
        key = _find(key_sets.get(platform.key_set_url), kid)
        if key is None:
            fresh = key_sets.refresh(platform.key_set_url)
            key = _find(fresh, kid) if fresh else None
    except LaunchError as exc:
        raise Refused(f"key set: {exc.detail}", 503) from exc
    if key is None:
        raise Refused(f"no key {kid!r} in the platform's key set")
    return key


def _find(key_set: dict, kid: Any) -> Any:
    for jwk in key_set.get("keys", []):
        if isinstance(jwk, dict) and jwk.get("kid") == kid and jwk.get("kty") == "RSA":
            try:
                return jwt.PyJWK(jwk, algorithm="RS256").key
            except jwt.PyJWKError:
                return None
    return None


def _consume_nonce(platform: Platform, nonce: str) -> None:
    """Single use. With Redis away the notice id's uniqueness (a database constraint) still
    refuses a replayed notice: a notice is not refused for an outage the LMS cannot see."""
    key = NONCE_KEY + hashlib.sha256(f"{platform.id}|{nonce}".encode()).hexdigest()
    try:
        fresh = redis_connection().set(key, 1, nx=True, ex=24 * 3600)
    except RedisError as exc:
        log.warning("notice nonce not checked, Redis is away: %s", exc)
        return
    if not fresh:
        raise Refused("nonce already used", 409)


def answer(tokens: list[str]) -> tuple[int, dict | None]:
    """Each notice's status, and the response: 204 when every notice was accepted, the
    refusal's own status when the only notice (or every one) was refused, else 207 with
    one status per notice in order (docs/decisions.md)."""
    statuses = []
    for token in tokens:
        try:
            statuses.append(receive(token))
        except Refused as exc:
            log.warning("notice refused: %s", exc)
            statuses.append(exc.status)
    if all(status == 204 for status in statuses):
        return 204, None
    if all(status != 204 for status in statuses):
        return statuses[0], {"error": "notice refused"}
    return 207, {"notices": [{"status": status} for status in statuses]}
