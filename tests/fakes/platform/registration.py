"""LTI Dynamic Registration on the fake Moodle: its OpenID configuration and registration endpoint.

Like Moodle 4.5 (mod/lti/openid-configuration.php and openid-registration.php): the
registration token is a JWT the platform signed itself (``sub`` the client id it will issue,
``scope`` ``reg`` for a new tool or ``reg-update`` to update one), a new-registration token
is refused once its client id exists, every required field of the body is checked, errors
are plain-text answers with a 400 or 401, and success answers with the stored registration:
``client_id`` and, in the tool configuration block, ``deployment_id`` (Moodle's type id).
Stricter than Moodle where noted. A successful registration also tells the fake where the
tool's keys and redirect URIs are, so launches work afterwards.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

import jwt
from werkzeug.wrappers import Request, Response

from .keys import SigningKey
from .vocab import AGS_SCOPES

if TYPE_CHECKING:
    from .server import FakePlatform

CONFIGURATION_PATH = "/mod/lti/openid-configuration.php"
REGISTRATION_PATH = "/mod/lti/openid-registration.php"
PLATFORM_CONFIGURATION = "https://purl.imsglobal.org/spec/lti-platform-configuration"
TOOL_CONFIGURATION = "https://purl.imsglobal.org/spec/lti-tool-configuration"
NRPS_SCOPE = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
KNOWN_SCOPES = frozenset({*AGS_SCOPES, NRPS_SCOPE})
MESSAGE_TYPES = frozenset({"LtiResourceLinkRequest", "LtiDeepLinkingRequest"})


class RegistrationRefused(Exception):
    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class Registration:
    """The registration side of one FakePlatform; ``registrations`` holds what tools sent."""

    def __init__(self, platform: FakePlatform) -> None:
        self._platform = platform
        self.registrations: list[dict[str, Any]] = []
        #: Replaces or removes (value None) fields of the published configuration.
        self.configuration_changes: dict[str, Any] = {}
        #: A canned (status, body) for the next registration request, for failure tests.
        self.next_answer: tuple[int, str] | None = None
        self._key: SigningKey | None = None  # made on first use: RSA keys take time

    def _signing_key(self) -> SigningKey:
        """Moodle signs registration tokens with its site key; a separate one does here."""
        if self._key is None:
            self._key = SigningKey.generate()
        return self._key

    @property
    def configuration_url(self) -> str:
        return self._platform.url + CONFIGURATION_PATH

    def token(self, *, update: bool = False, lifetime: int = 3600) -> str:
        """A registration token, as Moodle puts in the URL it opens for the admin."""
        now = int(time.time())
        claims = {
            "sub": self._platform.type_id if update else self._platform.client_id,
            "scope": "reg-update" if update else "reg",
            "iat": now,
            "exp": now + lifetime,
        }
        return self._signing_key().sign(claims)

    def start_url(self, tool_registration_url: str, *, token: str | None = None) -> str:
        """The address Moodle opens when the admin pastes the tool's registration URL."""
        query = urlencode(
            {"openid_configuration": self.configuration_url, "registration_token": token or ""}
        )
        return f"{tool_registration_url}?{query}"

    def configuration(self) -> dict[str, Any]:
        platform = self._platform
        document: dict[str, Any] = {
            "issuer": platform.issuer,
            "token_endpoint": platform.auth_token_url,
            "token_endpoint_auth_methods_supported": ["private_key_jwt"],
            "token_endpoint_auth_signing_alg_values_supported": ["RS256"],
            "jwks_uri": platform.key_set_url,
            "authorization_endpoint": platform.auth_login_url,
            "registration_endpoint": platform.url + REGISTRATION_PATH,
            "scopes_supported": sorted(KNOWN_SCOPES),
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public", "pairwise"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "claims_supported": ["sub", "iss", "name", "given_name", "family_name", "email"],
            PLATFORM_CONFIGURATION: {
                "product_family_code": "moodle",
                "version": "4.5 (Build: 20241007)",
                "messages_supported": [{"type": t} for t in sorted(MESSAGE_TYPES)],
            },
        }
        for name, value in self.configuration_changes.items():
            if value is None:
                document.pop(name, None)
            else:
                document[name] = value
        return document

    def handle(self, kind: str, request: Request) -> Response:
        if kind == "openid_configuration":
            return Response(json.dumps(self.configuration()), content_type="application/json")
        if self.next_answer is not None:
            status, body = self.next_answer
            self.next_answer = None
            return Response(body, status=status, content_type="text/plain")
        try:
            answer = self._register(request)
        except RegistrationRefused as exc:
            return Response(str(exc), status=exc.status, content_type="text/plain")
        return Response(json.dumps(answer), content_type="application/json; charset=utf-8")

    def _register(self, request: Request) -> dict[str, Any]:
        if request.method != "POST":
            raise RegistrationRefused("registration is a POST", 405)
        update = self._check_token(request.headers.get("Authorization", ""))
        if request.mimetype != "application/json":  # stricter than Moodle
            raise RegistrationRefused("the body must be application/json")
        try:
            body = json.loads(request.get_data())
        except ValueError as exc:
            raise RegistrationRefused("the body is not JSON") from exc
        if not isinstance(body, dict):
            raise RegistrationRefused("the body is not a JSON object")
        _check_body(body)
        self.registrations.append(body)
        self._platform.tool_jwks_url = body["jwks_uri"]
        self._platform.tool_redirect_uris = list(body["redirect_uris"])
        tool = body[TOOL_CONFIGURATION]
        return {
            "client_id": self._platform.client_id,
            "response_types": ["id_token"],
            "jwks_uri": body["jwks_uri"],
            "initiate_login_uri": body["initiate_login_uri"],
            "grant_types": ["client_credentials", "implicit"],
            "redirect_uris": body["redirect_uris"],
            "application_type": "web",
            "token_endpoint_auth_method": "private_key_jwt",
            "client_name": body["client_name"],
            "logo_uri": body.get("logo_uri", ""),
            "scope": " ".join(s for s in body.get("scope", "").split() if s in KNOWN_SCOPES),
            TOOL_CONFIGURATION: {
                "version": "1.3.0",
                "deployment_id": self._platform.deployment_id,
                "target_link_uri": tool.get("target_link_uri", ""),
                "domain": tool["domain"],
                "description": tool.get("description", ""),
                "claims": ["sub", "iss", *(c for c in tool.get("claims", []) if c != "email")],
                "updated": update,
            },
        }

    def _check_token(self, authorization: str) -> bool:
        """True for an update token; refuses missing, forged, expired and reused tokens."""
        if not authorization.startswith("Bearer "):
            raise RegistrationRefused("missing registration token", 401)
        try:
            claims = jwt.decode(
                authorization[len("Bearer ") :],
                self._signing_key().private_key.public_key(),
                algorithms=["RS256"],
                options={"require": ["sub", "exp"]},
            )
        except jwt.InvalidTokenError as exc:
            raise RegistrationRefused(f"invalid registration token: {exc}", 401) from exc
        if claims.get("scope") == "reg-update":
            if claims["sub"] != self._platform.type_id:
                raise RegistrationRefused("Unknown client")
            return True
        if claims.get("scope") != "reg" or claims["sub"] != self._platform.client_id:
            raise RegistrationRefused("Incorrect scope", 403)
        if self.registrations:
            raise RegistrationRefused("token_already_used", 401)
        return False


def _check_body(body: dict[str, Any]) -> None:
    """Moodle's registration_to_config checks, and the grant types and URLs besides."""
    for name in (
        "response_types",
        "initiate_login_uri",
        "redirect_uris",
        "client_name",
        "jwks_uri",
        "token_endpoint_auth_method",
        TOOL_CONFIGURATION,
    ):
        if not body.get(name):
            raise RegistrationRefused(f"missing required attribute {name}")
    tool = body[TOOL_CONFIGURATION]
    if not isinstance(tool, dict) or not tool.get("domain"):
        raise RegistrationRefused("missing_domain")
    target = tool.get("target_link_uri") or f"https://{tool['domain']}"
    if _domain(target) != _domain("//" + tool["domain"]):
        raise RegistrationRefused("domain_targetlinkuri_mismatch")
    if "id_token" not in body["response_types"]:
        raise RegistrationRefused("invalid_response_types")
    if not isinstance(body["redirect_uris"], list):
        raise RegistrationRefused("invalid_redirect_uris")
    if body["token_endpoint_auth_method"] != "private_key_jwt":
        raise RegistrationRefused("invalid_token_endpoint_auth_method")
    if body.get("application_type", "web") != "web":
        raise RegistrationRefused("invalid_application_type")
    # Stricter than Moodle 4.5, as the spec requires of the tool:
    if not {"implicit", "client_credentials"} <= set(body.get("grant_types") or []):
        raise RegistrationRefused("invalid_grant_types")
    for url in [body["initiate_login_uri"], body["jwks_uri"], *body["redirect_uris"]]:
        if not isinstance(url, str) or urlsplit(url).scheme not in ("http", "https"):
            raise RegistrationRefused(f"not an http(s) URL: {url!r}")
    for message in tool.get("messages") or []:
        if message.get("type") not in MESSAGE_TYPES:
            raise RegistrationRefused(f"unsupported message type {message.get('type')!r}")
    if not isinstance(body.get("scope", ""), str):
        raise RegistrationRefused("scope must be a space-separated string")


def _domain(url: str) -> str:
    """Host and port, without a leading www, as Moodle compares them."""
    netloc = urlsplit(url).netloc.lower()
    return netloc.removeprefix("www.")
