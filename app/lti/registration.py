"""How the tool introduces itself to an LMS: LTI Dynamic Registration and Canvas's JSON.

Dynamic Registration (IMS LTI-DR 1.0): the LMS opens ``/lti/register`` in a window with two
query parameters, the URL of its OpenID configuration and a one-time registration token. The
tool reads the configuration, posts its own registration to the platform's registration
endpoint with that token as a bearer token, and stores the client_id and deployment_id the
platform answers with. Nothing is stored unless every step succeeds.

pylti1p3 ships a ``DynamicRegistration`` helper, but it uses ``requests`` without timeouts or
size limits and checks the configuration with ``assert``; the two HTTP calls are made here
through :mod:`app.outbound` instead, and the document shapes follow the spec.

``/lti/register/<token>`` starts only from a link an admin made for the LMS's address
(:mod:`app.lti.registration_links`). It is still opened anonymously, so the page says nothing of
what the other end did: refused, unreachable, slow, an HTTP error, not JSON, or an address
we do not call all read the same (:class:`ExchangeFailed`); the detail (and a refusal code
such as Moodle's ``token_already_used``) goes to the server log. Only a configuration that
arrived as JSON and is wrong is named field by field, for the LMS admin.

Both the registration body and the Canvas developer-key JSON are built from
:class:`ToolUrls`, which the view derives from the request, so a proxy-served tool names its
public address.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l
from sqlalchemy import select

from app import outbound, tenants
from app.errors import EvaluaitorError
from app.extensions import db
from app.lti import claims
from app.models import Deployment, Platform

PLATFORM_CONFIGURATION = "https://purl.imsglobal.org/spec/lti-platform-configuration"
TOOL_CONFIGURATION = "https://purl.imsglobal.org/spec/lti-tool-configuration"
DEEP_LINKING_REQUEST = claims.DEEP_LINKING_REQUEST

SCOPE_RESULT_READONLY = claims.SCOPE_RESULT_READONLY
SCOPE_NRPS = claims.SCOPE_NRPS
#: What the tool asks for: line items, results and scores (AGS), the member list (NRPS), and
#: as an asset processor: registering for submission notices (PNS), reading the submitted
#: files and sending reports.
SCOPES = (
    claims.SCOPE_LINEITEM,
    SCOPE_RESULT_READONLY,
    claims.SCOPE_SCORE,
    SCOPE_NRPS,
    claims.SCOPE_NOTICE_HANDLERS,
    claims.SCOPE_ASSET_READONLY,
    claims.SCOPE_REPORT,
)
#: Where an LMS offers the tool's deep linking: the course's activity chooser, and (Canvas's
#: "Add Document Processing App", D2L) attaching it to an assignment as an asset processor.
#: The processor's settings and report review launches are not declared as messages: Canvas
#: refuses a registration naming a message type outside its placements
#: (LtiAssetProcessorSettingsRequest, LtiReportReviewRequest) and sends both to the launch
#: URL (the content item's ``url`` and ``report.url``) without them.
DEEP_LINKING_PLACEMENTS = ("ContentArea", claims.ASSET_PROCESSOR_PLACEMENT)
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


class ExchangeFailed(RegistrationError):
    """Anything the network or the other end did; one message whatever it was."""

    status_code = 502
    code = "registration_exchange_failed"

    def __init__(self, host: str, *, detail: str) -> None:
        super().__init__(
            _(
                "Evaluaitor could not complete the registration with the LMS at %(host)s. "
                "Check the address, or ask the administrator to look at the server log.",
                host=host,
            ),
            detail=detail,
        )


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

    @property
    def endpoints(self) -> tuple[str, ...]:
        """The addresses stored or called: each must pass the outbound address rule."""
        return (
            self.authorization_endpoint,
            self.token_endpoint,
            self.jwks_uri,
            self.registration_endpoint,
        )


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
                    "placements": list(DEEP_LINKING_PLACEMENTS),
                },
                {"type": claims.RESOURCE_LINK_REQUEST, "target_link_uri": urls.launch},
            ],
        },
    }


def canvas_configuration(urls: ToolUrls) -> dict[str, Any]:
    """A Canvas developer key ("LTI Key", method "Paste JSON") for this tool. The
    ``ActivityAssetProcessor`` placement (Canvas's "Document Processor") needs no prefix."""
    placements = [
        {
            "placement": placement,
            "message_type": DEEP_LINKING_REQUEST,
            "target_link_uri": urls.launch,
            "text": TOOL_NAME,
        }
        for placement in (
            "assignment_selection",
            "link_selection",
            claims.ASSET_PROCESSOR_PLACEMENT,
        )
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
    private: outbound.PrivateAccess,
) -> tuple[Platform, Deployment]:
    """Run the whole exchange and store the platform; raises RegistrationError.

    A new platform is stored active only when ``activate``; an existing one (same issuer and
    client_id) is updated and keeps its state. ``timeout`` bounds each of the two requests as
    a whole; ``private`` names the non-public addresses the outbound rule allows.
    """
    check_parameters(openid_configuration_url, registration_token)
    limits = outbound.Limits(timeout, MAX_DOCUMENT_BYTES, private)
    try:
        with outbound.client(limits) as http:
            document = outbound.fetch_json(http, "GET", openid_configuration_url)
            configuration = read_platform_configuration(document, openid_configuration_url)
            for endpoint in configuration.endpoints:
                outbound.check_url(endpoint, private=private)
            answer = outbound.fetch_json(
                http,
                "POST",
                configuration.registration_endpoint,
                json=tool_registration(urls),
                headers={"Authorization": f"Bearer {registration_token}"},
            )
    except outbound.OutboundError as exc:
        host = urlsplit(openid_configuration_url).hostname or "?"
        raise ExchangeFailed(host[:255], detail=str(exc)) from exc
    client_id, deployment_id = _read_registration_answer(answer)
    return store(configuration, client_id, deployment_id, activate=activate)


def check_parameters(openid_configuration_url: str, registration_token: str) -> None:
    """Refuse a request that lacks what the LMS adds, before anything else is looked at."""
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


def _origin(url: str) -> tuple[str, str] | None:
    """Scheme and host:port of an http(s) URL, or None for anything else."""
    try:
        parts = urlsplit(url)
    except ValueError:  # e.g. an unclosed [ in an IPv6 host
        return None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return parts.scheme, parts.netloc.lower()


def _require_http_url(url: str, name: str) -> None:
    if _origin(url) is None:
        raise RegistrationError(
            _("The %(name)s parameter must be an http(s) address.", name=name),
            detail=f"{name}={url[:200]!r}",
        )
