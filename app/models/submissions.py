"""Submissions, their grades, and the score pushes sent to the LMS."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from sqlalchemy import JSON, DateTime, Float, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.errors import IllegalTransition
from app.extensions import db
from app.models.base import StoredUpload, Timestamped, utcnow
from app.models.lti import Activity, LtiUser


class SubmissionStatus(StrEnum):
    RECEIVED = "received"  # stored; the grading job is not enqueued yet (e.g. Redis was down)
    QUEUED = "queued"
    PROCESSING = "processing"
    GRADED = "graded"
    NEEDS_REVIEW = "needs_review"  # no trustworthy score: a teacher decides
    FAILED = "failed"

    @property
    def is_final(self) -> bool:
        return self in _FINAL


_FINAL = {SubmissionStatus.GRADED, SubmissionStatus.NEEDS_REVIEW, SubmissionStatus.FAILED}

#: Allowed status changes. Anything else is a bug and is refused.
_TRANSITIONS: dict[SubmissionStatus, set[SubmissionStatus]] = {
    SubmissionStatus.RECEIVED: {SubmissionStatus.QUEUED, SubmissionStatus.FAILED},
    SubmissionStatus.QUEUED: {SubmissionStatus.PROCESSING, SubmissionStatus.FAILED},
    SubmissionStatus.PROCESSING: {
        SubmissionStatus.GRADED,
        SubmissionStatus.NEEDS_REVIEW,
        SubmissionStatus.FAILED,
        SubmissionStatus.QUEUED,  # requeued after a worker died mid-job
    },
    SubmissionStatus.GRADED: {SubmissionStatus.QUEUED},
    # A teacher's score turns a submission the grader could not score into a graded one.
    SubmissionStatus.NEEDS_REVIEW: {SubmissionStatus.QUEUED, SubmissionStatus.GRADED},
    SubmissionStatus.FAILED: {SubmissionStatus.QUEUED},
}


class Submission(StoredUpload, Timestamped, db.Model):
    """One uploaded file. A student's latest submission for an activity is the one that counts."""

    __tablename__ = "submission"
    __table_args__ = (
        UniqueConstraint("activity_id", "user_id", "attempt", name="uq_submission_attempt"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    activity_id: Mapped[int] = mapped_column(
        ForeignKey("activity.id", ondelete="CASCADE"), index=True
    )
    user_id: Mapped[int] = mapped_column(ForeignKey("lti_user.id", ondelete="CASCADE"))
    attempt: Mapped[int] = mapped_column(Integer, default=1)
    status: Mapped[SubmissionStatus] = mapped_column(
        String(20), default=SubmissionStatus.RECEIVED, index=True
    )
    comment: Mapped[str] = mapped_column(Text, default="")

    error_message: Mapped[str | None] = mapped_column(Text)
    job_id: Mapped[str | None] = mapped_column(String(100))
    enqueued_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    #: Set when a teacher reopens the activity for this student after this attempt.
    reopened_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    #: A teacher's regrade with another strategy or model: ``{"plugin", "params", "model"}``;
    #: None grades with the activity's settings.
    grading_override: Mapped[dict | None] = mapped_column(JSON)

    activity: Mapped[Activity] = relationship()
    user: Mapped[LtiUser] = relationship()
    grade: Mapped[Grade | None] = relationship(
        back_populates="submission", uselist=False, cascade="all, delete-orphan"
    )

    def move_to(self, status: SubmissionStatus) -> None:
        """Change status, refusing transitions the workflow does not allow."""
        current = SubmissionStatus(self.status)
        if status not in _TRANSITIONS[current]:
            raise IllegalTransition(f"submission {self.id}: {current} -> {status}")
        self.status = status


class Grade(Timestamped, db.Model):
    """The outcome of grading one submission: what the plugin returned, kept for audit."""

    __tablename__ = "grade"

    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[int] = mapped_column(
        ForeignKey("submission.id", ondelete="CASCADE"), unique=True
    )
    score: Mapped[float | None] = mapped_column(Float)
    #: The maximum the grader scored against (the reply's own scale when it wrote one).
    scale: Mapped[float | None] = mapped_column(Float)
    normalized: Mapped[float | None] = mapped_column(Float)
    feedback: Mapped[str] = mapped_column(Text, default="")
    criteria: Mapped[list] = mapped_column(JSON, default=list)
    flags: Mapped[list] = mapped_column(JSON, default=list)
    provenance: Mapped[dict] = mapped_column(JSON, default=dict)
    raw_replies: Mapped[list] = mapped_column(JSON, default=list)
    error: Mapped[str | None] = mapped_column(Text)

    # A teacher's override. The AI's own score, feedback and criteria above are never
    # changed; the effective values are the override where one is set.
    override_score: Mapped[float | None] = mapped_column(Float)
    override_feedback: Mapped[str | None] = mapped_column(Text)
    override_criteria: Mapped[list | None] = mapped_column(JSON)
    overridden_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    overridden_by_id: Mapped[int | None] = mapped_column(
        ForeignKey("lti_user.id", ondelete="SET NULL")
    )
    #: When the grade reached the student and the gradebook; None while it is held.
    released_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    released_by_id: Mapped[int | None] = mapped_column(
        ForeignKey("lti_user.id", ondelete="SET NULL")
    )

    submission: Mapped[Submission] = relationship(back_populates="grade")

    @property
    def is_released(self) -> bool:
        return self.released_at is not None

    @property
    def effective_score(self) -> float | None:
        """The teacher's score where there is one (on ``scale``), else the AI's."""
        return self.override_score if self.override_score is not None else self.score

    @property
    def effective_normalized(self) -> float | None:
        if self.override_score is None:
            return self.normalized
        return max(0.0, min(1.0, self.override_score / self.scale)) if self.scale else None

    @property
    def effective_feedback(self) -> str:
        return self.override_feedback if self.override_feedback is not None else self.feedback

    @property
    def effective_criteria(self) -> list:
        return self.override_criteria if self.override_criteria is not None else self.criteria


class PushStatus(StrEnum):
    PENDING = "pending"
    SENT = "sent"
    FAILED = "failed"
    SUPERSEDED = "superseded"  # a newer push for the same student went out first


class ScorePush(Timestamped, db.Model):
    """One score message for the LMS gradebook, and what became of it."""

    __tablename__ = "score_push"

    id: Mapped[int] = mapped_column(primary_key=True)
    activity_id: Mapped[int] = mapped_column(
        ForeignKey("activity.id", ondelete="CASCADE"), index=True
    )
    user_id: Mapped[int] = mapped_column(ForeignKey("lti_user.id", ondelete="CASCADE"))
    submission_id: Mapped[int] = mapped_column(ForeignKey("submission.id", ondelete="CASCADE"))
    #: ``submitted`` (Pending, on upload) or ``graded`` (FullyGraded, with the score).
    kind: Mapped[str] = mapped_column(String(20))
    status: Mapped[PushStatus] = mapped_column(String(20), default=PushStatus.PENDING)
    #: Set once RQ holds the job; the sweeper enqueues pushes that never got one.
    job_id: Mapped[str | None] = mapped_column(String(100))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    http_status: Mapped[int | None] = mapped_column(Integer)
    last_error: Mapped[str | None] = mapped_column(Text)
    #: The AGS ``timestamp`` of the last attempt; each push must be strictly later.
    sent_timestamp: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    score_given: Mapped[float | None] = mapped_column(Float)

    activity: Mapped[Activity] = relationship()
    user: Mapped[LtiUser] = relationship()
    submission: Mapped[Submission] = relationship()


class LineItemUpdate(Timestamped, db.Model):
    """Bringing the LMS gradebook column (AGS line item) in step with the activity's title and
    maximum after a settings change, and what became of it (see app.lti.lineitem_sync)."""

    __tablename__ = "lineitem_update"

    id: Mapped[int] = mapped_column(primary_key=True)
    activity_id: Mapped[int] = mapped_column(
        ForeignKey("activity.id", ondelete="CASCADE"), index=True
    )
    #: ``superseded`` when a later settings change asked for a newer update.
    status: Mapped[PushStatus] = mapped_column(String(20), default=PushStatus.PENDING)
    job_id: Mapped[str | None] = mapped_column(String(100))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    http_status: Mapped[int | None] = mapped_column(Integer)
    last_error: Mapped[str | None] = mapped_column(Text)

    activity: Mapped[Activity] = relationship()


class AuditEvent(db.Model):
    """Who did what to a submission or an activity, and when: kept for every teacher action."""

    __tablename__ = "audit_event"

    id: Mapped[int] = mapped_column(primary_key=True)
    activity_id: Mapped[int] = mapped_column(
        ForeignKey("activity.id", ondelete="CASCADE"), index=True
    )
    submission_id: Mapped[int | None] = mapped_column(
        ForeignKey("submission.id", ondelete="CASCADE"), index=True
    )
    actor_id: Mapped[int | None] = mapped_column(ForeignKey("lti_user.id", ondelete="SET NULL"))
    #: e.g. ``override``, ``release``, ``regrade``, ``reopen``, ``settings``.
    action: Mapped[str] = mapped_column(String(40))
    #: ``{"before": ..., "after": ...}`` or other action-specific facts.
    details: Mapped[dict] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    actor: Mapped[LtiUser | None] = relationship()
