"""Moodle's mod/lti/token.php: client-credentials grant with a JWT client assertion (RFC 7523).

Stricter than Moodle where Moodle is lax (aud, jti replay, lifetime, unknown scopes), so a tool
that passes here also passes on platforms that check those.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import httpx
import jwt
from werkzeug.wrappers import Request, Response

from .vocab import KNOWN_SCOPES

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
TOKEN_LIFETIME = 3600
MAX_ASSERTION_LIFETIME = 3600


class TokenError(Exception):
    def __init__(self, error: str, description: str) -> None:
        self.error = error
        self.description = description
        super().__init__(f"{error}: {description}")


@dataclass(frozen=True)
class AccessToken:
    scopes: frozenset[str]
    expires_at: float


class TokenService:
    """Issues access tokens and checks them on service requests."""

    def __init__(self, client_id: str) -> None:
        self.client_id = client_id
        self.issued: dict[str, AccessToken] = {}
        self._seen_jti: set[str] = set()
        self._lock = threading.Lock()
        self._http: httpx.Client | None = None  # reused: a new client costs ~50 ms

    def handle(self, request: Request, *, audience: str, jwks_url: str | None) -> Response:
        try:
            body = self._issue(request, audience=audience, jwks_url=jwks_url)
        except TokenError as exc:
            body, status = {"error": exc.error, "error_description": exc.description}, 400
        else:
            status = 200
        return Response(json.dumps(body), status=status, content_type="application/json")

    def check_bearer(self, authorization: str | None, accepted: Iterable[str]) -> str | None:
        """Why the request may not proceed, or None if its token carries an accepted scope."""
        if not authorization or not authorization.startswith("Bearer "):
            return "missing 'Authorization: Bearer <token>' header"
        token = self.issued.get(authorization.removeprefix("Bearer "))
        if token is None:
            return "unknown access token"
        if token.expires_at <= time.time():
            return "access token expired"
        accepted = set(accepted)
        if not token.scopes & accepted:
            return f"access token lacks a scope among {sorted(accepted)}"
        return None

    def expire_all(self) -> None:
        """Make every issued token stale, so tests can check that the tool fetches a new one."""
        with self._lock:
            self.issued = {value: AccessToken(t.scopes, 0) for value, t in self.issued.items()}

    def _issue(self, request: Request, *, audience: str, jwks_url: str | None) -> dict[str, Any]:
        content_type = request.headers.get("Content-Type", "").split(";", 1)[0].strip()
        if request.method != "POST" or content_type != "application/x-www-form-urlencoded":
            raise TokenError("invalid_request", "POST an application/x-www-form-urlencoded body")
        form = request.form
        missing = [
            name
            for name in ("grant_type", "client_assertion_type", "client_assertion", "scope")
            if not form.get(name)
        ]
        if missing:
            raise TokenError("invalid_request", f"missing {', '.join(missing)}")
        if form["grant_type"] != "client_credentials":
            raise TokenError("unsupported_grant_type", "grant_type must be client_credentials")
        if form["client_assertion_type"] != ASSERTION_TYPE:
            raise TokenError(
                "unsupported_grant_type", f"client_assertion_type must be {ASSERTION_TYPE}"
            )
        self._verify_assertion(form["client_assertion"], audience=audience, jwks_url=jwks_url)
        scopes = form["scope"].split(" ")
        unknown = [scope for scope in scopes if scope not in KNOWN_SCOPES]
        if unknown:
            raise TokenError("invalid_scope", f"unknown scopes {unknown}")
        value = secrets.token_urlsafe(24)
        with self._lock:
            self.issued[value] = AccessToken(frozenset(scopes), time.time() + TOKEN_LIFETIME)
        return {
            "access_token": value,
            "token_type": "Bearer",
            "expires_in": TOKEN_LIFETIME,
            "scope": " ".join(scopes),
        }

    def _verify_assertion(self, assertion: str, *, audience: str, jwks_url: str | None) -> None:
        try:
            header = jwt.get_unverified_header(assertion)
            unverified = jwt.decode(assertion, options={"verify_signature": False})
        except jwt.InvalidTokenError as exc:
            raise TokenError("invalid_request", f"client_assertion is not a JWT: {exc}") from None
        if unverified.get("sub") != self.client_id:
            raise TokenError("invalid_client", f"no tool with client_id {unverified.get('sub')!r}")
        if header.get("alg") != "RS256":
            raise TokenError("invalid_client", f"alg must be RS256, not {header.get('alg')!r}")
        if not header.get("kid"):
            raise TokenError("invalid_client", "the assertion header needs a kid")
        key = self._tool_key(jwks_url, header["kid"])
        try:
            claims = jwt.decode(
                assertion,
                key,
                algorithms=["RS256"],
                options={
                    "require": ["iss", "sub", "aud", "exp", "iat", "jti"],
                    "verify_aud": False,
                },
            )
        except jwt.InvalidTokenError as exc:
            raise TokenError("invalid_client", f"client_assertion rejected: {exc}") from None
        if claims["iss"] != self.client_id:
            raise TokenError("invalid_client", "iss must equal sub (the client_id)")
        if claims["aud"] not in (audience, [audience]):
            raise TokenError("invalid_client", f"aud must be exactly {audience!r}")
        if claims["exp"] - claims["iat"] > MAX_ASSERTION_LIFETIME:
            raise TokenError("invalid_client", "exp - iat exceeds 3600 seconds")
        jti = claims["jti"]
        with self._lock:
            if not isinstance(jti, str) or not jti or jti in self._seen_jti:
                raise TokenError("invalid_client", "jti must be a fresh, never used string")
            self._seen_jti.add(jti)

    def close(self) -> None:
        with self._lock:
            if self._http is not None:
                self._http.close()
                self._http = None

    def _tool_key(self, jwks_url: str | None, kid: str) -> Any:
        """The tool's public key for `kid`, fetched over HTTP on every request, as Moodle does."""
        if not jwks_url:
            raise TokenError("invalid_client", "no public key set URL configured for the tool")
        with self._lock:
            if self._http is None:
                self._http = httpx.Client(timeout=5, trust_env=False)
            http = self._http
        try:
            response = http.get(jwks_url)
            response.raise_for_status()
            keys = jwt.PyJWKSet.from_dict(response.json()).keys
        except (httpx.HTTPError, ValueError, jwt.PyJWTError) as exc:
            raise TokenError("invalid_client", f"cannot load {jwks_url}: {exc}") from None
        for key in keys:
            if key.key_id == kid:
                return key.key
        raise TokenError("invalid_client", f"kid {kid!r} is not in the tool's key set")
