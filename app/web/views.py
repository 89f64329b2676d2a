"""Student pages, and the activity page that opens either view. Views orchestrate: rules
live in the services they call.

Every route is addressed by a page token (see :mod:`app.lti.session`), which fixes the
platform, activity, user and role; nothing else from the request widens that scope. The
teacher's routes are in :mod:`app.web.teacher`, on the same blueprint.
"""

from __future__ import annotations

import io

from flask import current_app, jsonify, redirect, render_template, request, url_for
from flask_babel import gettext as _
from sqlalchemy import select
from werkzeug.exceptions import RequestEntityTooLarge

from app import submissions
from app.errors import FileTooLarge, Forbidden, UploadError
from app.extensions import db
from app.i18n import localize
from app.lti.session import LaunchSession, load
from app.models import Activity, Grade, LtiUser, Submission, SubmissionStatus
from app.web.blueprint import bp, safe_return_url
from app.web.teacher import teacher_page

__all__ = ["bp"]


@bp.get("/")
def activity(token: str):
    session = load(token)
    activity = db.session.get(Activity, session.activity_id)
    if session.is_staff:
        return teacher_page(token, session, activity)
    return _student_page(token, session, activity)


@bp.post("/submissions")
def submit(token: str):
    session = load(token)
    if session.is_staff:
        raise Forbidden(_("Only students submit work here."))
    activity = db.session.get(Activity, session.activity_id)
    user = db.session.get(LtiUser, session.user_id)
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
            Submission.status,
            Submission.progress_step,
            Submission.progress_total,
            Submission.progress_message,
            Submission.error_message,
            Grade.score,
            Grade.scale,
            Grade.override_score,
            Grade.released_at,
        )
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
    released = state == SubmissionStatus.GRADED
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
            "held": row.status == SubmissionStatus.GRADED and not released,
            "score": score if released else None,
            "scale": row.scale if released else None,
        }
    )


def student_status(status: str, is_released: bool) -> SubmissionStatus:
    """What the student is told: a held grade is one their teacher still has to review."""
    state = SubmissionStatus(status)
    if state == SubmissionStatus.GRADED and not is_released:
        return SubmissionStatus.NEEDS_REVIEW
    return state


def _student_page(
    token: str, session: LaunchSession, activity: Activity, *, error: str | None = None
):
    history = db.session.scalars(
        select(Submission)
        .where(
            Submission.activity_id == activity.id,
            Submission.user_id == session.user_id,
        )
        .order_by(Submission.attempt.desc())
    ).all()
    latest = history[0] if history else None
    return render_template(
        "student.html",
        token=token,
        return_url=safe_return_url(session.return_url),
        activity=activity,
        latest=latest,
        latest_status=student_status(latest.status, bool(latest.grade and latest.grade.is_released))
        if latest
        else None,
        history=history,
        attempts_left=submissions.attempts_left(activity, session.user_id),
        error=error,
    )
