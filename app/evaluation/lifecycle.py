"""The one way a grading job changes state.

Several processes touch the same row: the worker grading it, a second worker given the same
row after the sweeper thought the first one lost, a client cancelling, a teacher regrading.
Every change is therefore a single conditional ``UPDATE … WHERE status IN (…)`` (and, for a
worker, ``AND job_id = <its RQ job>``): exactly one side wins and the others learn it from the
row count. A worker whose job was handed to another one can no longer write anything.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sqlalchemy import update

from app.catalogue import N_
from app.errors import IllegalTransition
from app.evaluation.owners import owner_of
from app.extensions import db
from app.jobs import queue
from app.models import GradingJob, JobStatus
from app.models.jobs import FINAL, TRANSITIONS

#: Progress messages are stored in English and shown in the reader's language (app.i18n).
WAITING_IN_LINE = N_("Waiting in the grading queue")


def move(
    job: GradingJob,
    allowed_from: tuple[JobStatus, ...],
    status: JobStatus,
    *,
    token: str | None = None,
    commit: bool = True,
    **values: object,
) -> bool:
    """Set ``status`` and ``values`` if the row is still in ``allowed_from`` (and still run by
    RQ job ``token``, when given). Returns whether it changed; the object is refreshed.

    ``commit=False`` leaves the transaction open so that the caller's own rows (a score push,
    a callback) are committed with the new state.
    """
    for source in allowed_from:
        if status not in TRANSITIONS[source]:
            raise IllegalTransition(f"grading job {job.id}: {source} -> {status}")
    if status in FINAL:
        values.setdefault("finished_at", datetime.now(UTC))
    statement = update(GradingJob).where(
        GradingJob.id == job.id, GradingJob.status.in_(allowed_from)
    )
    if token is not None:
        statement = statement.where(GradingJob.job_id == token)
    result = db.session.execute(
        statement.values(status=status, **values).execution_options(synchronize_session=False)
    )
    if commit:
        db.session.commit()
    db.session.refresh(job)
    return result.rowcount == 1


def end(
    job: GradingJob,
    allowed_from: tuple[JobStatus, ...],
    status: JobStatus,
    *,
    token: str | None = None,
    **values: object,
) -> bool:
    """Move ``job`` to final ``status`` with its owner's effects (app.evaluation.owners) in
    one transaction, then queue the owner's deliveries. False, and nothing changes, if the
    row is no longer in ``allowed_from`` (or no longer RQ job ``token``'s)."""
    if not move(job, allowed_from, status, token=token, commit=False, **values):
        db.session.rollback()
        return False
    deliveries = owner_of(job).settle(job)
    db.session.commit()
    queue.dispatch(*deliveries)
    return True


def restart(job: GradingJob, *, fresh: bool) -> bool:
    """Put a finished job back in line (a person's retry or regrade), uncommitted; ``fresh``
    asks the model again rather than replaying its cached replies. False if it is not
    finished (it is already in line or being graded)."""
    return move(
        job,
        tuple(s for s in FINAL if JobStatus.PENDING in TRANSITIONS[s]),
        JobStatus.PENDING,
        commit=False,
        **queued_values(),
        fresh_since=datetime.now(UTC) if fresh else None,
        tries=0,
        retry_at=None,
        handbacks=0,
        error_message=None,
        error_details=None,
    )


def queued_values() -> dict[str, object]:
    """What a job put in line gets: a new RQ job id (the old one, if Redis still has it, can
    no longer claim the row) and the time it was queued."""
    return {
        "job_id": new_job_id(),
        "enqueued_at": datetime.now(UTC),
        "started_at": None,
        "finished_at": None,
        "progress_step": 0,
        "progress_total": 0,
        "progress_message": WAITING_IN_LINE,
    }


def new_job_id() -> str:
    return uuid.uuid4().hex
