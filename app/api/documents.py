"""The JSON documents an evaluation is shown as (API answers and callback bodies)."""

from __future__ import annotations

from typing import Any

from app.api.schemas import (
    CallbackState,
    EvaluationSummary,
    Progress,
    ResultBody,
    StatusOut,
    utc,
)
from app.models import Evaluation
from app.text import clean_name


def status_document(evaluation: Evaluation) -> StatusOut:
    step, total = evaluation.progress_step, evaluation.progress_total
    started, finished = utc(evaluation.started_at), utc(evaluation.finished_at)
    callback = None
    if evaluation.callback_url:
        sent = evaluation.callback
        callback = CallbackState(
            url=evaluation.callback_url,
            status=sent.status if sent else None,
            attempts=sent.attempts if sent else 0,
            error=sent.last_error if sent else None,
        )
    return StatusOut(
        job_code=evaluation.code,
        status=evaluation.status,
        progress=Progress(
            step=step,
            total=total,
            percentage=round(100 * step / total, 1) if total else 0.0,
            message=evaluation.progress_message,
        ),
        created_at=utc(evaluation.created_at),
        started_at=started,
        finished_at=finished,
        duration_seconds=(finished - started).total_seconds() if started and finished else None,
        error_message=evaluation.error_message,
        callback=callback,
    )


def result_body(evaluation: Evaluation) -> dict[str, Any] | None:
    """The grading result as JSON, or None while there is none (queued, running, failed)."""
    job = evaluation.job
    if not job.has_result:
        return None
    return ResultBody(
        score=job.score,
        max_score=job.scale,
        score_normalized=job.normalized,
        feedback=job.feedback,
        criteria=job.criteria,
        flags=job.flags,
        provenance=job.provenance,
        model_used=evaluation.evaluator_id,
        processing_time_ms=(job.provenance or {}).get("grading_ms"),
    ).model_dump(mode="json")


def summary(evaluation: Evaluation) -> EvaluationSummary:
    return EvaluationSummary(
        job_code=evaluation.code,
        status=evaluation.status,
        evaluator_id=evaluation.evaluator_id,
        plugin_name=evaluation.plugin_name,
        original_filename=clean_name(evaluation.original_filename),
        client_reference=evaluation.client_reference,
        created_at=utc(evaluation.created_at),
        finished_at=utc(evaluation.finished_at),
    )
