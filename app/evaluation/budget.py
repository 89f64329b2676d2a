"""Monthly spend limits, where the core starts a grading.

Before a worker takes a job (app.evaluation.pipeline), the job's limited budgets
(app.spend.budgets_of: its organization's, its activity's) are read: the month's ledger
(UTC) plus what the gradings running now reserved. If this grading's estimate
(app.spend.grading_estimate) fits in every one, the worker takes the job and reserves the
estimate on the row, in the same update; the run's ledger rows replace the reservation when
it ends, in the transaction that stores its result. If not, the job waits
(``waiting``, ``waiting_for = "budget"``) until the next month begins (``retry_at``), or
until someone raises or lifts a limit (:func:`limits_changed` makes it due at once); the
sweeper then queues it and the check runs again. Nothing is failed or lost.

Two workers must not both start a grading into the last of a budget: the check and the
reservation run under one Redis lock per organization (per activity for a platform without
one), so each start sees the reservations of every start before it. What is guaranteed:
at each start, ledger + reservations + this estimate ≤ the limit. A budget can still be
passed by what gradings cost beyond their estimate (the estimate is the activity's mean per
call once it has a history, a guess from the text's length before), and by gradings that had
already started when a limit was lowered: a grading once started always finishes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime

from flask import current_app
from redis.exceptions import LockError
from sqlalchemy import update

from app import spend
from app.catalogue import N_
from app.extensions import db, redis_connection
from app.grading.registry import PluginError
from app.grading.rubric import RubricError
from app.models import Activity, GradingJob, JobStatus, Organization

log = logging.getLogger(__name__)

WAITING_FOR_BUDGET = N_(
    "Waiting for grading budget: this month's spending limit is reached. The work is stored "
    "safely and will be graded automatically when the limit is raised or the next month "
    "begins."
)
#: Seconds a start waits for another worker's check of the same budget (a few queries), and
#: after which a lock whose holder died frees itself.
LOCK_SECONDS = 30


@dataclass(frozen=True)
class Admission:
    """A grading's check against its budgets: the first it would pass (None: it fits, or
    there is no limit), and what to reserve on the job when it starts."""

    over: spend.Budget | None = None
    reserved_cost: float | None = None
    reserved_tokens: int | None = None


@contextmanager
def admission(job: GradingJob) -> Iterator[Admission]:
    """Check ``job`` against its limited budgets; the caller takes the job (with the
    reservation) or makes it wait inside the ``with``, while the budget's lock is held.
    Raises LockError when another check held it for :data:`LOCK_SECONDS` (the RQ job fails
    before taking the row; the sweeper queues it again)."""
    if not spend.limited_scopes(job):
        yield Admission()
        return
    lock = redis_connection().lock(
        f"{current_app.config['EVALUAITOR_QUEUE_PREFIX']}-budget:{_lock_key(job)}",
        timeout=LOCK_SECONDS,
        blocking_timeout=LOCK_SECONDS,
    )
    if not lock.acquire():
        raise LockError(f"the budget of grading job {job.id} stayed busy")
    try:
        yield _check(job)
    finally:
        try:
            lock.release()
        except LockError:
            log.warning("the budget lock of grading job %s expired before its check ended", job.id)


def _check(job: GradingJob) -> Admission:
    budgets = spend.budgets_of(job)  # read again under the lock
    try:
        estimate = spend.grading_estimate(job, current_app.config)
    except (PluginError, RubricError):
        return Admission()  # it cannot grade; the run says so to the people concerned
    tokens = estimate.prompt_tokens + estimate.completion_tokens
    over = next((b for b in budgets if not b.allows(estimate.cost, tokens)), None)
    if over is not None:
        log.info(
            "grading job %s waits for budget: %s %s has %s tokens and %s left",
            job.id,
            over.scope,
            over.scope_id,
            over.tokens_left,
            over.cost_left,
        )
    return Admission(over, estimate.cost, tokens)


def _lock_key(job: GradingJob) -> str:
    """One lock per organization, which holds all its budgets (per activity without one)."""
    organization = spend.organization_of(job)
    if organization is not None:
        return f"organization:{organization}"
    return f"activity:{job.submission.activity_id}"


def limits_changed(owner: Organization | Activity) -> int:
    """An organization's or an activity's limits were raised or lifted: its gradings waiting
    for budget are due now, so the sweeper queues them within a round and each is checked
    again (those that still do not fit wait again). Committed; returns how many."""
    result = db.session.execute(
        update(GradingJob)
        .where(
            spend.jobs_of(owner),
            GradingJob.status == JobStatus.WAITING,
            GradingJob.waiting_for == spend.BUDGET,
        )
        .values(retry_at=datetime.now(UTC))
        .execution_options(synchronize_session=False)
    )
    db.session.commit()
    return result.rowcount
