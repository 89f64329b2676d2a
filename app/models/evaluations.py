"""Evaluations submitted through the REST API by clients that are not an LMS."""

from __future__ import annotations

from sqlalchemy import JSON, Float, ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.extensions import db
from app.models.base import Timestamped
from app.models.jobs import Callback, GradingJob, ShowsJob
from app.models.tenants import Organization


class Evaluation(ShowsJob, Timestamped, db.Model):
    """A file an organization sent through the REST API: the API side of a grading job (the
    file, status, progress and result are the job's, app.models.jobs). The client knows it by
    its unguessable ``code``; it says how to grade, since the API has no activity."""

    __tablename__ = "evaluation"

    id: Mapped[int] = mapped_column(primary_key=True)
    code: Mapped[str] = mapped_column(String(64), unique=True)
    organization_id: Mapped[int] = mapped_column(
        ForeignKey("organization.id", ondelete="CASCADE"), index=True
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
    #: Where to tell the client that the evaluation finished (its delivery: ``callback``).
    callback_url: Mapped[str | None] = mapped_column(String(1000))

    organization: Mapped[Organization] = relationship()
    job: Mapped[GradingJob] = relationship(
        back_populates="evaluation", cascade="all, delete-orphan", single_parent=True
    )
    callback: Mapped[Callback | None] = relationship(
        back_populates="evaluation", cascade="all, delete-orphan"
    )
