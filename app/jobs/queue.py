"""Enqueueing work. Jobs carry ids only; tasks load their state from the database.

Enqueue failures (Redis down) are not errors for the user: the row is already committed
and :func:`requeue_stale` picks it up later.
"""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime, timedelta

from flask import current_app
from redis.exceptions import RedisError
from rq import Queue, Retry
from rq.job import Job
from sqlalchemy import select

from app.extensions import db, redis_connection
from app.i18n import N_
from app.models import (
    Evaluation,
    EvaluationStatus,
    LineItemUpdate,
    PushStatus,
    ScorePush,
    Submission,
    SubmissionStatus,
)

log = logging.getLogger(__name__)

GRADING = "grading"
PASSBACK = "passback"
#: A grading job may take this long (several LLM calls with retries) before RQ stops it.
GRADING_TIMEOUT = 15 * 60


def queue(name: str) -> Queue:
    prefix = current_app.config["EVALUAITOR_QUEUE_PREFIX"]
    return Queue(f"{prefix}-{name}", connection=redis_connection())


def mark_for_grading(submission: Submission) -> None:
    """Mark ``submission`` queued with its job id, inside the caller's transaction.

    The row says ``queued`` *before* the job exists, so a fast worker never finds a
    submission that is not yet marked; :func:`dispatch` then creates the job after commit.
    """
    submission.move_to(SubmissionStatus.QUEUED)
    submission.job_id = uuid.uuid4().hex
    submission.enqueued_at = datetime.now(UTC)
    submission.set_progress(0, 0, N_("Waiting in the grading queue"))


def mark_push(push: ScorePush | LineItemUpdate) -> None:
    push.job_id = uuid.uuid4().hex


def dispatch(*rows: Submission | ScorePush | LineItemUpdate | Evaluation) -> bool:
    """Create the RQ jobs for rows marked and committed; False if Redis could not take them.

    On failure the marks are undone (a submission goes back to ``received``) so the sweeper
    finds the rows later. Nothing is lost either way.
    """
    try:
        with redis_connection().pipeline() as pipe:
            for row in rows:
                _enqueue(row, pipe)
            pipe.execute()
    except RedisError as exc:
        log.warning("could not enqueue %s: %s", ", ".join(map(_label, rows)), exc)
        for row in rows:
            row.job_id = None
            if isinstance(row, Submission):
                row.status = SubmissionStatus.RECEIVED  # undo: nothing was queued
                row.set_progress(0, 0, N_("Waiting to be queued"))
        db.session.commit()
        return False
    return True


def enqueue_grading(submission: Submission) -> bool:
    mark_for_grading(submission)
    db.session.commit()
    return dispatch(submission)


def enqueue_push(push: ScorePush | LineItemUpdate) -> bool:
    mark_push(push)
    db.session.commit()
    return dispatch(push)


def _enqueue(row: Submission | ScorePush | LineItemUpdate | Evaluation, pipe) -> None:
    if isinstance(row, Submission | Evaluation):
        task = "grade_submission" if isinstance(row, Submission) else "grade_evaluation"
        queue(GRADING).enqueue(
            f"app.jobs.tasks.{task}",
            row.id,
            job_id=row.job_id,
            job_timeout=GRADING_TIMEOUT,
            result_ttl=3600,
            failure_ttl=7 * 24 * 3600,
            pipeline=pipe,
        )
        return
    intervals = current_app.config["EVALUAITOR_PASSBACK_RETRY_INTERVALS"]
    task = "update_lineitem" if isinstance(row, LineItemUpdate) else "send_score"
    queue(PASSBACK).enqueue(
        f"app.jobs.tasks.{task}",
        row.id,
        job_id=row.job_id,
        retry=Retry(max=len(intervals), interval=intervals) if intervals else None,
        result_ttl=3600,
        failure_ttl=7 * 24 * 3600,
        pipeline=pipe,
    )


def _label(row: Submission | ScorePush | LineItemUpdate | Evaluation) -> str:
    return f"{type(row).__name__.lower()} {row.id}"


def requeue_stale(older_than: timedelta) -> int:
    """Enqueue work that never reached Redis, and fail grading a dead worker left behind.

    Three ways work can be stranded: Redis was down when it was submitted (no job id), the
    process died between commit and enqueue, or Redis lost its data (a job id that Redis does
    not know). Looks only at rows older than ``older_than``, so a request that is about to
    enqueue is not raced. Returns how many items were queued.
    """
    now = datetime.now(UTC)
    cutoff = now - older_than
    waiting = db.session.scalars(
        select(Submission).where(
            Submission.status == SubmissionStatus.RECEIVED, Submission.created_at < cutoff
        )
    ).all()
    count = sum(enqueue_grading(s) for s in waiting)
    queued = db.session.scalars(
        select(Submission).where(
            Submission.status == SubmissionStatus.QUEUED, Submission.enqueued_at < cutoff
        )
    ).all()
    pushes = [
        push
        for model in (ScorePush, LineItemUpdate)
        for push in db.session.scalars(
            select(model).where(model.status == PushStatus.PENDING, model.created_at < cutoff)
        )
    ]
    evaluations = db.session.scalars(
        select(Evaluation).where(
            Evaluation.status == EvaluationStatus.QUEUED, Evaluation.enqueued_at < cutoff
        )
    ).all()
    for row in [*queued, *pushes, *evaluations]:
        if row.job_id is None or not Job.exists(row.job_id, connection=redis_connection()):
            if isinstance(row, Submission | Evaluation):
                row.job_id = uuid.uuid4().hex
            else:
                mark_push(row)
            db.session.commit()
            count += dispatch(row)
    _fail_abandoned(now - timedelta(seconds=GRADING_TIMEOUT + 60))
    return count + _resend_lost_callbacks(cutoff)


def _resend_lost_callbacks(finished_before: datetime) -> int:
    """Callbacks still pending whose job Redis never got or lost are scheduled again."""
    from app.api import callbacks

    pending = db.session.scalars(
        select(Evaluation).where(
            Evaluation.callback_status == "pending", Evaluation.finished_at < finished_before
        )
    ).all()
    lost = [
        evaluation
        for evaluation in pending
        if not Job.exists(callbacks.job_id(evaluation), connection=redis_connection())
    ]
    for evaluation in lost:
        callbacks.schedule(evaluation)
    return len(lost)


def _fail_abandoned(started_before: datetime) -> None:
    """A job still ``processing`` after RQ's own timeout lost its worker: say so, allow retry."""
    stuck = db.session.scalars(
        select(Submission).where(
            Submission.status == SubmissionStatus.PROCESSING,
            Submission.started_at < started_before,
        )
    ).all()
    for submission in stuck:
        submission.move_to(SubmissionStatus.FAILED)
        submission.error_message = N_("Grading was interrupted. A teacher can retry it.")
    db.session.commit()
    _fail_abandoned_evaluations(started_before)


def _fail_abandoned_evaluations(started_before: datetime) -> None:
    """The same for API evaluations, whose client is told through its callback."""
    from app.api import evaluations  # the API's own state rules (jobs -> api, not the reverse)

    stuck = db.session.scalars(
        select(Evaluation).where(
            Evaluation.status == EvaluationStatus.PROCESSING,
            Evaluation.started_at < started_before,
        )
    ).all()
    running = (EvaluationStatus.PROCESSING,)
    message = "Grading was interrupted. Submit the file again."
    for evaluation in stuck:
        if evaluations.move(evaluation, running, EvaluationStatus.FAILED, error_message=message):
            evaluations.finished(evaluation)
