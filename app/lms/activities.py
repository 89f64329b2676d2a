"""Changing how an activity is set up. Every path that configures an activity (the CLI, the
deep-linking setup form, the settings page) goes through :func:`configure`, so one set of
rules decides what may be stored, with messages a teacher can act on, per field.

``None`` for a setting means "leave it as it is". An empty string clears an optional one:
``model`` (back to the site's default), ``max_upload_mb`` (back to the site's limit) and
``max_attempts`` (unlimited). Numbers may arrive as text (from a form); they are read here.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import yaml
from flask import current_app
from flask_babel import lazy_gettext as _l
from pydantic import ValidationError
from sqlalchemy import select

from app import tenants
from app.catalogue import N_
from app.evaluation import budget
from app.extensions import db
from app.extract import Kind
from app.grading import registry
from app.grading.rubric import Rubric, RubricError, parse_rubric
from app.i18n import localize
from app.jobs import queue
from app.lti import lineitem_sync
from app.models import Activity, AuditEvent

#: When grades reach students and the gradebook (see app.grading.service).
RELEASE_POLICIES = ("auto", "hold_flagged", "hold_all")

#: The kinds of file a teacher can accept, in words (lazy: shown in the reader's language).
KIND_LABELS: dict[Kind, Any] = {
    Kind.PDF: _l("PDF"),
    Kind.DOCX: _l("Word (.docx)"),
    Kind.TEXT: _l("Plain text (.txt)"),
    Kind.MARKDOWN: _l("Markdown (.md)"),
    Kind.CODE: _l("Source code"),
}

#: The grading strategies in words, for pages and messages (unknown ones keep their name).
STRATEGY_LABELS: dict[str, Any] = {
    "rubric_eval": _l("Overall judgement against the instructions"),
    "criteria": _l("Criterion by criterion"),
    "criteria_tree": _l("Tree of weighted criteria"),
    "pipeline": _l("Several steps with the reference material"),
    "ensemble": _l("Several grader models"),
    "code_judge": _l("Program tests (code judge)"),
}

#: Everything a teacher sets; copied when a course copy launches a deep-linked activity.
SETTINGS = (
    "title",
    "instructions",
    "guidelines",
    "plugin_name",
    "plugin_params",
    "rubric",
    "reference_text",
    "model",
    "max_score",
    "release_policy",
    "accepted_kinds",
    "max_upload_mb",
    "max_attempts",
    "appeal_limit",
    "appeal_days",
    "example_count",
    "min_confidence",
    "monthly_cost_limit",
    "monthly_token_limit",
)

#: The audit action of :func:`record_own_column`.
OWN_COLUMN = "own_column"

#: Strategies that cannot grade without a rubric.
NEEDS_RUBRIC = frozenset({"criteria"})

MAX_TITLE_CHARS = 500
MAX_INSTRUCTIONS_CHARS = 50_000
TOO_LONG_INSTRUCTIONS = N_("The instructions are too long (at most %(n)s characters).")
TOO_LONG_GUIDELINES = N_("The guidelines are too long (at most %(n)s characters).")
MAX_MODEL_CHARS = 200
MAX_SCORE_LIMIT = 10_000
MAX_ATTEMPTS_LIMIT = 100
#: Regrade requests per submission, and days after the release to make them (app.lms.appeals).
MAX_APPEAL_LIMIT = 10
MAX_APPEAL_DAYS = 365
#: Most calibration examples a prompt carries (app.grading.examples): each costs prompt room.
MAX_EXAMPLE_COUNT = 6
#: Highest monthly spend limits a form takes (app.spend): far above any class's needs.
MAX_MONTHLY_COST = 1_000_000
MAX_MONTHLY_TOKENS = 10_000_000_000
#: Rubric text larger than this is refused before it is parsed (100 criteria fit easily).
MAX_RUBRIC_BYTES = 200_000


class SettingsError(ValueError):
    """Some settings are invalid; ``errors`` maps each field to what is wrong with it."""

    def __init__(self, errors: dict[str, str]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{field}: {message}" for field, message in errors.items()))


def configure(
    activity: Activity,
    *,
    plugin: str | None = None,
    params: dict[str, Any] | None = None,
    rubric: Rubric | str | None = None,
    instructions: str | None = None,
    guidelines: str | None = None,
    reference_text: str | None = None,
    model: str | None = None,
    release_policy: str | None = None,
    title: str | None = None,
    max_score: float | str | None = None,
    accepted_kinds: list[str] | None = None,
    max_upload_mb: float | str | None = None,
    max_attempts: int | str | None = None,
    appeal_limit: int | str | None = None,
    appeal_days: int | str | None = None,
    example_count: int | str | None = None,
    min_confidence: float | str | None = None,
    monthly_cost_limit: float | str | None = None,
    monthly_token_limit: int | str | None = None,
    site_max_upload_mb: float | None = None,
    actor_id: int | None = None,
    initial: bool = False,
    problems: dict[str, str] | None = None,
) -> Activity:
    """Validate and store new settings; nothing is stored if anything is invalid.

    ``rubric`` may be YAML or JSON text ("" removes the rubric). Every change is recorded
    as an audit event (action ``settings``, before/after of the changed fields, ``actor_id``),
    except the ``initial`` setup of a new deep-linked activity. A new title or maximum is
    sent to the LMS gradebook column after the commit (see app.lti.lineitem_sync).
    ``problems`` are fields the caller could not read (e.g. a form's JSON input): they are
    reported with the rest. A strategy that sends the work to a model is refused while the
    organization's or the site's allowlist forbids the configured server (app.llm.endpoints).
    Raises :class:`SettingsError` naming each invalid field.
    """
    errors: dict[str, str] = dict(problems or {})
    changes: dict[str, Any] = {}

    strategy = None
    try:
        strategy = registry.get(plugin or activity.plugin_name)
    except registry.PluginError as exc:
        errors["plugin"] = str(exc)
    if strategy is not None:
        chosen = params if params is not None else activity.plugin_params
        try:
            validated = registry.validate_params(strategy, chosen)
        except registry.InvalidParams as exc:
            errors = _param_errors(exc) | errors
        else:
            changes["plugin_name"] = strategy.name
            changes["plugin_params"] = validated.model_dump(mode="json", exclude_defaults=True)
        forbidden = registry.sends_to_a_model(strategy, chosen) and tenants.forbidden_model(
            activity.platform.organization, current_app.config
        )
        if forbidden:  # saved, every submission would fail without being sent: say it now
            errors.setdefault("plugin", localize(forbidden))

    if rubric is not None:
        try:
            parsed = rubric_from_text(rubric) if isinstance(rubric, str) else rubric
        except RubricError as exc:
            errors["rubric"] = str(exc)
        else:
            changes["rubric"] = parsed.model_dump(mode="json") if parsed else None
    final_rubric = changes.get("rubric", activity.rubric)
    if strategy is not None and strategy.name in NEEDS_RUBRIC and not final_rubric:
        errors.setdefault(
            "rubric",
            _l(
                "The strategy “%(strategy)s” needs a rubric.",
                strategy=STRATEGY_LABELS.get(strategy.name, strategy.name),
            ),
        )

    if title is not None:
        title = title.strip()
        if not title:
            errors["title"] = _l("Give the activity a title.")
        elif len(title) > MAX_TITLE_CHARS:
            errors["title"] = _l(
                "The title is too long (at most %(n)s characters).", n=MAX_TITLE_CHARS
            )
        else:
            changes["title"] = title
    for field, text, too_long in (
        ("instructions", instructions, TOO_LONG_INSTRUCTIONS),
        ("guidelines", guidelines, TOO_LONG_GUIDELINES),
    ):
        if text is not None and len(text) > MAX_INSTRUCTIONS_CHARS:
            errors[field] = _l(too_long, n=MAX_INSTRUCTIONS_CHARS)
        elif text is not None:
            changes[field] = text
    if reference_text is not None:
        changes["reference_text"] = reference_text
    if model is not None:
        model = model.strip()
        if len(model) > MAX_MODEL_CHARS:
            errors["model"] = _l(
                "The model name is too long (at most %(n)s characters).", n=MAX_MODEL_CHARS
            )
        else:
            changes["model"] = model or None
    if release_policy is not None:
        if release_policy not in RELEASE_POLICIES:
            errors["release_policy"] = _l(
                "The release policy must be one of: %(choices)s.",
                choices=", ".join(RELEASE_POLICIES),
            )
        else:
            changes["release_policy"] = release_policy

    _number(errors, changes, "max_score", max_score, low=0, high=MAX_SCORE_LIMIT, clearable=False)
    site_limit = (
        site_max_upload_mb
        if site_max_upload_mb is not None
        else current_app.config["EVALUAITOR_MAX_UPLOAD_MB"]
    )
    _number(errors, changes, "max_upload_mb", max_upload_mb, low=0, high=site_limit)
    _number(
        errors, changes, "max_attempts", max_attempts, low=0, high=MAX_ATTEMPTS_LIMIT, whole=True
    )
    # Regrade requests (app.lms.appeals): 0 switches them off; no days means no deadline.
    _number(
        errors,
        changes,
        "appeal_limit",
        appeal_limit,
        low=0,
        high=MAX_APPEAL_LIMIT,
        whole=True,
        clearable=False,
        inclusive=True,
    )
    _number(errors, changes, "appeal_days", appeal_days, low=0, high=MAX_APPEAL_DAYS, whole=True)
    _number(
        errors,
        changes,
        "example_count",
        example_count,
        low=0,
        high=MAX_EXAMPLE_COUNT,
        whole=True,
        clearable=False,
        inclusive=True,
    )
    # Monthly spend limits (app.spend): 0 grades nothing; empty lifts the limit.
    _number(
        errors,
        changes,
        "monthly_cost_limit",
        monthly_cost_limit,
        low=0,
        high=MAX_MONTHLY_COST,
        inclusive=True,
    )
    _number(
        errors,
        changes,
        "monthly_token_limit",
        monthly_token_limit,
        low=0,
        high=MAX_MONTHLY_TOKENS,
        whole=True,
        inclusive=True,
    )
    if min_confidence is not None:
        try:
            changes["min_confidence"] = confidence_threshold(min_confidence)
        except ValueError:
            errors["min_confidence"] = _l(
                "Enter a confidence from 0 to 1 (such as %(share)s) or a percentage (such as "
                "%(percent)s), or leave it empty.",
                share="0.7",
                percent="70%",
            )
    if accepted_kinds is not None:
        known = {kind.value for kind in Kind}
        unknown = [kind for kind in accepted_kinds if kind not in known]
        if unknown:
            errors["accepted_kinds"] = _l(
                "Unknown file kinds: %(unknown)s. Known: %(known)s.",
                unknown=", ".join(unknown),
                known=", ".join(sorted(known)),
            )
        else:
            # All kinds ticked means the same as none: every kind, now and later.
            chosen_kinds = sorted(set(accepted_kinds))
            changes["accepted_kinds"] = [] if set(chosen_kinds) == known else chosen_kinds

    if errors:
        raise SettingsError(errors)
    before = snapshot(activity)
    for name, value in changes.items():
        setattr(activity, name, value)
    after = snapshot(activity)
    changed = {name for name in SETTINGS if after[name] != before[name]}
    if changed and not initial:
        db.session.add(
            AuditEvent(
                activity_id=activity.id,
                actor_id=actor_id,
                action="settings",
                details={
                    "before": {name: _audited(name, before[name]) for name in sorted(changed)},
                    "after": {name: _audited(name, after[name]) for name in sorted(changed)},
                },
            )
        )
    column = (
        lineitem_sync.request_update(activity) if changed & lineitem_sync.COLUMN_SETTINGS else None
    )
    db.session.commit()
    if column is not None:
        queue.dispatch(column)  # Redis down: the sweeper sends it later
    if changed & {"monthly_cost_limit", "monthly_token_limit"}:
        budget.limits_changed(activity)  # its gradings waiting for budget are checked again
    return activity


def record_own_column(activity_id: int) -> None:
    """Note, once, that the LMS offered the activity no gradebook column of its own (its
    launches carry the course's line items but no ``lineitem``: in Moodle, grades from the
    tool are not accepted), so grades go to a column the tool creates (app.lti.passback).
    The teacher page says so; the event is in the settings history."""
    if not has_own_column(activity_id):
        db.session.add(AuditEvent(activity_id=activity_id, action=OWN_COLUMN, details={}))
        db.session.commit()


def has_own_column(activity_id: int) -> bool:
    return (
        db.session.scalar(
            select(AuditEvent.id)
            .where(AuditEvent.activity_id == activity_id, AuditEvent.action == OWN_COLUMN)
            .limit(1)
        )
        is not None
    )


def settings_history(activity: Activity) -> list[AuditEvent]:
    """The activity's own audit events (settings a teacher changed, the tool's own gradebook
    column), oldest first; a submission's events are shown with the submission."""
    return list(
        db.session.scalars(
            select(AuditEvent)
            .where(AuditEvent.activity_id == activity.id, AuditEvent.submission_id.is_(None))
            .order_by(AuditEvent.id)
        )
    )


def snapshot(activity: Activity) -> dict[str, Any]:
    """The activity's settings as plain JSON-able values."""
    return {name: getattr(activity, name) for name in SETTINGS}


def copy_settings(source: Activity, target: Activity) -> None:
    """Give ``target`` the settings of ``source`` (a course copy of a deep-linked activity)."""
    for name, value in snapshot(source).items():
        setattr(target, name, json.loads(json.dumps(value)))


def upload_limit_mb(activity: Activity, site_max_mb: float) -> float:
    """The largest upload this activity accepts: its own limit, never above the site's."""
    own = activity.max_upload_mb
    return min(own, site_max_mb) if own else site_max_mb


def accepted_kinds(activity: Activity) -> frozenset[Kind]:
    """The file kinds this activity accepts (all of them when it names none)."""
    return frozenset(Kind(kind) for kind in activity.accepted_kinds) or frozenset(Kind)


def rubric_from_text(text: str) -> Rubric | None:
    """A rubric from YAML or JSON text (JSON is YAML too); None for blank text.

    Only plain data is read (``yaml.safe_load``: no tags that build objects), and text over
    MAX_RUBRIC_BYTES is refused before parsing. Raises RubricError with what to fix.
    """
    if len(text.encode("utf-8", "replace")) > MAX_RUBRIC_BYTES:
        raise RubricError(
            _l("The rubric is too large (at most %(n)s kB).", n=MAX_RUBRIC_BYTES // 1000)
        )
    if not text.strip():
        return None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise RubricError(
            _l("The rubric is not valid YAML or JSON: %(problem)s", problem=_first_line(exc))
        ) from exc
    except RecursionError as exc:  # PyYAML recurses in Python per nested [ or {: a clean stop
        raise RubricError(_l("The rubric nests lists or mappings too deeply.")) from exc
    if not isinstance(data, dict | list):
        raise RubricError(_l("The rubric must be a list of criteria or have a 'criteria' list."))
    return parse_rubric(data)


def rubric_to_text(rubric: dict[str, Any], fmt: str) -> str:
    """The stored rubric as ``yaml`` or ``json`` text that :func:`rubric_from_text` reads back."""
    if fmt == "json":
        return json.dumps(rubric, indent=2, ensure_ascii=False) + "\n"
    return yaml.safe_dump(rubric, sort_keys=False, allow_unicode=True)


def confidence_threshold(raw: float | str) -> float | None:
    """The ``min_confidence`` a teacher typed, as a share 0..1: "0.7", "70%" and "70" are all
    0.7 (a number above 1 can only be a percentage); empty text is None (hold none for it).
    Raises ValueError for anything else, or for a value outside 0..1 (0..100%)."""
    text = str(raw).strip().replace(",", ".")
    if not text:
        return None
    percent = text.endswith("%")
    value = float(text.removesuffix("%").strip())  # ValueError for text that is no number
    if percent or value > 1:
        value /= 100
    if not 0 <= value <= 1:  # also refuses nan
        raise ValueError(f"confidence {raw!r} is outside 0..1")
    return value


def _number(
    errors: dict[str, str],
    changes: dict[str, Any],
    field: str,
    raw: float | str | None,
    *,
    low: float,
    high: float,
    whole: bool = False,
    clearable: bool = True,
    inclusive: bool = False,
) -> None:
    """Read a number above ``low`` (from ``low`` when ``inclusive``) and at most ``high`` into
    ``changes``, or an error."""
    if raw is None:
        return
    if isinstance(raw, str) and not raw.strip():
        if clearable:
            changes[field] = None
        else:
            errors[field] = _l("Enter a number.")
        return
    try:
        value = float(raw)
    except (TypeError, ValueError):
        errors[field] = _l("Enter a number.") if not whole else _l("Enter a whole number.")
        return
    if whole and not value.is_integer():
        errors[field] = _l("Enter a whole number.")
    elif inclusive and not low <= value <= high:
        errors[field] = _l(
            "Enter a number from %(low)s to %(high)s.", low=f"{low:g}", high=f"{high:g}"
        )
    elif not inclusive and not low < value <= high:
        errors[field] = _l(
            "Enter a number above %(low)s and at most %(high)s.", low=f"{low:g}", high=f"{high:g}"
        )
    else:
        changes[field] = int(value) if whole else value


def _param_errors(exc: registry.InvalidParams) -> dict[str, str]:
    """Per-parameter messages (``params.<name>``) when pydantic said which ones are wrong."""
    cause = exc.__cause__
    if not isinstance(cause, ValidationError):
        return {"params": str(exc)}
    errors: dict[str, str] = {}
    for error in cause.errors():
        location = [str(part) for part in error["loc"]]
        key = f"params.{location[0]}" if location else "params"
        message = (
            _l("is not a setting of this strategy")
            if error["type"] == "extra_forbidden"
            else error["msg"]
        )
        where = ".".join(location[1:])
        text = f"{where}: {message}" if where else message
        errors[key] = f"{errors[key]}; {text}" if key in errors else text
    return errors


def _audited(name: str, value: Any) -> Any:
    """Long reference material is recorded by size and digest, not copied into the log."""
    if name == "reference_text" and value:
        digest = hashlib.sha256(value.encode()).hexdigest()[:16]
        return {"chars": len(value), "sha256": digest}
    return value


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
