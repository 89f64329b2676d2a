"""How far the AI agrees with the teacher on one activity, for the statistics page: overall,
per rubric criterion, per model, over time, with the confusion table. The numbers are
app.lms.agreement's; this module only chooses the pairs.

A pair is a submission the teacher graded (``Grade.is_teacher_graded``: they saved the
grading form), so the teacher's score is their override, or the AI's score they kept. A grade the
AI could not score (``needs_review`` without a score) that the teacher settled has no AI side:
it is counted apart (:attr:`Report.settled`), never as a pair. Scores are compared on the
activity's maximum (as the gradebook holds them); criteria on their own maximum, matched by
name. Every query is scoped to the activity.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import contains_eager

from app.extensions import db
from app.grading.scores import fold_key
from app.lms.agreement import Agreement, Pair, agreement, confusion
from app.models import Activity, Grade, GradingJob, Submission
from app.models.base import as_utc

#: Larger maxima are shown in this many bands in the confusion plot (101 × 101 cells of a
#: score out of 100 would be unreadable).
CONFUSION_CELLS = 10
#: Confidence bands (lowest value, label), highest first; labels are percentages.
CONFIDENCE_BANDS = ((0.8, "80–100%"), (0.5, "50–79%"), (0.0, "0–49%"))
#: Beyond this many weeks between the first and the last grading, the trend is by month.
MOST_WEEKS = 16


@dataclass(frozen=True)
class Group:
    """Agreement over one slice of the pairs: a criterion, a model or a period."""

    label: str
    agreement: Agreement


@dataclass(frozen=True)
class Confusion:
    """Counts of ``table[teacher][ai]``; cell ``i`` stands for ``i * step`` points."""

    table: list[list[int]]
    step: float

    @property
    def labels(self) -> list[float]:
        return [round(i * self.step, 2) for i in range(len(self.table))]

    @property
    def largest(self) -> int:
        return max((n for row in self.table for n in row), default=0)


@dataclass(frozen=True)
class Report:
    maximum: float
    overall: Agreement
    confusion: Confusion | None
    criteria: list[Group]
    #: Only when more than one model graded the pairs.
    models: list[Group]
    #: By the AI's confidence (app.grading.confidence), low to high: whether the grades it
    #: doubts are the ones a teacher changes, so an activity's min_confidence can be chosen.
    confidence: list[Group]
    #: ``week`` or ``month``, and the agreement in each, oldest first.
    period: str
    trend: list[Group]
    #: Grades the AI could not score that the teacher graded (no pair to compare).
    settled: int


@dataclass(frozen=True)
class _Graded:
    ai: float
    teacher: float
    at: datetime
    models: dict[str, float]
    criteria: list[tuple[str, float, float, float]]  # name, maximum, AI, teacher
    confidence: float | None


def report(activity: Activity, maximum: float) -> Report:
    """The agreement between the AI and the teacher on ``activity``, scores on ``maximum``."""
    graded, settled = _graded(activity, maximum)
    pairs = [(g.ai, g.teacher) for g in graded]
    period, trend = _trend(graded, maximum)
    models = _by_model(graded, maximum)
    return Report(
        maximum=maximum,
        overall=agreement(pairs, maximum),
        confusion=_confusion(pairs, maximum) if pairs else None,
        criteria=_by_criterion(graded),
        models=models if len(models) > 1 else [],
        confidence=_by_confidence(graded, maximum),
        period=period,
        trend=trend,
        settled=settled,
    )


def _graded(activity: Activity, maximum: float) -> tuple[list[_Graded], int]:
    grades = db.session.scalars(
        select(Grade)
        .join(Submission, Grade.submission_id == Submission.id)
        .join(GradingJob, GradingJob.submission_id == Submission.id)
        .where(Submission.activity_id == activity.id, Grade.is_teacher_graded)
        .order_by(Grade.overridden_at)
        .options(
            # The grade's result from the same rows (no query per grade), and not its texts,
            # replies and prompts: a class's worth would be megabytes.
            contains_eager(Grade.submission)
            .contains_eager(Submission.job)
            .load_only(
                GradingJob.score,
                GradingJob.scale,
                GradingJob.criteria,
                GradingJob.provenance,
                GradingJob.confidence,
            )
        )
    ).all()
    graded, settled = [], 0
    for grade in grades:
        job = grade.result
        teacher = grade.effective_score
        if teacher is None:
            continue
        if job.score is None or not job.scale:
            settled += 1
            continue

        def scaled(value: float, job: GradingJob = job) -> float:
            return value * maximum / job.scale

        graded.append(
            _Graded(
                ai=scaled(job.score),
                teacher=scaled(teacher),
                at=as_utc(grade.overridden_at),
                models={m: scaled(s) for m, s in _model_scores(job).items()},
                criteria=list(_criterion_pairs(job.criteria, grade.effective_criteria)),
                confidence=job.confidence,
            )
        )
    return graded, settled


def _model_scores(job: GradingJob) -> dict[str, float]:
    """Each model's own score on the job's scale: an ensemble records every grader's total
    (of 100); otherwise the result is the model's, or the models' together."""
    provenance = job.provenance or {}
    totals = provenance.get("model_totals") or {}
    if totals:
        return {model: total * job.scale / 100 for model, total in totals.items()}
    models = provenance.get("models") or []
    return {" + ".join(models): job.score} if models else {}


def _criterion_pairs(
    ai: list[dict[str, Any]], teacher: list[dict[str, Any]]
) -> Iterable[tuple[str, float, float, float]]:
    """(name, maximum, AI score, teacher score) of each criterion both scored, by name."""
    theirs = {fold_key(str(c.get("name", ""))): c.get("score") for c in teacher}
    for criterion in ai:
        name, top = str(criterion.get("name", "")), criterion.get("max")
        score, given = criterion.get("score"), theirs.get(fold_key(name))
        if name and top and top > 0 and score is not None and given is not None:
            yield name, float(top), float(score), float(given)


def _by_criterion(graded: list[_Graded]) -> list[Group]:
    pairs: dict[tuple[str, float], list[Pair]] = defaultdict(list)
    for g in graded:
        for name, top, ai, teacher in g.criteria:
            pairs[name, top].append((ai, teacher))
    return [
        Group(f"{name} ({top:g})", agreement(found, top)) for (name, top), found in pairs.items()
    ]


def _by_model(graded: list[_Graded], maximum: float) -> list[Group]:
    pairs: dict[str, list[Pair]] = defaultdict(list)
    for g in graded:
        for model, score in g.models.items():
            pairs[model].append((score, g.teacher))
    return [Group(model, agreement(found, maximum)) for model, found in sorted(pairs.items())]


def _by_confidence(graded: list[_Graded], maximum: float) -> list[Group]:
    """Agreement in each band of :data:`CONFIDENCE_BANDS` that has grades, lowest first."""
    pairs: dict[str, list[Pair]] = defaultdict(list)
    for g in graded:
        if g.confidence is not None:
            label = next(name for floor, name in CONFIDENCE_BANDS if g.confidence >= floor)
            pairs[label].append((g.ai, g.teacher))
    return [
        Group(name, agreement(pairs[name], maximum))
        for _, name in reversed(CONFIDENCE_BANDS)
        if name in pairs
    ]


def _trend(graded: list[_Graded], maximum: float) -> tuple[str, list[Group]]:
    """Agreement by week of the teacher's grading, or by month over a longer span."""
    if not graded:
        return "week", []
    weeks = (graded[-1].at - graded[0].at).days / 7
    period = "month" if weeks > MOST_WEEKS else "week"
    pairs: dict[str, list[Pair]] = defaultdict(list)
    for g in graded:  # oldest first
        if period == "month":
            key = g.at.strftime("%Y-%m")
        else:
            year, week, _ = g.at.isocalendar()
            key = f"{year}-W{week:02d}"
        pairs[key].append((g.ai, g.teacher))
    return period, [Group(key, agreement(found, maximum)) for key, found in pairs.items()]


def _confusion(pairs: list[Pair], maximum: float) -> Confusion:
    """Whole points up to a maximum of 20; larger maxima in :data:`CONFUSION_CELLS` bands."""
    if maximum <= 2 * CONFUSION_CELLS:
        return Confusion(confusion(pairs, maximum), 1.0)
    share = CONFUSION_CELLS / maximum
    banded = [(a * share, b * share) for a, b in pairs]
    return Confusion(confusion(banded, CONFUSION_CELLS), maximum / CONFUSION_CELLS)
