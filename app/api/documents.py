"""The JSON documents an evaluation is shown as (API answers and callback bodies), in the
proposal's shape with Evaluaitor's additions as extra fields (see app.api.statuses)."""

from __future__ import annotations

from typing import Any

from app.api.schemas import (
    CallbackState,
    CriterionScore,
    EvaluationSummary,
    Progress,
    ResultBody,
    ResultOut,
    StatusOut,
    StructuredFeedback,
    utc,
)
from app.api.statuses import EvaluationStatus, shown_as
from app.models import Evaluation, GradingJob, JobStatus
from app.text import clean_name

NOT_READY = "Evaluation still in progress"


def status_document(evaluation: Evaluation) -> StatusOut:
    job = evaluation.job
    step, total = job.progress_step, job.progress_total
    started, finished = utc(job.started_at), utc(job.finished_at)
    duration = (finished - started).total_seconds() if started and finished else None
    return StatusOut(
        job_code=evaluation.code,
        status=shown_as(job.status),
        progress=Progress(
            current=step,
            total=total,
            percentage=round(100 * step / total, 1) if total else 0.0,
            message=job.progress_message,
            step=step,
        ),
        created_at=utc(evaluation.created_at),
        processing_started_at=started,
        processing_completed_at=finished,
        processing_duration_seconds=duration,
        error_message=job.error_message,
        error_details=job.error_details,
        needs_review=job.status == JobStatus.NEEDS_REVIEW,
        review_reason=_review_reason(job),
        retry_at=utc(job.retry_at) if job.status == JobStatus.WAITING else None,
        waiting_for=(job.waiting_for or "service") if job.status == JobStatus.WAITING else None,
        callback=_callback(evaluation),
        started_at=started,
        finished_at=finished,
        duration_seconds=duration,
    )


def _callback(evaluation: Evaluation) -> CallbackState | None:
    if not evaluation.callback_url:
        return None
    sent = evaluation.callback
    return CallbackState(
        url=evaluation.callback_url,
        status=sent.status if sent else None,
        attempts=sent.attempts if sent else 0,
        error=sent.last_error if sent else None,
    )


def _review_reason(job: GradingJob) -> str | None:
    return job.review_reason if job.status == JobStatus.NEEDS_REVIEW else None


def result_document(evaluation: Evaluation) -> ResultOut:
    """The result, or ``result: null`` with a message saying why there is none (still
    running, failed, cancelled): a client polls this one URL until it has a result."""
    job = evaluation.job
    status = shown_as(job.status)
    return ResultOut(
        job_code=evaluation.code,
        status=status,
        result=_result_body(evaluation) if job.has_result else None,
        message=None if job.has_result else _why_no_result(status, job.error_message),
        client_reference=evaluation.client_reference,
        metadata=evaluation.client_metadata or {},
        needs_review=job.status == JobStatus.NEEDS_REVIEW,
        review_reason=_review_reason(job),
    )


def _why_no_result(status: EvaluationStatus, error: str | None) -> str:
    if status == EvaluationStatus.FAILED:
        return f"Evaluation failed: {error or 'no details'}"
    if status == EvaluationStatus.CANCELLED:
        return f"Evaluation cancelled: {error}" if error else "Evaluation cancelled"
    return NOT_READY


def _result_body(evaluation: Evaluation) -> ResultBody:
    job = evaluation.job
    provenance = job.provenance or {}
    return ResultBody(
        score=job.score,
        score_normalized=job.normalized,
        max_score=job.scale,
        feedback=job.feedback,
        feedback_structured=StructuredFeedback(
            criteria=[
                CriterionScore(
                    name=c.get("name", ""),
                    score=c.get("score"),
                    max_score=c.get("max"),
                    comment=c.get("reason") or "",
                )
                for c in job.criteria or []
            ]
        ),
        model_used=evaluation.evaluator_id,
        processing_time_ms=provenance.get("grading_ms"),
        tokens_used=tokens_used(provenance),
        criteria=job.criteria or [],
        flags=job.flags or [],
        provenance=provenance,
        confidence=job.confidence,
    )


def tokens_used(provenance: dict[str, Any]) -> int | None:
    """Tokens the grading service counted for this grading (cached replies cost none).
    None when unknown: a result stored without counts, or a service that reported none."""
    if "total_tokens" not in provenance:
        return None
    total = provenance["total_tokens"] or (
        (provenance.get("prompt_tokens") or 0) + (provenance.get("completion_tokens") or 0)
    )
    if not total and provenance.get("llm_calls"):
        return None
    return int(total)


def summary(evaluation: Evaluation) -> EvaluationSummary:
    job = evaluation.job
    finished = utc(job.finished_at)
    return EvaluationSummary(
        job_code=evaluation.code,
        evaluator_id=evaluation.evaluator_id,
        plugin_name=evaluation.plugin_name,
        status=shown_as(job.status),
        original_filename=clean_name(job.original_filename),
        created_at=utc(evaluation.created_at),
        processing_completed_at=finished,
        client_reference=evaluation.client_reference,
        needs_review=job.status == JobStatus.NEEDS_REVIEW,
        finished_at=finished,
    )
