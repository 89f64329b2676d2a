"""The grading job: claim a stored file, read it, grade it, store the result.

Safe to run twice and safe to lose: only the RQ job the row names may claim it, every write
checks that this job still owns the row, and a job that dies at any point leaves a row the
sweeper hands to another worker. How each failure ends:

- the grading service failing for a moment (429, 5xx, timeout, refused connection): the job
  waits (``waiting``) and is graded again later, on the configured schedule
  (EVALUAITOR_LLM_RETRY_SCHEDULE, minutes to hours); only when it runs out is it ``failed``;
- a monthly spend limit that grading it would pass: checked before it is taken, it waits
  (``waiting`` for ``budget``) until the month turns or the limit is raised, never failed
  (app.evaluation.budget);
- a file that cannot be read, a model reply that is no use, settings that need a teacher, no
  model configured: ``failed`` at once, with a message for the people involved;
- the database itself failing: nothing can be recorded, so the job ends and the sweeper
  hands the row back once the database answers again;
- a cancel (API): noticed at the next progress report; the job stops without storing.
"""

from __future__ import annotations

import logging
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

from flask import current_app
from sqlalchemy import select
from sqlalchemy.exc import OperationalError

from app import metrics, spend
from app.catalogue import N_
from app.evaluation import budget, lifecycle
from app.evaluation.owners import owner_of
from app.extensions import db, redis_connection
from app.extract import ExtractionError, Kind, extract
from app.grading import confidence, registry, runner
from app.grading.base import GradingResult, InputFile, Outcome
from app.grading.cross_check import Safeguards
from app.grading.registry import PluginError
from app.grading.rubric import RubricError
from app.jobs import queue
from app.llm import LLMError, LLMNotConfiguredError
from app.llm.errors import (
    LLMConnectionError,
    LLMRateLimitError,
    LLMServerError,
    LLMTimeoutError,
)
from app.models import GradingJob, JobStatus
from app.models.base import as_utc
from app.models.jobs import CLAIMABLE

log = logging.getLogger(__name__)

#: Failures of the grading service that pass: the job waits and is graded again later.
TRANSIENT = (LLMRateLimitError, LLMServerError, LLMTimeoutError, LLMConnectionError)
#: Steps the pipeline reports around the strategy's own: reading the file, saving the result.
OWN_STEPS = 2
RUNNING = (JobStatus.PROCESSING,)

NO_LLM_MESSAGE = N_(
    "No language model is configured, so this file cannot be graded automatically yet. "
    "It is stored safely; an administrator must set EVALUAITOR_LLM_BASE_URL, then it can be "
    "graded again."
)
MISCONFIGURED = N_("The grading settings need fixing. %(problem)s")
CRASHED = N_("Grading stopped because of an internal error.")
WAITING_FOR_SERVICE = N_(
    "Waiting for the grading service, which is busy or unreachable; it will be tried again "
    "automatically."
)


class Cancelled(Exception):
    """The job no longer owns its row: cancelled by the client, or handed to another worker."""


def run(job_id: int, token: str | None) -> None:
    """Grade grading job ``job_id`` as RQ job ``token`` (None when called outside RQ)."""
    job = db.session.get(GradingJob, job_id)
    if job is None or not _claim(job, token):
        return  # finished, cancelled, taken by another worker, or not due yet
    try:
        result = _grade(job, token)
        status = JobStatus.COMPLETED if result.outcome == Outcome.GRADED else JobStatus.NEEDS_REVIEW
        trust = confidence.assess(result)  # here, where every result is stored
        result.provenance["confidence"] = trust.record()
        spend.record_run(job, result.provenance.get("calls", ()), current_app.config)
        _finish(job, token, status, **result.record(), confidence=trust.value, error_message=None)
    except Cancelled:
        log.info("grading job %s stopped: cancelled or handed to another worker", job.id)
    except OperationalError:
        db.session.rollback()
        raise  # the database is away: the sweeper hands the row back when it returns
    except LLMNotConfiguredError as exc:
        _fail(job, token, NO_LLM_MESSAGE, exc)
    except TRANSIENT as exc:
        _wait_or_fail(job, token, exc)
    except (ExtractionError, LLMError) as exc:
        log.info("grading job %s failed: %s", job.id, exc)
        _fail(job, token, exc.user_message, exc)
    except (PluginError, RubricError) as exc:
        log.info("grading job %s: settings need fixing: %s", job.id, exc)
        _fail(job, token, MISCONFIGURED % {"problem": exc}, exc)
    except Exception as exc:
        log.exception("grading job %s crashed", job.id)
        _fail(job, token, CRASHED, exc)


def grade_what_waited_for_a_model(replaced: str | None = None, model: str = "") -> int:
    """Put back in line the jobs that failed because no model was configured, once one is
    (``evaluaitor run`` found a server on this machine); returns how many.

    An API evaluation keeps the model named when it was sent, the site's by default; when the
    server found does not offer that one (``replaced``), its own choice (``model``) grades the
    evaluations that named ``replaced``, as it grades the LMS's submissions: asked for a model
    it does not have, a server refuses the request and the evaluation would fail again."""
    jobs = db.session.scalars(
        select(GradingJob).where(
            GradingJob.status == JobStatus.FAILED, GradingJob.error_message == NO_LLM_MESSAGE
        )
    ).all()
    restarted = [job for job in jobs if lifecycle.restart(job, fresh=False)]
    for job in restarted:
        if replaced and job.evaluation is not None and job.evaluation.evaluator_id == replaced:
            job.evaluation.evaluator_id = model
    db.session.commit()
    queue.dispatch(*restarted)
    return len(restarted)


def _claim(job: GradingJob, token: str | None) -> bool:
    """Take the row, if it is in line (or its retry is due), this RQ job is the one meant
    to run it, and its spend limits leave room for it (else it waits for budget). A retry
    run early (a duplicate job) leaves it waiting."""
    if job.status == JobStatus.WAITING and job.retry_at and as_utc(job.retry_at) > _now():
        return False
    with budget.admission(job) as admitted:
        if admitted.over is not None:
            lifecycle.move(
                job,
                CLAIMABLE,
                JobStatus.WAITING,
                token=token,
                waiting_for=spend.BUDGET,
                retry_at=spend.next_month(),
                progress_message=budget.WAITING_FOR_BUDGET,
            )
            return False
        return lifecycle.move(
            job,
            CLAIMABLE,
            JobStatus.PROCESSING,
            token=token,
            started_at=_now(),
            retry_at=None,
            waiting_for=None,
            reserved_cost=admitted.reserved_cost,
            reserved_tokens=admitted.reserved_tokens,
            error_message=None,
            error_details=None,
        )


def _grade(job: GradingJob, token: str | None) -> GradingResult:
    config = current_app.config
    owner = owner_of(job)
    brief = owner.brief(job)
    plugin = registry.get(brief.plugin)
    total = OWN_STEPS + plugin.steps

    def progress(step: int, message: str) -> None:
        """Report progress, or stop if the row is no longer this job's."""
        if not lifecycle.move(
            job,
            RUNNING,
            JobStatus.PROCESSING,
            token=token,
            progress_step=step,
            progress_total=total,
            progress_message=message[:300],
        ):
            raise Cancelled()

    progress(1, N_("Reading the file"))
    path = Path(config["EVALUAITOR_DATA_DIR"]) / job.storage_path
    if job.extracted_text is None:
        job.extracted_text = extract(path, Kind(job.kind)).text
        db.session.commit()
    document = InputFile(job.original_filename, job.kind, job.extracted_text, path)
    grading = runner.Job(
        plugin=brief.plugin,
        assignment=brief.assignment,
        document=document,
        params=brief.params,
        names=brief.names,
        mask_pii=bool(config["EVALUAITOR_MASK_PII"]),
        comment=brief.comment,
        # Chosen only for a model to read: a strategy without one is spared the comparing.
        examples=owner.examples(job, job.extracted_text) if plugin.needs_llm else (),
        safeguards=Safeguards.from_config(config),
    )
    result = runner.grade_with_model(
        grading,
        config,
        lambda step, _n, message: progress(1 + step, message),
        tenant_folder=owner.tenant(job),
        fresh_since=as_utc(job.fresh_since).timestamp() if job.fresh_since else None,
        redis=redis_connection(),
        allowed=brief.model_base_urls,
    )
    progress(total, N_("Saving the result"))
    return result


def _finish(job: GradingJob, token: str | None, status: JobStatus, **values: object) -> None:
    """Store the final state with the owner's effects; nothing if the row is no longer this
    job's."""
    queued = job.enqueued_at
    if not lifecycle.end(job, RUNNING, status, token=token, **values):
        raise Cancelled()
    if queued is not None:
        waited = (_now() - as_utc(queued)).total_seconds()
        metrics.TIME_TO_GRADE.labels(str(status)).observe(max(waited, 0.0))


def _fail(job: GradingJob, token: str | None, message: str, exc: BaseException) -> None:
    db.session.rollback()
    _record_spent(job, exc)
    try:
        _finish(
            job,
            token,
            JobStatus.FAILED,
            error_message=message,
            error_details=details(exc),
        )
    except Cancelled:
        log.info("grading job %s failed after it was cancelled or handed on", job.id)


def _wait_or_fail(job: GradingJob, token: str | None, exc: LLMError) -> None:
    """Grade again later, on the configured schedule; fail once it has run out."""
    db.session.rollback()
    schedule = current_app.config["EVALUAITOR_LLM_RETRY_SCHEDULE"]
    if job.tries >= len(schedule):
        log.warning("grading job %s: the grading service still fails (%s); giving up", job.id, exc)
        _fail(job, token, exc.user_message, exc)
        return
    delay = schedule[job.tries] * random.uniform(0.9, 1.1)  # nosec B311: jitter, not secrecy
    _record_spent(job, exc)
    log.info("grading job %s: %s; trying again in %.0f s", job.id, exc, delay)
    lifecycle.move(
        job,
        RUNNING,
        JobStatus.WAITING,
        token=token,
        tries=job.tries + 1,
        retry_at=_now() + timedelta(seconds=delay),
        progress_message=WAITING_FOR_SERVICE,
        error_details=details(exc),
    )


def _record_spent(job: GradingJob, exc: BaseException) -> None:
    """A failed run's model calls cost what they cost: into the ledger, committed with the
    job's new state (the retry that follows adds its own)."""
    spend.record_run(job, runner.calls_before(exc), current_app.config)


def details(exc: BaseException) -> dict[str, object]:
    """What kind of failure, for administrators and API clients (never a stack trace)."""
    found: dict[str, object] = {"exception_type": type(exc).__name__}
    status = getattr(exc, "status_code", None)
    if status is not None:
        found["status_code"] = status
    return found


def _now() -> datetime:
    return datetime.now(UTC)
