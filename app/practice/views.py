"""The practice platform's pages: the course page, the OIDC launch steps, the storage frame
and the deep linking return (a link for the course, or processors for the native assignment)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from flask import Blueprint, current_app, render_template, request
from flask_babel import gettext as _

from app.lti import claims
from app.practice import assignment, exercise
from app.practice.assignment import current_assignment
from app.practice.errors import PracticeError
from app.practice.messages import (
    CONTENT_ITEMS,
    DEEP_LINKING_RESPONSE,
    DL_DATA,
    LINK_ITEM,
    launch_claims,
    message_hint,
    processor_claims,
    read_deep_link_data,
    read_message_hint,
    sign,
    verify_tool_jwt,
)
from app.practice.names import CLIENT_ID, DEPLOYMENT_ID, STORAGE_FRAME, TOOL_FRAME
from app.practice.services import is_number
from app.practice.state import LAUNCHING_AS, PEOPLE, Link, Person, current_state

bp = Blueprint("practice", __name__)
#: Processors one "Add document processing app" may attach (Canvas accepts several).
MAX_PROCESSORS = 5


def _refuse(message: str) -> PracticeError:
    return PracticeError(400, "invalid_request", message, is_api=False)


@bp.get("/")
def index():
    state = current_state()
    names = {person.sub: person.name for person in PEOPLE}
    columns = {item.id: item.label for item in state.lineitems.values()}
    rows = [  # newest first: activity (gradebook column), student, score
        (columns[score.lineitem_id], names.get(score.user_id, score.user_id), score)
        for score in reversed(state.scores)
    ]
    return render_template(
        "practice/index.html",
        links=list(state.links.values()),
        rows=rows,
        tool_frame=TOOL_FRAME,
        storage_frame_name=STORAGE_FRAME,
        exercise_link=exercise.LINK_ID,
        samples=exercise.SAMPLES,
        native_title=assignment.TITLE,
    )


@bp.get("/storage")
def storage_frame():
    """The frame named in ``lti_storage_target``: it keeps the tool's state and nonce."""
    return render_template(
        "practice/storage.html", tool_origin=current_app.config["PRACTICE"].tool_origin
    )


@bp.get("/launch")
def start_launch():
    """Third-party login initiation: send the browser to the tool's OIDC login URL."""
    role, _space, link_id = request.args.get("launch", "").partition(" ")
    link_id = link_id or None
    if role not in LAUNCHING_AS:
        raise _refuse(_("Unknown role."))
    if link_id is not None and link_id not in current_state().links:
        raise _refuse(_("Unknown activity."))
    if link_id is None and role != "teacher":
        raise _refuse(_("Only a teacher adds activities."))
    return login_initiation(LAUNCHING_AS[role], link_id=link_id)


def login_initiation(
    person: Person,
    *,
    link_id: str | None = None,
    processor: dict[str, Any] | None = None,
    target_link_uri: str | None = None,
):
    """The page that posts the OIDC login initiation to the tool, for a launch the signed
    hint describes; the ``window`` and ``no_storage`` choices come from the request."""
    target = "window" if request.args.get("window") else "iframe"
    settings = current_app.config["PRACTICE"]
    hint = message_hint(person=person, link_id=link_id, target=target, processor=processor)
    params = {
        "iss": settings.issuer,
        "login_hint": person.sub,
        "target_link_uri": target_link_uri or settings.tool_launch_url,
        "lti_message_hint": hint,
        "client_id": CLIENT_ID,
        "lti_deployment_id": DEPLOYMENT_ID,
    }
    if target == "iframe" and not request.args.get("no_storage"):
        # Inside our page the tool can keep its login state in our storage frame.
        params["lti_storage_target"] = STORAGE_FRAME
    return render_template(
        "practice/autopost.html", action=settings.tool_login_url, fields=params, method="post"
    )


@bp.route("/auth", methods=["GET", "POST"])
def authorize():
    """The OIDC authorization endpoint: check the tool's request, answer with a signed
    id_token posted to the registered redirect URI."""
    params = request.values
    settings = current_app.config["PRACTICE"]
    expected = {
        "scope": "openid",
        "response_type": "id_token",
        "response_mode": "form_post",
        "prompt": "none",
        "client_id": CLIENT_ID,
    }
    for name, value in expected.items():
        if params.get(name) != value:
            raise _refuse(_("The authorization request needs %(field)s.", field=f"{name}={value}"))
    if params.get("redirect_uri") != settings.tool_launch_url:
        raise _refuse(_("The redirect_uri is not registered for this tool."))
    if not params.get("nonce"):
        raise _refuse(_("The authorization request has no nonce."))
    hint = read_message_hint(params.get("lti_message_hint", ""))
    if hint["sub"] != params.get("login_hint"):
        raise _refuse(_("The login hint does not match the launch."))
    person = next(p for p in PEOPLE if p.sub == hint["sub"])
    services = {
        "lineitems": settings.base_url + "/ags/lineitems",
        "memberships": settings.base_url + "/nrps/memberships",
    }
    if hint.get("processor"):
        body = processor_claims(
            person=person,
            nonce=params["nonce"],
            target=hint["target"],
            services=services,
            message=hint["processor"],
        )
    else:
        link = current_state().links.get(hint["link"]) if hint["link"] else None
        if hint["link"] and link is None:
            raise _refuse(_("This activity no longer exists."))
        body = launch_claims(
            person=person,
            nonce=params["nonce"],
            target=hint["target"],
            link=link,
            services=services,
        )
    fields = {"id_token": sign(body)}
    if params.get("state"):
        fields["state"] = params["state"]
    return render_template(
        "practice/autopost.html", action=settings.tool_launch_url, fields=fields, method="post"
    )


@bp.post("/deep-link-return")
def deep_link_return():
    """Verify the tool's LtiDeepLinkingResponse and add the link it describes."""
    settings = current_app.config["PRACTICE"]
    token = request.form.get("JWT", "")
    body = verify_tool_jwt(token, audience=settings.issuer, required=["nonce"])
    if body.get(claims.MESSAGE_TYPE) != DEEP_LINKING_RESPONSE:
        raise _refuse(_("This is not a deep linking response."))
    if body.get(claims.DEPLOYMENT_ID) != DEPLOYMENT_ID:
        raise _refuse(_("The deep linking response names another deployment."))
    teacher = LAUNCHING_AS["teacher"]
    asked = read_deep_link_data(body.get(DL_DATA))
    if asked is None or asked[0] != teacher.sub:
        raise _refuse(_("The deep linking response does not carry our request's data."))
    if asked[1] == claims.ASSET_PROCESSOR_ITEM:  # "Add document processing app"
        items = _content_items(body, claims.ASSET_PROCESSOR_ITEM, most=MAX_PROCESSORS)
        attached = current_assignment().attach([_processor_item(item) for item in items])
        return render_template(
            "practice/returned.html", added=attached, attached=True, native_title=assignment.TITLE
        )
    added = [_add_link(item) for item in _content_items(body, LINK_ITEM, most=1)]
    return render_template("practice/returned.html", added=added, attached=False)


def _content_items(body: dict[str, Any], accepted: str, most: int) -> list[dict[str, Any]]:
    """The response's items: at most ``most``, all of the one type the request accepted."""
    items = body.get(CONTENT_ITEMS)
    if not isinstance(items, list) or len(items) > most:
        raise _refuse(_("Expected at most %(count)s content item(s).", count=most))
    for item in items:
        if not isinstance(item, dict) or item.get("type") != accepted:
            raise _refuse(_("Only %(type)s content items are accepted.", type=accepted))
    return items


def _custom(value: Any) -> dict[str, str]:
    """A content item's custom parameters: strings only, as an LMS stores them."""
    custom = value or {}
    if not isinstance(custom, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in custom.items()
    ):
        raise _refuse(_("Custom parameters must be strings."))
    return custom


def _processor_item(item: dict[str, Any]) -> dict[str, Any]:
    """What an ``ltiAssetProcessor`` item gives the attached processor (Canvas keeps the
    title, text, custom parameters and the report's URL and custom parameters)."""
    report = item.get("report") or {}
    if not isinstance(report, dict):
        raise _refuse(_("The report must be an object."))
    urls = [item.get("url"), report.get("url")]
    if not all(url is None or (isinstance(url, str) and _is_http(url)) for url in urls):
        raise _refuse(_("A URL in the item is not an http(s) URL."))
    return {
        "title": str(item.get("title") or assignment.TITLE)[:200],
        "text": str(item.get("text") or "")[:2000],
        "url": urls[0],
        "custom": _custom(item.get("custom")),
        "report_url": urls[1],
        "report_custom": _custom(report.get("custom")),
    }


def _is_http(url: str) -> bool:
    return urlsplit(url).scheme in ("http", "https") and bool(urlsplit(url).netloc)


def _add_link(item: dict[str, Any]) -> Link:
    custom = _custom(item.get("custom"))
    line = item.get("lineItem")
    maximum = label = resource_id = tag = None
    if line is not None:
        if not isinstance(line, dict):
            raise _refuse(_("lineItem must be an object."))
        maximum = line.get("scoreMaximum")
        if not is_number(maximum) or maximum <= 0:
            raise _refuse(_("lineItem.scoreMaximum must be a positive number."))
        label, resource_id, tag = line.get("label"), line.get("resourceId"), line.get("tag")
    title = str(item.get("title") or label or "Evaluaitor activity")[:200]
    return current_state().add_link(
        title,
        custom=custom,
        score_maximum=float(maximum) if maximum is not None else None,
        label=str(label) if label else None,
        resource_id=str(resource_id) if resource_id else None,
        tag=str(tag) if tag else None,
    )
