"""Validating launches with pylti1p3, made stricter where real platforms need it.

- Launch state lives in Redis (shared by every web process), not only in a cookie.
- ``iat``/``exp`` accept the configured clock skew (default 60 s): pylti1p3 alone refuses
  an ``iat`` one second in the future, which a platform with a fast clock sends.
- A nonce is single-use: pylti1p3 would accept the same id_token and state twice.
- ``aud`` must be the registered client_id.
- The platform's key set is fetched through :mod:`app.outbound` (public addresses, one
  deadline, a size cap), cached in Redis, and fetched again for an unknown ``kid`` at most
  once per :data:`KEY_REFRESH_SECONDS`: forged tokens with random kids cannot make every
  launch call the platform (or hold a worker on a slow one).
- Message types are checked by :data:`VALIDATORS`: pylti1p3's, with a deep-linking request
  that offers only ``ltiAssetProcessor`` (Canvas's "Add Document Processing App") accepted,
  and the Asset Processor's settings and report review launches, which pylti1p3 does not know.
- No cookie is needed but pylti1p3's short state cookie, and a launch without it still works
  when the login stored its state in the platform's storage frame
  (:mod:`app.lti.platform_storage`); otherwise the checked launch is handed to a new window.
"""

from __future__ import annotations

import hashlib
import json
from contextlib import suppress
from dataclasses import asdict, dataclass
from typing import Any

import jwt
from flask import current_app, g
from flask_babel import lazy_gettext as _l
from pylti1p3.contrib.flask import FlaskMessageLaunch, FlaskOIDCLogin, FlaskRequest
from pylti1p3.exception import LtiException, LtiKeyException, LtiMessageValidationException
from pylti1p3.launch_data_storage.cache import CacheDataStorage
from pylti1p3.message_validators.abstract import MessageValidatorAbstract
from pylti1p3.message_validators.deep_link import DeepLinkMessageValidator
from pylti1p3.message_validators.privacy_launch import PrivacyLaunchValidator
from pylti1p3.message_validators.resource_message import ResourceMessageValidator
from pylti1p3.message_validators.submission_review import SubmissionReviewLaunchValidator
from redis import Redis
from redis.exceptions import RedisError
from sqlalchemy import bindparam, select
from sqlalchemy.orm import joinedload

from app import outbound, safe_json
from app.errors import LaunchError, ReplayedLaunch
from app.extensions import db, redis_connection
from app.lti import claims
from app.lti.tool_config import DatabaseToolConf, find_deployment, find_platform
from app.models import Deployment, Platform

PUBLIC_KEY_CACHE_SECONDS = 300
#: At most one fetch per key set URL in this many seconds for an unknown kid; a failed fetch
#: is remembered as long, so launches fail at once instead of each waiting on the platform.
KEY_REFRESH_SECONDS = 30
#: A platform publishes a few keys: a few kilobytes.
MAX_KEY_SET_BYTES = 256 * 1024
LOGIN_KEY = "evaluaitor:lti-login:"
#: Seconds between a login initiation and its launch (the platform's sign-in included).
LOGIN_TTL = 600


def unverified_claims(id_token: str) -> dict[str, Any]:
    """The claims of an id_token, read without checking its signature: enough to name its
    platform and deployment (and a request the tool cannot answer) before pylti1p3 checks it.

    PyJWT's unverified decode tests every character in Python (0.3 ms for a Moodle token);
    this is the same reading, done once per launch with a regex. Both the header and the
    payload are read with the nesting bound of :mod:`app.safe_json`, so pylti1p3 and PyJWT,
    which decode them again, never meet a document that could exhaust the stack. Raises
    LaunchError.
    """
    try:
        return safe_json.jwt_parts(id_token)[1]
    except ValueError as exc:  # also bad UTF-8, bad JSON and JSON nested too deep
        raise LaunchError(detail=f"unreadable id_token: {exc}") from exc


#: The active platform and deployment a launch names, with the platform's organization (the
#: launch checks it is on): one statement, built once, instead of three.
_REGISTRATION = (
    select(Platform, Deployment)
    .join(Deployment, Deployment.platform_id == Platform.id)
    .where(
        Platform.issuer == bindparam("issuer"),
        Platform.client_id == bindparam("client_id"),
        Deployment.deployment_id == bindparam("deployment_id"),
        Platform.is_active.is_(True),
        Deployment.is_active.is_(True),
    )
    .options(joinedload(Platform.organization))
)


def launch_registration(body: dict[str, Any]) -> tuple[Platform, Deployment]:
    """The platform and deployment the (not yet verified) claims name.

    An unknown or switched-off one is named by :func:`find_platform` and
    :func:`find_deployment`, which raise the errors a person is shown.
    """
    audience = body.get("aud")
    client_id = audience[0] if isinstance(audience, list) and audience else audience
    if not isinstance(client_id, str) or not isinstance(body.get("iss"), str):
        raise LaunchError(detail="id_token without iss or aud")
    deployment_id = str(body.get(claims.DEPLOYMENT_ID, ""))
    row = db.session.execute(
        _REGISTRATION,
        {"issuer": body["iss"], "client_id": client_id, "deployment_id": deployment_id},
    ).first()
    if row is not None:
        return row.Platform, row.Deployment
    platform = find_platform(body["iss"], client_id)
    return platform, find_deployment(platform, deployment_id)


class RedisCache:
    """The ``get``/``set`` cache interface pylti1p3's cache storage expects, over Redis."""

    def __init__(self, redis: Redis, prefix: str) -> None:
        self._redis = redis
        self._prefix = prefix

    def get(self, key: str) -> Any:
        raw = self._redis.get(self._prefix + key)
        return None if raw is None else json.loads(raw)

    def set(self, key: str, value: Any, exp: int | None = None) -> None:
        self._redis.set(self._prefix + key, json.dumps(value), ex=exp or None)

    def delete(self, key: str) -> None:
        self._redis.delete(self._prefix + key)


class RedisLaunchStorage(CacheDataStorage):
    def __init__(self, cache: RedisCache) -> None:
        super().__init__()
        self._cache = cache

    def get_session_cookie_name(self) -> None:
        """No session cookie: pylti1p3 would refuse every launch (and every later read of a
        stored launch) in a frame whose cookies are blocked. The state check and our
        single-use nonce bind a launch to its login instead."""
        return None


class PlatformKeySets:
    """The platforms' public key sets (JWKS), cached in Redis for every web process."""

    def __init__(self, redis: Redis, limits: outbound.Limits) -> None:
        self._redis = redis
        self._limits = limits

    def get(self, url: str) -> dict:
        """The cached key set, or a fresh one unless a fetch failed moments ago. With Redis
        away the cache is skipped: a notice (app.lti.notices) must still be verified and
        stored, since the LMS never sends it again."""
        try:
            cached = self._redis.get(self._key("jwks", url))
            failed = not cached and self._redis.exists(self._key("jwks-failed", url))
        except RedisError:
            cached, failed = None, False
        if cached:
            return json.loads(cached)
        if failed:
            raise LaunchError(detail=f"key set {url!r} failed recently; not fetched again yet")
        return self._fetch(url)

    def refresh(self, url: str) -> dict | None:
        """A fresh key set (the platform may have rotated its keys), or None when one was
        fetched for an unknown kid less than KEY_REFRESH_SECONDS ago (or Redis, which
        keeps that count, is away)."""
        try:
            allowed = self._redis.set(
                self._key("jwks-refresh", url), 1, nx=True, ex=KEY_REFRESH_SECONDS
            )
        except RedisError:
            return None
        return self._fetch(url) if allowed else None

    def _fetch(self, url: str) -> dict:
        try:
            with outbound.client(self._limits) as http:
                key_set = outbound.fetch_json(http, "GET", url)
            if not isinstance(key_set, dict) or not isinstance(key_set.get("keys"), list):
                raise outbound.OutboundError(
                    f"GET {url!r}: not a key set", summary="the answer is not a key set"
                )
        except outbound.OutboundError as exc:
            with suppress(RedisError):
                self._redis.set(self._key("jwks-failed", url), 1, ex=KEY_REFRESH_SECONDS)
            raise LaunchError(detail=f"platform key set: {exc}") from exc
        with suppress(RedisError):
            self._redis.set(
                self._key("jwks", url), json.dumps(key_set), ex=PUBLIC_KEY_CACHE_SECONDS
            )
        return key_set

    @staticmethod
    def _key(kind: str, url: str) -> str:
        return f"evaluaitor:{kind}:" + hashlib.sha256(url.encode()).hexdigest()


#: The content item types a deep-linking request must offer one of.
DEEP_LINKING_ITEMS = frozenset({claims.RESOURCE_LINK_ITEM, claims.ASSET_PROCESSOR_ITEM})


class DeepLinkingValidator(DeepLinkMessageValidator):
    """pylti1p3's check, except that it requires ``ltiResourceLink``: the LMS attaching an
    asset processor offers ``ltiAssetProcessor`` alone."""

    def validate(self, jwt_body: dict[str, Any]) -> bool:
        self.run_common_validators(jwt_body)
        settings = jwt_body.get(claims.DEEP_LINKING_SETTINGS)
        if not isinstance(settings, dict) or not settings.get("deep_link_return_url"):
            raise LtiException("Missing Deep Linking Settings")
        accepted = settings.get("accept_types")
        if not isinstance(accepted, list) or not DEEP_LINKING_ITEMS & set(accepted):
            raise LtiException("Must accept ltiResourceLink or ltiAssetProcessor items")
        if not settings.get("accept_presentation_document_targets"):
            raise LtiException("Must support a presentation type")
        return True


class _ClaimsValidator(MessageValidatorAbstract):
    """A message type whose named claims must be objects with a non-empty ``key``."""

    message_type: str
    #: (claim, key) pairs, each required.
    required: tuple[tuple[str, str], ...]

    def can_validate(self, jwt_body: dict[str, Any]) -> bool:
        return jwt_body.get(claims.MESSAGE_TYPE) == self.message_type

    def validate(self, jwt_body: dict[str, Any]) -> bool:
        self.run_common_validators(jwt_body)
        for claim, key in self.required:
            value = jwt_body.get(claim)
            if not isinstance(value, dict) or not str(value.get(key) or ""):
                raise LtiException(f"{self.message_type} without {claim.rsplit('/', 1)[-1]}.{key}")
        return True


class AssetProcessorSettingsValidator(_ClaimsValidator):
    """A teacher opens an attached processor's settings: the LMS names its assignment."""

    message_type = claims.ASSET_PROCESSOR_SETTINGS_REQUEST
    required = ((claims.ACTIVITY, "id"),)


class ReportReviewValidator(_ClaimsValidator):
    """Someone opens a report in the LMS: its assignment, submission, asset and user."""

    message_type = claims.REPORT_REVIEW_REQUEST
    required = (
        (claims.ACTIVITY, "id"),
        (claims.SUBMISSION, "id"),
        (claims.FOR_USER, "user_id"),
        (claims.ASSET, "id"),
    )


#: Every message type a launch may carry; any other is refused ("Unrecognized message type").
VALIDATORS: tuple[MessageValidatorAbstract, ...] = (
    DeepLinkingValidator(),
    ResourceMessageValidator(),
    PrivacyLaunchValidator(),
    SubmissionReviewLaunchValidator(),
    AssetProcessorSettingsValidator(),
    ReportReviewValidator(),
)


class StrictMessageLaunch(FlaskMessageLaunch):
    leeway: int = 60
    #: Set by :func:`validated_launch`, with the settings of this app.
    key_sets: PlatformKeySets

    #: Set when the state cookie was missing but the login used platform storage: the page
    #: must read the state and nonce back from the platform before it opens.
    storage_check: LoginRecord | None = None
    #: Set when the state cookie was missing and the platform offers no storage: once every
    #: other check passed, the launch is handed to a new window (app.lti.platform_storage).
    cookie_missing: LoginRecord | None = None

    def validate(self) -> StrictMessageLaunch:
        super().validate()
        self._consume_nonce()
        return self

    def validate_message(self) -> StrictMessageLaunch:
        """pylti1p3's dispatch by message type, over :data:`VALIDATORS`."""
        body = self._get_jwt_body()
        fitting = [v for v in VALIDATORS if v.can_validate(body)]
        if not body.get(claims.MESSAGE_TYPE) or len(fitting) != 1:
            raise LtiMessageValidationException("Unrecognized message type")
        fitting[0].validate(body)
        return self

    def validate_state(self) -> StrictMessageLaunch:
        """Accept a missing state cookie when the login stored its state with the platform."""
        try:
            return super().validate_state()
        except LtiMessageValidationException:
            login = recall_login(self._get_request_param("state"))
            if login is None:
                raise
            if login.storage_target is None:
                self.cookie_missing = login
            else:
                self.storage_check = login
            return self

    def validate_jwt_signature(self) -> StrictMessageLaunch:
        public_key, algorithm = self.get_public_key()
        try:
            jwt.decode(
                self._get_id_token(),
                public_key,
                algorithms=[algorithm],
                audience=self.get_client_id(),
                leeway=self.leeway,
                options={"require": ["exp", "iat", "aud", "iss", "sub", "nonce"]},
            )
        except jwt.InvalidTokenError as exc:
            raise LaunchError(
                _l(
                    "This launch from your course has expired or was not signed correctly. "
                    "Open the activity again from your course."
                ),
                detail=f"id_token rejected: {exc}",
            ) from exc
        return self

    def fetch_public_key(self, key_set_url: str) -> dict:
        """Instead of pylti1p3's fetch (requests, no timeout, no size limit, no address rule)."""
        return self.key_sets.get(key_set_url)

    def get_public_key(self) -> tuple[str, str]:
        """Fetch the JWKS again when the token's kid is unknown (the platform rotated keys),
        unless that was done moments ago."""
        try:
            return super().get_public_key()
        except LtiKeyException:
            fresh = self.key_sets.refresh(self._registration.get_key_set_url())
            if fresh is None:
                raise
            self._registration.set_key_set(fresh)
            return super().get_public_key()

    def _consume_nonce(self) -> None:
        nonce = self._get_jwt_body()["nonce"]
        key = "evaluaitor:nonce-used:" + hashlib.sha256(nonce.encode()).hexdigest()
        if not redis_connection().set(key, 1, nx=True, ex=24 * 3600):
            raise ReplayedLaunch(detail="nonce already used")


def _tool_conf(platform: Platform, deployment: Deployment | None = None) -> DatabaseToolConf:
    return DatabaseToolConf(current_app.config["EVALUAITOR_KEY_DIR"], platform, deployment)


def _storage() -> RedisLaunchStorage:
    return RedisLaunchStorage(RedisCache(redis_connection(), "evaluaitor:lti:"))


def oidc_login(platform: Platform) -> FlaskOIDCLogin:
    return FlaskOIDCLogin(FlaskRequest(), _tool_conf(platform), launch_data_storage=_storage())


@dataclass(frozen=True)
class LoginRecord:
    """What a login initiation left for its launch: enough to check the state without a
    cookie, or to start the login again in a new window."""

    state: str
    nonce: str
    storage_target: str | None
    #: Where the storage frame lives: the origin of the platform's authorization URL.
    platform_origin: str
    params: dict[str, str]


def remember_login(login: LoginRecord) -> None:
    redis_connection().set(LOGIN_KEY + login.state, json.dumps(asdict(login)), ex=LOGIN_TTL)


def recall_login(state: str) -> LoginRecord | None:
    raw = redis_connection().get(LOGIN_KEY + state) if state else None
    return LoginRecord(**json.loads(raw)) if raw else None


def validated_launch(platform: Platform, deployment: Deployment) -> StrictMessageLaunch:
    """Validate the launch in the current request; every failure becomes a :class:`LaunchError`.

    ``platform`` and ``deployment`` are what the (not yet verified) token names; pylti1p3
    checks the token against them.
    """
    storage = _storage()
    conf = _tool_conf(platform, deployment)
    launch = StrictMessageLaunch(FlaskRequest(), conf, launch_data_storage=storage)
    config = current_app.config
    launch.leeway = config["EVALUAITOR_CLOCK_SKEW"]
    launch.key_sets = PlatformKeySets(
        redis_connection(),
        outbound.Limits(
            config["EVALUAITOR_JWKS_TIMEOUT"],
            MAX_KEY_SET_BYTES,
            outbound.private_access(config),
        ),
    )
    try:
        launch.validate()
    except LtiException as exc:
        raise LaunchError(detail=str(exc)) from exc
    if launch.storage_check is not None:
        g.lti_storage_check = (launch.storage_check, launch.get_launch_data()["nonce"])
    if launch.cookie_missing is not None:
        g.lti_new_window = True
    return launch
