"""The native assignment's services, answered as Canvas answers them: the Platform
Notification Service (where the tool registers its notice handler), the Asset Service (the
submitted bytes) and the Asset Report Service (the tool's reports).

Each checks the bearer token's scope (tokens from the platform's own token endpoint,
:mod:`app.practice.services`) and validates as Canvas's notice handler and asset processor
controllers and its asset report model do, so a tool that passes here is not surprised by it.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from flask import Blueprint, Response, current_app, jsonify, redirect, request, url_for
from itsdangerous import BadData, URLSafeTimedSerializer

from app.lti import claims
from app.practice.assignment import (
    NOTICE_TYPES,
    NewerReportExists,
    Processor,
    current_assignment,
    parse_timestamp,
)
from app.practice.errors import PracticeError
from app.practice.names import CLIENT_ID, DEPLOYMENT_ID
from app.practice.services import is_number, json_body, require_scope

bp = Blueprint("practice_processor", __name__)

JSON = "application/json"
#: How long the Asset Service's redirect to the bytes stays good (Canvas's file verifier).
DOWNLOAD_LIFETIME = 300
#: The report fields Canvas reads; other keys are kept only when namespaced (a URL).
REPORT_FIELDS = (
    "assetId",
    "type",
    "timestamp",
    "title",
    "result",
    "comment",
    "indicationColor",
    "indicationAlt",
    "errorCode",
    "priority",
    "processingProgress",
    "visibleToOwner",
)
#: Optional text fields and their (minimum, maximum) lengths (Canvas's Lti::AssetReport).
TEXT_LIMITS = {
    "title": (1, 1024),
    "result": (0, 255),
    "comment": (1, 64 * 1024),
    "indicationAlt": (1, 1024),
    "errorCode": (1, 1024),
}
MAX_TYPE = 1024
MAX_EXTENSIONS = 1024 * 1024
COLOR = re.compile(r"#[0-9a-fA-F]{6}")


def _bad(message: str) -> PracticeError:
    return PracticeError(400, "bad_request", message)


# -- Platform Notification Service ---------------------------------------------------------


@bp.get("/pns/notice-handlers")
def notice_handlers():
    require_scope(claims.SCOPE_NOTICE_HANDLERS)
    return jsonify(_catalogue())


@bp.put("/pns/notice-handlers")
def set_notice_handler():
    """Register (or, with ``""``, remove) the one handler of a notice type."""
    require_scope(claims.SCOPE_NOTICE_HANDLERS)
    body = json_body(JSON)
    notice_type, handler = body.get("notice_type"), body.get("handler")
    if not isinstance(notice_type, str) or not notice_type:
        raise _bad("notice_type is required")
    if notice_type not in NOTICE_TYPES:
        raise _bad(f"unsupported notice_type {notice_type!r}")
    if not isinstance(handler, str):
        raise _bad("handler must be a valid URL or an empty string")
    if handler and not _is_tool_url(handler):
        raise _bad("the handler's domain must match the tool's domain")
    current_assignment().set_handler(notice_type, handler)
    return jsonify(_catalogue())


def _catalogue() -> dict[str, Any]:
    handlers = current_assignment().handlers
    return {
        "client_id": CLIENT_ID,
        "deployment_id": DEPLOYMENT_ID,
        "notice_handlers": [
            {"notice_type": kind, "handler": handlers.get(kind, "")} for kind in NOTICE_TYPES
        ],
    }


def _is_tool_url(url: str) -> bool:
    """An http(s) URL on the tool's own host (Canvas: the tool's domain)."""
    parts, tool = urlsplit(url), urlsplit(current_app.config["PRACTICE"].tool_url)
    return parts.scheme in ("http", "https") and parts.hostname == tool.hostname


# -- Asset Service -------------------------------------------------------------------------


def _downloads() -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(current_app.config["SECRET_KEY"], salt="practice.asset")


def _processor(processor_id: int) -> Processor:
    processor = current_assignment().processors.get(processor_id)
    if processor is None:
        raise PracticeError(404, "not_found", "no such asset processor")
    return processor


@bp.get("/ap/<int:processor_id>/assets/<asset_id>")
def asset(processor_id: int, asset_id: str):
    """Canvas answers with a redirect to the stored file: a client must follow it."""
    require_scope(claims.SCOPE_ASSET_READONLY)
    _processor(processor_id)
    if current_assignment().asset(asset_id) is None:
        raise PracticeError(404, "not_found", "no such asset")
    verifier = _downloads().dumps(asset_id)
    return redirect(
        url_for(".download", asset_id=asset_id, verifier=verifier, _external=True), code=302
    )


@bp.get("/ap/files/<asset_id>")
def download(asset_id: str):
    """The bytes, for a short-lived signed link (no token: the redirect carries the right)."""
    try:
        allowed = _downloads().loads(request.args.get("verifier", ""), max_age=DOWNLOAD_LIFETIME)
    except BadData as exc:
        raise PracticeError(403, "forbidden", "missing or expired download link") from exc
    found = current_assignment().asset(asset_id)
    if allowed != asset_id or found is None:
        raise PracticeError(403, "forbidden", "this link is for another asset")
    return Response(current_assignment().asset_bytes(found), mimetype=found.content_type)


# -- Asset Report Service ------------------------------------------------------------------


@bp.post("/ap/<int:processor_id>/reports")
def create_report(processor_id: int):
    """Store a report: 201 with what was stored, 409 when a newer one of its type exists."""
    require_scope(claims.SCOPE_REPORT)
    _processor(processor_id)
    body = json_body(JSON)
    report, when = validated_report(body)
    try:
        current_assignment().add_report(processor_id, report, when)
    except NewerReportExists as exc:
        raise PracticeError(409, "conflict", "An existing report has a newer timestamp") from exc
    response = jsonify(report)
    response.status_code = 201
    return response


def validated_report(body: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """The report as stored (its fields, ``priority`` defaulted to 0, ``visibleToOwner`` to
    false, namespaced extensions) and its timestamp; PracticeError (400) for what Canvas
    refuses."""
    if not isinstance(body.get("type"), str) or not body["type"]:
        raise _bad("type must be a non-empty string")
    if len(body["type"]) > MAX_TYPE:
        raise _bad("type is too long")
    when = parse_timestamp(body.get("timestamp"))
    if when is None:
        raise _bad("A valid ISO8601 timestamp must be provided")
    if (
        not isinstance(body.get("assetId"), str)
        or current_assignment().asset(body["assetId"]) is None
    ):
        raise _bad("Invalid asset")
    if not isinstance(body.get("processingProgress"), str) or not body["processingProgress"]:
        raise _bad("processingProgress is required")
    for name, (shortest, longest) in TEXT_LIMITS.items():
        value = body.get(name)
        if value is not None and (
            not isinstance(value, str) or not shortest <= len(value) <= longest
        ):
            raise _bad(f"{name} must be a string of {shortest} to {longest} characters")
    color = body.get("indicationColor")
    if color is not None and (not isinstance(color, str) or not COLOR.fullmatch(color)):
        raise _bad("Indication color must be a valid hex code")
    priority = body.get("priority", 0)
    if priority is None:
        priority = 0
    if not is_number(priority) or priority != int(priority) or not 0 <= priority <= 5:
        raise _bad("priority must be an integer from 0 to 5")
    visible = body.get("visibleToOwner", False)
    if visible is None:
        visible = False
    if not isinstance(visible, bool):
        raise _bad("visibleToOwner must be true or false")
    extensions = {
        key: value
        for key, value in body.items()
        if key not in REPORT_FIELDS and key.startswith(("http://", "https://"))
    }
    if len(repr(extensions)) > MAX_EXTENSIONS:
        raise _bad("extensions size limit exceeded")
    stored = {k: body[k] for k in REPORT_FIELDS if body.get(k) is not None}
    stored |= {"priority": int(priority), "visibleToOwner": visible}
    return stored | extensions, when
