"""Setting an activity up: the deep-linking setup form, its answer to the LMS, and the
settings page teachers reach from the teacher page. Both forms save through
:func:`app.lms.activities.configure`, the same rules the CLI uses.

Routes are addressed by a page token (see :mod:`app.lti.session`) and open to staff only.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import Any

from flask import (
    Blueprint,
    Response,
    current_app,
    jsonify,
    redirect,
    render_template,
    request,
    url_for,
)
from flask_babel import get_locale
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l

from app import spend
from app.errors import Forbidden, NotFound
from app.extensions import db
from app.extract.kinds import KIND_BY_EXTENSION
from app.grading import registry
from app.grading.rubric import RubricError
from app.lms import activities
from app.lms.activities import KIND_LABELS, SettingsError
from app.lti import deep_linking, lineitem_sync, notice_handlers, passback
from app.lti.session import LaunchSession, load
from app.models import Activity, Deployment, LineItemUpdate, Platform
from app.web import setup_form

log = logging.getLogger(__name__)
bp = Blueprint("setup", __name__, url_prefix="/l/<token>")

RELEASE_LABELS: dict[str, Any] = {
    "auto": _l("Release every grade at once"),
    "hold_flagged": _l("Hold flagged grades for me to review"),
    "hold_all": _l("Hold every grade until I release it"),
}


@bp.get("/setup")
def setup(token: str):
    """The form a teacher fills in after choosing Evaluaitor in the LMS's activity chooser."""
    session, activity = _staff_activity(token)
    settings = _deep_linking_settings(session, activity)
    values = _stored_values(activity)
    values["title"] = values["title"] or str(settings.get("title") or "")
    return _form_page(token, activity, "setup", values)


@bp.post("/setup")
def save_setup(token: str):
    """Store the settings and answer the LMS with one item for the activity: a resource link,
    or an attached processor once its notice handler is registered (without it the LMS would
    never say that work was submitted, so nothing is attached)."""
    session, activity = _staff_activity(token)
    _deep_linking_settings(session, activity)
    failed = _save(token, session, activity, "setup", initial=activity.resource_link_id is None)
    if failed is not None:
        return failed
    if activity.is_asset_processor:
        try:
            notice_handlers.register_submission_handler(
                activity, url_for("lti.notices", _external=True)
            )
        except notice_handlers.NoticeHandlerError as exc:
            log.warning("activity %s: notice handler not registered: %s", activity.id, exc)
            values = _stored_values(activity)
            return _form_page(token, activity, "setup", values, attach_error=True), 502
    answer = deep_linking.answer(
        db.session.get(Platform, session.platform_id),
        db.session.get(Deployment, activity.deployment_id),
        session.launch_id,
        activity,
        url_for("lti.launch", _external=True),
    )
    return render_template("setup_return.html", answer=answer, activity=activity)


@bp.get("/settings")
def settings(token: str):
    """The same form, prefilled, for an activity already in use."""
    _, activity = _staff_activity(token)
    saved = request.args.get("saved") == "1"
    return _form_page(token, activity, "settings", _stored_values(activity), saved=saved)


@bp.post("/settings")
def save_settings(token: str):
    session, activity = _staff_activity(token)
    failed = _save(token, session, activity, "settings", initial=False)
    if failed is not None:
        return failed
    return redirect(url_for("setup.settings", token=token, saved=1), code=303)


@bp.post("/gradebook-column/retry")
def retry_column_update(token: str):
    """Send the activity's title and maximum to its LMS gradebook column again."""
    activity = _staff_activity(token)[1]
    update = passback.outstanding(activity)
    if update is None or not update.resendable:
        raise Forbidden(
            _("Only a failed or retrying update of the gradebook column can be sent again.")
        )
    lineitem_sync.retry(update)
    return redirect(url_for("web.activity", token=token), code=303)


@bp.post("/rubric/parse")
def parse_rubric(token: str):
    """Read pasted or imported rubric text (YAML or JSON) for the rubric editor."""
    _staff_activity(token)
    try:
        rubric = activities.rubric_from_text(request.form.get("text", ""))
    except RubricError as exc:
        return jsonify(error="invalid_rubric", message=str(exc)), 400
    return jsonify(rubric=rubric.model_dump(mode="json") if rubric else None)


@bp.get("/rubric.<fmt>")
def export_rubric(token: str, fmt: str):
    """The stored rubric as a YAML or JSON download."""
    activity = _staff_activity(token)[1]  # not "_, activity": _ is gettext here
    if fmt not in ("yaml", "json") or not activity.rubric:
        raise NotFound(_("This activity has no rubric to export."))
    media = "application/json" if fmt == "json" else "application/yaml"
    return Response(
        activities.rubric_to_text(activity.rubric, fmt),
        mimetype=media,
        headers={"Content-Disposition": f'attachment; filename="rubric.{fmt}"'},
    )


# -- template helpers --------------------------------------------------------------------------


@bp.app_template_global()
def upload_accept(activity: Activity) -> str:
    """The file input's ``accept`` attribute: the extensions of the activity's kinds."""
    kinds = activities.accepted_kinds(activity)
    return ",".join(sorted(ext for ext, kind in KIND_BY_EXTENSION.items() if kind in kinds))


@bp.app_template_global()
def upload_kinds(activity: Activity) -> str:
    """The accepted kinds in words, e.g. "PDF, Word (.docx)"."""
    return _kinds_in_words(activities.accepted_kinds(activity), str(get_locale()))


@lru_cache(maxsize=256)
def _kinds_in_words(kinds: frozenset, locale: str) -> str:
    """Translations do not change while the app runs: each combination of kinds is put into
    words once per language, not on every student page (``locale`` is the cache key)."""
    return ", ".join(str(label) for kind, label in KIND_LABELS.items() if kind in kinds)


@bp.app_template_global()
def column_update(activity: Activity) -> LineItemUpdate | None:
    """For the teacher page: a change of title or maximum the LMS column does not have yet."""
    return passback.outstanding(activity)


@bp.app_template_global()
def upload_limit_mb(activity: Activity) -> float:
    return activities.upload_limit_mb(activity, current_app.config["EVALUAITOR_MAX_UPLOAD_MB"])


# -- helpers ---------------------------------------------------------------------------------


def _staff_activity(token: str) -> tuple[LaunchSession, Activity]:
    session = load(token)
    if not session.is_staff:
        raise Forbidden(_("Only teachers can change how an activity is set up."))
    activity = db.session.get(Activity, session.activity_id)
    if activity is None or activity.platform_id != session.platform_id:
        raise NotFound()
    return session, activity


def _deep_linking_settings(session: LaunchSession, activity: Activity) -> dict[str, Any]:
    """The LMS's deep-linking settings for this page; refused when it came from no such launch."""
    settings = deep_linking.launch_settings(
        db.session.get(Platform, session.platform_id),
        db.session.get(Deployment, activity.deployment_id),
        session.launch_id,
    )
    if settings is None:
        raise deep_linking.DeepLinkingExpired(detail=f"no deep-linking launch {session.launch_id}")
    return settings


def _save(
    token: str, session: LaunchSession, activity: Activity, mode: str, *, initial: bool
) -> tuple[str, int] | None:
    """Validate and store the posted form; the page with every error (400) if anything is
    wrong, with what the teacher typed kept; None once saved."""
    form = request.form
    values = _typed_values(form)
    problems: dict[str, str] = {}
    params: dict[str, Any] | None = None
    try:
        plugin = registry.get(values["plugin"])
    except registry.PluginError as exc:
        problems["plugin"] = str(exc)
    else:
        params, params_problems = setup_form.read_params(plugin, form)
        problems.update(params_problems)
    if not values["accepted_kinds"]:
        problems["accepted_kinds"] = _("Choose at least one kind of file.")
    rubric_text = values["rubric"]
    rubric_file = request.files.get("rubric_file")
    if rubric_file and rubric_file.filename:
        rubric_text = rubric_file.read(activities.MAX_RUBRIC_BYTES + 1).decode("utf-8", "replace")
        values["rubric"] = rubric_text
    reference = None
    if form.get("reference_clear"):
        reference = ""
    upload = request.files.get("reference_file")
    if upload and upload.filename:
        try:
            reference = setup_form.reference_text(
                upload, current_app.config["EVALUAITOR_DATA_DIR"], _site_limit_bytes()
            )
        except ValueError as exc:
            problems["reference"] = str(exc)
    site_model = current_app.config["EVALUAITOR_LLM_MODEL"]
    try:
        activities.configure(
            activity,
            title=values["title"],
            instructions=values["instructions"],
            guidelines=form.get("guidelines"),  # absent (older forms): unchanged
            plugin=values["plugin"] if "plugin" not in problems else None,
            params=params,
            rubric=rubric_text,
            reference_text=reference,
            model="" if values["model"].strip() == site_model else values["model"],
            max_score=values["max_score"],
            accepted_kinds=values["accepted_kinds"],
            max_upload_mb=values["max_upload_mb"],
            max_attempts=values["max_attempts"],
            example_count=form.get("example_count"),  # absent (older forms): unchanged
            min_confidence=form.get("min_confidence"),  # absent: unchanged; empty: none
            monthly_cost_limit=form.get("monthly_cost_limit"),  # absent: unchanged
            monthly_token_limit=form.get("monthly_token_limit"),
            appeal_limit=form.get("appeal_limit"),
            appeal_days=form.get("appeal_days"),
            release_policy=values["release_policy"],
            site_max_upload_mb=current_app.config["EVALUAITOR_MAX_UPLOAD_MB"],
            actor_id=session.user_id,
            initial=initial,
            problems=problems,
        )
    except SettingsError as exc:
        db.session.rollback()
        return _form_page(token, activity, mode, values, errors=exc.errors), 400
    return None


def _form_page(
    token: str,
    activity: Activity,
    mode: str,
    values: dict[str, Any],
    *,
    errors: dict[str, str] | None = None,
    saved: bool = False,
    attach_error: bool = False,
) -> str:
    site_max_mb = current_app.config["EVALUAITOR_MAX_UPLOAD_MB"]
    strategies = [
        setup_form.StrategyForm(plugin, setup_form.schema_fields(plugin))
        for plugin in registry.all_plugins()
    ]
    errors = errors or {}
    return render_template(
        "setup.html",
        token=token,
        mode=mode,
        activity=activity,
        values=values,
        errors=errors,
        error_links=[(_input_id(key, values["plugin"]), text) for key, text in errors.items()],
        saved=saved,
        attach_error=attach_error,
        strategies=strategies,
        kinds=KIND_LABELS,
        release_labels=RELEASE_LABELS,
        site_max_mb=site_max_mb,
        history=activities.settings_history(activity) if mode == "settings" else [],
        budgets=spend.activity_budgets(activity) if mode == "settings" else [],
    )


def _input_id(error_key: str, plugin: str) -> str:
    """The id of the input an error is about, for the links in the error summary."""
    if error_key.startswith("params."):
        return f"p-{plugin}-{error_key.removeprefix('params.').split('.')[0]}"
    anchors = {
        "accepted_kinds": "kind-pdf",
        "release_policy": "release-auto",
        "reference": "reference_file",
    }
    return anchors.get(error_key, error_key)


def _stored_values(activity: Activity) -> dict[str, Any]:
    """The form's values for the activity as stored (defaults where it has none yet)."""
    config = current_app.config
    params = {
        plugin.name: setup_form.initial_values(
            plugin, activity.plugin_params if plugin.name == activity.plugin_name else {}
        )
        for plugin in registry.all_plugins()
    }
    max_score = activity.max_score or config["EVALUAITOR_DEFAULT_MAX_SCORE"]
    return {
        "title": activity.title,
        "instructions": activity.instructions,
        "guidelines": activity.guidelines,
        "plugin": activity.plugin_name,
        "params": params,
        "model": activity.model or config["EVALUAITOR_LLM_MODEL"],
        "max_score": f"{max_score:g}",
        "rubric": activities.rubric_to_text(activity.rubric, "yaml") if activity.rubric else "",
        "accepted_kinds": [k.value for k in activities.accepted_kinds(activity)],
        "max_upload_mb": f"{activity.max_upload_mb:g}" if activity.max_upload_mb else "",
        "max_attempts": str(activity.max_attempts or ""),
        "example_count": str(activity.example_count),
        "min_confidence": _percent(activity.min_confidence),
        "monthly_cost_limit": _limit(activity.monthly_cost_limit),
        "monthly_token_limit": _limit(activity.monthly_token_limit),
        "appeal_limit": str(activity.appeal_limit),
        "appeal_days": str(activity.appeal_days or ""),
        "release_policy": activity.release_policy,
        "reference_chars": len(activity.reference_text or ""),
    }


def _typed_values(form: Any) -> dict[str, Any]:
    """What the teacher posted, kept as typed so the form can show it again."""
    params = {
        plugin.name: setup_form.typed_values(plugin, form) for plugin in registry.all_plugins()
    }
    names = ("title", "instructions", "guidelines", "plugin", "model", "max_score", "rubric")
    values: dict[str, Any] = {name: form.get(name, "") for name in names}
    return values | {
        "params": params,
        "accepted_kinds": form.getlist("accepted_kinds"),
        "max_upload_mb": form.get("max_upload_mb", ""),
        "max_attempts": form.get("max_attempts", ""),
        "example_count": form.get("example_count", ""),
        "min_confidence": form.get("min_confidence", ""),
        "monthly_cost_limit": form.get("monthly_cost_limit", ""),
        "monthly_token_limit": form.get("monthly_token_limit", ""),
        "appeal_limit": form.get("appeal_limit", ""),
        "appeal_days": form.get("appeal_days", ""),
        "release_policy": form.get("release_policy", ""),
        "reference_chars": None,
    }


def _limit(value: float | None) -> str:
    """A stored limit as the form shows it, whole numbers without a decimal point or an
    exponent; empty for none."""
    if value is None:
        return ""
    return str(int(value)) if float(value).is_integer() else str(value)


def _percent(share: float | None) -> str:
    """A stored share 0..1 as the form shows it ("70%"); empty for None."""
    return "" if share is None else f"{100 * share:g}%"


def _site_limit_bytes() -> int:
    return int(current_app.config["EVALUAITOR_MAX_UPLOAD_MB"] * 1024 * 1024)
