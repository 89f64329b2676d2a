"""Student and teacher pages. Views orchestrate: rules live in the services they call.

Every route is addressed by a page token (see :mod:`app.lti.session`), which fixes the
platform, activity, user and role; nothing else from the request widens that scope.
"""

from __future__ import annotations

import io

from flask import Blueprint, current_app, jsonify, redirect, render_template, request, url_for
from sqlalchemy import select
from werkzeug.exceptions import RequestEntityTooLarge

from app import submissions
from app.errors import FileTooLarge, Forbidden, NotFound, UploadError
from app.extensions import db
from app.grading import service as grading
from app.lti import passback
from app.lti.session import LaunchSession, load
from app.models import (
    Activity,
    Grade,
    LtiUser,
    PushStatus,
    ScorePush,
    Submission,
    SubmissionStatus,
)
from app.web import markdown

bp = Blueprint("web", __name__, url_prefix="/l/<token>")
bp.add_app_template_filter(markdown.render, "markdown")


@bp.get("/")
def activity(token: str):
    session = load(token)
    activity = db.session.get(Activity, session.activity_id)
    if session.is_staff:
        return _teacher_page(token, session, activity)
    return _student_page(token, session, activity)


@bp.post("/submissions")
def submit(token: str):
    session = load(token)
    if session.is_staff:
        raise Forbidden("Only students submit work here.")
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

    The hottest route: one query for plain columns, no ORM objects.
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
    state = SubmissionStatus(row.status)
    released = state == SubmissionStatus.GRADED and row.released_at is not None
    held = state == SubmissionStatus.GRADED and not released
    if held:  # to the student, a held grade is one their teacher still has to review
        state = SubmissionStatus.NEEDS_REVIEW
    score = row.override_score if row.override_score is not None else row.score
    return jsonify(
        submission={
            "id": row.id,
            "attempt": row.attempt,
            "status": state.value,
            "is_final": state.is_final,
            "step": row.progress_step,
            "total": row.progress_total,
            "message": row.progress_message,
            "error": row.error_message,
            "held": held,
            "score": score if released else None,
            "scale": row.scale if released else None,
        }
    )


@bp.post("/submissions/<int:submission_id>/retry")
def retry_grading(token: str, submission_id: int):
    session = _staff_session(token)
    submission = _activity_submission(session, submission_id)
    if submission.status not in (SubmissionStatus.FAILED, SubmissionStatus.NEEDS_REVIEW):
        raise Forbidden("Only failed or held submissions can be graded again.")
    grading.retry(submission)
    return redirect(url_for("web.activity", token=token), code=303)


@bp.post("/pushes/<int:push_id>/retry")
def retry_push(token: str, push_id: int):
    session = _staff_session(token)
    push = db.session.get(ScorePush, push_id)
    if push is None or push.activity_id != session.activity_id:
        raise NotFound()
    if push.status != PushStatus.FAILED:
        raise Forbidden("Only failed gradebook updates can be retried.")
    passback.retry(push)
    return redirect(url_for("web.activity", token=token), code=303)


# -- helpers -----------------------------------------------------------------------------


def _safe_return_url(url: str | None) -> str | None:
    """The LMS's return URL, only if it is an http(s) address (never ``javascript:``)."""
    return url if url and url.startswith(("https://", "http://")) else None


def _staff_session(token: str) -> LaunchSession:
    session = load(token)
    if not session.is_staff:
        raise Forbidden()
    return session


def _activity_submission(session: LaunchSession, submission_id: int) -> Submission:
    submission = db.session.get(Submission, submission_id)
    if submission is None or submission.activity_id != session.activity_id:
        raise NotFound()
    return submission


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
    return render_template(
        "student.html",
        token=token,
        return_url=_safe_return_url(session.return_url),
        activity=activity,
        latest=history[0] if history else None,
        history=history,
        error=error,
        max_mb=current_app.config["EVALUAITOR_MAX_UPLOAD_MB"],
        accept=",".join(sorted(submissions.ACCEPTED_EXTENSIONS)),
    )


def _teacher_page(token: str, session: LaunchSession, activity: Activity):
    rows = db.session.execute(
        select(Submission, LtiUser)
        .join(LtiUser, Submission.user_id == LtiUser.id)
        .where(Submission.activity_id == activity.id)
        .order_by(LtiUser.name, Submission.attempt.desc())
    ).all()
    pushes = db.session.scalars(
        select(ScorePush).where(ScorePush.activity_id == activity.id).order_by(ScorePush.id)
    ).all()
    last_push = {push.submission_id: push for push in pushes}
    return render_template(
        "teacher.html",
        token=token,
        return_url=_safe_return_url(session.return_url),
        activity=activity,
        rows=rows,
        last_push=last_push,
        llm_configured=bool(current_app.config.get("EVALUAITOR_LLM_BASE_URL")),
    )
