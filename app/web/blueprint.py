"""The pages' blueprint and the lookups every route uses to stay inside its page token's scope.

Student routes are in :mod:`app.web.views`, the teacher's in :mod:`app.web.teacher`.
"""

from __future__ import annotations

from flask import Blueprint

from app.errors import Forbidden, NotFound
from app.extensions import db
from app.lms import gradebook
from app.lti.session import LaunchSession, load
from app.models import Submission
from app.web import labels, markdown

bp = Blueprint("web", __name__, url_prefix="/l/<token>")
bp.add_app_template_filter(markdown.render, "markdown")
for _global in (
    labels.strategy_label,
    labels.choice_label,
    labels.action_label,
    labels.field_label,
    labels.kind_label,
    gradebook.on_maximum,
    gradebook.is_low_confidence,
):
    bp.add_app_template_global(_global)


def safe_return_url(url: str | None) -> str | None:
    """The LMS's return URL, only if it is an http(s) address (never ``javascript:``)."""
    return url if url and url.startswith(("https://", "http://")) else None


def staff_session(token: str) -> LaunchSession:
    session = load(token)
    if not session.is_staff:
        raise Forbidden()
    return session


def activity_submission(session: LaunchSession, submission_id: int) -> Submission:
    """A submission of the session's activity; any other id is "not found"."""
    submission = db.session.get(Submission, submission_id)
    if submission is None or submission.activity_id != session.activity_id:
        raise NotFound()
    return submission
