"""How the tool introduces itself to an LMS: LTI Dynamic Registration and Canvas's JSON.

Dynamic Registration (IMS LTI-DR 1.0): the LMS opens ``/lti/register`` in a window with two
query parameters, the URL of its OpenID configuration and a one-time registration token. The
tool reads the configuration, posts its own registration to the platform's registration
endpoint with that token as a bearer token, and stores the client_id and deployment_id the
platform answers with. Nothing is stored unless every step succeeds.

pylti1p3 ships a ``DynamicRegistration`` helper, but it uses ``requests`` without timeouts or
size limits and checks the configuration with ``assert``; the few HTTP calls are made here
with httpx instead, and the document shapes follow the spec.

Both the registration body and the Canvas developer-key JSON are built from
:class:`ToolUrls`, which the view derives from the request, so a proxy-served tool names its
public address.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l
from sqlalchemy import select

from app import tenants
from app.errors import EvaluaitorError
from app.extensions import db
from app.lti import claims
from app.models import Deployment, Platform

PLATFORM_CONFIGURATION = "https://purl.imsglobal.org/spec/lti-platform-configuration"
TOOL_CONFIGURATION = "https://purl.imsglobal.org/spec/lti-tool-configuration"
DEEP_LINKING_REQUEST = "LtiDeepLinkingRequest"

SCOPE_RESULT_READONLY = "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly"
SCOPE_NRPS = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
#: What the tool asks for: line items, results and scores (AGS), and the member list (NRPS).
SCOPES = (claims.SCOPE_LINEITEM, SCOPE_RESULT_READONLY, claims.SCOPE_SCORE, SCOPE_NRPS)
#: Names let teachers tell submissions apart; e-mail addresses are not needed.
CLAIMS = ("iss", "sub", "name", "given_name", "family_name")

TOOL_NAME = "Evaluaitor"
TOOL_DESCRIPTION = "AI-assisted grading with teacher review"

#: The platform endpoints a registration needs, from its OpenID configuration.
_REQUIRED_ENDPOINTS = ("authorization_endpoint", "token_endpoint", "jwks_uri")
#: Neither document is legitimately larger than a few kilobytes.
MAX_DOCUMENT_BYTES = 256 * 1024


class RegistrationError(EvaluaitorError):
    """Dynamic Registration could not finish; the message tells the LMS admin why."""

    code = "registration_error"
    user_message = _l("The registration with your LMS could not be completed.")


class PlatformUnreachable(RegistrationError):
    status_code = 502
    code = "platform_unreachable"


@dataclass(frozen=True)
class ToolUrls:
    """The tool's public addresses, as the LMS must reach them."""

    login: str
    launch: str
    jwks: str

    @property
    def domain(self) -> str:
        """Host and port, as the registration's ``domain``."""
        return urlsplit(self.launch).netloc


@dataclass(frozen=True)
class PlatformConfiguration:
    """The parts of a platform's OpenID configuration the tool uses."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    registration_endpoint: str
    product: str
    authorization_server: str | None


# --- what the tool says about itself -------------------------------------------------------


def tool_registration(urls: ToolUrls) -> dict[str, Any]:
    """The client registration the tool posts to the platform (LTI-DR 1.0, section 3.3)."""
    return {
        "application_type": "web",
        "response_types": ["id_token"],
        "grant_types": ["implicit", "client_credentials"],
        "initiate_login_uri": urls.login,
        "redirect_uris": [urls.launch],
        "client_name": TOOL_NAME,
        "jwks_uri": urls.jwks,
        "token_endpoint_auth_method": "private_key_jwt",
        "scope": " ".join(SCOPES),
        TOOL_CONFIGURATION: {
            "domain": urls.domain,
            "description": TOOL_DESCRIPTION,
            "target_link_uri": urls.launch,
            "claims": list(CLAIMS),
            "messages": [
                {
                    "type": DEEP_LINKING_REQUEST,
                    "target_link_uri": urls.launch,
                    "label": TOOL_NAME,
                    "placements": ["ContentArea"],
                },
                {"type": claims.RESOURCE_LINK_REQUEST, "target_link_uri": urls.launch},
            ],
        },
    }


def canvas_configuration(urls: ToolUrls) -> dict[str, Any]:
    """A Canvas developer key ("LTI Key", method "Paste JSON") for this tool."""
    placements = [
        {
            "placement": placement,
            "message_type": DEEP_LINKING_REQUEST,
            "target_link_uri": urls.launch,
            "text": TOOL_NAME,
        }
        for placement in ("assignment_selection", "link_selection")
    ]
    return {
        "title": TOOL_NAME,
        "description": TOOL_DESCRIPTION,
        "oidc_initiation_url": urls.login,
        "target_link_uri": urls.launch,
        "public_jwk_url": urls.jwks,
        "scopes": list(SCOPES),
        "extensions": [
            {
                "platform": "canvas.instructure.com",
                "domain": urls.domain,
                # Names for the teacher's list; no e-mail addresses.
                "privacy_level": "name_only",
                "settings": {"text": TOOL_NAME, "placements": placements},
            }
        ],
        "custom_fields": {},
    }


# --- Dynamic Registration ------------------------------------------------------------------


def register(
    openid_configuration_url: str,
    registration_token: str,
    urls: ToolUrls,
    *,
    timeout: float,
    activate: bool,
) -> tuple[Platform, Deployment]:
    """Run the whole exchange and store the platform; raises RegistrationError.

    A new platform is stored active only when ``activate``; an existing one (same issuer and
    client_id) is updated and keeps its state.
    """
    if not openid_configuration_url or not registration_token:
        raise RegistrationError(
            _(
                "This address is for LTI Dynamic Registration: open it from your LMS's "
                "tool registration page, which adds the openid_configuration and "
                "registration_token parameters."
            ),
            detail="registration without openid_configuration or registration_token",
        )
    _require_http_url(openid_configuration_url, "openid_configuration")
    with httpx.Client(timeout=timeout, follow_redirects=False) as http:
        document = _fetch_json(http, "GET", openid_configuration_url)
        configuration = read_platform_configuration(document, openid_configuration_url)
        answer = _fetch_json(
            http,
            "POST",
            configuration.registration_endpoint,
            json=tool_registration(urls),
            headers={"Authorization": f"Bearer {registration_token}"},
            show_reason=True,
        )
    client_id, deployment_id = _read_registration_answer(answer)
    return store(configuration, client_id, deployment_id, activate=activate)


def read_platform_configuration(document: Any, url: str) -> PlatformConfiguration:
    """Check the platform's OpenID configuration; raises RegistrationError naming the fault."""
    if not isinstance(document, dict):
        raise RegistrationError(
            _("The LMS's configuration is not a JSON object."), detail=f"from {url}"
        )
    issuer = document.get("issuer")
    if not isinstance(issuer, str) or len(issuer) > 500 or _origin(issuer) is None:
        raise RegistrationError(_("The LMS's configuration has no valid issuer URL."))
    if _origin(issuer) != _origin(url):
        raise RegistrationError(
            _("The LMS's issuer does not match the address its configuration came from."),
            detail=f"issuer {issuer!r} from {url!r}",
        )
    endpoints = {}
    for name in (*_REQUIRED_ENDPOINTS, "registration_endpoint"):
        endpoints[name] = document.get(name)
        url = endpoints[name]
        if not isinstance(url, str) or len(url) > 1000 or _origin(url) is None:
            raise RegistrationError(
                _("The LMS's configuration lacks the %(name)s address.", name=name)
            )
    lti = document.get(PLATFORM_CONFIGURATION)
    if not isinstance(lti, dict):
        raise RegistrationError(
            _("The LMS's configuration does not describe an LTI platform."),
            detail=f"no {PLATFORM_CONFIGURATION} block",
        )
    server = document.get("authorization_server")
    return PlatformConfiguration(
        issuer=issuer,
        product=str(lti.get("product_family_code") or "LMS")[:100],
        authorization_server=server if isinstance(server, str) and server else None,
        **endpoints,
    )


def store(
    configuration: PlatformConfiguration, client_id: str, deployment_id: str, *, activate: bool
) -> tuple[Platform, Deployment]:
    """Create or update the platform and its deployment, with the platform's organization."""
    platform = db.session.scalar(
        select(Platform).where(
            Platform.issuer == configuration.issuer, Platform.client_id == client_id
        )
    )
    if platform is None:
        platform = Platform(issuer=configuration.issuer, client_id=client_id, is_active=activate)
        platform.name = f"{configuration.product} ({urlsplit(configuration.issuer).netloc})"
        db.session.add(platform)
    platform.auth_login_url = configuration.authorization_endpoint
    platform.auth_token_url = configuration.token_endpoint
    platform.key_set_url = configuration.jwks_uri
    platform.auth_audience = configuration.authorization_server
    deployment = next((d for d in platform.deployments if d.deployment_id == deployment_id), None)
    if deployment is None:
        deployment = Deployment(deployment_id=deployment_id)
        platform.deployments.append(deployment)
    tenants.attach_platform(platform)
    db.session.commit()
    return platform, deployment


def _read_registration_answer(answer: Any) -> tuple[str, str]:
    """The client_id and deployment_id the platform gave (strings; some platforms send
    numbers); anything else is refused, so no platform is stored half-named."""
    tool = answer.get(TOOL_CONFIGURATION) if isinstance(answer, dict) else None
    client_id = answer.get("client_id") if isinstance(answer, dict) else None
    deployment_id = tool.get("deployment_id") if isinstance(tool, dict) else None
    ids = [
        str(v) if isinstance(v, str | int) and not isinstance(v, bool) else ""
        for v in (client_id, deployment_id)
    ]
    if not all(0 < len(v) <= 255 for v in ids):
        raise RegistrationError(
            _("The LMS accepted the registration but did not say its client ID and deployment."),
            detail="registration answer without a usable client_id or deployment_id",
        )
    return ids[0], ids[1]


def _fetch_json(
    http: httpx.Client, method: str, url: str, *, show_reason: bool = False, **kwargs: Any
) -> Any:
    """A JSON document from the platform, read up to MAX_DOCUMENT_BYTES.

    The URLs come from whoever opened /lti/register, so the page repeats nothing of what
    they answer except, with ``show_reason``, the short reason a registration endpoint gives
    for refusing (e.g. Moodle's "token_already_used"), which the LMS admin needs.
    """
    try:
        with http.stream(method, url, **kwargs) as response:
            body = b""
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > MAX_DOCUMENT_BYTES:
                    raise RegistrationError(
                        _("The LMS's answer is too large."), detail=f"{method} {url}"
                    )
    except httpx.HTTPError as exc:
        raise PlatformUnreachable(
            _("Evaluaitor could not reach your LMS at %(url)s.", url=url),
            detail=f"{method} {url}: {type(exc).__name__}",
        ) from exc
    if response.status_code >= 300:
        reason = _refusal(body) if show_reason else "-"
        raise RegistrationError(
            _(
                "Your LMS refused the request (HTTP %(status)s): %(reason)s",
                status=response.status_code,
                reason=reason,
            ),
            detail=f"{method} {url} answered {response.status_code}",
        )
    try:
        return json.loads(body)
    except ValueError as exc:
        raise RegistrationError(
            _("Your LMS's answer is not JSON."), detail=f"{method} {url}"
        ) from exc


def _refusal(body: bytes) -> str:
    """A short, plain reason from an error answer (never HTML)."""
    text = body[:300].decode("utf-8", "replace")
    try:
        document = json.loads(body)
    except ValueError:
        document = None
    if isinstance(document, dict):
        text = str(document.get("error_description") or document.get("error") or text)[:300]
    return "-" if not text or "<" in text else text


def _origin(url: str) -> tuple[str, str] | None:
    """Scheme and host:port of an http(s) URL, or None for anything else."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return parts.scheme, parts.netloc.lower()


def _require_http_url(url: str, name: str) -> None:
    if _origin(url) is None:
        raise RegistrationError(
            _("The %(name)s parameter must be an http(s) address.", name=name),
            detail=f"{name}={url[:200]!r}",
        )
