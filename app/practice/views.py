"""The practice platform's pages: the course page, the OIDC launch steps, the storage frame
and the deep linking return."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, current_app, render_template, request
from flask_babel import gettext as _

from app.lti import claims
from app.practice import exercise
from app.practice.errors import PracticeError
from app.practice.messages import (
    CONTENT_ITEMS,
    DEEP_LINKING_RESPONSE,
    DL_DATA,
    id_token,
    launch_claims,
    message_hint,
    read_deep_link_data,
    read_message_hint,
    verify_tool_jwt,
)
from app.practice.names import CLIENT_ID, DEPLOYMENT_ID, STORAGE_FRAME, TOOL_FRAME
from app.practice.services import is_number
from app.practice.state import LAUNCHING_AS, PEOPLE, Link, current_state

bp = Blueprint("practice", __name__)


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
        storage_frame=STORAGE_FRAME,
        exercise_link=exercise.LINK_ID,
        samples=exercise.SAMPLES,
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
    target = "window" if request.args.get("window") else "iframe"
    settings = current_app.config["PRACTICE"]
    person = LAUNCHING_AS[role]
    params = {
        "iss": settings.issuer,
        "login_hint": person.sub,
        "target_link_uri": settings.tool_launch_url,
        "lti_message_hint": message_hint(person=person, link_id=link_id, target=target),
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
    link = current_state().links.get(hint["link"]) if hint["link"] else None
    if hint["link"] and link is None:
        raise _refuse(_("This activity no longer exists."))
    body = launch_claims(
        person=person,
        nonce=params["nonce"],
        target=hint["target"],
        link=link,
        services={
            "lineitems": settings.base_url + "/ags/lineitems",
            "memberships": settings.base_url + "/nrps/memberships",
        },
    )
    fields = {"id_token": id_token(body)}
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
    if read_deep_link_data(body.get(DL_DATA)) != teacher.sub:
        raise _refuse(_("The deep linking response does not carry our request's data."))
    added = [_add_link(item) for item in _content_items(body)]
    return render_template("practice/returned.html", added=added)


def _content_items(body: dict[str, Any]) -> list[dict[str, Any]]:
    items = body.get(CONTENT_ITEMS)
    if not isinstance(items, list) or len(items) > 1:
        raise _refuse(_("Expected at most one content item."))
    for item in items:
        if not isinstance(item, dict) or item.get("type") != "ltiResourceLink":
            raise _refuse(_("Only ltiResourceLink content items are accepted."))
    return items


def _add_link(item: dict[str, Any]) -> Link:
    custom = item.get("custom") or {}
    if not isinstance(custom, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in custom.items()
    ):
        raise _refuse(_("Custom parameters must be strings."))
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
