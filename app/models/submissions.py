"""Submissions, their grades, and the score pushes sent to the LMS."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    JSON,
    ColumnElement,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    Select,
    String,
    Text,
    UniqueConstraint,
    func,
    select,
    text,
)
from sqlalchemy.ext.hybrid import hybrid_property
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.extensions import db
from app.models.base import Timestamped, utcnow
from app.models.jobs import Delivery, GradingJob, ShowsJob
from app.models.lti import Activity, LtiUser


class Submission(ShowsJob, Timestamped, db.Model):
    """A student's attempt at an activity: the LMS side of a grading job (the file, its
    progress and result are the job's, app.models.jobs). The latest attempt counts."""

    __tablename__ = "submission"
    __table_args__ = (
        UniqueConstraint("activity_id", "user_id", "attempt", name="uq_submission_attempt"),
        UniqueConstraint("activity_id", "lms_submission_id", name="uq_submission_lms_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    activity_id: Mapped[int] = mapped_column(
        ForeignKey("activity.id", ondelete="CASCADE"), index=True
    )
    user_id: Mapped[int] = mapped_column(ForeignKey("lti_user.id", ondelete="CASCADE"))
    attempt: Mapped[int] = mapped_column(Integer, default=1)
    comment: Mapped[str] = mapped_column(Text, default="")
    #: Set when a teacher reopens the activity for this student after this attempt.
    reopened_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    #: A teacher's regrade with another strategy or model: ``{"plugin", "params", "model"}``;
    #: None grades with the activity's settings.
    grading_override: Mapped[dict | None] = mapped_column(JSON)
    #: For a submission made in the LMS to an assignment with an asset processor: the
    #: notice's submission id (one per attempt: a new one means new work), and where the
    #: reports for its assets go.
    lms_submission_id: Mapped[str | None] = mapped_column(String(255))
    report_url: Mapped[str | None] = mapped_column(String(1000))

    activity: Mapped[Activity] = relationship()
    user: Mapped[LtiUser] = relationship()
    job: Mapped[GradingJob] = relationship(
        back_populates="submission", cascade="all, delete-orphan", single_parent=True
    )
    grade: Mapped[Grade | None] = relationship(
        back_populates="submission", uselist=False, cascade="all, delete-orphan"
    )


def latest_only(query: Select, activity_id: int) -> Select:
    """``query`` (over submissions) kept to each student's latest attempt at the activity,
    the one that counts."""
    newest = (
        select(Submission.user_id, func.max(Submission.attempt).label("attempt"))
        .where(Submission.activity_id == activity_id)
        .group_by(Submission.user_id)
        .subquery()
    )
    return query.join(
        newest, (Submission.user_id == newest.c.user_id) & (Submission.attempt == newest.c.attempt)
    )


class Grade(Timestamped, db.Model):
    """A teacher's side of a graded submission: the override and the release. The grader's
    own result is the job's (``submission.job``) and is never changed here."""

    __tablename__ = "grade"

    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[int] = mapped_column(
        ForeignKey("submission.id", ondelete="CASCADE"), unique=True
    )
    # A teacher's override; the effective values are the override where one is set.
    override_score: Mapped[float | None] = mapped_column(Float)
    override_feedback: Mapped[str | None] = mapped_column(Text)
    override_criteria: Mapped[list | None] = mapped_column(JSON)
    overridden_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    overridden_by_id: Mapped[int | None] = mapped_column(
        ForeignKey("lti_user.id", ondelete="SET NULL")
    )
    #: As a calibration example for later gradings of the activity (app.grading.examples):
    #: ``auto`` (used when the teacher scored it and it is among the most similar),
    #: ``pinned`` (always used), ``excluded`` (never used).
    example: Mapped[str] = mapped_column(String(10), default="auto", server_default="auto")
    #: When the grade reached the student and the gradebook; None while it is held.
    released_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    released_by_id: Mapped[int | None] = mapped_column(
        ForeignKey("lti_user.id", ondelete="SET NULL")
    )

    submission: Mapped[Submission] = relationship(back_populates="grade")

    @property
    def is_released(self) -> bool:
        return self.released_at is not None

    @hybrid_property
    def is_teacher_graded(self) -> bool:
        """A teacher saved this grade (their own score, or the AI's they kept: keeping it
        stores no override, so ``override_score`` alone would miss every agreement). A new
        result clears it (app.lms.submissions.LmsSide.settle). What calibration examples and the
        AI-teacher agreement are made of."""
        return self.overridden_at is not None

    @is_teacher_graded.inplace.expression
    @classmethod
    def _is_teacher_graded_expression(cls) -> ColumnElement[bool]:
        return cls.overridden_at.is_not(None)

    @property
    def result(self) -> GradingJob:
        """The grader's own result (score, scale, feedback, criteria, flags, provenance)."""
        return self.submission.job

    @property
    def score(self) -> float | None:
        return self.result.score

    @property
    def scale(self) -> float | None:
        return self.result.scale

    @property
    def effective_score(self) -> float | None:
        """The teacher's score where there is one (on ``scale``), else the AI's."""
        return self.override_score if self.override_score is not None else self.score

    @property
    def effective_normalized(self) -> float | None:
        if self.override_score is None:
            return self.result.normalized
        return max(0.0, min(1.0, self.override_score / self.scale)) if self.scale else None

    @property
    def effective_feedback(self) -> str:
        override = self.override_feedback
        return override if override is not None else self.result.feedback

    @property
    def effective_criteria(self) -> list:
        override = self.override_criteria
        return override if override is not None else self.result.criteria


class ScorePush(Delivery, db.Model):
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
    #: The AGS ``timestamp`` of the last attempt; each push must be strictly later.
    sent_timestamp: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    score_given: Mapped[float | None] = mapped_column(Float)

    activity: Mapped[Activity] = relationship()
    user: Mapped[LtiUser] = relationship()
    submission: Mapped[Submission] = relationship()


class LineItemUpdate(Delivery, db.Model):
    """Bringing the LMS gradebook column (AGS line item) in step with the activity's title and
    maximum after a settings change, and what became of it (see app.lti.lineitem_sync)."""

    __tablename__ = "lineitem_update"

    id: Mapped[int] = mapped_column(primary_key=True)
    activity_id: Mapped[int] = mapped_column(
        ForeignKey("activity.id", ondelete="CASCADE"), index=True
    )
    # ``superseded`` when a later settings change asked for a newer update.

    activity: Mapped[Activity] = relationship()


class Appeal(Timestamped, db.Model):
    """A student's request to regrade a released grade, with their reason, and the teacher's
    answer (app.lms.appeals). A changed score is the teacher's override, pushed like any other."""

    __tablename__ = "appeal"
    __table_args__ = (
        # One request waiting for an answer per submission, also when two arrive at once.
        Index(
            "uq_appeal_one_open",
            "submission_id",
            unique=True,
            sqlite_where=text("status = 'open'"),
            postgresql_where=text("status = 'open'"),
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    activity_id: Mapped[int] = mapped_column(
        ForeignKey("activity.id", ondelete="CASCADE"), index=True
    )
    submission_id: Mapped[int] = mapped_column(
        ForeignKey("submission.id", ondelete="CASCADE"), index=True
    )
    user_id: Mapped[int] = mapped_column(ForeignKey("lti_user.id", ondelete="CASCADE"))
    reason: Mapped[str] = mapped_column(Text)
    #: ``open`` (waiting for the teacher), ``answered`` or ``withdrawn``.
    status: Mapped[str] = mapped_column(String(20), default="open", index=True)
    answer: Mapped[str | None] = mapped_column(Text)
    #: The effective score when the student asked, and after the teacher's answer.
    score_before: Mapped[float | None] = mapped_column(Float)
    score_after: Mapped[float | None] = mapped_column(Float)
    answered_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    answered_by_id: Mapped[int | None] = mapped_column(
        ForeignKey("lti_user.id", ondelete="SET NULL")
    )

    activity: Mapped[Activity] = relationship()
    submission: Mapped[Submission] = relationship()
    user: Mapped[LtiUser] = relationship(foreign_keys=[user_id])


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
