"""Regrade requests (appeals): a student asks, with a reason, for a released grade to be looked
at again; the teacher answers, and may change the score or the feedback.

The rules are here and only here: the pages show what :func:`standing` says and post to
:func:`ask`, :func:`withdraw` and :func:`answer`. The activity sets how many requests a
submission may have (``Activity.appeal_limit``; 0 switches appeals off) and for how many days
after the grade's release (``Activity.appeal_days``; None: no deadline). Every request counts
towards the limit, a withdrawn one too, so asking and withdrawing cannot go round it. A changed
score or feedback is the teacher's override (:func:`app.lms.review.override`), so it reaches the
gradebook like any other; each step is an :class:`AuditEvent` (``appeal``, ``appeal_withdraw``,
``appeal_answer``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l
from flask_babel import ngettext
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import joinedload

from app.errors import EvaluaitorError
from app.extensions import db
from app.lms import review
from app.models import Activity, Appeal, Grade, JobStatus, Submission
from app.models.base import as_utc
from app.text import clean_text

MAX_REASON_CHARS = 2_000
WAITING = _l("Your request is waiting for your teacher's answer.")
MAX_ANSWER_CHARS = 5_000


class AppealStatus(StrEnum):
    OPEN = "open"
    ANSWERED = "answered"
    WITHDRAWN = "withdrawn"


class AppealError(EvaluaitorError):
    """A request or an answer that cannot be stored as typed; the message says what to fix."""

    code = "appeal_error"


class AppealRefused(AppealError):
    """The activity's rules do not allow this request now; the message says why."""

    status_code = 403
    code = "appeal_refused"


@dataclass(frozen=True)
class Standing:
    """What the student page shows of a submission's regrade requests."""

    appeals: list[Appeal]
    #: Why a new request cannot be made now; None when it can.
    why_not: str | None
    #: Requests left (0 when appeals are off).
    left: int
    #: When the window for new requests closes; None without a deadline.
    closes_at: datetime | None

    @property
    def can_ask(self) -> bool:
        return self.why_not is None

    @property
    def is_on(self) -> bool:
        """False when the activity takes no requests: the page then shows no form."""
        return self.left > 0 or bool(self.appeals)


# -- reading ----------------------------------------------------------------------------


def standing(submission: Submission, *, now: datetime | None = None) -> Standing:
    """The student's view of their submission's requests, and whether they may ask again."""
    found = submission_appeals(submission)
    limit = submission.activity.appeal_limit
    return Standing(
        appeals=found,
        why_not=_refusal(submission, found, now or datetime.now(UTC)),
        left=max(0, limit - len(found)),
        closes_at=_closes_at(submission),
    )


def submission_appeals(submission: Submission) -> list[Appeal]:
    """A submission's requests, oldest first."""
    return list(
        db.session.scalars(
            select(Appeal).where(Appeal.submission_id == submission.id).order_by(Appeal.id)
        )
    )


def open_appeals(activity_id: int) -> list[Appeal]:
    """The activity's requests waiting for an answer, oldest first (the teacher's queue)."""
    return list(
        db.session.scalars(
            select(Appeal)
            .where(Appeal.activity_id == activity_id, Appeal.status == AppealStatus.OPEN)
            .options(
                joinedload(Appeal.user),
                joinedload(Appeal.submission).joinedload(Submission.grade),
                joinedload(Appeal.submission).joinedload(Submission.job),
            )
            .order_by(Appeal.id)
        )
    )


def open_count(activity_id: int) -> int:
    return db.session.scalar(
        select(func.count(Appeal.id)).where(
            Appeal.activity_id == activity_id, Appeal.status == AppealStatus.OPEN
        )
    )


def fetch(appeal_id: int, activity_id: int, user_id: int | None = None) -> Appeal | None:
    """An appeal of this activity (and of this student, when ``user_id`` is given), or None:
    another activity's or student's id is as good as unknown."""
    appeal = db.session.get(Appeal, appeal_id)
    if appeal is None or appeal.activity_id != activity_id:
        return None
    if user_id is not None and appeal.user_id != user_id:
        return None
    return appeal


# -- actions ----------------------------------------------------------------------------


def ask(submission: Submission, user_id: int, reason: str) -> Appeal:
    """Store a student's request for their released grade to be looked at again.

    Raises AppealRefused when the activity's rules do not allow it now, AppealError for a
    missing or too long reason. The caller makes sure the submission is the student's.
    """
    text = _required_text(
        reason,
        MAX_REASON_CHARS,
        _("Please say why you think your grade should be looked at again."),
        _("Your reason is too long (at most %(n)s characters).", n=MAX_REASON_CHARS),
    )
    refusal = _refusal(submission, submission_appeals(submission), datetime.now(UTC))
    if refusal is not None:
        raise AppealRefused(refusal)
    score = submission.grade.effective_score
    appeal = Appeal(
        activity_id=submission.activity_id,
        submission_id=submission.id,
        user_id=user_id,
        reason=text,
        status=AppealStatus.OPEN,
        score_before=score,
    )
    db.session.add(appeal)
    try:
        db.session.flush()  # the event names the appeal
    except IntegrityError:  # another request of theirs got in first (uq_appeal_one_open)
        db.session.rollback()
        raise AppealRefused(WAITING) from None
    review.record(submission, user_id, "appeal", {"appeal": appeal.id, "score": score})
    db.session.commit()
    return appeal


def withdraw(appeal: Appeal, user_id: int) -> None:
    """The student takes back a request the teacher has not answered (it still counts)."""
    if appeal.status != AppealStatus.OPEN:
        raise AppealRefused(_("Only a request still waiting for an answer can be withdrawn."))
    appeal.status = AppealStatus.WITHDRAWN
    review.record(appeal.submission, user_id, "appeal_withdraw", {"appeal": appeal.id})
    db.session.commit()


def answer(
    appeal: Appeal, actor_id: int, *, text: str, score: str = "", feedback: str = ""
) -> Appeal:
    """The teacher's answer, with a new score and/or feedback when given.

    ``score`` is on the grader's scale, as :func:`app.lms.review.override` takes it; blank
    ``score`` and ``feedback`` keep the grade as it is. A change goes through the override,
    with its checks, audit event and gradebook push; the answer is stored in the same commit.
    Raises AppealError (or ReviewError for the new score) and then stores nothing.
    """
    if appeal.status != AppealStatus.OPEN:
        raise AppealError(_("This request was answered or withdrawn already."))
    words = _required_text(
        text,
        MAX_ANSWER_CHARS,
        _("Write an answer for the student."),
        _("The answer is too long (at most %(n)s characters).", n=MAX_ANSWER_CHARS),
    )
    submission = appeal.submission
    before = review.snapshot(submission.grade)

    def close(grade: Grade) -> None:
        appeal.status = AppealStatus.ANSWERED
        appeal.answer = words
        appeal.score_after = grade.effective_score
        appeal.answered_at, appeal.answered_by_id = datetime.now(UTC), actor_id
        review.record(
            submission,
            actor_id,
            "appeal_answer",
            {"appeal": appeal.id, "before": before, "after": review.snapshot(grade)},
        )

    grade = submission.grade
    if not score.strip() and not feedback.strip():
        close(grade)
        db.session.commit()
        return appeal
    kept = "" if grade.effective_score is None else repr(grade.effective_score)
    review.override(
        submission,
        actor_id,
        score=score if score.strip() else kept,
        feedback=feedback if feedback.strip() else grade.effective_feedback,
        criteria=_as_typed(grade),
        also=close,
    )
    return appeal


# -- helpers ----------------------------------------------------------------------------


def _refusal(submission: Submission, found: list[Appeal], now: datetime) -> str | None:
    """Why the student cannot ask about this submission now, or None when they can."""
    activity: Activity = submission.activity
    if activity.appeal_limit <= 0:
        return _("This activity takes no regrade requests.")
    if submission.attempt != review.latest_attempt(submission):
        return _("Only your latest submission counts; ask about that one.")
    grade = submission.grade
    if grade is None or not grade.is_released or submission.job.status != JobStatus.COMPLETED:
        return _("You can ask for a regrade once your grade is released.")
    if any(appeal.status == AppealStatus.OPEN for appeal in found):
        return str(WAITING)
    if len(found) >= activity.appeal_limit:
        return ngettext(
            "You have made the one regrade request this activity allows.",
            "You have made all %(num)s regrade requests this activity allows.",
            activity.appeal_limit,
        )
    closes_at = _closes_at(submission)
    if closes_at is not None and now >= closes_at:
        return _(
            "The time to ask for a regrade ended on %(when)s UTC.",
            when=closes_at.strftime("%Y-%m-%d %H:%M"),
        )
    return None


def _required_text(raw: str, limit: int, missing: str, too_long: str) -> str:
    """A reason or an answer as stored: without hidden characters or outer blanks, never
    empty nor over ``limit`` characters (AppealError with ``missing`` or ``too_long``)."""
    text = clean_text(raw).strip()
    if not text:
        raise AppealError(missing)
    if len(text) > limit:
        raise AppealError(too_long)
    return text


def _closes_at(submission: Submission) -> datetime | None:
    grade, days = submission.grade, submission.activity.appeal_days
    if days is None or grade is None or grade.released_at is None:
        return None
    return as_utc(grade.released_at) + timedelta(days=days)


def _as_typed(grade: Grade) -> dict[int, str]:
    """The grade's criterion scores as the override form would send them back untouched, so
    a new total does not drop the teacher's earlier criterion scores."""
    return {
        index: repr(criterion["score"])
        for index, criterion in enumerate(grade.effective_criteria)
        if criterion.get("score") is not None
    }
