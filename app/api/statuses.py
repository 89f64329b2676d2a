"""The API's status words and how the evaluation core's statuses are shown with them.

Clients written to the proposal (section 4.2) know five words. The core has seven
(app.models.jobs.JobStatus); the two it adds are shown as the proposal's nearest word plus an
extra field, so such a client never meets a word it does not know: ``waiting`` (tried again
by itself) is ``processing`` with ``retry_at`` and ``waiting_for`` (``service``: the grading
service was busy; ``budget``: a monthly spend limit is reached), and
``needs_review`` (graded, held for a person) is ``completed`` with ``needs_review: true``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from app.models import JobStatus


class EvaluationStatus(StrEnum):
    PENDING = "pending"
    PROCESSING = "processing"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


SHOWN_AS: dict[JobStatus, EvaluationStatus] = {
    JobStatus.PENDING: EvaluationStatus.PENDING,
    JobStatus.PROCESSING: EvaluationStatus.PROCESSING,
    JobStatus.WAITING: EvaluationStatus.PROCESSING,
    JobStatus.COMPLETED: EvaluationStatus.COMPLETED,
    JobStatus.NEEDS_REVIEW: EvaluationStatus.COMPLETED,
    JobStatus.FAILED: EvaluationStatus.FAILED,
    JobStatus.CANCELLED: EvaluationStatus.CANCELLED,
}

#: What ``GET /evaluations?status=`` takes: the five words, ``needs_review`` (the completed
#: ones held for a person) and ``queued``, the word for ``pending`` before API version 1.
StatusFilter = Literal[
    "pending", "processing", "completed", "failed", "cancelled", "needs_review", "queued"
]

#: The core's statuses each filter word matches.
MATCHES: dict[str, tuple[JobStatus, ...]] = {
    "pending": (JobStatus.PENDING,),
    "queued": (JobStatus.PENDING,),
    "processing": (JobStatus.PROCESSING, JobStatus.WAITING),
    "completed": (JobStatus.COMPLETED, JobStatus.NEEDS_REVIEW),
    "needs_review": (JobStatus.NEEDS_REVIEW,),
    "failed": (JobStatus.FAILED,),
    "cancelled": (JobStatus.CANCELLED,),
}


def shown_as(status: JobStatus) -> EvaluationStatus:
    """The API word for a core status."""
    return SHOWN_AS[JobStatus(status)]
