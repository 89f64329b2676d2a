"""Validating launches with pylti1p3, made stricter where real platforms need it.

- Launch state lives in Redis (shared by every web process), not only in a cookie.
- ``iat``/``exp`` accept the configured clock skew (default 60 s): pylti1p3 alone refuses
  an ``iat`` one second in the future, which a platform with a fast clock sends.
- A nonce is single-use: pylti1p3 would accept the same id_token and state twice.
- ``aud`` must be the registered client_id.
- No cookie is needed but pylti1p3's short state cookie, and a launch without it still works
  when the login stored its state in the platform's storage frame
  (:mod:`app.lti.platform_storage`); otherwise the page offers to open a new window.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Any

import jwt
from flask import current_app, g
from flask_babel import lazy_gettext as _l
from pylti1p3.contrib.flask import FlaskMessageLaunch, FlaskOIDCLogin, FlaskRequest
from pylti1p3.exception import LtiException, LtiKeyException, LtiMessageValidationException
from pylti1p3.launch_data_storage.cache import CacheDataStorage
from redis import Redis

from app.errors import LaunchError, ReplayedLaunch
from app.extensions import redis_connection
from app.lti.tool_config import DatabaseToolConf
from app.models import Deployment, Platform

PUBLIC_KEY_CACHE_SECONDS = 300
LOGIN_KEY = "evaluaitor:lti-login:"
#: Seconds between a login initiation and its launch (the platform's sign-in included).
LOGIN_TTL = 600


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


class StrictMessageLaunch(FlaskMessageLaunch):
    leeway: int = 60
    _refresh_keys: bool = False

    #: Set when the state cookie was missing but the login used platform storage: the page
    #: must read the state and nonce back from the platform before it opens.
    storage_check: LoginRecord | None = None

    def validate(self) -> StrictMessageLaunch:
        super().validate()
        self._consume_nonce()
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
                raise CookiesBlocked(login) from None
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
        """The platform's JWKS, cached in Redis for a few minutes (shared by all processes)."""
        cache_key = "evaluaitor:jwks:" + hashlib.sha256(key_set_url.encode()).hexdigest()
        redis = redis_connection()
        if not self._refresh_keys and (cached := redis.get(cache_key)):
            return json.loads(cached)
        fresh = super().fetch_public_key(key_set_url)
        redis.set(cache_key, json.dumps(fresh), ex=PUBLIC_KEY_CACHE_SECONDS)
        return fresh

    def get_public_key(self) -> tuple[str, str]:
        """Fetch the JWKS again once when the token's kid is unknown: the platform rotated keys."""
        try:
            return super().get_public_key()
        except LtiKeyException:
            self._refresh_keys = True
            self._registration.set_key_set(None)
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


class CookiesBlocked(LaunchError):
    """The state cookie did not come back and the platform offers no storage."""

    user_message = _l("Your browser blocked the cookie this launch needs inside the course page.")

    def __init__(self, login: LoginRecord) -> None:
        super().__init__(detail="state cookie missing, no platform storage")
        self.login = login


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
    launch.leeway = current_app.config["EVALUAITOR_CLOCK_SKEW"]
    try:
        launch.validate()
    except LtiException as exc:
        raise LaunchError(detail=str(exc)) from exc
    if launch.storage_check is not None:
        g.lti_storage_check = (launch.storage_check, launch.get_launch_data()["nonce"])
    return launch
