"""The teacher's pages and actions: the class list, one submission in detail, statistics,
the CSV export, and the review actions (every one a POST, staff only, audited in app.lms.review).

A teacher's page token names one activity; every submission id, push id and file is looked
up inside that activity, so another course's ids answer 404.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path

from flask import Response, current_app, redirect, render_template, request, send_file, url_for
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l
from sqlalchemy import select

from app import spend
from app.errors import EvaluaitorError, Forbidden, NotFound
from app.evaluation import delivery
from app.extensions import db
from app.grading import registry
from app.lms import activities, appeals, calibration, gradebook, review
from app.lti import asset_reports, nrps, passback
from app.lti.session import LaunchSession
from app.models import Activity, JobStatus, ScorePush, Submission
from app.models.assets import AssetReport
from app.text import clean_name
from app.web.blueprint import activity_submission, bp, safe_return_url, staff_session

#: Short confirmations shown after an action (keys in the redirect, never free text).
NOTICES = {
    "overridden": _l("Your grade was saved."),
    "released": _l("Released to the student and the gradebook."),
    "unchanged": _l("This grade had been released already; nothing was sent again."),
    "regrading": _l("The submission is being graded again."),
    "regrading_all": _l("The submissions you chose are being graded again."),
    "regrading_some": _l(
        "The submissions you chose are being graded again, except those being graded already."
    ),
    "reopened": _l("The student may submit once more."),
    "example": _l("Saved: how this submission serves as a graded example."),
}
_UNSAFE = re.compile(r'[\x00-\x1f\x7f"\\/:*?<>|;%]+')
_CONTENT_TYPES = {
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "markdown": "text/markdown",  # text types get "; charset=utf-8" from Flask
    "text": "text/plain",
    "code": "text/plain",
}


def teacher_page(token: str, session: LaunchSession, activity: Activity):
    roster = nrps.course_roster(activity.platform, activity.course, current_app.config)
    rows = gradebook.student_rows(activity, roster)
    args = request.args
    show = args.get("show", "all") if args.get("show") in gradebook.SHOW else "all"
    sort = args.get("sort", "name") if args.get("sort") in gradebook.SORTS else "name"
    descending = args.get("order") == "desc"
    status = args.get("status", "")
    statuses = [s.value for s in gradebook.STATUSES] + [gradebook.NO_SUBMISSION]
    status = status if status in statuses else ""
    return render_template(
        "teacher.html",
        token=token,
        return_url=safe_return_url(session.return_url),
        activity=activity,
        roster=roster,
        rows=gradebook.select_rows(
            rows, status=status, show=show, sort=sort, descending=descending
        ),
        total=len(rows),
        held=sum(row.is_held and row.score is not None for row in rows),
        filters={"status": status, "show": show, "sort": sort, "order": args.get("order", "asc")},
        statuses=statuses,
        notice=NOTICES.get(args.get("done", "")),
        open_appeals=appeals.open_count(activity.id),
        llm_configured=bool(current_app.config.get("EVALUAITOR_LLM_BASE_URL"))
        or _grades_without_model(activity),
        own_column=activities.has_own_column(activity.id),
        examples=calibration.summary(activity),
        budgets=spend.activity_budgets(activity),
    )


def _grades_without_model(activity: Activity) -> bool:
    """Whether the activity's strategy needs no model (the code judge): its teacher is then not
    told that grading waits for one."""
    try:
        return not registry.get(activity.plugin_name).needs_llm
    except registry.PluginError:
        return False


@bp.get("/submissions/<int:submission_id>")
def submission_detail(token: str, submission_id: int):
    session = staff_session(token)
    return _detail(token, session, activity_submission(session, submission_id))


@bp.get("/submissions/<int:submission_id>/file")
def download(token: str, submission_id: int):
    """The original upload, as an attachment: never rendered by the browser."""
    session = staff_session(token)
    submission = activity_submission(session, submission_id)
    path = Path(current_app.config["EVALUAITOR_DATA_DIR"]) / submission.storage_path
    if not path.is_file():
        raise NotFound(_l("The stored file is missing."))
    response = send_file(
        path,
        mimetype=_CONTENT_TYPES.get(submission.kind, "application/octet-stream"),
        as_attachment=True,
        download_name=download_name(submission),
        max_age=0,
    )
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Cache-Control"] = "private, no-store"
    return response


def download_name(submission: Submission) -> str:
    """The student's file name without path parts, hidden or control characters, quotes or
    characters file systems refuse; the extension was checked against the accepted ones on
    upload."""
    name = Path(clean_name(submission.original_filename).replace("\\", "/"))
    stem = _UNSAFE.sub("_", name.stem).strip(" ._") or "submission"
    return f"attempt{submission.attempt}-{stem[:100]}{name.suffix.lower()}"


_CRITERION_FIELD = re.compile(r"criterion-(\d{1,4})", re.ASCII)


def _criterion_fields(form) -> dict[int, str]:
    """``criterion-<n>`` fields by index; other names (``criterion-²``, 99999…) are ignored."""
    return {
        int(match.group(1)): value
        for key, value in form.items()
        if (match := _CRITERION_FIELD.fullmatch(key))
    }


@bp.post("/submissions/<int:submission_id>/override")
def override(token: str, submission_id: int):
    form = request.form

    def save(submission: Submission, actor_id: int) -> str:
        review.override(
            submission,
            actor_id,
            score=on_grader_scale(form.get("score", ""), submission),
            feedback=form.get("feedback", ""),
            criteria=_criterion_fields(form),
        )
        released = bool(form.get("release")) and review.release(submission, actor_id)
        return "released" if released else "overridden"

    return _submission_action(token, submission_id, save, keep_form=True)


def on_grader_scale(typed: str, submission: Submission) -> str:
    """The score field, typed on the activity's maximum as the pages show scores, on the
    grader's scale that :func:`app.lms.review.override` stores. The value the page showed comes
    back as the stored one, so saving an untouched field changes nothing. Raises ReviewError
    for a value that is no number in 0..maximum."""
    grade, maximum = submission.grade, submission.activity.max_score
    if grade is None or not grade.scale or not maximum or grade.scale == maximum:
        return typed
    value = review.form_number(typed, maximum, _("The score"))
    if value is None:
        return typed  # blank: review.override says what that means
    shown = gradebook.on_maximum(grade.effective_score, grade.scale, maximum)
    if grade.effective_score is not None and value == shown:
        return repr(grade.effective_score)
    return repr(value * grade.scale / maximum)


@bp.post("/submissions/<int:submission_id>/release")
def release(token: str, submission_id: int):
    return _submission_action(
        token,
        submission_id,
        lambda submission, actor_id: (
            "released" if review.release(submission, actor_id) else "unchanged"
        ),
    )


@bp.post("/release-all")
def release_all(token: str):
    session = staff_session(token)
    activity = db.session.get(Activity, session.activity_id)
    count = review.release_all(activity, session.user_id)
    return redirect(url_for("web.activity", token=token, done="released" if count else ""), 303)


@bp.post("/submissions/<int:submission_id>/regrade")
def regrade(token: str, submission_id: int):
    def again(submission: Submission, actor_id: int) -> str:
        plugin, model = request.form.get("plugin", ""), request.form.get("model", "")
        review.regrade(submission, actor_id, plugin=plugin, model=model)
        return "regrading"

    return _submission_action(token, submission_id, again)


@bp.post("/submissions/<int:submission_id>/retry")
def retry_grading(token: str, submission_id: int):
    """The class list's "grade again" button: a regrade with the activity's settings."""
    session = staff_session(token)
    submission = activity_submission(session, submission_id)
    if submission.job.status not in (JobStatus.FAILED, JobStatus.NEEDS_REVIEW):
        raise Forbidden(_l("Only failed or held submissions can be graded again."))
    review.regrade(submission, session.user_id)
    return redirect(url_for("web.activity", token=token, done="regrading"), code=303)


@bp.post("/submissions/<int:submission_id>/example")
def use_as_example(token: str, submission_id: int):
    """Have the submission shown to the model as a graded example automatically, always or
    never (app.lms.calibration)."""

    def choose(submission: Submission, actor_id: int) -> str:
        review.use_as_example(submission, actor_id, request.form.get("use", ""))
        return "example"

    return _submission_action(token, submission_id, choose)


@bp.post("/submissions/<int:submission_id>/reopen")
def reopen(token: str, submission_id: int):
    def allow_one_more(submission: Submission, actor_id: int) -> str:
        review.reopen(submission, actor_id)
        return "reopened"

    return _submission_action(token, submission_id, allow_one_more)


@bp.post("/pushes/<int:push_id>/retry")
def retry_push(token: str, push_id: int):
    session = staff_session(token)
    push = db.session.get(ScorePush, push_id)
    if push is None or push.activity_id != session.activity_id:
        raise NotFound()
    if not push.resendable:
        raise Forbidden(_l("Only failed or retrying gradebook updates can be sent again."))
    passback.retry(push)
    return redirect(url_for("web.activity", token=token), code=303)


@bp.post("/reports/<int:report_id>/resend")
def resend_report(token: str, report_id: int):
    """Send an asset report (LTI Asset Processor) to the LMS again."""
    session = staff_session(token)
    report = db.session.get(AssetReport, report_id)
    if report is None or report.asset.submission.activity_id != session.activity_id:
        raise NotFound()
    if not report.resendable:
        raise Forbidden(_l("Only failed or retrying reports can be sent again."))
    delivery.resend(report)
    submission_id = report.asset.submission_id
    return redirect(
        url_for("web.submission_detail", token=token, submission_id=submission_id), code=303
    )


@bp.get("/stats")
def stats(token: str):
    session = staff_session(token)
    activity = db.session.get(Activity, session.activity_id)
    rows = gradebook.student_rows(activity, nrps.Roster(()))
    return render_template(
        "stats.html",
        token=token,
        activity=activity,
        stats=gradebook.statistics(activity, rows, current_app.config),
        spend_days=spend.per_day(activity.id),
    )


@bp.get("/gradebook.csv")
def export_csv(token: str):
    session = staff_session(token)
    activity = db.session.get(Activity, session.activity_id)
    roster = nrps.course_roster(activity.platform, activity.course, current_app.config)
    rows = gradebook.select_rows(gradebook.student_rows(activity, roster))
    return Response(
        gradebook.to_csv(rows, activity.max_score),
        mimetype="text/csv",
        headers={
            "Content-Disposition": f'attachment; filename="gradebook-{activity.id}.csv"',
            "Cache-Control": "private, no-store",
        },
    )


def _detail(
    token: str,
    session: LaunchSession,
    submission: Submission,
    *,
    error: EvaluaitorError | None = None,
    form: Mapping[str, str] | None = None,
):
    pushes = db.session.scalars(
        select(ScorePush).where(ScorePush.submission_id == submission.id).order_by(ScorePush.id)
    ).all()
    return render_template(
        "submission.html",
        token=token,
        activity=db.session.get(Activity, session.activity_id),
        submission=submission,
        grade=submission.grade,
        is_latest=submission.attempt == review.latest_attempt(submission),
        pushes=pushes,
        reports=asset_reports.latest(submission),
        events=review.history(submission),
        examples_used=calibration.used_for(submission),
        spent=spend.of_job(submission.job.id),
        appeal_requests=appeals.submission_appeals(submission),
        strategies=[plugin.name for plugin in registry.all_plugins()],
        error=error.user_message if error else None,
        form=form,
        notice=NOTICES.get(request.args.get("done", "")),
    )


def _submission_action(
    token: str,
    submission_id: int,
    action: Callable[[Submission, int], str],
    *,
    keep_form: bool = False,
):
    """Run a review action on a submission of the token's activity as the token's teacher;
    back to the detail page with the notice key the action returns, or the page again with
    the error (and, with ``keep_form``, what the teacher typed)."""
    session = staff_session(token)
    submission = activity_submission(session, submission_id)
    try:
        done = action(submission, session.user_id)
    except EvaluaitorError as exc:
        form = request.form if keep_form else None
        return _detail(token, session, submission, error=exc, form=form), exc.status_code
    return _back_to(token, submission, done)


def _back_to(token: str, submission: Submission, done: str):
    return redirect(
        url_for("web.submission_detail", token=token, submission_id=submission.id, done=done),
        code=303,
    )
