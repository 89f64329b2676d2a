"""The platform's side of LTI 1.3 messages: login hints, the id_token it signs, and the
JWTs from the tool it verifies (client assertions, deep linking responses).

Everything is built with PyJWT and the platform's own RSA key (``app.lti.keys`` keeps it, as
it keeps the tool's); ``docs/decisions.md`` says why not the ``lti1p3platform`` package.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import httpx
import jwt
from flask import current_app
from flask_babel import get_locale
from flask_babel import gettext as _
from itsdangerous import BadData, URLSafeTimedSerializer

from app import safe_json
from app.lti import claims
from app.lti.keys import active_key
from app.practice import assignment
from app.practice.errors import PracticeError
from app.practice.names import CLIENT_ID, DEPLOYMENT_ID
from app.practice.state import COURSE_ID, COURSE_TITLE, Link, Person

# The names this platform's messages use, all from app.lti.claims (spec strings live there).
DEEP_LINKING_SETTINGS = claims.DEEP_LINKING_SETTINGS
CONTENT_ITEMS = claims.CONTENT_ITEMS
DL_DATA = claims.DEEP_LINKING_DATA
DEEP_LINKING_REQUEST = claims.DEEP_LINKING_REQUEST
DEEP_LINKING_RESPONSE = claims.DEEP_LINKING_RESPONSE
LINK_ITEM = claims.RESOURCE_LINK_ITEM
PLACEMENT = claims.CANVAS_PLACEMENT
CUSTOM = claims.CUSTOM
TARGET_LINK_URI = claims.TARGET_LINK_URI
VERSION = claims.VERSION
TOOL_PLATFORM = claims.TOOL_PLATFORM
SCOPE_RESULT = claims.SCOPE_RESULT_READONLY
ROLE_LEARNER = claims.LEARNER
ROLE_INSTRUCTOR = claims.INSTRUCTOR
ROLES_BY_KIND = {"student": [ROLE_LEARNER], "teacher": [ROLE_INSTRUCTOR]}
ID_TOKEN_LIFETIME = 300
HINT_LIFETIME = 600
#: How long a teacher may take to fill the tool's setup form.
DEEP_LINK_LIFETIME = 3600
#: A notice's lifetime (Canvas signs them for an hour).
NOTICE_LIFETIME = 3600


# -- hints: what the platform page asks for, signed so the auth endpoint can trust it -------


def _hints() -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(current_app.config["SECRET_KEY"], salt="practice.hint")


def message_hint(
    *, person: Person, link_id: str | None, target: str, processor: dict[str, Any] | None = None
) -> str:
    """``lti_message_hint``: who launches what, and where (``iframe`` or ``window``);
    ``processor`` names a message about the native assignment (:func:`processor_claims`)."""
    return _hints().dumps(
        {"sub": person.sub, "link": link_id, "target": target, "processor": processor}
    )


def read_message_hint(hint: str) -> dict[str, Any]:
    try:
        return _hints().loads(hint, max_age=HINT_LIFETIME)
    except BadData as exc:
        raise PracticeError(
            400, "invalid_request", _("The launch hint is invalid or expired."), is_api=False
        ) from exc


def deep_link_data(sub: str, accepts: str = LINK_ITEM) -> str:
    """Opaque ``data`` the tool must return unchanged in its deep linking response; it also
    says which content item type the request accepted, so the return takes only that one."""
    return _hints().dumps({"dl": sub, "accepts": accepts})


def read_deep_link_data(data: Any) -> tuple[str, str] | None:
    """Who asked for the deep link and the item type it accepts, if ``data`` is ours and
    recent; None otherwise."""
    try:
        found = _hints().loads(str(data), max_age=DEEP_LINK_LIFETIME)
        return str(found["dl"]), str(found.get("accepts", LINK_ITEM))
    except (BadData, AttributeError, KeyError, TypeError):
        return None


# -- the id_token the platform signs -------------------------------------------------------


def sign(claims_body: dict[str, Any], lifetime: int = ID_TOKEN_LIFETIME) -> str:
    """A JWT signed with the platform's key (the id_token of a launch, or a notice)."""
    settings = current_app.config["PRACTICE"]
    key = active_key(settings.key_dir)
    now = int(time.time())
    body = {"iat": now, "exp": now + lifetime, **claims_body}
    return jwt.encode(body, key.private_pem, algorithm="RS256", headers={"kid": key.kid})


def pns_claim() -> dict[str, Any]:
    """Where the tool registers its notice handlers; Canvas puts it in every launch."""
    settings = current_app.config["PRACTICE"]
    return {
        "platform_notification_service_url": settings.base_url + "/pns/notice-handlers",
        "service_versions": ["1.0"],
        "scope": [claims.SCOPE_NOTICE_HANDLERS],
        "notice_types_supported": list(assignment.NOTICE_TYPES),
    }


def _common_claims(
    *, person: Person, nonce: str, target: str, services: dict[str, str]
) -> dict[str, Any]:
    """What every launch says: who, where, in which course, with which services."""
    settings = current_app.config["PRACTICE"]
    return {
        "iss": settings.issuer,
        "aud": CLIENT_ID,
        "azp": CLIENT_ID,
        "sub": person.sub,
        "nonce": nonce,
        "name": person.name,
        "email": person.email,
        VERSION: "1.3.0",
        claims.DEPLOYMENT_ID: DEPLOYMENT_ID,
        TARGET_LINK_URI: settings.tool_launch_url,
        claims.ROLES: ROLES_BY_KIND[person.role],
        claims.CONTEXT: {"id": COURSE_ID, "title": COURSE_TITLE, "label": "PRACTICE"},
        claims.LAUNCH_PRESENTATION: {
            "document_target": target,
            "return_url": settings.base_url + "/",
            # The person's language, as an LMS sends its user's: the tool then speaks it.
            "locale": str(get_locale()),
        },
        TOOL_PLATFORM: {
            "guid": settings.issuer,
            "name": "Evaluaitor practice platform",
            "product_family_code": "evaluaitor-practice",
        },
        claims.NRPS: {
            "context_memberships_url": services["memberships"],
            "service_versions": ["2.0"],
        },
        claims.PNS: pns_claim(),
    }


def launch_claims(
    *, person: Person, nonce: str, target: str, link: Link | None, services: dict[str, str]
) -> dict[str, Any]:
    """The claims of a resource link launch (``link``) or a deep linking request (None)."""
    settings = current_app.config["PRACTICE"]
    body = _common_claims(person=person, nonce=nonce, target=target, services=services)
    ags_scopes = [claims.SCOPE_LINEITEM, claims.SCOPE_LINEITEM_READONLY, SCOPE_RESULT]
    if link is None:
        body[claims.MESSAGE_TYPE] = DEEP_LINKING_REQUEST
        body[claims.AGS_ENDPOINT] = {"scope": ags_scopes, "lineitems": services["lineitems"]}
        body[DEEP_LINKING_SETTINGS] = {
            "deep_link_return_url": settings.base_url + "/deep-link-return",
            "accept_types": [LINK_ITEM],
            "accept_presentation_document_targets": ["iframe", "window"],
            "accept_multiple": False,
            "auto_create": True,
            "title": "New Evaluaitor activity",
            "data": deep_link_data(person.sub),
        }
        return body
    body[claims.MESSAGE_TYPE] = claims.RESOURCE_LINK_REQUEST
    body[claims.RESOURCE_LINK] = {"id": link.id, "title": link.title}
    ags: dict[str, Any] = {
        "scope": [*ags_scopes, claims.SCOPE_SCORE],
        "lineitems": services["lineitems"],
    }
    if link.lineitem_id is not None:
        ags["lineitem"] = services["lineitems"] + f"/{link.lineitem_id}"
    body[claims.AGS_ENDPOINT] = ags
    if link.custom:
        body[CUSTOM] = dict(link.custom)
    return body


# -- the native assignment's messages (LTI Asset Processor) -------------------------------

ATTACH = "attach"
SETTINGS = "settings"
REPORT = "report"


def processor_claims(
    *, person: Person, nonce: str, target: str, services: dict[str, str], message: dict[str, Any]
) -> dict[str, Any]:
    """A launch about the native assignment, as Canvas sends them: attaching a processor
    (``attach``: deep linking for an ``ltiAssetProcessor``), its settings (``settings``) or
    one asset's report (``report``). Raises PracticeError for what no longer exists."""
    settings = current_app.config["PRACTICE"]
    state = assignment.current_assignment()
    body = _common_claims(person=person, nonce=nonce, target=target, services=services)
    if message["kind"] == ATTACH:
        body[claims.MESSAGE_TYPE] = DEEP_LINKING_REQUEST
        body[DEEP_LINKING_SETTINGS] = {
            "deep_link_return_url": settings.base_url + "/deep-link-return",
            "accept_types": [claims.ASSET_PROCESSOR_ITEM],
            "accept_presentation_document_targets": ["iframe", "window"],
            "accept_multiple": True,
            "auto_create": True,
            "title": assignment.TITLE,
            "data": deep_link_data(person.sub, claims.ASSET_PROCESSOR_ITEM),
        }
        body[claims.ACTIVITY] = {"id": state.activity_id}
        body[PLACEMENT] = claims.ASSET_PROCESSOR_PLACEMENT
        return body
    processor = state.processors.get(message.get("processor"))
    if processor is None:
        raise PracticeError(
            400, "invalid_request", _("This processor is not attached."), is_api=False
        )
    body[claims.ACTIVITY] = {"id": state.activity_id, "title": assignment.TITLE}
    body[PLACEMENT] = None
    if message["kind"] == SETTINGS:
        body[claims.MESSAGE_TYPE] = claims.ASSET_PROCESSOR_SETTINGS_REQUEST
        body[TARGET_LINK_URI] = processor.url or settings.tool_launch_url
        body[CUSTOM] = dict(processor.custom)
        return body
    submission = state.submission(message.get("submission", ""))
    if submission is None or message.get("asset") not in {a.asset_id for a in submission.assets}:
        raise PracticeError(
            400, "invalid_request", _("This submission no longer exists."), is_api=False
        )
    body[claims.MESSAGE_TYPE] = claims.REPORT_REVIEW_REQUEST
    body[TARGET_LINK_URI] = processor.report_url or processor.url or settings.tool_launch_url
    body[claims.SUBMISSION] = {"id": submission.id}
    body[claims.FOR_USER] = {"user_id": submission.user_id}  # whose work the report is about
    body[claims.ASSET] = {"id": message["asset"]}
    body[claims.ASSET_REPORT_TYPE] = message.get("type")
    body[CUSTOM] = {**processor.custom, **processor.report_custom}
    return body


def notice_claims(
    submission: assignment.NativeSubmission, processor: assignment.Processor, notice_id: str
) -> dict[str, Any]:
    """An ``LtiAssetProcessorSubmissionNotice`` (Canvas's claims): the student, the assets
    and where to fetch them, where to send reports, the assignment and the attempt."""
    settings = current_app.config["PRACTICE"]
    state = assignment.current_assignment()
    base = f"{settings.base_url}/ap/{processor.id}"
    assets = []
    for asset in submission.assets:
        described = {
            "asset_id": asset.asset_id,
            "url": f"{base}/assets/{asset.asset_id}",
            "sha256_checksum": asset.sha256,
            "timestamp": asset.timestamp,
            "size": asset.size,
            "content_type": asset.content_type,
            "title": asset.title,
        }
        if asset.filename is not None:  # a text entry has none
            described["filename"] = asset.filename
        assets.append(described)
    return {
        "iss": settings.issuer,
        "aud": CLIENT_ID,
        "azp": CLIENT_ID,
        "nonce": str(uuid.uuid4()),
        VERSION: "1.3.0",
        claims.DEPLOYMENT_ID: DEPLOYMENT_ID,
        claims.NOTICE: {
            "id": notice_id,
            "timestamp": assignment.now_iso(),
            "type": claims.SUBMISSION_NOTICE,
        },
        claims.CONTEXT: {"id": COURSE_ID, "title": COURSE_TITLE, "label": "PRACTICE"},
        claims.CUSTOM: dict(processor.custom),  # the deployment adds none here
        claims.FOR_USER: {"user_id": submission.user_id},
        claims.ASSET_REPORT: {"report_url": f"{base}/reports", "scope": [claims.SCOPE_REPORT]},
        claims.ASSET_SERVICE: {"scope": [claims.SCOPE_ASSET_READONLY], "assets": assets},
        claims.ACTIVITY: {"id": state.activity_id},
        claims.SUBMISSION: {"id": submission.id},
    }


# -- JWTs from the tool --------------------------------------------------------------------


class ToolKeys:
    """The tool's JWKS, fetched from its registered URL and fetched again once for an
    unknown ``kid`` (the tool rotated its keys)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._keys: dict[str, Any] = {}

    def key_for(self, kid: str, jwks_url: str) -> Any:
        with self._lock:
            if kid not in self._keys:
                self._keys = self._fetch(jwks_url)
            if kid not in self._keys:
                raise PracticeError(401, "invalid_client", f"unknown key id {kid!r}")
            return self._keys[kid]

    @staticmethod
    def _fetch(jwks_url: str) -> dict[str, Any]:
        try:
            response = httpx.get(jwks_url, timeout=5)
            response.raise_for_status()
            return {
                key["kid"]: jwt.PyJWK(key).key
                for key in safe_json.loads(response.content)["keys"]
                if isinstance(key, dict) and key.get("kid")
            }
        except (httpx.HTTPError, ValueError, KeyError, TypeError, jwt.PyJWTError) as exc:
            raise PracticeError(
                502, "tool_keys_unavailable", f"could not read the tool's keys: {exc}"
            ) from exc


def verify_tool_jwt(token: str, *, audience: str, required: list[str]) -> dict[str, Any]:
    """Verify a JWT the tool signed: its key from the tool's JWKS, ``iss`` = our client_id,
    ``aud`` = ``audience``, and the ``required`` claims present. Raises PracticeError (401)."""
    settings = current_app.config["PRACTICE"]
    try:  # bounded before PyJWT decodes the same JSON again
        header = safe_json.jwt_parts(token)[0]
    except ValueError as exc:
        raise PracticeError(401, "invalid_client", f"unreadable JWT: {exc}") from exc
    if header.get("alg") != "RS256" or not isinstance(header.get("kid"), str):
        raise PracticeError(401, "invalid_client", "JWT must be RS256 with a kid")
    key = current_app.extensions["practice_tool_keys"].key_for(
        header["kid"], settings.tool_jwks_url
    )
    try:
        return jwt.decode(
            token,
            key,
            algorithms=["RS256"],
            audience=audience,
            issuer=CLIENT_ID,
            leeway=60,
            options={"require": ["iss", "aud", "exp", "iat", *required]},
        )
    except jwt.PyJWTError as exc:
        raise PracticeError(401, "invalid_client", f"JWT refused: {exc}") from exc
