"""Student pages, and the activity page that opens either view. Views orchestrate: rules
live in the services they call.

Every route is addressed by a page token (see :mod:`app.lti.session`), which fixes the
platform, activity, user and role; nothing else from the request widens that scope. The
teacher's routes are in :mod:`app.web.teacher`, on the same blueprint.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from flask import current_app, jsonify, redirect, render_template, request, url_for
from flask_babel import gettext as _
from sqlalchemy import Row, bindparam, select
from sqlalchemy.orm import joinedload
from werkzeug.exceptions import RequestEntityTooLarge

from app.errors import FileTooLarge, Forbidden, NotFound, SessionExpired, UploadError
from app.extensions import db
from app.i18n import localize
from app.lms import appeals, submissions
from app.lms.gradebook import on_maximum
from app.lti.session import LaunchSession, load, load_with_activity
from app.models import Activity, Grade, GradingJob, JobStatus, LtiUser, Submission
from app.models.base import as_utc
from app.web import appeals as appeal_pages  # noqa: F401 (the teacher's appeal routes join bp)
from app.web import regrade as regrade_pages  # noqa: F401 (the bulk regrade's routes join bp)
from app.web.blueprint import activity_submission, bp, safe_return_url
from app.web.teacher import teacher_page

__all__ = ["bp"]


@bp.get("/")
def activity(token: str):
    session, activity = load_with_activity(token)
    if session.is_staff:
        return teacher_page(token, session, activity)
    return _student_page(token, session, activity)


@bp.post("/submissions")
def submit(token: str):
    session, activity = load_with_activity(token)
    if session.is_staff:
        raise Forbidden(_("Only students submit work here."))
    if activity.is_asset_processor:  # the LMS's own assignment takes the work
        raise Forbidden(_("Hand in this work in your course's assignment, not here."))
    user = db.session.get(LtiUser, session.user_id)
    if user is None or user.platform_id != activity.platform_id:  # removed since the launch
        raise SessionExpired(detail=f"no user {session.user_id}")
    max_mb = current_app.config["EVALUAITOR_MAX_UPLOAD_MB"]
    try:
        upload = request.files.get("file")  # parsing the body may find it too large
        submissions.accept(
            activity,
            user,
            submissions.Upload(
                filename=upload.filename if upload else "",
                stream=upload.stream if upload else io.BytesIO(),
                comment=request.form.get("comment", ""),
            ),
            data_dir=current_app.config["EVALUAITOR_DATA_DIR"],
            max_mb=max_mb,
        )
    except RequestEntityTooLarge:
        error: UploadError = FileTooLarge(max_mb)
    except UploadError as exc:
        error = exc
    else:
        return redirect(url_for("web.activity", token=token), code=303)
    return _student_page(token, session, activity, error=error.user_message), error.status_code


@bp.post("/submissions/<int:submission_id>/appeal")
def ask_appeal(token: str, submission_id: int):
    """A student's regrade request for their own released grade (rules: app.lms.appeals)."""
    session, activity = load_with_activity(token)
    if session.is_staff:
        raise Forbidden(_("Only students ask for a regrade here."))
    submission = activity_submission(session, submission_id)
    if submission.user_id != session.user_id:
        raise NotFound()
    reason = request.form.get("reason", "")
    try:
        appeals.ask(submission, session.user_id, reason)
    except appeals.AppealError as exc:
        page = _student_page(token, session, activity, appeal_error=exc.user_message, reason=reason)
        return page, exc.status_code
    return redirect(url_for("web.activity", token=token), code=303)


@bp.post("/appeals/<int:appeal_id>/withdraw")
def withdraw_appeal(token: str, appeal_id: int):
    session, activity = load_with_activity(token)
    appeal = appeals.fetch(appeal_id, activity.id, session.user_id)
    if appeal is None:
        raise NotFound()
    try:
        appeals.withdraw(appeal, session.user_id)
    except appeals.AppealError as exc:
        page = _student_page(token, session, activity, appeal_error=exc.user_message)
        return page, exc.status_code
    return redirect(url_for("web.activity", token=token), code=303)


@bp.app_template_global()
def instructions_shown(activity: Activity) -> str:
    """The instructions under the page's title: without a first paragraph that only repeats
    the title (a link added without deep linking gets "title, description" as its task, which
    the grader reads whole)."""
    text = (activity.instructions or "").strip()
    first, _sep, rest = text.partition("\n\n")
    return rest.strip() if first.strip() == (activity.title or "").strip() else text


@bp.app_template_global()
def comments_repeated(feedback: str, criteria: list[dict[str, Any]]) -> bool:
    """Whether the feedback already says each criterion's comment, with its name (the program
    tests' list, the criteria strategy's groups): the table then shows the scores only, so
    the student reads every comment once."""
    words = " ".join((feedback or "").split())
    return bool(criteria) and all(
        " ".join(str(c.get(key) or "").split()) in words
        for c in criteria
        for key in ("name", "reason")
    )


@bp.get("/status")
def status(token: str):
    """The student's latest submission, polled by the page while grading runs.

    The hottest route: one query for plain columns, no ORM objects. A grade the teacher
    holds is reported as waiting for review, without its score.
    """
    session = load(token)
    row = db.session.execute(
        select(
            Submission.id,
            Submission.attempt,
            GradingJob.status,
            GradingJob.progress_step,
            GradingJob.progress_total,
            GradingJob.progress_message,
            GradingJob.error_message,
            GradingJob.retry_at,
            GradingJob.waiting_for,
            GradingJob.score,
            GradingJob.scale,
            Grade.override_score,
            Grade.released_at,
            Activity.max_score,
        )
        .join(GradingJob, GradingJob.submission_id == Submission.id)
        .join(Activity, Activity.id == Submission.activity_id)
        .outerjoin(Grade, Grade.submission_id == Submission.id)
        .where(
            Submission.activity_id == session.activity_id,
            Submission.user_id == session.user_id,
        )
        .order_by(Submission.attempt.desc())
        .limit(1)
    ).first()
    if row is None:
        return jsonify(submission=None)
    state = student_status(row.status, row.released_at is not None)
    released = state == JobStatus.COMPLETED
    score = row.override_score if row.override_score is not None else row.score
    return jsonify(
        submission={
            "id": row.id,
            "attempt": row.attempt,
            "status": state.value,
            "is_final": state.is_final,
            "step": row.progress_step,
            "total": row.progress_total,
            "message": localize(row.progress_message),
            "error": localize(row.error_message),
            "held": row.status == JobStatus.COMPLETED and not released,
            "retry_at": as_utc(row.retry_at).isoformat() if row.retry_at else None,
            # "budget": a monthly spend limit holds it, not the grading service
            "waiting_for": row.waiting_for if state == JobStatus.WAITING else None,
            # on the activity's maximum, as the page and the LMS gradebook show it
            "score": on_maximum(score, row.scale, row.max_score) if released else None,
            "scale": (row.max_score or row.scale) if released else None,
        }
    )


def student_status(status: str, is_released: bool) -> JobStatus:
    """What the student is told: a held grade is one their teacher still has to review."""
    state = JobStatus(status)
    if state == JobStatus.COMPLETED and not is_released:
        return JobStatus.NEEDS_REVIEW
    return state


@dataclass(frozen=True)
class PastAttempt:
    """A row of the student's history, as the student is told it: a score only once released."""

    attempt: int
    filename: str
    submitted: datetime
    state: JobStatus
    score: float | None
    scale: float | None


@dataclass(frozen=True)
class LatestAttempt:
    """What the status block shows of the latest attempt while it has no released grade:
    read from the history's own row, so that no second query loads the submission."""

    attempt: int
    original_filename: str
    created_at: datetime
    sha256: str
    status: JobStatus
    progress_step: int
    progress_total: int
    progress_message: str
    error_message: str | None
    #: ``budget`` while a monthly spend limit holds it (app.evaluation.budget).
    waiting_for: str | None
    grade: None = None


#: The student's attempts, newest first, with what their grades allow them to see and what
#: the status block shows of the latest: plain columns in one statement (no ORM objects, no
#: query per graded row), built once.
_HISTORY = (
    select(
        Submission.id,
        Submission.attempt,
        GradingJob.original_filename,
        Submission.created_at,
        GradingJob.status,
        GradingJob.score,
        Grade.override_score,
        GradingJob.scale,
        Grade.released_at,
        GradingJob.sha256,
        GradingJob.progress_step,
        GradingJob.progress_total,
        GradingJob.progress_message,
        GradingJob.error_message,
        GradingJob.waiting_for,
    )
    .join(GradingJob, GradingJob.submission_id == Submission.id)
    .outerjoin(Grade, Grade.submission_id == Submission.id)
    .where(Submission.activity_id == bindparam("activity"), Submission.user_id == bindparam("user"))
    .order_by(Submission.attempt.desc())
)


def _history(
    activity_id: int, user_id: int
) -> tuple[list[PastAttempt], Submission | LatestAttempt | None]:
    """The student's attempts, and the latest as the status block shows it (None before the
    first upload)."""
    rows = db.session.execute(_HISTORY, {"activity": activity_id, "user": user_id}).all()
    history = []
    for row in rows:
        state = student_status(row.status, row.released_at is not None)
        shown = state == JobStatus.COMPLETED
        score = row.override_score if row.override_score is not None else row.score
        history.append(
            PastAttempt(
                attempt=row.attempt,
                filename=row.original_filename,
                submitted=row.created_at,
                state=state,
                score=score if shown else None,
                scale=row.scale if shown else None,
            )
        )
    return history, _latest(rows[0], history[0]) if rows else None


def _latest(row: Row, shown: PastAttempt) -> Submission | LatestAttempt:
    """Only a released grade (score, feedback, criteria) needs the submission and its rows."""
    if shown.state == JobStatus.COMPLETED:
        return db.session.get(
            Submission, row.id, options=[joinedload(Submission.job), joinedload(Submission.grade)]
        )
    return LatestAttempt(
        attempt=row.attempt,
        original_filename=row.original_filename,
        created_at=row.created_at,
        sha256=row.sha256,
        status=row.status,
        progress_step=row.progress_step,
        progress_total=row.progress_total,
        progress_message=row.progress_message,
        error_message=row.error_message,
        waiting_for=row.waiting_for,
    )


def _student_page(
    token: str,
    session: LaunchSession,
    activity: Activity,
    *,
    error: str | None = None,
    appeal_error: str | None = None,
    reason: str = "",
):
    """The student's page; ``error`` is the upload's, ``appeal_error`` a regrade request's
    (``reason`` is what they typed, shown again)."""
    history, latest = _history(activity.id, session.user_id)
    return render_template(
        "student.html",
        token=token,
        return_url=safe_return_url(session.return_url),
        activity=activity,
        latest=latest,
        latest_status=history[0].state if history else None,
        history=history,
        attempts_left=submissions.attempts_left(activity, session.user_id),
        error=error,
        # Only a released grade (the latest loaded as a Submission) can be appealed.
        appeal=appeals.standing(latest) if isinstance(latest, Submission) else None,
        appeal_error=appeal_error,
        appeal_reason=reason,
        appeal_max_chars=appeals.MAX_REASON_CHARS,
    )
