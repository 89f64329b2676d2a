"""Keeping the LMS gradebook column (the AGS line item) in step with the activity's settings.

When a teacher changes an activity's title or maximum score, :func:`request_update` records a
:class:`LineItemUpdate` in the settings transaction and the passback queue runs :func:`send`
after the commit: it reads the line item and writes it back with the new ``label`` and
``scoreMaximum``. Failures are recorded and retried like score pushes
(:mod:`app.evaluation.delivery`), and the teacher page shows the latest one with a
retry button. Until the column has the new maximum, scores go on the column's actual maximum
(:func:`app.lti.passback.outstanding`).

Grades already released are sent again after the maximum changed, on the new maximum: some
platforms keep the raw points when a column's maximum changes (8 of 10 would become 8 of 20).
See docs/decisions.md.
"""

from __future__ import annotations

import logging

from sqlalchemy import func, select

from app.evaluation import delivery
from app.evaluation.lifecycle import new_job_id
from app.extensions import db
from app.i18n import N_
from app.jobs import queue
from app.lti import claims, passback
from app.lti.ags import AgsError
from app.models import Activity, LineItemUpdate, PushStatus, ScorePush, Submission

log = logging.getLogger(__name__)

#: The settings a gradebook column shows.
COLUMN_SETTINGS = frozenset({"title", "max_score"})
#: Stored in English for the teacher page, which shows it in the reader's language.
MISSING_SCOPE = N_(
    "The LMS did not allow Evaluaitor to change its gradebook column (the tool has no"
    " permission to manage line items). Change the column's title and maximum in the LMS"
    " gradebook yourself, or ask the LMS administrator to set the tool's grade service to"
    " “Use this service for grade sync and column management” and open the activity again."
)


def request_update(activity: Activity) -> LineItemUpdate | None:
    """A pending update of the activity's column, added to the session and marked for the
    queue (the caller commits, then calls :func:`app.jobs.queue.dispatch`).

    None when there is nothing to send: the activity has no column yet (its first score
    creates one with the new values), or no ``lineitem`` scope (the update is then recorded
    as failed at once, with what the teacher can do instead). Earlier updates still waiting
    are superseded: this one sends the activity's settings as they are when it runs.
    """
    if not activity.lineitem_url:
        return None
    for earlier in db.session.scalars(
        select(LineItemUpdate).where(
            LineItemUpdate.activity_id == activity.id,
            LineItemUpdate.status.in_([PushStatus.PENDING, PushStatus.FAILED]),
        )
    ):
        earlier.status = PushStatus.SUPERSEDED
    update = LineItemUpdate(activity=activity, status=PushStatus.PENDING, attempts=0)
    db.session.add(update)
    if not can_update(activity):
        update.status, update.last_error = PushStatus.FAILED, MISSING_SCOPE
        return None
    update.job_id = new_job_id()
    return update


def can_update(activity: Activity) -> bool:
    return claims.SCOPE_LINEITEM in (activity.ags_scopes or ())


def retry(update: LineItemUpdate) -> None:
    """Teacher action: send an update again from a clean slate, failed or still retrying."""
    if not can_update(update.activity):
        update.status, update.last_error = PushStatus.FAILED, MISSING_SCOPE
        db.session.commit()
        return
    update.http_status = None
    delivery.resend(update)


class ColumnSender:
    """Delivers column updates (app.evaluation.delivery retries them); once the column's
    maximum changed, the released grades follow on the new maximum."""

    def lane(self, update: LineItemUpdate) -> str:
        return f"lineitem:{update.activity_id}"

    def overtaken(self, update: LineItemUpdate) -> bool:
        return False  # a newer update supersedes this one when it is requested

    def send(self, update: LineItemUpdate) -> None:
        activity = update.activity
        try:
            if not can_update(activity):
                raise AgsError(MISSING_SCOPE, retryable=False)
            if not activity.lineitem_url:
                raise AgsError(
                    N_("The activity has no gradebook column in the LMS."), retryable=False
                )
            with passback.ags_client(activity) as client:
                before, after = client.update_lineitem(
                    activity.lineitem_url,
                    label=activity.title or "Evaluaitor",
                    score_maximum=activity.max_score,
                )
        except AgsError as exc:
            raise passback.failure(exc) from exc
        update.http_status = 200
        old, new = before.get("scoreMaximum"), after.get("scoreMaximum", activity.max_score)
        if old != new:
            resent = resend_released_grades(activity)
            log.info(
                "column of activity %s now out of %s; %s grades resent", activity.id, new, resent
            )


def resend_released_grades(activity: Activity) -> int:
    """Push every released grade of the students' latest attempts again (so on the column's
    new maximum); returns how many pushes were queued."""
    latest = (
        select(func.max(Submission.id))
        .where(Submission.activity_id == activity.id)
        .group_by(Submission.user_id)
    )
    submissions = db.session.scalars(select(Submission).where(Submission.id.in_(latest))).all()
    pushes: list[ScorePush] = [
        push
        for submission in submissions
        if passback.is_releasable(submission) and (push := passback.publish_grade(submission))
    ]
    db.session.commit()
    if pushes:
        queue.dispatch(*pushes)
    return len(pushes)
