"""Grading one API evaluation: the body of the ``grade_evaluation`` job.

It runs the same runner as the LTI side (:mod:`app.grading.runner`), with the assignment
the client sent instead of an activity's. Safe to run twice: only a ``queued`` row is
claimed. A cancel while it runs is noticed at the next progress report, which then stops
the job without storing anything.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path

from flask import current_app

from app import tenants
from app.api import evaluations
from app.extensions import db
from app.extract import ExtractionError, Kind, extract
from app.grading import registry, runner
from app.grading.base import InputFile, Outcome
from app.grading.registry import PluginError
from app.grading.rubric import RubricError, parse_rubric
from app.llm import LLMError
from app.models import Evaluation, EvaluationStatus

log = logging.getLogger(__name__)

#: Steps reported around the strategy's own: reading the file, saving the result.
OWN_STEPS = 2
RUNNING = (EvaluationStatus.PROCESSING,)


class Cancelled(Exception):
    """The client cancelled the evaluation while it was being graded."""


def grade_evaluation(evaluation_id: int) -> None:
    evaluation = db.session.get(Evaluation, evaluation_id)
    if evaluation is None or not evaluations.move(
        evaluation,
        (EvaluationStatus.QUEUED,),
        EvaluationStatus.PROCESSING,
        started_at=datetime.now(UTC),
        error_message=None,
    ):
        return  # cancelled, finished or taken by another worker: nothing to do
    try:
        _grade(evaluation)
    except Cancelled:
        log.info("evaluation %s was cancelled while grading", evaluation.id)
        return
    except (ExtractionError, LLMError) as exc:  # including "no language model configured"
        log.info("evaluation %s failed: %s", evaluation.id, exc)
        if not _fail(evaluation, exc.user_message):
            return
    except (PluginError, RubricError) as exc:
        if not _fail(evaluation, f"The grading strategy's settings are not usable: {exc}"):
            return
    except Exception:
        log.exception("grading evaluation %s crashed", evaluation.id)
        if not _fail(evaluation, "Grading stopped because of an internal error. Submit again."):
            return
    evaluations.finished(evaluation)


def _grade(evaluation: Evaluation) -> None:
    config = current_app.config
    total = OWN_STEPS + registry.get(evaluation.plugin_name).steps
    _progress(evaluation, 1, total, "Reading the file")
    path = Path(config["EVALUAITOR_DATA_DIR"]) / evaluation.storage_path
    text = extract(path, Kind(evaluation.kind)).text
    job = runner.Job(
        plugin=evaluation.plugin_name,
        params=evaluation.plugin_params,
        text=text,
        filename=evaluation.original_filename,
        kind=evaluation.kind,
        instructions=evaluation.instructions,
        max_score=evaluation.max_score,
        rubric=parse_rubric(evaluation.rubric) if evaluation.rubric else None,
        files=(InputFile(evaluation.original_filename, evaluation.kind, text, path),),
        model=evaluation.evaluator_id,
        mask_pii=bool(config["EVALUAITOR_MASK_PII"]),
    )
    result = runner.grade_with_model(
        job,
        config,
        lambda step, _n, message: _progress(evaluation, 1 + step, total, message),
        tenant_folder=tenants.organization_folder(evaluation.organization_id),
    )
    graded = result.outcome == Outcome.GRADED
    stored = evaluations.move(
        evaluation,
        RUNNING,
        EvaluationStatus.COMPLETED if graded else EvaluationStatus.NEEDS_REVIEW,
        extracted_text=text,
        progress_step=total,
        progress_total=total,
        progress_message="Graded" if graded else "Graded; waiting for a person to review",
        error_message=None if graded else result.error,
        result={
            "score": result.score,
            "max_score": result.scale,
            "score_normalized": result.normalized,
            "feedback": result.feedback,
            "criteria": runner.as_dicts(result.criteria),
            "flags": runner.as_dicts(result.flags),
            "provenance": result.provenance,
        },
    )
    if not stored:
        raise Cancelled()


def _progress(evaluation: Evaluation, step: int, total: int, message: str) -> None:
    """Report progress, or stop the job if the client cancelled meanwhile."""
    if not evaluations.move(
        evaluation,
        RUNNING,
        EvaluationStatus.PROCESSING,
        progress_step=step,
        progress_total=total,
        progress_message=message[:300],
    ):
        raise Cancelled()


def _fail(evaluation: Evaluation, message: str) -> bool:
    """Record the failure; False if the client cancelled first (then nothing changes)."""
    db.session.rollback()
    return evaluations.move(evaluation, RUNNING, EvaluationStatus.FAILED, error_message=message)
