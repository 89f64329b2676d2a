"""A teacher's review of grades: override, release, regrade, reopen. Every action is audited.

The grader's own result stays in the submission's job (``submission.job``: score, feedback,
criteria); a teacher's changes go to ``Grade.override_*`` and win wherever a grade is shown or
sent. A grade reaches the student and the gradebook only once released
(``Grade.released_at``); see app.lms.submissions for when that happens by itself. Views parse
forms into plain values and call these functions; the functions validate, change, record
an :class:`AuditEvent`, commit, and only then enqueue (so a push never races the commit).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from flask import current_app
from flask_babel import gettext as _
from sqlalchemy import func, select

from app.errors import EvaluaitorError, QueueUnavailable
from app.extensions import db
from app.grading import registry
from app.jobs import queue
from app.lms import asset_processor, submissions
from app.lti import asset_reports, passback
from app.models import Activity, AuditEvent, Grade, GradingJob, JobStatus, ScorePush, Submission
from app.models.submissions import latest_only
from app.text import clean_name

MAX_FEEDBACK_CHARS = 20_000
#: How a teacher has a graded submission used as a calibration example (``Grade.example``;
#: app.lms.calibration says which submissions may be examples).
EXAMPLE_USES = ("auto", "pinned", "excluded")
_MODEL_NAME = re.compile(r"^[\w.:/@+-]{1,200}$")


class ReviewError(EvaluaitorError):
    """A review action that cannot be done as asked; the message says why."""

    code = "review_error"


# -- reading ----------------------------------------------------------------------------


def latest_attempt(submission: Submission) -> int:
    return db.session.scalar(
        select(func.max(Submission.attempt)).where(
            Submission.activity_id == submission.activity_id,
            Submission.user_id == submission.user_id,
        )
    )


def history(submission: Submission) -> list[AuditEvent]:
    return list(
        db.session.scalars(
            select(AuditEvent)
            .where(AuditEvent.submission_id == submission.id)
            .order_by(AuditEvent.id)
        )
    )


# -- actions ----------------------------------------------------------------------------


def override(
    submission: Submission,
    actor_id: int,
    *,
    score: str = "",
    feedback: str = "",
    criteria: dict[int, str] | None = None,
    also: Callable[[Grade], None] | None = None,
) -> Grade:
    """Store a teacher's score, feedback and per-criterion scores (as typed in the form).

    A blank score or feedback, or a value equal to the AI's, means "keep the AI's". A
    submission the grader could not score becomes ``graded`` (held) once it has a score.
    A released grade goes to the gradebook again. ``also`` runs with the changed grade just
    before the commit, so what a caller records about the change (an appeal's answer) is
    stored with it or not at all. Raises ReviewError.
    """
    grade = _reviewable_grade(submission)
    if grade.scale is None:  # the grader gave no score: the teacher grades on the maximum
        submission.job.scale = submission.activity.max_score or _default_maximum()
    before = snapshot(grade)
    new_score = form_number(score, grade.scale, _("The score"))
    new_feedback = feedback.strip()
    if len(new_feedback) > MAX_FEEDBACK_CHARS:
        raise ReviewError(
            _("The feedback is too long (at most %(n)s characters).", n=MAX_FEEDBACK_CHARS)
        )
    new_criteria = _criteria(grade.result.criteria, criteria or {})

    grade.override_score = None if new_score == grade.score else new_score
    grade.override_feedback = (
        new_feedback if new_feedback and new_feedback != grade.result.feedback.strip() else None
    )
    grade.override_criteria = new_criteria
    grade.overridden_at, grade.overridden_by_id = datetime.now(UTC), actor_id
    job = submission.job
    if job.status == JobStatus.NEEDS_REVIEW and grade.effective_score is not None:
        job.status = JobStatus.COMPLETED  # the teacher's score settles the review
    record(submission, actor_id, "override", {"before": before, "after": snapshot(grade)})
    if also is not None:
        also(grade)
    push = passback.publish_grade(submission) if grade.is_released else None
    _commit_and_send(submission, push)
    return grade


def release(submission: Submission, actor_id: int) -> bool:
    """Release a held grade to the student and the gradebook; False if it already was."""
    grade = _reviewable_grade(submission)
    if grade.is_released:
        return False
    if submission.job.status != JobStatus.COMPLETED or grade.effective_score is None:
        raise ReviewError(
            _("This submission needs your score before it can be released: save one first.")
        )
    before = snapshot(grade)
    grade.released_at, grade.released_by_id = datetime.now(UTC), actor_id
    record(submission, actor_id, "release", {"before": before, "after": snapshot(grade)})
    _commit_and_send(submission, passback.publish_grade(submission))
    return True


def release_all(activity: Activity, actor_id: int) -> int:
    """Release every held grade with a score among the students' latest attempts."""
    held = db.session.scalars(
        latest_only(select(Submission), activity.id)
        .join(Grade, Grade.submission_id == Submission.id)
        .join(GradingJob, GradingJob.submission_id == Submission.id)
        .where(
            Submission.activity_id == activity.id,
            GradingJob.status == JobStatus.COMPLETED,
            Grade.released_at.is_(None),
        )
    ).all()
    released = 0
    for submission in held:
        if submission.grade.effective_score is not None:
            released += release(submission, actor_id)
    return released


#: States a regrade starts from; the others are being graded already.
REGRADABLE = (JobStatus.COMPLETED, JobStatus.NEEDS_REVIEW, JobStatus.FAILED)


def regrade(submission: Submission, actor_id: int, *, plugin: str = "", model: str = "") -> None:
    """Grade again, with the activity's strategy and model or the ones given.

    The new result replaces the AI grade (and any override); the old one is kept in the
    audit event. Raises ReviewError for a submission being graded or invalid choices.
    """
    if submission.job.status not in REGRADABLE:
        raise ReviewError(_("This submission is being graded already."))
    if submission.attempt != latest_attempt(submission):
        raise ReviewError(_("Only the student's latest submission counts; regrade that one."))
    activity = submission.activity
    plugin, model = plugin.strip(), model.strip()
    chosen: dict[str, Any] = {}
    if plugin and plugin != activity.plugin_name:
        try:
            strategy = registry.get(plugin)
            params = registry.validate_params(strategy, {})
        except registry.PluginError as exc:
            raise ReviewError(str(exc)) from exc
        chosen |= {
            "plugin": strategy.name,
            "params": params.model_dump(mode="json", exclude_defaults=True),
        }
    if model:
        if not _MODEL_NAME.match(model):
            raise ReviewError(_("A model name has letters, digits and . : / @ + - _ only."))
        chosen["model"] = model
    record(
        submission,
        actor_id,
        "regrade",
        {
            "before": snapshot(submission.grade, full=True),
            "after": {
                "plugin": chosen.get("plugin", activity.plugin_name),
                "model": chosen.get("model") or activity.model,
            },
        },
    )
    submission.grading_override = chosen or None
    if asset_processor.lacks_files(submission):  # made in the LMS, its files never arrived
        if not asset_processor.ask_again(submission):
            raise ReviewError(_("This submission is being graded already."))
        return
    if not submissions.grade_again(submission):
        raise ReviewError(_("This submission is being graded already."))


def regrade_many(submissions: Iterable[Submission], actor_id: int) -> tuple[int, int]:
    """:func:`regrade` each submission with the activity's settings (a teacher's bulk
    regrade), each audited and put in line on its own: one that cannot be (being graded
    already) is skipped without stopping the others. Returns (started, skipped). Raises
    QueueUnavailable, once all are in line, if Redis refused any (the sweeper queues it later)."""
    started = skipped = 0
    unqueued: QueueUnavailable | None = None
    for submission in submissions:
        try:
            regrade(submission, actor_id)
        except ReviewError:
            skipped += 1
            continue
        except QueueUnavailable as exc:
            unqueued = exc
        started += 1
    if unqueued is not None:
        raise unqueued
    return started, skipped


def use_as_example(submission: Submission, actor_id: int, use: str) -> bool:
    """Have the submission used as an example automatically, always (pinned) or never
    (excluded), audited as ``example``; False if it already was. Raises ReviewError for an
    unknown choice or a submission that has no grade or is not its student's latest."""
    if use not in EXAMPLE_USES:
        raise ReviewError(_("Choose automatic, pinned or excluded."))
    grade = submission.grade
    if grade is None:
        raise ReviewError(_("This submission has no grade to use as an example yet."))
    if submission.attempt != latest_attempt(submission):
        raise ReviewError(_("Only the student's latest submission can be an example."))
    if grade.example == use:
        return False
    change = {"before": {"example": grade.example}, "after": {"example": use}}
    record(submission, actor_id, "example", change)
    grade.example = use
    db.session.commit()
    return True


def reopen(submission: Submission, actor_id: int) -> None:
    """Let a student who used every attempt submit once more."""
    if submission.activity.max_attempts is None:
        raise ReviewError(_("This activity allows unlimited attempts: nothing to reopen."))
    if submission.attempt != latest_attempt(submission):
        raise ReviewError(_("Only the student's latest submission can be reopened."))
    if submission.reopened_at is not None:
        raise ReviewError(_("This submission was reopened already."))
    submission.reopened_at = datetime.now(UTC)
    record(
        submission,
        actor_id,
        "reopen",
        {
            "before": {"attempt": submission.attempt, "reopened_at": None},
            "after": {
                "attempt": submission.attempt,
                "reopened_at": submission.reopened_at.isoformat(),
            },
        },
    )
    db.session.commit()


# -- helpers ----------------------------------------------------------------------------


def record(submission: Submission, actor_id: int, action: str, details: dict[str, Any]) -> None:
    """Add the audit event for an action; the caller commits it with the change."""
    db.session.add(
        AuditEvent(
            activity_id=submission.activity_id,
            submission_id=submission.id,
            actor_id=actor_id,
            action=action,
            details=details,
        )
    )


def snapshot(grade: Grade | None, *, full: bool = False) -> dict[str, Any]:
    """A grade as JSON for the audit log; ``full`` adds what a regrade throws away."""
    if grade is None:
        return {}
    data: dict[str, Any] = {
        "score": grade.score,
        "scale": grade.scale,
        "override_score": grade.override_score,
        "override_feedback": grade.override_feedback,
        "override_criteria": grade.override_criteria,
        "released_at": grade.released_at.isoformat() if grade.released_at else None,
    }
    if full:
        result = grade.result
        data |= {
            "feedback": result.feedback,
            "criteria": result.criteria,
            "flags": result.flags,
            "raw_replies": result.raw_replies,
            "plugin": (result.provenance or {}).get("plugin"),
            "models": (result.provenance or {}).get("models"),
        }
    return data


def _reviewable_grade(submission: Submission) -> Grade:
    if submission.job.status not in (JobStatus.COMPLETED, JobStatus.NEEDS_REVIEW):
        raise ReviewError(_("Only graded submissions, or ones waiting for review, can be changed."))
    if submission.attempt != latest_attempt(submission):
        raise ReviewError(_("Only the student's latest submission counts; review that one."))
    if submission.grade is None:
        raise ReviewError(_("This submission has no grade to change; grade it again first."))
    return submission.grade


def form_number(raw: str, maximum: float, what: str, minimum: float = 0.0) -> float | None:
    """A form value as a score in minimum..maximum; blank is None. Accepts a decimal comma."""
    text = (raw or "").strip().replace(",", ".")
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise ReviewError(_("%(what)s must be a number.", what=what)) from None
    if not math.isfinite(value) or not minimum <= value <= maximum:
        raise ReviewError(
            _(
                "%(what)s must be between %(min)g and %(max)g.",
                what=what,
                min=minimum,
                max=maximum,
            )
        )
    return value


def _criteria(ai: list[dict[str, Any]], typed: dict[int, str]) -> list[dict[str, Any]] | None:
    """The per-criterion override: the AI's list with the teacher's scores; None if unchanged.

    A fault (a negative-weight criterion, maximum 0) may keep the negative score it was given.
    """
    result, changed = [], False
    for index, criterion in enumerate(ai):
        item = dict(criterion)
        ai_score = criterion.get("score")
        value = form_number(
            typed.get(index, ""),
            float(criterion.get("max") or 0),
            clean_name(criterion.get("name")) or _("A criterion"),
            minimum=min(0.0, ai_score or 0.0),
        )
        if value is not None and value != ai_score:
            item["score"], changed = value, True
        result.append(item)
    return result if changed else None


def _commit_and_send(submission: Submission, push: ScorePush | None) -> None:
    """Commit a teacher's change and send what it changes: the gradebook's score, and the
    LMS's reports of a submission made there (LTI Asset Processor)."""
    reports = asset_reports.reports_for(submission)
    db.session.commit()
    queue.dispatch(*([push] if push else []), *reports)


def _default_maximum() -> float:
    return current_app.config["EVALUAITOR_DEFAULT_MAX_SCORE"]
