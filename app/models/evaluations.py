"""Evaluations submitted through the REST API by clients that are not an LMS."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from sqlalchemy import JSON, DateTime, Float, ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.extensions import db
from app.models.base import StoredUpload, Timestamped
from app.models.tenants import Organization


class EvaluationStatus(StrEnum):
    QUEUED = "queued"
    PROCESSING = "processing"
    COMPLETED = "completed"
    NEEDS_REVIEW = "needs_review"
    FAILED = "failed"
    CANCELLED = "cancelled"


class Evaluation(StoredUpload, Timestamped, db.Model):
    """One file graded for an organization; addressed by its unguessable ``code``."""

    __tablename__ = "evaluation"

    id: Mapped[int] = mapped_column(primary_key=True)
    code: Mapped[str] = mapped_column(String(64), unique=True)
    organization_id: Mapped[int] = mapped_column(
        ForeignKey("organization.id", ondelete="CASCADE"), index=True
    )
    status: Mapped[EvaluationStatus] = mapped_column(
        String(20), default=EvaluationStatus.QUEUED, index=True
    )
    plugin_name: Mapped[str] = mapped_column(String(100))
    plugin_params: Mapped[dict] = mapped_column(JSON, default=dict)
    #: The model or assistant id the client asked for.
    evaluator_id: Mapped[str] = mapped_column(String(200))
    #: What the grader is told about the assignment (the API has no activity to read it from).
    instructions: Mapped[str] = mapped_column(Text, default="")
    rubric: Mapped[dict | None] = mapped_column(JSON)
    max_score: Mapped[float] = mapped_column(Float, default=10.0)
    client_reference: Mapped[str] = mapped_column(String(255), default="", index=True)
    #: The client's own data, returned as given (``metadata`` is reserved by SQLAlchemy).
    client_metadata: Mapped[dict] = mapped_column(JSON, default=dict)

    result: Mapped[dict | None] = mapped_column(JSON)
    error_message: Mapped[str | None] = mapped_column(Text)
    job_id: Mapped[str | None] = mapped_column(String(100))
    enqueued_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    callback_url: Mapped[str | None] = mapped_column(String(1000))
    #: ``pending``, ``sent`` or ``failed``; None when there is no callback.
    callback_status: Mapped[str | None] = mapped_column(String(20))
    callback_attempts: Mapped[int] = mapped_column(Integer, default=0)
    callback_error: Mapped[str | None] = mapped_column(Text)

    organization: Mapped[Organization] = relationship()
