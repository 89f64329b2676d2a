"""LTI endpoints: OIDC login initiation, launch, the tool's public keys, registration."""

from __future__ import annotations

import math
from typing import Any

from flask import (
    Blueprint,
    current_app,
    g,
    jsonify,
    redirect,
    render_template,
    request,
    url_for,
)
from flask_babel import lazy_gettext as _l

from app import outbound, ratelimit
from app.errors import Forbidden, LaunchError
from app.extensions import redis_connection
from app.i18n import LAUNCH_LOCALE
from app.lms import activities
from app.lti import (
    claims,
    deep_linking,
    keys,
    notices,
    platform_storage,
    processor_launches,
    registration,
    registration_links,
    session,
)
from app.lti.launch import launch_registration, unverified_claims, validated_launch
from app.lti.tool_config import find_platform
from app.models import Deployment, Platform
from app.models.base import as_utc, utcnow

bp = Blueprint("lti", __name__, url_prefix="/lti")
# Launches whose state cookie the browser blocked (see app.lti.platform_storage).
bp.after_request(platform_storage.hold_redirect_for_check)


@bp.route("/login", methods=["GET", "POST"])
def login():
    """Third-party initiated login: check the platform, then redirect to its auth endpoint."""
    params = request.values
    if not params.get("iss") or not params.get("login_hint"):
        raise LaunchError(detail="login initiation without iss or login_hint")
    platform = find_platform(params["iss"], params.get("client_id"))
    return platform_storage.start_login(platform, url_for("lti.launch", _external=True))


@bp.post("/launch")
def launch():
    """Validate the id_token, record what it describes, and open the right page."""
    unverified = unverified_claims(request.form.get("id_token", ""))
    # Its error and cookie pages speak the launch's language (a choice of words only, so
    # the claim may be read before the signature is checked).
    presentation = unverified.get(claims.LAUNCH_PRESENTATION)
    if isinstance(presentation, dict) and isinstance(presentation.get("locale"), str):
        g.setdefault(LAUNCH_LOCALE, presentation["locale"])
    platform, deployment = launch_registration(unverified)
    deep_linking.check_request(unverified)
    message = validated_launch(platform, deployment)
    body = message.get_launch_data()
    if body.get(claims.MESSAGE_TYPE) == deep_linking.DEEP_LINKING_REQUEST:
        if not claims.is_staff(body.get(claims.ROLES) or []):
            raise Forbidden(deep_linking.TEACHERS_ONLY)
        draft = session.record_deep_link(
            platform, deployment, body, launch_id=message.get_launch_id()
        )
        return redirect(url_for("setup.setup", token=session.issue_token(draft)), code=303)
    if body.get(claims.MESSAGE_TYPE) in processor_launches.MESSAGE_TYPES:
        return _processor_launch(platform, deployment, body, message.get_launch_id())
    if body.get(claims.MESSAGE_TYPE) != claims.RESOURCE_LINK_REQUEST:
        raise LaunchError(
            _l("Evaluaitor does not handle this kind of launch yet."),
            detail=f"message type {body.get(claims.MESSAGE_TYPE)!r}",
        )
    new_session = session.record_launch(
        platform,
        deployment,
        body,
        launch_id=message.get_launch_id(),
        default_max_score=current_app.config["EVALUAITOR_DEFAULT_MAX_SCORE"],
    )
    ags = body.get(claims.AGS_ENDPOINT)
    if isinstance(ags, dict) and ags.get("lineitems") and not ags.get("lineitem"):
        activities.record_own_column(new_session.activity_id)
    token = session.issue_token(new_session)
    return redirect(url_for("web.activity", token=token), code=303)


def _processor_launch(
    platform: Platform, deployment: Deployment, body: dict[str, Any], launch_id: str
):
    """An attached processor's settings, or a report's review (app.lti.processor_launches)."""
    if body[claims.MESSAGE_TYPE] == claims.ASSET_PROCESSOR_SETTINGS_REQUEST:
        token = session.issue_token(
            processor_launches.open_settings(platform, deployment, body, launch_id)
        )
        return redirect(url_for("setup.settings", token=token), code=303)
    report = processor_launches.open_report(platform, deployment, body, launch_id)
    token = session.issue_token(report.session)
    if report.submission is None:
        return render_template(
            "lti/report_pending.html",
            token=token,
            activity=report.activity,
            is_staff=report.session.is_staff,
        )
    if report.session.is_staff:
        target = url_for("web.submission_detail", token=token, submission_id=report.submission.id)
        return redirect(target, code=303)
    return redirect(url_for("web.activity", token=token), code=303)


@bp.post("/notices", endpoint="notices")
def notices_handler():
    """The Platform Notification Service's notice handler (app.lti.notices): answered as
    soon as each notice is verified and stored; the work is queued."""
    if (request.content_length or 0) > notices.MAX_BODY_BYTES:
        return jsonify(error="body too large"), 413
    raw = request.stream.read(notices.MAX_BODY_BYTES + 1)
    if len(raw) > notices.MAX_BODY_BYTES:
        return jsonify(error="body too large"), 413
    try:
        tokens = notices.read_body(raw)
    except notices.Refused as exc:
        return jsonify(error=str(exc)), exc.status
    status, body = notices.answer(tokens)
    return ("", status) if body is None else (jsonify(body), status)


@bp.post("/resume")
def resume():
    """A launch the frame could not check for its cookie, opened in a new window."""
    return platform_storage.take_handoff(request.form.get("handoff", ""))


@bp.get("/jwks")
def jwks():
    response = jsonify(keys.jwks(current_app.config["EVALUAITOR_KEY_DIR"]))
    response.cache_control.max_age = 300
    response.cache_control.public = True
    return response


@bp.get("/register", defaults={"link": ""})
@bp.get("/register/<link>")
def register(link: str):
    """LTI Dynamic Registration, opened by the LMS admin from the LMS's tool registration,
    with a link an Evaluaitor admin made for that LMS (app.lti.registration_links).

    Without a valid link for the configuration URL's origin nothing is fetched. Anyone may
    still open it, so each client address gets a few tries per window (request.remote_addr
    is the client's once ProxyFix trusts the proxy).
    """
    config = current_app.config
    wait = ratelimit.hit(
        redis_connection(),
        f"lti-register:{request.remote_addr}",
        config["EVALUAITOR_REGISTER_RATE_LIMIT"],
        config["EVALUAITOR_REGISTER_RATE_WINDOW"],
    )
    if wait is not None:
        message = _l(
            "Too many registration attempts from your address. Try again in %(minutes)s min.",
            minutes=math.ceil(wait.seconds / 60),
        )
        return render_template("error.html", status=429, message=message), 429, wait.headers
    started = utcnow()
    configuration_url = request.args.get("openid_configuration", "")
    registration_token = request.args.get("registration_token", "")
    registration.check_parameters(configuration_url, registration_token)
    taken = registration_links.take(link, configuration_url)
    try:
        platform, deployment = registration.register(
            configuration_url,
            registration_token,
            _tool_urls(),
            timeout=config["EVALUAITOR_AGS_TIMEOUT"],
            activate=bool(config["EVALUAITOR_REGISTRATION_AUTO_ACTIVATE"]),
            private=outbound.private_access(config),
        )
    except Exception:
        registration_links.give_back(taken)
        raise
    registration_links.record(taken, platform)
    # A platform Evaluaitor knew before: the LMS updated its registration (Moodle's "Update")
    # and keeps the tool's state there, so the page must not call it pending.
    is_update = as_utc(platform.created_at) < started
    return render_template(
        "lti/registered.html", platform=platform, deployment=deployment, is_update=is_update
    )


@bp.get("/canvas.json")
def canvas_json():
    """The Canvas developer-key configuration, with this server's addresses."""
    return jsonify(registration.canvas_configuration(_tool_urls()))


def _tool_urls() -> registration.ToolUrls:
    """The tool's addresses as this request reached it (behind a proxy: its public URL)."""
    return registration.ToolUrls(
        login=url_for("lti.login", _external=True),
        launch=url_for("lti.launch", _external=True),
        jwks=url_for("lti.jwks", _external=True),
    )
