"""The REST API's routes. Views authenticate, parse, call a service function and answer;
the rules live in :mod:`app.api.evaluations`, :mod:`app.api.auth` and :mod:`app.tenants`."""

from __future__ import annotations

from functools import cache
from typing import Any

from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from flask import Blueprint, current_app, jsonify, request
from pydantic import BaseModel
from sqlalchemy import func, inspect, select
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from app import privacy, spend, tenants
from app.api import auth, documents, evaluations, openapi
from app.api.errors import (
    ApiForbidden,
    ApiNotFound,
    Conflict,
    InvalidRequest,
    UnsupportedMediaType,
)
from app.api.schemas import (
    Accepted,
    BudgetOut,
    Cancelled,
    DatabaseInfo,
    DatabaseStatus,
    ErasureOut,
    EvaluationList,
    ListQuery,
    OrganizationIn,
    OrganizationOut,
    PluginList,
    PluginOut,
    PrivacyScopeIn,
    SchemaState,
    SubmissionForm,
    parse,
    utc,
)
from app.api.statuses import shown_as
from app.evaluation import budget
from app.extensions import db
from app.grading import registry
from app.models import Evaluation, GradingJob, Organization
from app.models.jobs import OPEN

bp = Blueprint("api", __name__)


def _json(model: BaseModel, status: int = 200):
    return current_app.response_class(
        model.model_dump_json(), status=status, mimetype="application/json"
    )


def _json_body() -> Any:
    if not request.is_json:
        raise UnsupportedMediaType("Send the body as JSON (Content-Type: application/json).")
    body = request.get_json(silent=True)
    if body is None:
        raise InvalidRequest("body: not valid JSON.")
    return body


@bp.after_request
def _challenge(response):
    if response.status_code == 401:
        response.headers["WWW-Authenticate"] = 'Bearer realm="evaluaitor"'
    return response


# -- system ------------------------------------------------------------------------------


@bp.get("/database/status")
def database_status():
    auth.require_admin()
    try:
        current, head, initialized = _schema()
        counts = (
            db.session.scalar(select(func.count(Evaluation.id))),
            db.session.scalar(
                select(func.count(Evaluation.id))
                .join(Evaluation.job)
                .where(GradingJob.status.in_(OPEN))
            ),
            db.session.scalar(select(func.count(Organization.id))),
        )
        reachable = True
    except SQLAlchemyError:
        db.session.rollback()
        current, head, initialized = None, None, False
        counts, reachable = (None, None, None), False
    dialect = db.engine.dialect.name
    schema_current = reachable and current == head
    state = SchemaState(initialized=initialized, schema_valid=schema_current)
    status = DatabaseStatus(
        sqlite_status=state if dialect == "sqlite" else None,
        postgresql_status=state if dialect == "postgresql" else None,
        jobs_count=counts[0],
        pending_jobs=counts[1],
        organizations_count=counts[2],
        database=DatabaseInfo(
            reachable=reachable,
            dialect=dialect,
            revision=current,
            head=head,
            schema_current=schema_current,
        ),
        evaluations_count=counts[0],
        pending_evaluations=counts[1],
    )
    return _json(status, 200 if reachable else 503)


def _schema() -> tuple[str | None, str | None, bool]:
    """The database's Alembic revision, the newest one this code ships, and whether every
    table of the models exists."""
    directory = current_app.extensions["migrate"].directory
    head = ScriptDirectory(directory).get_current_head()
    with db.engine.connect() as connection:
        current = MigrationContext.configure(connection).get_current_revision()
        tables = set(inspect(connection).get_table_names())
    return current, head, set(db.metadata.tables) <= tables


# -- data protection (app.privacy) ------------------------------------------------------


@bp.post("/privacy/erasures")
def privacy_erase():
    """Erase a student, course, activity or organization for good (admin)."""
    auth.require_admin()
    scope = _privacy_scope()
    try:
        erased = privacy.erase_scope(scope, actor="api")
    except privacy.InProgress as exc:
        raise Conflict("in_progress", f"{exc}; try again once it is done.") from exc
    return _json(ErasureOut(scope=erased.label, counts=erased.counts))


@bp.post("/privacy/exports")
def privacy_export():
    """Everything held about a student, course, activity or organization, as a zip (admin)."""
    auth.require_admin()
    scope = _privacy_scope()
    archive = privacy.export_scope(scope, actor="api")
    response = current_app.response_class(archive, mimetype="application/zip")
    response.headers["Content-Disposition"] = f'attachment; filename="{scope.kind}-export.zip"'
    return response


def _privacy_scope() -> privacy.Scope:
    data = parse(PrivacyScopeIn, _json_body())
    try:
        scope = privacy.Scope(data.scope, data.key, data.platform_id)
        privacy.select_scope(scope)
    except (ValueError, privacy.NotFound) as exc:  # a student or course needs its platform
        raise ApiNotFound(f"There is no such {data.scope} ({exc}).") from exc
    return scope


# -- organizations -----------------------------------------------------------------------


@bp.post("/organizations")
def put_organization():
    auth.require_admin()
    data = parse(OrganizationIn, _json_body())
    try:
        org, created, secret = _upsert(data)
    except IntegrityError:  # a concurrent request created it first: now it is an update
        db.session.rollback()
        org, created, secret = _upsert(data)
    return _json(_organization(org, callback_secret=secret), 201 if created else 200)


def _upsert(data: OrganizationIn) -> tuple[Organization, bool, str | None]:
    """Create or update; a new organization gets its callback secret (returned once)."""
    org, created = tenants.upsert_organization(data.external_id, name=data.name, config=data.config)
    if data.is_active is not None:
        org.is_active = data.is_active
    limits = {"monthly_cost_limit", "monthly_token_limit"} & data.model_fields_set
    for name in limits:
        setattr(org, name, getattr(data, name))
    if data.model_base_urls is not None:
        try:
            tenants.set_model_base_urls(org, data.model_base_urls)
        except ValueError as exc:
            db.session.rollback()
            raise InvalidRequest(f"model_base_urls: {exc}") from exc
    secret = None
    if created:
        secret = org.callback_secret = auth.new_callback_secret()
    db.session.commit()
    if limits and not created:
        budget.limits_changed(org)  # its evaluations waiting for budget are checked again
    return org, created, secret


@bp.get("/organizations/<external_id>")
def get_organization(external_id: str):
    auth.require_admin()
    org = db.session.scalar(select(Organization).where(Organization.external_id == external_id))
    if org is None:
        raise ApiNotFound("There is no organization with this external id.")
    return _json(_organization(org))


def _organization(org: Organization, *, callback_secret: str | None = None) -> OrganizationOut:
    def count(*conditions) -> int:
        query = (
            select(func.count(Evaluation.id))
            .join(Evaluation.job)
            .where(Evaluation.organization_id == org.id)
        )
        return db.session.scalar(query.where(*conditions)) or 0

    jobs, pending = count(), count(GradingJob.status.in_(OPEN))
    month = spend.budget(org)
    return OrganizationOut(
        id=org.id,
        external_id=org.external_id,
        name=org.name,
        is_active=org.is_active,
        config=org.config or {},
        model_base_urls=list(tenants.model_base_urls(org)),
        created_at=utc(org.created_at),
        updated_at=utc(org.updated_at),
        jobs_count=jobs,
        pending_jobs=pending,
        evaluations_count=jobs,
        pending_evaluations=pending,
        callback_secret=callback_secret,
        budget=BudgetOut(
            month_start=spend.month_start(),
            cost_limit=month.cost_limit,
            token_limit=month.token_limit,
            cost_used=month.used_cost,
            tokens_used=month.used_tokens,
            cost_left=month.cost_left,
            tokens_left=month.tokens_left,
            waiting=month.waiting,
        ),
    )


# -- evaluations -------------------------------------------------------------------------


@bp.post("/evaluations")
def submit_evaluation():
    org = auth.require_organization()
    if request.mimetype != "multipart/form-data":
        raise UnsupportedMediaType("Send the evaluation as multipart/form-data.")
    repeated = [key for key, values in request.form.lists() if len(values) > 1]
    if repeated:
        raise InvalidRequest(f"{repeated[0]}: send this field once.")
    fields = {key: value for key, value in request.form.items() if value != ""}
    form = parse(SubmissionForm, fields)
    _own_organization(org, form.organization_external_id)
    upload = request.files.get("file")
    if upload is None:
        raise InvalidRequest("file: a file is required (multipart field 'file').")
    config = current_app.config
    evaluation = evaluations.submit(
        org,
        form,
        upload.filename,
        upload.stream,
        data_dir=config["EVALUAITOR_DATA_DIR"],
        max_mb=config["EVALUAITOR_MAX_UPLOAD_MB"],
        default_model=config["EVALUAITOR_LLM_MODEL"],
        forbidden_model=tenants.forbidden_model(org, config),
    )
    accepted = Accepted(
        job_code=evaluation.code,
        status=shown_as(evaluation.status),
        message="Evaluation job queued successfully",
        created_at=utc(evaluation.created_at),
    )
    response = _json(accepted, 202)
    response.headers["Location"] = f"/evaluations/{evaluation.code}/status"
    return response


@bp.get("/evaluations")
def list_evaluations():
    org = auth.require_organization()
    query = parse(ListQuery, request.args.to_dict())
    _own_organization(org, query.organization_external_id)
    total, page = evaluations.search(org, query)
    return _json(
        EvaluationList(
            total=total,
            limit=query.limit,
            offset=query.offset,
            items=[documents.summary(e) for e in page],
        )
    )


def _own_organization(org: Organization, named: str | None) -> None:
    """Clients may name their organization, as the proposal's calls do; only their own."""
    if named not in (None, org.external_id):
        raise ApiForbidden("This token belongs to another organization.")


@bp.get("/evaluations/<code>/status")
def evaluation_status(code: str):
    evaluation = evaluations.fetch(auth.require_organization(), code)
    return _json(documents.status_document(evaluation))


@bp.get("/evaluations/<code>/result")
def evaluation_result(code: str):
    """200 in every state, as the proposal has it: ``result`` is null until there is one."""
    evaluation = evaluations.fetch(auth.require_organization(), code)
    return _json(documents.result_document(evaluation))


@bp.post("/evaluations/<code>/cancel")
def cancel_evaluation(code: str):
    evaluation = evaluations.fetch(auth.require_organization(), code)
    evaluations.cancel(evaluation)
    return _json(
        Cancelled(
            job_code=evaluation.code,
            status=shown_as(evaluation.status),
            message="Job cancelled successfully",
        )
    )


@bp.get("/openapi.json")
def openapi_document():
    return jsonify(_openapi())


@cache
def _openapi() -> dict[str, Any]:
    return openapi.document()


# -- plugins -----------------------------------------------------------------------------


@bp.get("/plugins")
def list_plugins():
    auth.authenticate()
    plugins = [PluginOut(**registry.describe(p)) for p in registry.all_plugins()]
    return _json(PluginList(plugins=plugins))
