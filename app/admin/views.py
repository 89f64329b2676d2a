"""/admin: sign in with the admin token, see tenants and usage, switch platforms on and off.

Views orchestrate; the queries and changes live in :mod:`app.admin.overview`.
"""

from __future__ import annotations

from flask import (
    Blueprint,
    current_app,
    flash,
    redirect,
    render_template,
    request,
    url_for,
)
from flask_babel import gettext as _

from app import privacy
from app.admin import auth, overview
from app.errors import Forbidden
from app.extensions import csrf
from app.lti import keys, registration_links
from app.models import Deployment, Platform
from app.models.base import utcnow

bp = Blueprint("admin", __name__, url_prefix="/admin", template_folder="templates")

#: Not framed by anyone (unlike the LTI pages), never cached, forms post only here.
_CSP = (
    "default-src 'self'; object-src 'none'; base-uri 'none'; img-src 'self' data:; "
    "frame-ancestors 'none'; form-action 'self'"
)


@bp.before_request
def check_csrf() -> None:
    if request.method == "POST":
        csrf.protect()


@bp.after_request
def admin_headers(response):
    response.headers["Content-Security-Policy"] = _CSP
    response.headers["X-Frame-Options"] = "DENY"
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/")
def index():
    if not auth.configured_token():
        return render_template("admin/disabled.html")
    if not auth.is_signed_in():
        return render_template("admin/sign_in.html")
    return _index()


def _index(**extra: object):
    key_dir = current_app.config["EVALUAITOR_KEY_DIR"]
    return render_template(
        "admin/index.html",
        organizations=overview.organizations(),
        keys=keys.all_keys(key_dir),
        links=registration_links.recent(),
        now=utcnow(),
        **extra,
    )


@bp.post("/registration-links")
def registration_link():
    """A one-time Dynamic Registration link for one LMS address, shown once on the page
    (only its hash is kept, and a flash message would carry it in a cookie)."""
    if not auth.is_signed_in():
        raise Forbidden(_("Sign in on the admin page first."))
    address = request.form.get("lms", "")
    hours = current_app.config["EVALUAITOR_REGISTRATION_LINK_HOURS"]
    try:
        made = registration_links.create(address, hours=hours)
    except ValueError:
        message = _("The LMS address must be an http(s) address, e.g. https://moodle.school.edu.")
        return _index(link_error=message, lms=address), 400
    url = url_for("lti.register", link=made.token, _external=True)
    return _index(new_link=url, new_link_row=made.link)


@bp.post("/privacy")
def privacy_request():
    """Export (a zip) or erase a student, course, activity or organization (app.privacy);
    an erasure needs its confirmation box ticked."""
    if not auth.is_signed_in():
        raise Forbidden(_("Sign in on the admin page first."))
    form = request.form
    platform = form.get("platform_id", "").strip()
    try:
        scope = privacy.Scope(
            form.get("scope", ""),  # type: ignore[arg-type]
            form.get("key", "").strip(),
            int(platform) if platform.isdigit() else None,
        )
        privacy.select_scope(scope)
    except (ValueError, privacy.NotFound):
        return _index(privacy_error=_("Nothing matches: check the id and the platform.")), 404
    if form.get("action") == "export":
        archive = privacy.export_scope(scope, actor="admin page")
        response = current_app.response_class(archive, mimetype="application/zip")
        response.headers["Content-Disposition"] = f'attachment; filename="{scope.kind}.zip"'
        return response
    if form.get("confirm") != "1":
        return _index(privacy_error=_("Tick the box to confirm the erasure.")), 400
    try:
        erased = privacy.erase_scope(scope, actor="admin page")
    except privacy.InProgress as exc:
        message = _(
            "Nothing was erased: %(count)s item(s) are still being graded or sent. "
            "Try again once they are done.",
            count=exc.count,
        )
        return _index(privacy_error=message), 409
    flash(_("Erased %(what)s.", what=erased.label))
    return redirect(url_for("admin.index"), code=303)


@bp.post("/sign-in")
def sign_in():
    if not auth.configured_token():
        return render_template("admin/disabled.html"), 404
    if auth.sign_in(request.form.get("token", "")):
        return redirect(url_for("admin.index"), code=303)
    error = _("That is not the admin token.")
    return render_template("admin/sign_in.html", error=error), 401


@bp.post("/sign-out")
def sign_out():
    auth.sign_out()
    return redirect(url_for("admin.index"), code=303)


@bp.post("/platforms/<int:platform_id>/active")
def platform_active(platform_id: int):
    platform = _switch(Platform, platform_id)
    flash(_("Platform %(name)s is %(state)s.", name=platform.name, state=_state(platform)))
    return redirect(url_for("admin.index"), code=303)


@bp.post("/deployments/<int:deployment_id>/active")
def deployment_active(deployment_id: int):
    deployment = _switch(Deployment, deployment_id)
    flash(
        _("Deployment %(id)s is %(state)s.", id=deployment.deployment_id, state=_state(deployment))
    )
    return redirect(url_for("admin.index"), code=303)


@bp.post("/organizations/<int:organization_id>/limits")
def organization_limits(organization_id: int):
    """An organization's monthly spend limits (all its platforms and API evaluations)."""
    if not auth.is_signed_in():
        raise Forbidden(_("Sign in on the admin page first."))
    try:
        org = overview.set_limits(
            organization_id, request.form.get("cost", ""), request.form.get("tokens", "")
        )
    except ValueError:
        message = _("A limit must be a number from 0 up (tokens: a whole number), or empty.")
        return _index(limits_error=message, limits_org=organization_id), 400
    flash(_("The monthly limits of %(name)s are saved.", name=org.name))
    return redirect(url_for("admin.index"), code=303)


@bp.post("/organizations/<int:organization_id>/model-servers")
def model_servers(organization_id: int):
    """The only model servers that may receive the organization's students' work."""
    if not auth.is_signed_in():
        raise Forbidden(_("Sign in on the admin page first."))
    try:
        org = overview.set_model_servers(organization_id, request.form.get("urls", ""))
    except ValueError as exc:
        flash(_("The model servers were not changed: %(problem)s", problem=str(exc)))
    else:
        allowed = ", ".join(org.model_base_urls or ()) or _("any the site allows")
        flash(_("Model servers allowed for %(name)s: %(urls)s", name=org.name, urls=allowed))
    return redirect(url_for("admin.index"), code=303)


def _switch(model: type[Platform] | type[Deployment], row_id: int):
    """Set the row's state to the form's ``active`` field, for a signed-in admin only."""
    if not auth.is_signed_in():
        raise Forbidden(_("Sign in on the admin page first."))
    return overview.set_active(model, row_id, request.form.get("active") == "1")


def _state(row: Platform | Deployment) -> str:
    return _("on") if row.is_active else _("off")
