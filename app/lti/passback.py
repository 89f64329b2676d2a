"""Score passback: which scores go to the LMS gradebook, when, and what happens on failure.

Rules (see docs/decisions.md):
- On a first upload a ``Submitted``/``Pending`` score is pushed (``PendingManual`` when the
  activity holds every grade for its teacher). Moodle drops ``scoreGiven``
  from any score that is not ``FullyGraded`` and so *clears* the grade it holds; on a
  *resubmission* after a grade was sent we therefore push nothing until the new grade is
  ready: the gradebook keeps showing the last grade, and Evaluaitor's own pages show that a
  new version is being graded.
- A *released* grade is pushed as ``Completed``/``FullyGraded`` with the effective score (the
  teacher's override where there is one) on the line item's scale and the effective feedback
  as ``comment``; a teacher's change after release pushes again. A held grade, or one that
  needs review, is pushed as ``PendingManual``, unless the student already has a grade in the
  gradebook (same reason as above).
- Every push carries a ``timestamp`` strictly later, in whole seconds, than the last one sent
  for that student and than the current second (Moodle answers 409 otherwise, also right
  after it rescaled the grade itself).
- A student's pushes go one at a time (their lane, :func:`app.evaluation.delivery.lane`),
  and a push is sent only while it is the newest one for the student: an older push never
  reaches the LMS after a newer one (Moodle keeps the latest timestamp, and a later Pending
  would clear the grade). The rule above, not to blank a grade with a push without a score,
  is checked again then: a grade may have reached the gradebook since the push was made.
- Scores go on the line item's own maximum, read before each push. It becomes the activity's
  maximum too, except while the teacher's new maximum is on its way to the column
  (:mod:`app.lti.lineitem_sync`).
"""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime, timedelta

from flask import current_app
from sqlalchemy import func, select

from app.evaluation import delivery
from app.evaluation.lifecycle import new_job_id
from app.extensions import db
from app.i18n import N_
from app.lti.ags import AgsClient, AgsError
from app.models import (
    Activity,
    Grade,
    JobStatus,
    LineItemUpdate,
    LtiUser,
    PushStatus,
    ScorePush,
    Submission,
)
from app.models.base import as_utc
from app.text import clean_text

log = logging.getLogger(__name__)

SUBMITTED = "submitted"
GRADED = "graded"


def announce_submission(submission: Submission) -> ScorePush | None:
    """The "submitted" push for a new upload, added to the session and marked for the queue.

    The caller commits and then calls :func:`app.jobs.queue.dispatch`.
    """
    if not submission.activity.has_ags:
        return None
    if _sent_score(submission.activity.id, submission.user.id) is not None:
        return None  # a Pending push would blank the grade the student already has
    return _new_push(submission, SUBMITTED)


def publish_grade(submission: Submission) -> ScorePush | None:
    """The "graded" push for a stored grade; like :func:`announce_submission`, uncommitted."""
    if (
        not is_releasable(submission)
        and _sent_score(submission.activity_id, submission.user_id) is not None
    ):
        return None
    return _new_push(submission, GRADED)


def retry(push: ScorePush) -> None:
    """Teacher action: send a push again from a clean slate, failed or still retrying.

    After a 404 the column is gone: the teacher asking to resend is the consent to put it
    back, so when the platform lets us (``lineitems``) the dead URL is dropped and the column
    is found again (restored in the LMS) or created anew on this attempt.
    """
    activity = push.activity
    if push.http_status == 404 and activity.lineitems_url:
        activity.lineitem_url = None
    delivery.resend(push)


def _new_push(submission: Submission, kind: str) -> ScorePush | None:
    if not submission.activity.has_ags:
        return None
    push = ScorePush(activity=submission.activity, user=submission.user, submission=submission)
    push.kind, push.status, push.job_id = kind, PushStatus.PENDING, new_job_id()
    db.session.add(push)
    return push


class ScoreSender:
    """Delivers score pushes (app.evaluation.delivery retries them)."""

    def lane(self, push: ScorePush) -> str:
        return f"score:{push.activity_id}:{push.user_id}"

    def overtaken(self, push: ScorePush) -> bool:
        """Asked in the student's lane, just before sending: a newer push for the student
        exists (it sends the newest state; this one would roll it back), or this one carries
        no score while the gradebook already holds one (it would blank it, see the rules)."""
        newer = db.session.scalar(
            select(func.count(ScorePush.id)).where(
                ScorePush.activity_id == push.activity_id,
                ScorePush.user_id == push.user_id,
                ScorePush.id > push.id,
            )
        )
        return bool(newer) or (
            not _carries_score(push) and _sent_score(push.activity_id, push.user_id) is not None
        )

    def send(self, push: ScorePush) -> None:
        submission = push.submission
        activity = submission.activity
        try:
            with ags_client(activity) as client:
                lineitem_url, maximum = _resolve_lineitem(client, activity)
                push.sent_timestamp = _next_timestamp(push)
                db.session.commit()  # before sending: the platform may keep it if we time out
                score = _score_payload(push, submission, maximum)
                client.post_score(lineitem_url, score)
        except AgsError as exc:
            raise failure(exc) from exc
        push.http_status = 200
        push.score_given = score.get("scoreGiven")


def failure(exc: AgsError) -> delivery.DeliveryFailed:
    """An AGS error as a failed delivery, explained for the teacher page."""
    message = str(exc)
    if exc.status == 404:
        message = N_(
            "The LMS no longer has this grade column (it may have been deleted). "
            "Details: %(details)s"
        ) % {"details": exc}
    return delivery.DeliveryFailed(message, status=exc.status, retryable=exc.retryable)


def ags_client(activity: Activity) -> AgsClient:
    return AgsClient.configured(activity.platform, scopes=activity.ags_scopes)


def _resolve_lineitem(client: AgsClient, activity: Activity) -> tuple[str, float]:
    """The line item URL, found or created from ``lineitems`` when the launch gave none, and
    its maximum: scores go on the column's scale.

    Also refreshes ``activity.max_score`` from the line item, unless the teacher's new
    maximum is still on its way to the column (see :mod:`app.lti.lineitem_sync`).
    """
    if activity.lineitem_url:
        item = client.get_lineitem(activity.lineitem_url)
    else:
        item = client.find_or_create_lineitem(
            activity.lineitems_url,
            resource_link_id=activity.resource_link_id,
            label=activity.title,
            score_maximum=activity.max_score or current_app.config["EVALUAITOR_DEFAULT_MAX_SCORE"],
        )
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            raise AgsError(
                N_("The LMS answered with a gradebook column that has no address."),
                retryable=False,
            )
        activity.lineitem_url = item["id"]
    maximum = item.get("scoreMaximum") if isinstance(item, dict) else None
    if not isinstance(maximum, int | float) or maximum <= 0:
        maximum = activity.max_score or current_app.config["EVALUAITOR_DEFAULT_MAX_SCORE"]
    elif outstanding(activity) is None:
        activity.max_score = float(maximum)
    db.session.commit()
    return activity.lineitem_url, float(maximum)


def outstanding(activity: Activity) -> LineItemUpdate | None:
    """The latest update of the activity's column when it has not reached the LMS yet
    (app.lti.lineitem_sync): until it has, the column's maximum is not the activity's."""
    latest = db.session.scalar(
        select(LineItemUpdate)
        .where(LineItemUpdate.activity_id == activity.id)
        .order_by(LineItemUpdate.id.desc())
        .limit(1)
    )
    return latest if latest and latest.status != PushStatus.SENT else None


def sync_max_score(activity: Activity) -> None:
    """Before grading: learn the maximum from the line item; the default if there is none."""
    if activity.max_score is None and activity.has_ags:
        try:
            with ags_client(activity) as client:
                _resolve_lineitem(client, activity)
        except AgsError as exc:
            log.warning("could not read line item of activity %s: %s", activity.id, exc)
    if activity.max_score is None:
        activity.max_score = current_app.config["EVALUAITOR_DEFAULT_MAX_SCORE"]
        db.session.commit()


def _score_payload(push: ScorePush, submission: Submission, maximum: float) -> dict:
    """The score message; ``maximum`` is the line item's own (see :func:`_resolve_lineitem`)."""
    activity: Activity = submission.activity
    user: LtiUser = submission.user
    payload: dict = {"userId": user.sub, "timestamp": as_utc(push.sent_timestamp).isoformat()}
    grade: Grade | None = submission.grade
    if _carries_score(push):
        payload.update(
            scoreGiven=round(grade.effective_normalized * maximum, 4),
            scoreMaximum=maximum,
            comment=plain_comment(
                grade.effective_feedback, current_app.config["EVALUAITOR_COMMENT_MAX_CHARS"]
            ),
            activityProgress="Completed",
            gradingProgress="FullyGraded",
        )
        return payload
    if push.kind == GRADED:
        payload.update(activityProgress="Completed", gradingProgress="PendingManual")
    else:
        manual = activity.release_policy == "hold_all"  # a teacher will grade it in any case
        payload.update(
            activityProgress="Submitted", gradingProgress="PendingManual" if manual else "Pending"
        )
    return payload


def _carries_score(push: ScorePush) -> bool:
    return push.kind == GRADED and is_releasable(push.submission)


def is_releasable(submission: Submission) -> bool:
    """Only a released, graded submission's score goes to the gradebook; a held one keeps
    its score for the teacher, even when the model gave one."""
    grade = submission.grade
    return (
        submission.job.status == JobStatus.COMPLETED
        and grade is not None
        and grade.is_released
        and grade.effective_normalized is not None
    )


def _sent_score(activity_id: int, user_id: int) -> float | None:
    """The last score the gradebook received for this student, if any."""
    return db.session.scalar(
        select(ScorePush.score_given)
        .where(
            ScorePush.activity_id == activity_id,
            ScorePush.user_id == user_id,
            ScorePush.status == PushStatus.SENT,
            ScorePush.score_given.is_not(None),
        )
        .order_by(ScorePush.id.desc())
        .limit(1)
    )


def _next_timestamp(push: ScorePush) -> datetime:
    """The start of the next whole second, and later than any timestamp already sent.

    Moodle compares whole seconds and refuses (409) a score not later than the grade it
    holds, which it stamps itself when it rescales a column: a grade resent just after a
    maximum change is in that same second. Every earlier stamp is at most the current second,
    so the next one is later than all of them, at most one second ahead.
    """
    now = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=1)
    last = db.session.scalar(
        select(func.max(ScorePush.sent_timestamp)).where(
            ScorePush.activity_id == push.activity_id,
            ScorePush.user_id == push.user_id,
        )
    )
    if last is not None:
        now = max(now, as_utc(last).replace(microsecond=0) + timedelta(seconds=1))
    return now


_MARKDOWN = re.compile(r"(\*\*|__|`{1,3}|^#{1,6}\s*|^>\s?)", re.MULTILINE)


def plain_comment(feedback: str, limit: int) -> str:
    """The feedback as plain text for the gradebook, trimmed on a word boundary; without
    hidden characters, since it may quote the student's file name or text (app.text)."""
    text = _MARKDOWN.sub("", clean_text(feedback)).strip()
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0]
    return cut + "…"
