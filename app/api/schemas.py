"""What the REST API reads and writes, as pydantic models.

Validation of request bodies and query strings happens here, at the edge; the same models
give the OpenAPI document its schemas (:mod:`app.api.openapi`).

Answers carry the proposal's fields (section 5) with its names; what Evaluaitor adds is in
extra fields, and the names used before API version 1 stay as extra fields marked
``deprecated`` in the document, so clients of either keep working.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AnyHttpUrl,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Json,
    ValidationError,
    field_validator,
)

from app.api.errors import InvalidRequest
from app.api.statuses import EvaluationStatus, StatusFilter
from app.llm import endpoints
from app.llm.endpoints import MAX_ENTRIES, MAX_URL_CHARS

#: Client-chosen ids (organizations): letters, digits and a few separators.
EXTERNAL_ID = r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,254}$"
MAX_PAGE = 200

M = TypeVar("M", bound=BaseModel)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def deprecated(instead: str) -> Any:
    """A field kept for clients of the names before API version 1 (marked in the document)."""
    return Field(deprecated=f"Use {instead}.", description=f"Deprecated: use {instead}.")


class ErrorDetail(Strict):
    code: str
    message: str


class ErrorBody(Strict):
    error: ErrorDetail


def _whole(value: Any) -> Any:
    """JSON has one kind of number: 5000.0 and 5e3 are the integer 5000 to JSON Schema (and
    to the clients the document generates), so a strict model takes them as that."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


#: A token count as JSON Schema means an integer: a number with no fractional part, 5000 or
#: 5e3. (The bounds come before the validator, or the document would lose them.)
TokenCount = Annotated[int, Field(ge=0, le=10**13), BeforeValidator(_whole)]


class OrganizationIn(Strict):
    #: A JSON body has real types: no coercion ("1" or 0 is not a boolean here).
    model_config = ConfigDict(extra="forbid", strict=True)

    external_id: str = Field(pattern=EXTERNAL_ID, description="The client's id for it.")
    name: str | None = Field(None, max_length=200)
    config: dict[str, Any] | None = Field(None, description="Free-form settings, no secrets.")
    is_active: bool | None = None
    monthly_cost_limit: float | None = Field(
        None,
        ge=0,
        le=1e9,
        description="What its gradings may spend per calendar month (UTC), in the currency of "
        "the configured model prices; null lifts it, absent leaves it.",
    )
    monthly_token_limit: TokenCount | None = Field(
        None,
        description="Model tokens (input and output) its gradings may use per calendar month "
        "(UTC); null lifts it, absent leaves it.",
    )
    model_base_urls: (
        list[Annotated[str, Field(pattern=endpoints.URL_PATTERN, max_length=MAX_URL_CHARS)]] | None
    ) = Field(
        None,
        max_length=MAX_ENTRIES,
        description=(
            "Base URLs of the only model servers that may receive this organization's "
            "students' work (and the paths below them); [] lifts the restriction. Omitted: "
            "unchanged."
        ),
    )


class BudgetOut(Strict):
    """The organization's month so far: its limits, what its gradings used (the spend
    ledger plus what gradings running now reserved), and what is left."""

    month_start: datetime = Field(description="The first moment of this month, in UTC.")
    cost_limit: float | None
    token_limit: int | None
    cost_used: float = Field(description="Priced model calls only.")
    tokens_used: int
    cost_left: float | None = Field(description="None when there is no money limit.")
    tokens_left: int | None = Field(description="None when there is no token limit.")
    waiting: int = Field(description="Gradings waiting for budget (status processing).")


class PrivacyScopeIn(Strict):
    """Whose data to erase or export (app.privacy)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    scope: Literal["student", "course", "activity", "organization"]
    key: str = Field(
        min_length=1,
        max_length=255,
        pattern=r"^[^\x00]+$",
        description="The student's LMS user id (sub), the course's LMS context id, the "
        "activity's id, or the organization's external id.",
    )
    platform_id: int | None = Field(
        None,
        ge=1,
        le=2**31 - 1,
        description="The platform a student or a course belongs to (required for them).",
    )


class ErasureOut(Strict):
    """What was erased: the scope by internal ids, and how many rows, files, cached replies
    and launch records went (spend rows and audit tombstones are kept)."""

    scope: str
    counts: dict[str, int]


class OrganizationOut(Strict):
    id: int
    external_id: str
    name: str
    is_active: bool
    config: dict[str, Any]
    model_base_urls: list[str] = Field(
        description="The model servers allowed to receive its work ([] = any the site allows)."
    )
    created_at: datetime
    updated_at: datetime
    jobs_count: int
    pending_jobs: int = Field(description="Not final yet: pending or processing.")
    evaluations_count: int = deprecated("jobs_count")
    pending_evaluations: int = deprecated("pending_jobs")
    callback_secret: str | None = Field(
        None, description="Only in the answer that created the organization: keep it."
    )
    budget: BudgetOut


class DatabaseInfo(Strict):
    reachable: bool
    dialect: str
    revision: str | None
    head: str | None
    schema_current: bool


class SchemaState(Strict):
    initialized: bool = Field(description="Every table exists.")
    schema_valid: bool = Field(description="The schema is at the newest migration.")


def _is_none(value: object) -> bool:
    return value is None


class DatabaseStatus(Strict):
    """The proposal names the schema state after the database: ``sqlite_status`` or
    ``postgresql_status``, whichever this server uses (only that one is sent)."""

    sqlite_status: SchemaState | None = Field(None, exclude_if=_is_none, description="SQLite.")
    postgresql_status: SchemaState | None = Field(
        None, exclude_if=_is_none, description="PostgreSQL."
    )
    jobs_count: int | None
    pending_jobs: int | None
    organizations_count: int | None
    database: DatabaseInfo
    evaluations_count: int | None = deprecated("jobs_count")
    pending_evaluations: int | None = deprecated("pending_jobs")


class SubmissionForm(Strict):
    """The form fields of ``POST /evaluations`` besides ``file``."""

    organization_external_id: str | None = Field(
        None, max_length=255, description="Optional; must be the token's own organization."
    )
    evaluator_id: str | None = Field(
        None, max_length=200, description="Model or assistant id; default: the server's model."
    )
    plugin_name: str = Field("rubric_eval", max_length=100)
    plugin_params: Json[dict[str, Any]] | None = Field(None, description="A JSON object.")
    client_reference: str = Field("", max_length=255)
    metadata: Json[dict[str, Any]] | None = Field(None, description="A JSON object, echoed.")
    callback_url: AnyHttpUrl | None = Field(None, max_length=1000)
    instructions: str = Field("", max_length=20000, description="The assignment text.")
    rubric: Json[dict[str, Any] | list[Any]] | None = Field(
        None, description='A JSON rubric: {"criteria": [...]} or a list of criteria.'
    )
    max_score: float = Field(10.0, gt=0, le=10000)


class Accepted(Strict):
    job_code: str
    status: EvaluationStatus
    message: str
    created_at: datetime


class Progress(Strict):
    current: int
    total: int
    percentage: float
    message: str
    step: int = deprecated("current")


class CallbackState(Strict):
    url: str
    status: str | None
    attempts: int
    error: str | None


class StatusOut(Strict):
    job_code: str
    status: EvaluationStatus
    progress: Progress
    created_at: datetime
    processing_started_at: datetime | None
    processing_completed_at: datetime | None
    processing_duration_seconds: float | None
    error_message: str | None
    error_details: dict[str, Any] | None = Field(
        description='What kind of failure, e.g. {"exception_type": ..., "status_code": 429}.'
    )
    needs_review: bool = Field(description="Completed, but the grade waits for a person.")
    review_reason: str | None
    retry_at: datetime | None = Field(
        description="Processing, but waiting: tried again at this time (see waiting_for)."
    )
    waiting_for: Literal["service", "budget"] | None = Field(
        None,
        description="What a waiting evaluation waits for: 'service' (the grading service was "
        "busy or unreachable) or 'budget' (a monthly spend limit is reached: graded when it is "
        "raised or at retry_at, the next month's start). None when it is not waiting.",
    )
    callback: CallbackState | None
    started_at: datetime | None = deprecated("processing_started_at")
    finished_at: datetime | None = deprecated("processing_completed_at")
    duration_seconds: float | None = deprecated("processing_duration_seconds")


class CriterionScore(Strict):
    name: str
    score: float | None
    max_score: float | None
    comment: str


class StructuredFeedback(Strict):
    criteria: list[CriterionScore]


class ResultBody(Strict):
    score: float | None
    score_normalized: float | None
    max_score: float | None
    feedback: str
    feedback_structured: StructuredFeedback
    model_used: str
    processing_time_ms: int | None
    tokens_used: int | None = Field(description="None when the grading service did not say.")
    criteria: list[dict[str, Any]] = Field(
        description="Each criterion as graded: name, score, max, verdict, reason, evidence; "
        "model_judged (a model gave its points) and evidence_verified (its quote was found in "
        "the work: app.grading.grounding)."
    )
    flags: list[dict[str, Any]]
    provenance: dict[str, Any]
    confidence: float | None = Field(
        description="How far the result can be trusted, 0..1; its reasons are in "
        "provenance.confidence. Null for results stored before it was assessed."
    )


class ResultOut(Strict):
    """``result`` is null until there is one (still running, failed or cancelled);
    ``message`` then says why."""

    job_code: str
    status: EvaluationStatus
    result: ResultBody | None
    message: str | None
    client_reference: str
    metadata: dict[str, Any]
    needs_review: bool = Field(description="Completed, but the grade waits for a person.")
    review_reason: str | None = Field(description="Why a held result waits.")


class ListQuery(Strict):
    organization_external_id: str | None = Field(
        None, max_length=255, description="Optional; must be the token's own organization."
    )
    status: StatusFilter | None = Field(
        None,
        description="An evaluation status; also needs_review (the completed ones held for a "
        "person) and queued (deprecated: pending).",
    )
    client_reference: str | None = Field(None, max_length=255)
    created_after: datetime | None = None
    created_before: datetime | None = None
    limit: int = Field(50, ge=1, le=MAX_PAGE)
    offset: int = Field(0, ge=0, le=1_000_000)
    sort_by: Literal["created_at", "processing_completed_at", "finished_at", "status"] = (
        "created_at"
    )
    sort_order: Literal["asc", "desc"] = "desc"

    @field_validator("created_after", "created_before")
    @classmethod
    def _in_utc(cls, value: datetime | None) -> datetime | None:
        """Compared with stored UTC moments; a moment without a zone is taken as UTC."""
        if value is None or value.tzinfo is None:
            return value and value.replace(tzinfo=UTC)
        try:
            return value.astimezone(UTC)
        except OverflowError as exc:
            raise ValueError("is out of range") from exc


class EvaluationSummary(Strict):
    job_code: str
    evaluator_id: str
    plugin_name: str
    status: EvaluationStatus
    original_filename: str
    created_at: datetime
    processing_completed_at: datetime | None
    client_reference: str
    needs_review: bool
    finished_at: datetime | None = deprecated("processing_completed_at")


class EvaluationList(Strict):
    total: int
    limit: int
    offset: int
    items: list[EvaluationSummary]


class Cancelled(Strict):
    job_code: str
    status: EvaluationStatus
    message: str


class PluginOut(Strict):
    name: str
    description: str
    version: str
    supported_file_types: list[str]
    needs_llm: bool
    parameters: dict[str, Any] = Field(description="The settings' JSON Schema.")


class PluginList(Strict):
    plugins: list[PluginOut]


def parse(model: type[M], data: Any) -> M:
    """``data`` validated as ``model``; InvalidRequest names each field that is wrong."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = []
        for error in exc.errors(include_url=False):
            field = ".".join(str(part) for part in error["loc"]) or "body"
            message = "is not a known field" if error["type"] == "extra_forbidden" else error["msg"]
            problems.append(f"{field}: {message}")
        raise InvalidRequest("; ".join(problems)) from exc


def utc(moment: datetime | None) -> datetime | None:
    """Stored moments are UTC; SQLite hands them back without a zone."""
    if moment is None:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
