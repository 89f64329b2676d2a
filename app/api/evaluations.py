"""The REST API side of the evaluation core: accept a file, find, list and cancel
evaluations, and what the API adds to a grading job (:class:`ApiSide`).

An API evaluation is graded with what the client sent (strategy, settings, model,
instructions, rubric, maximum), in its organization's folder, and its client is told when it
is final through its callback URL, if it gave one. A cancel racing the worker is settled by
the core's conditional updates (app.evaluation.lifecycle): exactly one side wins.
"""

from __future__ import annotations

import logging
import secrets
from pathlib import Path
from typing import BinaryIO

from redis.exceptions import RedisError
from rq.exceptions import NoSuchJobError
from rq.job import Job
from sqlalchemy import Select, func, select
from sqlalchemy.orm import contains_eager

from app import tenants
from app.api import callbacks, statuses
from app.api.errors import (
    ApiNotFound,
    Conflict,
    InvalidRequest,
    ModelNotAllowed,
    UnsupportedMediaType,
)
from app.api.schemas import ListQuery, SubmissionForm
from app.evaluation import lifecycle
from app.evaluation.owners import Brief
from app.extensions import db, redis_connection
from app.extract import ExtractionError, UnsupportedFileError, check, sniff
from app.grading import registry
from app.grading.base import Assignment
from app.grading.examples import Candidate
from app.grading.registry import PluginError
from app.grading.rubric import RubricError, parse_rubric
from app.jobs import queue
from app.models import Callback, Evaluation, GradingJob, JobStatus, Organization
from app.models.jobs import OPEN
from app.text import clean_filename
from app.uploads import IncomingFile, incoming_dir

log = logging.getLogger(__name__)

CODE_PREFIX = "ev_"


def submit(
    organization: Organization,
    form: SubmissionForm,
    filename: str | None,
    stream: BinaryIO,
    *,
    data_dir: str,
    max_mb: float,
    default_model: str,
    forbidden_model: str | None = None,
) -> Evaluation:
    """Check the request, store the file under ``o<org id>/`` and queue the grading job.

    Everything is checked before a byte is kept; the row is committed before the job is
    enqueued, and if Redis is down the sweeper enqueues it later (the client still gets 202).
    ``forbidden_model`` says why the configured model server may not receive this
    organization's work (app.tenants.forbidden_model): a strategy that needs a model is
    refused then, not accepted to fail later.
    """
    plugin = _plugin(form)
    if forbidden_model and registry.sends_to_a_model(plugin, form.plugin_params):
        raise ModelNotAllowed(forbidden_model)
    rubric = _rubric(form)
    if form.callback_url is not None:
        callbacks.check_url(str(form.callback_url))
        if not organization.callback_secret:
            raise InvalidRequest(
                "callback_url: this organization has no callback secret yet; an administrator "
                "creates one with 'evaluaitor org callback-secret'."
            )
    name = clean_filename(filename)
    if not name:
        raise InvalidRequest("file: a file is required (multipart field 'file').")
    incoming = stream
    if not isinstance(incoming, IncomingFile):
        incoming = IncomingFile.copy_of(stream, incoming_dir(data_dir), int(max_mb * 1024 * 1024))
    try:
        kind = _kind(name, incoming, plugin.file_types, plugin.name)
        code = CODE_PREFIX + secrets.token_urlsafe(18)
        directory = Path(data_dir) / tenants.organization_folder(organization.id)
        directory.mkdir(parents=True, exist_ok=True)
        final_path = directory / f"{code}{Path(name).suffix.lower()}"
        incoming.keep_as(final_path)
        size, digest = incoming.size, incoming.sha256
    finally:
        incoming.close()
    evaluation = Evaluation(
        code=code,
        organization_id=organization.id,
        plugin_name=plugin.name,
        plugin_params=form.plugin_params or {},
        evaluator_id=form.evaluator_id or default_model,
        instructions=form.instructions,
        rubric=rubric,
        max_score=form.max_score,
        client_reference=form.client_reference,
        client_metadata=form.metadata or {},
        callback_url=str(form.callback_url) if form.callback_url else None,
    )
    evaluation.job = GradingJob(
        status=JobStatus.PENDING,
        original_filename=name,
        kind=kind,
        size_bytes=size,
        sha256=digest,
        storage_path=str(final_path.relative_to(data_dir)),
        **lifecycle.queued_values(),
    )
    db.session.add(evaluation)
    try:
        db.session.commit()
    except Exception:
        db.session.rollback()
        final_path.unlink(missing_ok=True)
        raise
    queue.dispatch(evaluation.job)
    return evaluation


def _plugin(form: SubmissionForm):
    try:
        plugin = registry.get(form.plugin_name)
        registry.validate_params(plugin, form.plugin_params)
    except PluginError as exc:
        field = "plugin_name" if isinstance(exc, registry.UnknownPlugin) else "plugin_params"
        raise InvalidRequest(f"{field}: {exc}") from exc
    return plugin


def _rubric(form: SubmissionForm) -> dict | None:
    if form.rubric is None:
        return None
    try:
        return parse_rubric(form.rubric).model_dump(mode="json")
    except RubricError as exc:
        raise InvalidRequest(f"rubric: {exc}") from exc


def _kind(name: str, incoming: IncomingFile, accepted: tuple[str, ...], plugin: str) -> str:
    """The file's real kind (from its bytes), if the strategy grades that kind and the
    document opens (a damaged or password-protected one is refused now, not when graded)."""
    try:
        kind = sniff(name, incoming.head)
        if kind.value not in accepted:
            raise UnsupportedMediaType(
                f"file: the strategy {plugin} grades only these kinds: {', '.join(accepted)}."
            )
        incoming.flush()
        check(incoming.path, kind)
    except UnsupportedFileError as exc:
        raise UnsupportedMediaType(f"file: {exc.user_message}") from exc
    except ExtractionError as exc:  # empty, damaged, password-protected
        raise InvalidRequest(f"file: {exc.user_message}") from exc
    return kind.value


def fetch(organization: Organization, code: str) -> Evaluation:
    """The organization's evaluation with this code. Another organization's code is as
    unknown as a made-up one: the answer must not tell them apart."""
    evaluation = db.session.scalar(
        select(Evaluation).where(
            Evaluation.code == code, Evaluation.organization_id == organization.id
        )
    )
    if evaluation is None:
        raise ApiNotFound("There is no evaluation with this code.")
    return evaluation


def search(organization: Organization, query: ListQuery) -> tuple[int, list[Evaluation]]:
    """One page of the organization's evaluations, and how many match in all."""
    statement: Select = (
        select(Evaluation).join(Evaluation.job).where(Evaluation.organization_id == organization.id)
    )
    if query.status is not None:
        statement = statement.where(GradingJob.status.in_(statuses.MATCHES[query.status]))
    if query.client_reference is not None:
        statement = statement.where(Evaluation.client_reference == query.client_reference)
    if query.created_after is not None:
        statement = statement.where(Evaluation.created_at > query.created_after)
    if query.created_before is not None:
        statement = statement.where(Evaluation.created_at < query.created_before)
    total = db.session.scalar(select(func.count()).select_from(statement.subquery()))
    column = {
        "created_at": Evaluation.created_at,
        "processing_completed_at": GradingJob.finished_at,
        "finished_at": GradingJob.finished_at,
        "status": GradingJob.status,
    }[query.sort_by]
    order = column.asc() if query.sort_order == "asc" else column.desc()
    tie = Evaluation.id.asc() if query.sort_order == "asc" else Evaluation.id.desc()
    page = db.session.scalars(
        statement.options(contains_eager(Evaluation.job))
        .order_by(order, tie)
        .limit(query.limit)
        .offset(query.offset)
    ).all()
    return total or 0, list(page)


def cancel(evaluation: Evaluation) -> None:
    """Cancel an evaluation in line, waiting or being graded. One in line leaves RQ now; a
    running one stops at its next progress report (the worker checks the row). A finished
    one: Conflict."""
    job = evaluation.job
    if not lifecycle.end(job, OPEN, JobStatus.CANCELLED, error_message=None):
        raise Conflict(
            "already_finished",
            f"The evaluation has already finished ({job.status}); it cannot be cancelled.",
        )
    if job.job_id:
        try:
            Job.fetch(job.job_id, connection=redis_connection()).cancel()
        except NoSuchJobError:
            pass  # already taken by a worker, or Redis lost it: the status check stops it
        except RedisError as exc:
            log.warning("could not remove job of evaluation %s: %s", evaluation.id, exc)


class ApiSide:
    """What the REST API adds to the evaluation core (see app.evaluation.owners)."""

    def tenant(self, job: GradingJob) -> str:
        return tenants.organization_folder(job.evaluation.organization_id)

    def brief(self, job: GradingJob) -> Brief:
        evaluation = job.evaluation
        return Brief(
            plugin=evaluation.plugin_name,
            params=evaluation.plugin_params,
            assignment=Assignment(
                max_score=evaluation.max_score,
                instructions=evaluation.instructions,
                rubric=parse_rubric(evaluation.rubric) if evaluation.rubric else None,
                model=evaluation.evaluator_id,
            ),
            model_base_urls=tenants.model_base_urls(evaluation.organization),
        )

    def examples(self, job: GradingJob, text: str) -> tuple[Candidate, ...]:
        """None: an API evaluation belongs to no activity, so no teacher graded examples."""
        return ()

    def settle(self, job: GradingJob) -> list[Callback]:
        """Every final state is told to the client's callback URL, if it gave one."""
        evaluation = job.evaluation
        if not evaluation.callback_url:
            return []
        return [callbacks.prepare(evaluation)]
