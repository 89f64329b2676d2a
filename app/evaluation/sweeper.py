"""The sweeper: the scheduler of retries and the healer of lost work (runs in every worker).

The database is the ledger of work; Redis only holds what to run now. Every few seconds the
sweeper compares the two and queues, with a new RQ job id, each row that should run and
that RQ will not run:

- a grading job in line (``pending``) whose RQ job is missing (Redis was down or lost its
  data), failed (the job died before it claimed the row: "database is locked", a crash in
  its setup), or finished without grading it;
- a grading job whose retry is due (``waiting``: after a busy grading service, or for
  budget once the month turned or a limit changed, app.evaluation.budget);
- a grading job being graded whose worker stopped or died (SIGTERM, OOM killer, a machine
  lost): handed back to the queue; after :data:`MAX_HANDBACKS` it is failed instead, since
  it is probably what kills its workers;
- a pending delivery that is due (its first attempt, or a retry) that RQ does not hold;
- an LMS's notice stored and answered but not yet processed (``received``) that RQ does
  not hold: the LMS never sends it again (app.lti.notices).

It also applies the retention windows (:func:`retain`, app.privacy), but at most once per
``EVALUAITOR_RETENTION_EVERY`` seconds across all workers, not every round.

Rows younger than ``EVALUAITOR_REQUEUE_AFTER`` seconds are left to the request or job that
is about to queue them. Two sweepers (two workers) may look at the same row: taking it over
is a conditional update on its old RQ job id, so only one of them queues it.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from sqlalchemy import or_, select, update

from app import metrics, privacy
from app.catalogue import N_
from app.evaluation import lifecycle
from app.evaluation.lifecycle import new_job_id
from app.evaluation.owners import delivery_models
from app.extensions import db
from app.jobs import queue
from app.models import GradingJob, JobStatus, PushStatus
from app.models.assets import RECEIVED, LtiNotice
from app.models.jobs import FETCHING, Delivery

log = logging.getLogger(__name__)

#: Times a job may lose its worker before it is failed rather than handed back.
MAX_HANDBACKS = 5
HANDED_BACK = N_("Waiting in the grading queue (the previous attempt was interrupted)")
STOPPED_AGAIN = N_(
    "Grading stopped again and again before it could finish (the grading worker was stopped "
    "or ran out of memory). It can be graded again once the cause is fixed."
)


def sweep(older_than: timedelta) -> int:
    """One round; returns how many rows it queued. Raises if Redis or the database is away
    (the caller logs it and tries again next round)."""
    now = datetime.now(UTC)
    cutoff = now - older_than
    return (
        _grading(now, cutoff)
        + sum(_deliveries(model, now, cutoff) for model in delivery_models())
        + _notices(cutoff)
        + _fetches(cutoff)
    )


def retain() -> dict[str, int] | None:
    """Apply retention if it is due (a Redis key shared by the workers is the clock); the
    counts of what went, or None when it was not due."""
    if not privacy.retention_due():
        return None
    return privacy.apply_retention(actor="sweeper")


def _grading(now: datetime, cutoff: datetime) -> int:
    rows = db.session.scalars(
        select(GradingJob).where(
            or_(
                (GradingJob.status == JobStatus.PENDING) & (GradingJob.updated_at < cutoff),
                (GradingJob.status == JobStatus.WAITING) & (GradingJob.retry_at <= now),
                (GradingJob.status == JobStatus.PROCESSING) & (GradingJob.updated_at < cutoff),
            )
        )
    ).all()
    held = queue.held(row.job_id for row in rows if row.job_id)
    queued = 0
    for row in rows:
        if row.job_id in held:
            continue
        if row.status == JobStatus.PROCESSING:
            queued += _hand_back(row)
        elif _take_over(row):
            metrics.SWEEPER_ACTIONS.labels(f"queued_{row.status}_grading").inc()
            queued += queue.dispatch(row)
    return queued


def _hand_back(job: GradingJob) -> int:
    """A job whose worker is gone goes back in line (or fails, if it keeps doing that)."""
    old = job.job_id
    if job.handbacks >= MAX_HANDBACKS:
        log.warning("grading job %s lost its worker %s times: failed", job.id, job.handbacks)
        if lifecycle.end(
            job,
            (JobStatus.PROCESSING,),
            JobStatus.FAILED,
            token=old,
            error_message=STOPPED_AGAIN,
            error_details={"exception_type": "WorkerLost"},
        ):
            metrics.SWEEPER_ACTIONS.labels("failed_lost_grading").inc()
        return 0
    log.info("grading job %s lost its worker: handed back", job.id)
    moved = lifecycle.move(
        job,
        (JobStatus.PROCESSING,),
        JobStatus.PENDING,
        token=old,
        **(lifecycle.queued_values() | {"progress_message": HANDED_BACK}),
        handbacks=job.handbacks + 1,
    )
    if not moved:
        return 0
    metrics.SWEEPER_ACTIONS.labels("handed_back_grading").inc()
    return queue.dispatch(job)


def _deliveries(model: type[Delivery], now: datetime, cutoff: datetime) -> int:
    rows = db.session.scalars(
        select(model).where(
            model.status == PushStatus.PENDING,
            or_(
                model.next_attempt_at <= now,
                model.next_attempt_at.is_(None) & (model.updated_at < cutoff),
            ),
        )
    ).all()
    held = queue.held(row.job_id for row in rows if row.job_id)
    taken = [row for row in rows if row.job_id not in held and _take_over(row)]
    metrics.SWEEPER_ACTIONS.labels(f"queued_{model.__tablename__}").inc(len(taken))
    return sum(queue.dispatch(row) for row in taken)


def _notices(cutoff: datetime) -> int:
    rows = db.session.scalars(
        select(LtiNotice).where(LtiNotice.status == RECEIVED, LtiNotice.updated_at < cutoff)
    ).all()
    held = queue.held(queue.notice_job_id(row.id) for row in rows)
    queued = 0
    for row in rows:
        if queue.notice_job_id(row.id) in held:
            continue
        # Taken over by moving its clock: another sweeper that read the same row finds it
        # changed and leaves it.
        result = db.session.execute(
            update(LtiNotice)
            .where(LtiNotice.id == row.id, LtiNotice.updated_at == row.updated_at)
            .values(updated_at=datetime.now(UTC))
            .execution_options(synchronize_session=False)
        )
        db.session.commit()
        if result.rowcount == 1:
            metrics.SWEEPER_ACTIONS.labels("queued_lti_notice").inc()
            queued += queue.dispatch_notice(row.id)
    return queued


def _fetches(cutoff: datetime) -> int:
    """LMS-made submissions left fetching their files (the run doing it stopped, or Redis
    lost its job): asked for again. A run still at it is not harmed: only one of them puts
    the submission in line (app.lms.asset_processor)."""
    rows = db.session.scalars(
        select(GradingJob).where(
            GradingJob.status == JobStatus.WAITING,
            GradingJob.waiting_for == FETCHING,
            GradingJob.updated_at < cutoff,
            GradingJob.submission_id.is_not(None),
        )
    ).all()
    held = queue.held(queue.fetch_job_id(row.submission_id) for row in rows)
    queued = 0
    for row in rows:
        if queue.fetch_job_id(row.submission_id) in held or not lifecycle.move(
            row, (JobStatus.WAITING,), JobStatus.WAITING, updated_at=datetime.now(UTC)
        ):
            continue
        metrics.SWEEPER_ACTIONS.labels("queued_fetch").inc()
        queued += queue.dispatch_fetch(row.submission_id)
    return queued


def _take_over(row: GradingJob | Delivery) -> bool:
    """Give ``row`` a new RQ job id, unless another sweeper just did; committed."""
    model = type(row)
    same_job = model.job_id.is_(None) if row.job_id is None else model.job_id == row.job_id
    values: dict[str, object] = {"job_id": new_job_id()}
    if isinstance(row, GradingJob):
        values["enqueued_at"] = datetime.now(UTC)
    result = db.session.execute(
        update(model)
        .where(model.id == row.id, same_job)
        .values(**values)
        .execution_options(synchronize_session=False)
    )
    db.session.commit()
    db.session.refresh(row)
    return result.rowcount == 1
