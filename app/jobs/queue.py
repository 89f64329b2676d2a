"""Putting work on RQ, and asking RQ whether it still has it.

Jobs carry ids only; tasks load their state from the database, which is the ledger of work
(app.models.jobs). Redis only holds what to run now: when it cannot take a job (it is down,
or restarting) nothing is lost, since the sweeper (app.evaluation.sweeper) queues again
every row whose RQ job is missing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from flask import current_app
from redis.exceptions import RedisError
from rq import Queue
from rq.job import Job, JobStatus

from app.extensions import redis_connection
from app.models import GradingJob
from app.models.base import as_utc
from app.models.jobs import Delivery

log = logging.getLogger(__name__)

GRADING = "grading"
PASSBACK = "passback"
#: RQ keeps a finished job this long, a failed one (for an administrator to read) a week.
RESULT_TTL = 3600
FAILURE_TTL = 7 * 24 * 3600
#: A running job whose worker has not shown a sign of life for this long lost its worker (RQ
#: heartbeats every 30 s while a job runs).
HEARTBEAT_GRACE = timedelta(seconds=120)


def queue(name: str) -> Queue:
    prefix = current_app.config["EVALUAITOR_QUEUE_PREFIX"]
    return Queue(f"{prefix}-{name}", connection=redis_connection())


def dispatch(*rows: GradingJob | Delivery) -> bool:
    """Create the RQ jobs of rows already committed with their ``job_id``; False if Redis
    could not take them (they stay as they are and the sweeper queues them later)."""
    if not rows:
        return True
    try:
        with redis_connection().pipeline() as pipe:
            for row in rows:
                _enqueue(row, pipe)
            pipe.execute()
    except RedisError as exc:
        log.warning("could not enqueue %s: %s", ", ".join(map(label, rows)), exc)
        return False
    return True


def fetch_job_id(submission_id: int) -> str:
    """The RQ job id of fetching an LMS-made submission's files again: one per submission."""
    return f"lti-fetch-{submission_id}"


def dispatch_fetch(submission_id: int) -> bool:
    """Queue fetching the files of an LMS-made submission again (app.lms.asset_processor);
    False if Redis could not take it (the sweeper queues it later)."""
    return _enqueue_task("fetch_assets", submission_id, fetch_job_id(submission_id))


def notice_job_id(notice_id: int) -> str:
    """A notice's RQ job id: one per notice, so the sweeper can ask RQ whether it holds it."""
    return f"lti-notice-{notice_id}"


def dispatch_notice(notice_id: int) -> bool:
    """Queue the processing of a stored notice (app.lms.asset_processor); False if Redis
    could not take it (the sweeper queues it later)."""
    return _enqueue_task("process_notice", notice_id, notice_job_id(notice_id))


def _enqueue_task(task: str, row_id: int, job_id: str) -> bool:
    """An Asset Processor task (a notice, a fetch) on the passback queue, as ``job_id``."""
    try:
        queue(PASSBACK).enqueue(
            f"app.jobs.tasks.{task}",
            row_id,
            job_id=job_id,
            job_timeout=current_app.config["EVALUAITOR_NOTICE_TIMEOUT"],
            result_ttl=RESULT_TTL,
            failure_ttl=FAILURE_TTL,
        )
    except RedisError as exc:
        log.warning("could not enqueue %s %s: %s", task, row_id, exc)
        return False
    return True


def _enqueue(row: GradingJob | Delivery, pipe) -> None:
    if isinstance(row, GradingJob):
        name, task, args = GRADING, "grade", (row.id,)
        timeout = current_app.config["EVALUAITOR_GRADING_TIMEOUT"]
    else:
        name, task, args = PASSBACK, "deliver", (row.__tablename__, row.id)
        timeout = None
    queue(name).enqueue(
        f"app.jobs.tasks.{task}",
        *args,
        job_id=row.job_id,
        job_timeout=timeout,
        result_ttl=RESULT_TTL,
        failure_ttl=FAILURE_TTL,
        pipeline=pipe,
    )


def label(row: GradingJob | Delivery) -> str:
    return f"{row.__tablename__} {row.id}"


def held(job_ids: Iterable[str]) -> set[str]:
    """The ids among ``job_ids`` that RQ will still run or is running: waiting in a queue,
    or started on a worker that is alive. Anything else (unknown to Redis, failed, stopped,
    finished, started by a worker that died, or scheduled: nothing here schedules in RQ, and
    a schedule left in Redis waits on RQ's scheduler) will never touch its row again."""
    ids = list(job_ids)
    if not ids:
        return set()
    jobs = Job.fetch_many(ids, connection=redis_connection())
    return {job.id for job in jobs if job is not None and _will_run(job)}


def _will_run(job: Job) -> bool:
    status = job.get_status(refresh=False)
    if status == JobStatus.QUEUED:
        return True
    since = datetime.now(UTC) - HEARTBEAT_GRACE
    return status == JobStatus.STARTED and any(
        beat is not None and as_utc(beat) > since
        for beat in (execution.last_heartbeat for execution in job.get_executions())
    )
