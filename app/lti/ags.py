"""Assignment and Grade Services client, built from stored platform data (no live launch).

It speaks to the platform over httpx and translates every failure into :class:`AgsError`:
``retryable`` tells the caller whether trying again later can help. Access tokens are cached
in Redis per platform and scope set until shortly before they expire. One token asks for
every scope the launch granted, so a grade push needs one token request, not one per call.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

import httpx
import jwt
from redis import Redis

from app.lti import claims
from app.lti.keys import ToolKey
from app.models import Platform

TOKEN_SAFETY_MARGIN = 30
ASSERTION_LIFETIME = 300


class AgsError(Exception):
    """A failed AGS exchange. ``status`` is the HTTP status when there was a response."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable


def scores_url(lineitem_url: str) -> str:
    """``…/lineitem?type_id=1`` → ``…/lineitem/scores?type_id=1`` (Moodle's URLs carry a query)."""
    parts = urlsplit(lineitem_url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/scores"))


class AgsClient:
    def __init__(
        self,
        platform: Platform,
        key: ToolKey,
        redis: Redis,
        *,
        scopes: list[str] | None = None,
        timeout: float = 20.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._platform = platform
        self._granted = set(scopes or ())
        self._key = key
        self._redis = redis
        self._http = httpx.Client(timeout=timeout, transport=transport)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> AgsClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- line items and scores -------------------------------------------------------------

    def get_lineitem(self, url: str) -> dict[str, Any]:
        readable = {claims.SCOPE_LINEITEM_READONLY, claims.SCOPE_LINEITEM}
        response = self._call(
            "GET",
            url,
            sorted(readable & self._granted) or [claims.SCOPE_LINEITEM_READONLY],
            headers={"Accept": claims.LINEITEM_CONTENT_TYPE},
        )
        return _json(response)

    def find_or_create_lineitem(
        self, lineitems_url: str, *, resource_link_id: str, label: str, score_maximum: float
    ) -> dict[str, Any]:
        """The line item bound to ``resource_link_id``; created when the platform has none."""
        scopes = [claims.SCOPE_LINEITEM]
        listing = self._call(
            "GET",
            _with_query(lineitems_url, resource_link_id=resource_link_id),
            scopes,
            headers={"Accept": claims.LINEITEM_CONTAINER_CONTENT_TYPE},
        )
        for item in _json(listing):
            if isinstance(item, dict) and item.get("resourceLinkId") == resource_link_id:
                return item
        created = self._call(
            "POST",
            lineitems_url,
            scopes,
            json={
                "label": label or "Evaluaitor",
                "scoreMaximum": score_maximum,
                "resourceLinkId": resource_link_id,
                "tag": "evaluaitor",
            },
            headers={"Content-Type": claims.LINEITEM_CONTENT_TYPE},
        )
        return _json(created)

    def post_score(self, lineitem_url: str, score: dict[str, Any]) -> None:
        self._call(
            "POST",
            scores_url(lineitem_url),
            [claims.SCOPE_SCORE],
            json=score,
            headers={"Content-Type": claims.SCORE_CONTENT_TYPE},
        )

    # -- plumbing --------------------------------------------------------------------------

    def _call(self, method: str, url: str, scopes: list[str], **kwargs: Any) -> httpx.Response:
        """One authorised request; a 401 drops the cached token and tries once more."""
        for attempt in range(2):
            token = self._access_token(sorted(self._granted | set(scopes)), refresh=attempt > 0)
            headers = {**kwargs.pop("headers", {}), "Authorization": f"Bearer {token}"}
            kwargs["headers"] = headers
            response = self._send(method, url, **kwargs)
            if response.status_code != 401:
                break
        _raise_for_status(response, f"{method} {_safe(url)}")
        return response

    def _send(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        try:
            return self._http.request(method, url, **kwargs)
        except httpx.TimeoutException as exc:
            raise AgsError(f"{method} {_safe(url)} timed out", retryable=True) from exc
        except httpx.HTTPError as exc:
            raise AgsError(f"{method} {_safe(url)} failed: {exc}", retryable=True) from exc

    def _access_token(self, scopes: list[str], *, refresh: bool) -> str:
        scope = " ".join(sorted(scopes))
        cache_key = (
            "evaluaitor:ags-token:"
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
        _raise_for_status(response, "access token request")
        body = _json(response)
        token = body.get("access_token") if isinstance(body, dict) else None
        if not isinstance(token, str) or not token:
            raise AgsError("token endpoint answered without an access_token", retryable=False)
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


def _raise_for_status(response: httpx.Response, what: str) -> None:
    status = response.status_code
    if status < 400:
        return
    retryable = status in (408, 409, 425, 429) or status >= 500
    snippet = response.text[:300].strip()
    raise AgsError(f"{what}: HTTP {status} {snippet}", status=status, retryable=retryable)


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError as exc:
        raise AgsError(
            f"platform answered {response.status_code} with a body that is not JSON",
            status=response.status_code,
            retryable=False,
        ) from exc


def _int(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _with_query(url: str, **params: str) -> str:
    """Add query parameters, keeping the ones the platform put in the URL (Moodle's type_id)."""
    parts = urlsplit(url)
    query = "&".join(filter(None, [parts.query, urlencode(params)]))
    return urlunsplit(parts._replace(query=query))


def _safe(url: str) -> str:
    """The URL without its query string, for messages and logs."""
    return urlunsplit(urlsplit(url)._replace(query=""))
