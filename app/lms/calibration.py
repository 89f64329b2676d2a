"""Calibration examples on the LMS side: which submissions of an activity may show a model how
its teacher grades, the teacher's say over each one, and what the pages tell about them.

A submission is a candidate for a new grading of the same activity (never another activity's,
so never another course's or tenant's) when it is its student's latest attempt (the one that
counts; a student's earlier attempts would crowd the few places with near copies), it is not
the work being graded nor any other of that student's, its text is known, its grade is
settled (graded, or waiting for review) and either

- a teacher graded it (``Grade.is_teacher_graded``: an override, the AI's score they kept,
  or the score that settled a review), and they did not exclude it
  (``Grade.example == "excluded"``); or
- a teacher pinned it (``"pinned"``), with or without their own score: pinning vouches for
  the grade as it stands.

A teacher chooses per submission (app.lms.review.use_as_example). The newest POOL_SIZE
candidates, pinned ones first, are compared with the new work
(app.grading.examples.choose), so grading stays fast however large the class.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, case, func, or_, select
from sqlalchemy.orm import contains_eager, selectinload

from app.extensions import db
from app.grading.examples import Candidate, ExampleCriterion, choose
from app.models import Activity, Grade, GradingJob, JobStatus, Submission
from app.models.submissions import latest_only

#: Most candidates compared for one grading: the newest, pinned ones first.
POOL_SIZE = 200
_SETTLED = (JobStatus.COMPLETED, JobStatus.NEEDS_REVIEW)


@dataclass(frozen=True)
class Summary:
    """The activity's examples at a glance: teacher-graded (and not excluded), pinned,
    excluded."""

    graded: int
    pinned: int
    excluded: int


@dataclass(frozen=True)
class Used:
    """An example a grade was made with, as its page lists it."""

    submission: Submission
    similarity: float
    pinned: bool


def for_grading(submission: Submission, text: str) -> tuple[Candidate, ...]:
    """The examples a grading of ``submission`` (whose text is ``text``) uses now, as many as
    the activity asks for."""
    count = submission.activity.example_count
    if count < 1:
        return ()
    return choose(text, candidates(submission), count)


def candidates(submission: Submission) -> list[Candidate]:
    """The submissions that may serve as examples for ``submission`` (see the module)."""
    pinned = Grade.example == "pinned"
    query = (
        latest_only(select(Submission), submission.activity_id)
        .join(Grade, Grade.submission_id == Submission.id)
        .join(GradingJob, GradingJob.submission_id == Submission.id)
        .where(
            Submission.activity_id == submission.activity_id,
            Submission.user_id != submission.user_id,
            GradingJob.status.in_(_SETTLED),
            GradingJob.extracted_text.is_not(None),
            GradingJob.scale.is_not(None),
            or_(
                and_(Grade.is_teacher_graded, Grade.example != "excluded"),
                and_(pinned, GradingJob.score.is_not(None)),
            ),
        )
        .order_by(case((pinned, 0), else_=1), Submission.id.desc())
        .limit(POOL_SIZE)
        .options(
            contains_eager(Submission.job),  # joined above: no query per candidate
            selectinload(Submission.grade),
            selectinload(Submission.user),
        )
    )
    return [_candidate(found) for found in db.session.scalars(query)]


def _candidate(submission: Submission) -> Candidate:
    """A submission as an example: its grade as the teacher saved or pinned it (score,
    comments, per-criterion scores; where they kept the AI's, the AI's, which they vouched
    for)."""
    grade = submission.grade
    return Candidate(
        submission_id=submission.id,
        kind=submission.kind,
        names=(submission.user.name,),
        pinned=grade.example == "pinned",
        text=submission.extracted_text or "",
        score=grade.effective_score,
        scale=grade.scale,
        feedback=grade.effective_feedback or "",
        criteria=tuple(_criteria(grade.effective_criteria or [])),
    )


def _criteria(stored: list[dict[str, Any]]) -> list[ExampleCriterion]:
    return [
        ExampleCriterion(str(c.get("name") or "")[:100], float(c["score"]), float(c["max"] or 0))
        for c in stored
        if c.get("score") is not None
    ]


def summary(activity: Activity) -> Summary:
    """How many of the activity's counting submissions a teacher graded (and did not
    exclude), pinned, or excluded."""
    pinned = Grade.example == "pinned"
    excluded = Grade.example == "excluded"
    query = latest_only(
        select(
            func.count().filter(Grade.is_teacher_graded & ~excluded),
            func.count().filter(pinned),
            func.count().filter(excluded),
        ).select_from(Submission),
        activity.id,
    ).join(Grade, Grade.submission_id == Submission.id)
    graded, pinned_count, excluded_count = db.session.execute(
        query.where(Submission.activity_id == activity.id)
    ).one()
    return Summary(graded, pinned_count, excluded_count)


def used_for(submission: Submission) -> list[Used]:
    """The examples the submission's current grade was made with, as its provenance records
    them; only submissions of its own activity are looked up (another id shows nothing)."""
    recorded = (submission.job.provenance or {}).get("examples") or []
    ids = [entry.get("submission_id") for entry in recorded]
    found = {
        s.id: s
        for s in db.session.scalars(
            select(Submission).where(
                Submission.activity_id == submission.activity_id, Submission.id.in_(ids)
            )
        )
    }
    return [
        Used(
            found[entry["submission_id"]],
            float(entry.get("similarity") or 0),
            bool(entry.get("pinned")),
        )
        for entry in recorded
        if entry.get("submission_id") in found
    ]
