"""The evaluation core's tables: a file to grade with its progress and result, and the
deliveries that tell other systems about it.

An LMS submission (:mod:`app.models.submissions`) and an API evaluation
(:mod:`app.models.evaluations`) each own one :class:`GradingJob`. They add who and what it
is for (the student and the activity; the organization and the client's reference); the job
holds what every grading has: the file, the status, progress, timing, the error, and the
result with its provenance. The database is the ledger of work: Redis only holds what to run
now, and the sweeper (:mod:`app.evaluation.sweeper`) rebuilds that from these rows.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING

from sqlalchemy import (
    JSON,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
)
from sqlalchemy.ext.associationproxy import AssociationProxy, association_proxy
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.extensions import db
from app.models.base import Timestamped, utcnow

if TYPE_CHECKING:
    from app.models.evaluations import Evaluation
    from app.models.submissions import Submission


#: ``waiting_for`` of an LMS-made submission whose files are being fetched from the LMS (app.lms.
#: asset_processor): waiting with no time to be tried at; the sweeper asks for the fetch again
#: if nothing is doing it (app.jobs.queue.dispatch_fetch).
FETCHING = "lms"


class JobStatus(StrEnum):
    #: Stored and waiting for a worker; whether Redis holds its job is the sweeper's concern.
    PENDING = "pending"
    PROCESSING = "processing"
    #: Tried again at retry_at, by itself: the grading service failed for a moment (429, 5xx,
    #: timeout), or (``waiting_for = "budget"``) grading it would pass a monthly spend limit.
    WAITING = "waiting"
    COMPLETED = "completed"
    #: Graded, but no trustworthy score: a person decides (``review_reason`` says why).
    NEEDS_REVIEW = "needs_review"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def is_final(self) -> bool:
        return self in FINAL


#: States a job still leaves on its own; the others wait for a person (or are over).
OPEN = (JobStatus.PENDING, JobStatus.PROCESSING, JobStatus.WAITING)
FINAL = (JobStatus.COMPLETED, JobStatus.NEEDS_REVIEW, JobStatus.FAILED, JobStatus.CANCELLED)
#: States a worker may claim a job from.
CLAIMABLE = (JobStatus.PENDING, JobStatus.WAITING)

#: Every allowed change; anything else is a bug and is refused (see app.evaluation.lifecycle).
TRANSITIONS: dict[JobStatus, frozenset[JobStatus]] = {
    JobStatus.PENDING: frozenset(
        {
            JobStatus.PENDING,
            JobStatus.PROCESSING,
            JobStatus.WAITING,  # its spend limit is reached (app.evaluation.budget)
            JobStatus.FAILED,
            JobStatus.CANCELLED,
        }
    ),
    JobStatus.PROCESSING: frozenset(
        {
            JobStatus.PROCESSING,  # a progress report
            JobStatus.PENDING,  # handed back: its worker stopped or died
            JobStatus.WAITING,
            JobStatus.COMPLETED,
            JobStatus.NEEDS_REVIEW,
            JobStatus.FAILED,
            JobStatus.CANCELLED,
        }
    ),
    JobStatus.WAITING: frozenset(
        {
            JobStatus.WAITING,  # still over its spend limit when tried again
            JobStatus.PROCESSING,
            JobStatus.PENDING,
            JobStatus.FAILED,
            JobStatus.CANCELLED,
        }
    ),
    # A person's retry or regrade starts again; a teacher's score settles a review.
    JobStatus.COMPLETED: frozenset({JobStatus.PENDING}),
    JobStatus.NEEDS_REVIEW: frozenset({JobStatus.PENDING, JobStatus.COMPLETED}),
    # Or an LMS-made submission's files fetched again (app.lms.asset_processor).
    JobStatus.FAILED: frozenset({JobStatus.PENDING, JobStatus.WAITING}),
    JobStatus.CANCELLED: frozenset(),
}


class GradingJob(Timestamped, db.Model):
    """One file graded once (a regrade starts the same job again): file → text → result."""

    __tablename__ = "grading_job"
    __table_args__ = (
        CheckConstraint("(submission_id IS NULL) <> (evaluation_id IS NULL)", name="one_owner"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    # Its owner: exactly one of the two, so deleting the owner deletes the job.
    submission_id: Mapped[int | None] = mapped_column(
        ForeignKey("submission.id", ondelete="CASCADE"), unique=True
    )
    evaluation_id: Mapped[int | None] = mapped_column(
        ForeignKey("evaluation.id", ondelete="CASCADE"), unique=True
    )
    status: Mapped[JobStatus] = mapped_column(String(20), default=JobStatus.PENDING, index=True)

    original_filename: Mapped[str] = mapped_column(String(255))
    kind: Mapped[str] = mapped_column(String(20))
    size_bytes: Mapped[int] = mapped_column(Integer)
    sha256: Mapped[str] = mapped_column(String(64))
    #: Relative to the data directory, under a folder of the tenant's (app.tenants).
    storage_path: Mapped[str] = mapped_column(String(1000))
    extracted_text: Mapped[str | None] = mapped_column(Text)

    progress_step: Mapped[int] = mapped_column(Integer, default=0)
    progress_total: Mapped[int] = mapped_column(Integer, default=0)
    progress_message: Mapped[str] = mapped_column(String(300), default="")

    #: The RQ job now meant to run it; the sweeper checks that Redis still has it.
    job_id: Mapped[str | None] = mapped_column(String(100))
    enqueued_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    #: Transient failures of the grading service in this run, and when to try again.
    tries: Mapped[int] = mapped_column(Integer, default=0)
    retry_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    #: Times a worker stopped or died while grading it: a job that kills its worker again
    #: and again is failed rather than handed back forever.
    handbacks: Mapped[int] = mapped_column(Integer, default=0)
    #: What a ``waiting`` job waits for: ``budget`` (a monthly spend limit), or None (the
    #: grading service). The API and the pages say so.
    #: What a ``waiting`` job waits for: ``service`` (None), ``budget`` (app.spend), or
    #: :data:`FETCHING` its files.
    waiting_for: Mapped[str | None] = mapped_column(String(20))
    #: While it is being graded under a spend limit: what this run was estimated to cost and
    #: how many tokens, counted against the limit until the run's ledger rows replace it.
    reserved_cost: Mapped[float | None] = mapped_column(Float)
    reserved_tokens: Mapped[int | None] = mapped_column(Integer)
    #: When a person asked for a fresh grading (a regrade): the model's replies cached before
    #: it are not replayed; those received since are (an earlier try of this same grading, cut
    #: short by one failed call, keeps the answers it got). None: automatic work, which
    #: replays any cached reply.
    fresh_since: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    error_message: Mapped[str | None] = mapped_column(Text)
    #: For administrators and API clients: what kind of failure (never a stack trace).
    error_details: Mapped[dict | None] = mapped_column(JSON)

    # The grader's result, as it returned it; an owner adds its own (a teacher's override).
    score: Mapped[float | None] = mapped_column(Float)
    #: The maximum the grader scored against (the reply's own scale when it wrote one).
    scale: Mapped[float | None] = mapped_column(Float)
    normalized: Mapped[float | None] = mapped_column(Float)
    feedback: Mapped[str] = mapped_column(Text, default="")
    criteria: Mapped[list] = mapped_column(JSON, default=list)
    flags: Mapped[list] = mapped_column(JSON, default=list)
    provenance: Mapped[dict] = mapped_column(JSON, default=dict)
    raw_replies: Mapped[list] = mapped_column(JSON, default=list)
    #: Why a ``needs_review`` result waits for a person.
    review_reason: Mapped[str | None] = mapped_column(Text)
    #: How far the result can be trusted, 0..1, with its reasons in ``provenance["confidence"]``
    #: (app.grading.confidence); None when nothing was graded.
    confidence: Mapped[float | None] = mapped_column(Float)
    #: The messages sent to the model in the last run, as sent (masked), each once:
    #: ``[{"prompt_hash", "messages"}]``, so a teacher can read exactly what the model read.
    prompts: Mapped[list] = mapped_column(JSON, default=list, deferred=True)

    submission: Mapped[Submission | None] = relationship(back_populates="job")
    evaluation: Mapped[Evaluation | None] = relationship(back_populates="job")

    @property
    def owner_kind(self) -> str:
        """Which side owns it: the name its owner registered under (app.evaluation.owners)."""
        return "submission" if self.submission_id is not None else "evaluation"

    @property
    def has_result(self) -> bool:
        return self.status in (JobStatus.COMPLETED, JobStatus.NEEDS_REVIEW)

    def set_progress(self, step: int, total: int, message: str) -> None:
        self.progress_step, self.progress_total = step, total
        self.progress_message = message[:300]


class ModelUsage(db.Model):
    """What one run of a job spent on models: a ledger that regrades add to and never
    overwrite, so spend per day stays true (app.spend)."""

    __tablename__ = "model_usage"

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int | None] = mapped_column(
        ForeignKey("grading_job.id", ondelete="SET NULL"), index=True
    )
    #: Whose it is: an LMS activity's, or an API organization's.
    activity_id: Mapped[int | None] = mapped_column(
        ForeignKey("activity.id", ondelete="CASCADE"), index=True
    )
    organization_id: Mapped[int | None] = mapped_column(
        ForeignKey("organization.id", ondelete="CASCADE"), index=True
    )
    model: Mapped[str] = mapped_column(String(200))
    calls: Mapped[int] = mapped_column(Integer, default=0)
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    #: In the currency of EVALUAITOR_LLM_PRICES; None when the model has no price set.
    cost: Mapped[float | None] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ShowsJob:
    """An owner of a job (a submission, an API evaluation) shows the job's file, state and
    progress as its own attributes, read and written through to ``job`` (they live there
    only), and usable in queries (``Submission.status == JobStatus.COMPLETED``)."""

    status: AssociationProxy[JobStatus] = association_proxy("job", "status")
    original_filename: AssociationProxy[str] = association_proxy("job", "original_filename")
    kind: AssociationProxy[str] = association_proxy("job", "kind")
    size_bytes: AssociationProxy[int] = association_proxy("job", "size_bytes")
    sha256: AssociationProxy[str] = association_proxy("job", "sha256")
    storage_path: AssociationProxy[str] = association_proxy("job", "storage_path")
    extracted_text: AssociationProxy[str | None] = association_proxy("job", "extracted_text")
    progress_step: AssociationProxy[int] = association_proxy("job", "progress_step")
    progress_total: AssociationProxy[int] = association_proxy("job", "progress_total")
    progress_message: AssociationProxy[str] = association_proxy("job", "progress_message")
    error_message: AssociationProxy[str | None] = association_proxy("job", "error_message")
    review_reason: AssociationProxy[str | None] = association_proxy("job", "review_reason")
    waiting_for: AssociationProxy[str | None] = association_proxy("job", "waiting_for")
    started_at: AssociationProxy[datetime | None] = association_proxy("job", "started_at")
    finished_at: AssociationProxy[datetime | None] = association_proxy("job", "finished_at")


class PushStatus(StrEnum):
    PENDING = "pending"
    SENT = "sent"
    FAILED = "failed"
    SUPERSEDED = "superseded"  # a newer one for the same target went out first


class Delivery(Timestamped):
    """A message for another system (a score for the LMS, a callback for an API client) and
    what became of it. Retries are kept here, not only in Redis: ``next_attempt_at`` is when
    the next attempt is due, and the sweeper sends any that Redis forgot."""

    status: Mapped[PushStatus] = mapped_column(String(20), default=PushStatus.PENDING)
    job_id: Mapped[str | None] = mapped_column(String(100))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    http_status: Mapped[int | None] = mapped_column(Integer)
    last_error: Mapped[str | None] = mapped_column(Text)

    @property
    def resendable(self) -> bool:
        """A person may send it again: it failed, or it is still being retried."""
        return self.status == PushStatus.FAILED or (
            self.status == PushStatus.PENDING and self.attempts > 0
        )


class Callback(Delivery, db.Model):
    """Telling an API client its evaluation finished (see app.api.callbacks)."""

    __tablename__ = "callback"

    id: Mapped[int] = mapped_column(primary_key=True)
    evaluation_id: Mapped[int] = mapped_column(
        ForeignKey("evaluation.id", ondelete="CASCADE"), unique=True
    )

    evaluation: Mapped[Evaluation] = relationship(back_populates="callback")
