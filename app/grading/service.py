"""Grading one stored submission: extract, run the activity's plugin, store, pass back.

This is the body of the grading job. It takes an id, loads everything from the database,
and is safe to run twice (a finished submission is left alone). Every failure ends in a
visible ``failed`` state with a message for the student and the teacher.

A graded result is *released* (shown to the student, sent to the gradebook) at once under
the ``auto`` release policy; under ``hold_all``, and under ``hold_flagged`` when it carries a
flag, it is stored ``graded`` but held until a teacher releases it (see app.review).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path

from flask import current_app
from flask_babel import lazy_gettext as _l

from app import tenants
from app.errors import QueueUnavailable
from app.extensions import db
from app.extract import ExtractionError, Kind, extract
from app.grading import registry, runner
from app.grading.base import GradingResult, InputFile, Outcome
from app.grading.registry import PluginError
from app.grading.rubric import RubricError, parse_rubric
from app.i18n import N_
from app.jobs import queue
from app.llm import LLMError, LLMNotConfiguredError
from app.lti import passback
from app.models import Grade, Submission, SubmissionStatus

log = logging.getLogger(__name__)

NO_LLM_MESSAGE = N_(
    "No language model is configured, so this submission cannot be graded automatically yet. "
    "It is stored safely; an administrator must set EVALUAITOR_LLM_BASE_URL, then a teacher "
    "can retry grading."
)
#: Steps the service itself reports around the plugin's: reading the file, saving the result.
OWN_STEPS = 2


def grade_submission(submission_id: int) -> None:
    submission = db.session.get(Submission, submission_id)
    if submission is None or submission.status != SubmissionStatus.QUEUED:
        return  # already graded, failed or being graded: running twice changes nothing
    submission.move_to(SubmissionStatus.PROCESSING)
    submission.started_at = datetime.now(UTC)
    submission.error_message = None
    db.session.commit()
    try:
        _grade(submission)
    except LLMNotConfiguredError:
        _fail(submission, NO_LLM_MESSAGE)
    except (ExtractionError, LLMError) as exc:
        log.info("submission %s failed: %s", submission.id, exc)
        _fail(submission, exc.user_message)
    except (PluginError, RubricError) as exc:
        log.info("submission %s: activity misconfigured: %s", submission.id, exc)
        message = N_("The activity's grading settings need fixing by a teacher. %(problem)s")
        _fail(submission, message % {"problem": exc})
    except Exception:
        log.exception("grading submission %s crashed", submission.id)
        _fail(
            submission, N_("Grading stopped because of an internal error. A teacher can retry it.")
        )


def _grade(submission: Submission) -> None:
    activity = submission.activity
    chosen = submission.grading_override or {}  # a teacher's regrade with another strategy
    plugin = chosen.get("plugin") or activity.plugin_name
    total = OWN_STEPS + registry.get(plugin).steps
    _progress(submission, 1, total, N_("Reading your file"))
    if submission.extracted_text is None:
        stored = Path(current_app.config["EVALUAITOR_DATA_DIR"]) / submission.storage_path
        submission.extracted_text = extract(stored, Kind(submission.kind)).text
        db.session.commit()
    passback.sync_max_score(activity)
    path = Path(current_app.config["EVALUAITOR_DATA_DIR"]) / submission.storage_path
    document = InputFile(
        submission.original_filename, submission.kind, submission.extracted_text, path
    )
    job = runner.Job(
        plugin=plugin,
        params=chosen.get("params", activity.plugin_params),
        text=submission.extracted_text,
        filename=submission.original_filename,
        kind=submission.kind,
        instructions=activity.instructions,
        max_score=activity.max_score,
        rubric=parse_rubric(activity.rubric) if activity.rubric else None,
        reference=activity.reference_text,
        files=(document,),
        model=chosen.get("model") or activity.model or current_app.config["EVALUAITOR_LLM_MODEL"],
        names=[submission.user.name],
        mask_pii=current_app.config["EVALUAITOR_MASK_PII"],
    )
    result = runner.grade_with_model(
        job,
        current_app.config,
        lambda step, _n, message: _progress(submission, 1 + step, total, message),
        tenant_folder=tenants.platform_folder(activity.platform_id),
    )
    _progress(submission, total, total, N_("Saving the result"))
    _store(submission, result, held=is_held(activity.release_policy, result))
    push = passback.publish_grade(submission)
    db.session.commit()  # the grade and its push land together
    if push:
        queue.dispatch(push)


def is_held(policy: str, result: GradingResult) -> bool:
    """Whether the activity's release policy keeps this result for a teacher to release."""
    return policy == "hold_all" or (policy == "hold_flagged" and bool(result.flags))


def _store(submission: Submission, result: GradingResult, *, held: bool) -> None:
    """Store a new AI result. It replaces the previous one entirely, a teacher's override and
    release included: a regrade's audit event keeps what was there before."""
    grade = submission.grade or Grade(submission_id=submission.id)
    grade.score, grade.scale, grade.normalized = result.score, result.scale, result.normalized
    grade.feedback = result.feedback
    grade.criteria = runner.as_dicts(result.criteria)
    grade.flags = runner.as_dicts(result.flags)
    grade.provenance, grade.raw_replies, grade.error = (
        result.provenance,
        result.raw_replies,
        result.error,
    )
    grade.override_score = grade.override_feedback = grade.override_criteria = None
    grade.overridden_at = grade.overridden_by_id = grade.released_by_id = None
    submission.grade = grade
    graded = result.outcome == Outcome.GRADED
    submission.move_to(SubmissionStatus.GRADED if graded else SubmissionStatus.NEEDS_REVIEW)
    submission.error_message = None if graded else result.error
    submission.finished_at = datetime.now(UTC)
    grade.released_at = submission.finished_at if graded and not held else None


def _progress(submission: Submission, step: int, total: int, message: str) -> None:
    submission.set_progress(step, total, message)
    db.session.commit()


def _fail(submission: Submission, message: str) -> None:
    db.session.rollback()
    submission.move_to(SubmissionStatus.FAILED)
    submission.error_message = message
    submission.finished_at = datetime.now(UTC)
    db.session.commit()


def retry(submission: Submission) -> None:
    """Grade a submission again (a teacher's retry or regrade, see app.review)."""
    submission.error_message = None
    if not queue.enqueue_grading(submission):
        raise QueueUnavailable(
            _l("The grading queue is not reachable right now. Try again shortly.")
        )
