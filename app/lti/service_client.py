"""What every LTI Advantage service client shares: OAuth2 client-credentials tokens, one
authorised request with a retry on 401, and failures translated into one error type.

AGS (:mod:`app.lti.ags`) and NRPS (:mod:`app.lti.nrps`) subclass :class:`ServiceClient` and
set ``error`` to their own :class:`ServiceError` subclass. Access tokens are cached in Redis
per platform and scope set until shortly before they expire.

The token URL came from whoever registered the platform and the service URLs from its
launches, so requests go through :mod:`app.outbound` (public addresses only unless allowed,
one deadline per request, a size cap).
"""

from __future__ import annotations

import hashlib
import time
import uuid
from http.client import responses as STANDARD_REASONS
from typing import Any, Self
from urllib.parse import urlencode, urlsplit, urlunsplit

import httpx
import jwt
from flask import current_app
from redis import Redis

from app import outbound, safe_json
from app.extensions import redis_connection
from app.lti import claims, keys
from app.lti.keys import ToolKey
from app.models import Platform

TOKEN_SAFETY_MARGIN = 30
ASSERTION_LIFETIME = 300
#: A page of members or results is a few hundred kilobytes at most.
MAX_ANSWER_BYTES = 10 * 1024 * 1024


class ServiceError(Exception):
    """A failed service exchange. ``status`` is the HTTP status when there was a response;
    ``retryable`` says whether trying again later can help."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable


class ServiceClient:
    #: The error this client raises; subclasses name their own.
    error: type[ServiceError] = ServiceError

    def __init__(
        self,
        platform: Platform,
        key: ToolKey,
        redis: Redis,
        *,
        scopes: list[str] | None = None,
        timeout: float = 20.0,
        private: outbound.PrivateAccess = outbound.NO_PRIVATE,
        max_bytes: int = MAX_ANSWER_BYTES,
    ) -> None:
        self._platform = platform
        self._granted = set(scopes or ())
        self._key = key
        self._redis = redis
        self._http = outbound.client(outbound.Limits(timeout, max_bytes, private))

    @classmethod
    def configured(
        cls, platform: Platform, *, timeout: str = "EVALUAITOR_AGS_TIMEOUT", **options: Any
    ) -> Self:
        """This client for ``platform`` as the app is set up: its signing key, Redis, the
        outbound rules, and the deadline the setting ``timeout`` names."""
        config = current_app.config
        return cls(
            platform,
            keys.active_key(config["EVALUAITOR_KEY_DIR"]),
            redis_connection(),
            timeout=config[timeout],
            private=outbound.private_access(config),
            **options,
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _call(self, method: str, url: str, scopes: list[str], **kwargs: Any) -> httpx.Response:
        """One authorised request; a 401 drops the cached token and tries once more."""
        for attempt in range(2):
            token = self._access_token(sorted(self._granted | set(scopes)), refresh=attempt > 0)
            headers = {**kwargs.pop("headers", {}), "Authorization": f"Bearer {token}"}
            kwargs["headers"] = headers
            response = self._send(method, url, **kwargs)
            if response.status_code != 401:
                break
        self._raise_for_status(response, f"{method} {safe_url(url)}")
        return response

    def _send(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        try:
            return outbound.fetch(self._http, method, url, **kwargs)
        except outbound.OutboundError as exc:
            raise self.error(str(exc), retryable=exc.retryable) from exc

    def _access_token(self, scopes: list[str], *, refresh: bool) -> str:
        scope = " ".join(sorted(scopes))
        cache_key = (
            "evaluaitor:lti-token:"
            + hashlib.sha256(
                f"{self._platform.id}|{self._platform.auth_token_url}|{scope}".encode()
            ).hexdigest()
        )
        if not refresh:
            cached = self._redis.get(cache_key)
            if cached:
                return cached.decode()
        response = self._send(
            "POST",
            self._platform.auth_token_url,
            data={
                "grant_type": "client_credentials",
                "client_assertion_type": claims.CLIENT_ASSERTION_TYPE,
                "client_assertion": self._client_assertion(),
                "scope": scope,
            },
        )
        self._raise_for_status(response, "access token request")
        body = self._json(response)
        token = body.get("access_token") if isinstance(body, dict) else None
        if not isinstance(token, str) or not token:
            raise self.error("token endpoint answered without an access_token", retryable=False)
        lifetime = _int(body.get("expires_in"), 3600) - TOKEN_SAFETY_MARGIN
        if lifetime > 0:
            self._redis.set(cache_key, token, ex=lifetime)
        return token

    def _client_assertion(self) -> str:
        """RFC 7523 assertion: iss = sub = client_id, aud = the token URL exactly."""
        now = int(time.time())
        payload = {
            "iss": self._platform.client_id,
            "sub": self._platform.client_id,
            "aud": self._platform.auth_audience or self._platform.auth_token_url,
            "iat": now,
            "exp": now + ASSERTION_LIFETIME,
            "jti": uuid.uuid4().hex,
        }
        return jwt.encode(
            payload, self._key.private_pem, algorithm="RS256", headers={"kid": self._key.kid}
        )

    def _raise_for_status(self, response: httpx.Response, what: str) -> None:
        status = response.status_code
        if status < 400:
            return
        retryable = status in (408, 409, 425, 429) or status >= 500
        raise self.error(f"{what}: {refusal(response)}", status=status, retryable=retryable)

    def _json(self, response: httpx.Response) -> Any:
        try:
            return safe_json.loads(response.content)
        except ValueError as exc:
            raise self.error(
                f"platform answered {response.status_code} with a body that is not JSON",
                status=response.status_code,
                retryable=False,
            ) from exc


def refusal(response: httpx.Response) -> str:
    """The status and the platform's reason: Moodle writes it in the status line (``HTTP/1.0
    409 Refusing score with an earlier timestamp…``) with an empty body (``[]``), others in
    the body."""
    parts = [f"HTTP {response.status_code}"]
    reason = response.reason_phrase.strip()
    if reason and reason != STANDARD_REASONS.get(response.status_code):
        parts.append(reason)
    body = response.text[:300].strip()
    if body not in ("", "[]", "{}"):
        parts.append(body)
    return " ".join(parts)


def _int(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def with_query(url: str, **params: str | int) -> str:
    """Add query parameters, keeping the ones the platform put in the URL (Moodle's type_id)."""
    parts = urlsplit(url)
    query = "&".join(filter(None, [parts.query, urlencode(params)]))
    return urlunsplit(parts._replace(query=query))


def safe_url(url: str) -> str:
    """The URL without its query string, for messages and logs."""
    return urlunsplit(urlsplit(url)._replace(query=""))
