"""The services the tool calls back: JWKS, OAuth2 client credentials, AGS and NRPS (the
native assignment's own are in :mod:`app.practice.processor_services`).

They are as strict as a careful LMS: a token only for a verified ``private_key_jwt`` client
assertion (signed with a key from the tool's JWKS, ``aud`` our token URL, single-use
``jti``), scopes checked on every call, content types checked, bad bodies answered 400.
"""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from flask import Blueprint, Response, current_app, jsonify, request

from app.lti import claims
from app.lti.keys import jwks
from app.practice.errors import PracticeError
from app.practice.messages import ROLES_BY_KIND, SCOPE_RESULT, verify_tool_jwt
from app.practice.names import CLIENT_ID
from app.practice.state import COURSE_ID, COURSE_TITLE, PEOPLE, LineItem, current_state

bp = Blueprint("practice_services", __name__)

TOKEN_LIFETIME = 3600
OFFERED_SCOPES = frozenset(
    {
        claims.SCOPE_LINEITEM,
        claims.SCOPE_LINEITEM_READONLY,
        claims.SCOPE_SCORE,
        SCOPE_RESULT,
        claims.SCOPE_NRPS,
        claims.SCOPE_NOTICE_HANDLERS,
        claims.SCOPE_ASSET_READONLY,
        claims.SCOPE_REPORT,
    }
)
ACTIVITY_PROGRESS = {"Initialized", "Started", "InProgress", "Submitted", "Completed"}
GRADING_PROGRESS = {"FullyGraded", "Pending", "PendingManual", "Failed", "NotReady"}
RESULTS_CONTENT_TYPE = "application/vnd.ims.lis.v2.resultcontainer+json"


@dataclass(frozen=True)
class Grant:
    scopes: frozenset[str]
    expires: float


class Tokens:
    """Issued access tokens and the client assertion ids already used, in memory."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._grants: dict[str, Grant] = {}
        self._used_jti: dict[str, float] = {}

    def issue(self, scopes: frozenset[str]) -> str:
        token = secrets.token_urlsafe(32)
        with self._lock:
            self._grants[token] = Grant(scopes, time.time() + TOKEN_LIFETIME)
        return token

    def use_jti(self, jti: str, expires: float) -> bool:
        """False when this assertion id was seen before (a replayed assertion)."""
        now = time.time()
        with self._lock:
            self._used_jti = {k: exp for k, exp in self._used_jti.items() if exp > now}
            if jti in self._used_jti:
                return False
            self._used_jti[jti] = expires
            return True

    def scopes_of(self, token: str) -> frozenset[str] | None:
        with self._lock:
            grant = self._grants.get(token)
        if grant is None or grant.expires < time.time():
            return None
        return grant.scopes


def _tokens() -> Tokens:
    return current_app.extensions["practice_tokens"]


def require_scope(*any_of: str) -> None:
    """The request's bearer token must be live and carry one of these scopes."""
    auth = request.headers.get("Authorization", "")
    scopes = _tokens().scopes_of(auth[7:]) if auth.startswith("Bearer ") else None
    if scopes is None:
        raise PracticeError(401, "invalid_token", "missing, unknown or expired access token")
    if not scopes & set(any_of):
        raise PracticeError(403, "insufficient_scope", f"needs one of {sorted(any_of)}")


def json_body(content_type: str) -> dict[str, Any]:
    if request.mimetype != content_type:
        raise PracticeError(415, "unsupported_media_type", f"expected {content_type}")
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        raise PracticeError(400, "invalid_request", "the body must be a JSON object")
    return body


def _reply(body: Any, content_type: str, status: int = 200) -> Response:
    response = jsonify(body)
    response.status_code = status
    response.mimetype = content_type
    return response


def _lineitems_url() -> str:
    return current_app.config["PRACTICE"].base_url + "/ags/lineitems"


def _lineitem(lineitem_id: int) -> LineItem:
    item = current_state().lineitems.get(lineitem_id)
    if item is None:
        raise PracticeError(404, "not_found", "no such line item")
    return item


@bp.get("/jwks")
def platform_jwks():
    return jsonify(jwks(current_app.config["PRACTICE"].key_dir))


@bp.post("/token")
def token():
    """OAuth2 client credentials with a ``private_key_jwt`` client assertion."""
    form = request.form
    if form.get("grant_type") != "client_credentials":
        raise PracticeError(400, "unsupported_grant_type", "only client_credentials")
    if form.get("client_assertion_type") != claims.CLIENT_ASSERTION_TYPE:
        raise PracticeError(400, "invalid_request", "client_assertion_type must be jwt-bearer")
    settings = current_app.config["PRACTICE"]
    assertion = verify_tool_jwt(
        form.get("client_assertion", ""),
        audience=settings.base_url + "/token",
        required=["sub", "jti"],
    )
    if assertion["sub"] != CLIENT_ID:
        raise PracticeError(401, "invalid_client", "sub must be the client_id")
    if not _tokens().use_jti(str(assertion["jti"]), float(assertion["exp"])):
        raise PracticeError(401, "invalid_client", "client assertion already used")
    granted = frozenset(form.get("scope", "").split()) & OFFERED_SCOPES
    if not granted:
        raise PracticeError(400, "invalid_scope", "none of the requested scopes is offered")
    return jsonify(
        access_token=_tokens().issue(granted),
        token_type="bearer",
        expires_in=TOKEN_LIFETIME,
        scope=" ".join(sorted(granted)),
    )


@bp.get("/ags/lineitems")
def lineitems():
    require_scope(claims.SCOPE_LINEITEM, claims.SCOPE_LINEITEM_READONLY)
    wanted = request.args.get("resource_link_id")
    items = [
        item.to_json(f"{_lineitems_url()}/{item.id}")
        for item in current_state().lineitems.values()
        if wanted is None or item.resource_link_id == wanted
    ]
    return _reply(items, claims.LINEITEM_CONTAINER_CONTENT_TYPE)


@bp.post("/ags/lineitems")
def create_lineitem():
    require_scope(claims.SCOPE_LINEITEM)
    item = current_state().add_lineitem(_lineitem_body())
    return _reply(item.to_json(f"{_lineitems_url()}/{item.id}"), claims.LINEITEM_CONTENT_TYPE, 201)


@bp.put("/ags/lineitems/<int:lineitem_id>")
def update_lineitem(lineitem_id: int):
    """A new label or maximum, as the tool sends when a teacher changes the settings."""
    require_scope(claims.SCOPE_LINEITEM)
    _lineitem(lineitem_id)
    item = current_state().update_lineitem(lineitem_id, _lineitem_body())
    return _reply(item.to_json(f"{_lineitems_url()}/{item.id}"), claims.LINEITEM_CONTENT_TYPE)


def _lineitem_body() -> dict[str, Any]:
    """A line item as the tool sends it, checked as a platform would."""
    body = json_body(claims.LINEITEM_CONTENT_TYPE)
    maximum = body.get("scoreMaximum")
    if not isinstance(body.get("label"), str) or not body["label"].strip():
        raise PracticeError(400, "invalid_request", "label is required")
    if not is_number(maximum) or maximum <= 0:
        raise PracticeError(400, "invalid_request", "scoreMaximum must be a positive number")
    return body


@bp.get("/ags/lineitems/<int:lineitem_id>")
def get_lineitem(lineitem_id: int):
    require_scope(claims.SCOPE_LINEITEM, claims.SCOPE_LINEITEM_READONLY)
    item = _lineitem(lineitem_id)
    return _reply(item.to_json(f"{_lineitems_url()}/{item.id}"), claims.LINEITEM_CONTENT_TYPE)


@bp.post("/ags/lineitems/<int:lineitem_id>/scores")
def post_score(lineitem_id: int):
    require_scope(claims.SCOPE_SCORE)
    item = _lineitem(lineitem_id)
    body = json_body(claims.SCORE_CONTENT_TYPE)
    problem = _score_problem(body, item)
    if problem:
        raise PracticeError(400, "invalid_request", problem)
    current_state().add_score(lineitem_id, body)
    return Response(status=204)


def _score_problem(body: dict[str, Any], item: LineItem) -> str | None:
    """What is wrong with a score body, or None (the AGS 2.0 score rules)."""
    if body.get("userId") not in {person.sub for person in PEOPLE}:
        return "userId is not a member of this course"
    if body.get("activityProgress") not in ACTIVITY_PROGRESS:
        return "activityProgress is missing or unknown"
    if body.get("gradingProgress") not in GRADING_PROGRESS:
        return "gradingProgress is missing or unknown"
    try:
        datetime.fromisoformat(str(body.get("timestamp")))
    except ValueError:
        return "timestamp must be an ISO 8601 date-time"
    given, maximum = body.get("scoreGiven"), body.get("scoreMaximum")
    if given is not None:
        if not is_number(given) or given < 0:
            return "scoreGiven must be a number >= 0"
        if not is_number(maximum) or maximum <= 0:
            return "scoreMaximum must accompany scoreGiven and be > 0"
    comment = body.get("comment")
    if comment is not None and not isinstance(comment, str):
        return "comment must be a string"
    return None


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@bp.get("/ags/lineitems/<int:lineitem_id>/results")
def results(lineitem_id: int):
    require_scope(SCOPE_RESULT)
    item = _lineitem(lineitem_id)
    url = f"{_lineitems_url()}/{item.id}"
    body = [
        {
            "id": f"{url}/results/{score.user_id}",
            "scoreOf": url,
            "userId": score.user_id,
            "resultScore": score.score_given,
            "resultMaximum": score.score_maximum,
            "comment": score.comment,
        }
        for score in current_state().latest_scores(item.id)
        if score.score_given is not None
    ]
    return _reply(body, RESULTS_CONTENT_TYPE)


@bp.get("/nrps/memberships")
def memberships():
    require_scope(claims.SCOPE_NRPS)
    settings = current_app.config["PRACTICE"]
    body = {
        "id": settings.base_url + "/nrps/memberships",
        "context": {"id": COURSE_ID, "label": "PRACTICE", "title": COURSE_TITLE},
        "members": [
            {
                "status": "Active",
                "user_id": person.sub,
                "name": person.name,
                "email": person.email,
                "roles": ROLES_BY_KIND[person.role],
            }
            for person in PEOPLE
        ],
    }
    return _reply(body, claims.MEMBERSHIPS_CONTENT_TYPE)
