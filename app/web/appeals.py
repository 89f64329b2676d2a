"""The teacher's side of regrade requests: the activity's queue of open requests, each with
its answer form, and what the class list and the submission page show of them. The rules are
in :mod:`app.lms.appeals`; the student's side is in :mod:`app.web.views`.

A teacher's page token names one activity; an appeal id of another activity answers 404.
"""

from __future__ import annotations

from collections.abc import Mapping

from flask import redirect, render_template, request, url_for

from app.errors import EvaluaitorError, NotFound
from app.extensions import db
from app.lms import appeals
from app.lti.session import LaunchSession
from app.models import Activity
from app.web.blueprint import bp, staff_session
from app.web.teacher import on_grader_scale


@bp.get("/appeals")
def appeal_queue(token: str):
    session = staff_session(token)
    return _queue_page(token, session)


@bp.post("/appeals/<int:appeal_id>/answer")
def answer_appeal(token: str, appeal_id: int):
    """Store the teacher's answer; a new score or feedback becomes their override."""
    session = staff_session(token)
    appeal = appeals.fetch(appeal_id, session.activity_id)
    if appeal is None:
        raise NotFound()
    form = request.form
    try:
        appeals.answer(
            appeal,
            session.user_id,
            text=form.get("answer", ""),
            score=on_grader_scale(form.get("score", ""), appeal.submission),
            feedback=form.get("feedback", ""),
        )
    except EvaluaitorError as exc:
        db.session.rollback()
        page = _queue_page(token, session, failed=appeal.id, error=exc.user_message, form=form)
        return page, exc.status_code
    return redirect(url_for("web.appeal_queue", token=token, answered=appeal.id), code=303)


def _queue_page(
    token: str,
    session: LaunchSession,
    *,
    failed: int | None = None,
    error: str | None = None,
    form: Mapping[str, str] | None = None,
):
    """The open requests; after a refused answer, its error and what the teacher typed are
    shown with the request it was for."""
    answered = request.args.get("answered", type=int)
    return render_template(
        "appeals.html",
        token=token,
        activity=db.session.get(Activity, session.activity_id),
        appeals=appeals.open_appeals(session.activity_id),
        answered=appeals.fetch(answered, session.activity_id) if answered else None,
        failed=failed,
        error=error,
        form=form or {},
        answer_max_chars=appeals.MAX_ANSWER_CHARS,
    )
