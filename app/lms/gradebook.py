"""The teacher's view of an activity: one row per student, filters, sorting, statistics, CSV.

Rows join the course roster from the LMS (students who never submitted included) with each
student's latest submission, its grade and the last gradebook push. Everything here reads;
changes go through app.lms.review.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import selectinload

from app import spend
from app.extensions import db
from app.lms.agreement_report import Report, report
from app.lms.submissions import is_uncertain
from app.lti.nrps import Roster
from app.models import Activity, Grade, JobStatus, LtiUser, ScorePush, Submission
from app.text import clean_name

#: ``status`` filter value for students without a submission.
NO_SUBMISSION = "none"
#: The states a teacher can filter the class list by (a submission is never cancelled).
STATUSES = [state for state in JobStatus if state != JobStatus.CANCELLED]
SHOW = ("all", "flagged", "held", "missing")
SORTS = ("name", "status", "score", "date")
HISTOGRAM_BINS = 10
#: Confidence marked low when the activity holds no grade for being uncertain.
LOW_CONFIDENCE = 0.5


@dataclass
class StudentRow:
    sub: str
    name: str
    user_id: int | None = None  # None: on the roster, never launched the activity
    submission: Submission | None = None
    push: ScorePush | None = None

    @property
    def grade(self) -> Grade | None:
        return self.submission.grade if self.submission else None

    @property
    def status(self) -> str:
        return str(self.submission.status) if self.submission else NO_SUBMISSION

    @property
    def ai_score(self) -> float | None:
        return self.grade.score if self.grade else None

    @property
    def teacher_score(self) -> float | None:
        return self.grade.override_score if self.grade else None

    @property
    def score(self) -> float | None:
        return self.grade.effective_score if self.grade else None

    @property
    def confidence(self) -> float | None:
        """The AI result's confidence (app.grading.confidence), None before it has one."""
        return self.grade.result.confidence if self.grade else None

    @property
    def is_flagged(self) -> bool:
        return bool(self.grade and self.grade.result.flags)

    @property
    def is_held(self) -> bool:
        return self.status == JobStatus.COMPLETED and not self.grade.is_released

    @property
    def is_released(self) -> bool:
        return self.status == JobStatus.COMPLETED and self.grade.is_released

    @property
    def submitted_at(self) -> datetime | None:
        return self.submission.created_at if self.submission else None


def student_rows(activity: Activity, roster: Roster) -> list[StudentRow]:
    """Every student on the roster or with a submission, with their latest attempt."""
    rows: dict[str, StudentRow] = {
        member.sub: StudentRow(sub=member.sub, name=member.name) for member in roster.members
    }
    latest = db.session.execute(
        select(Submission, LtiUser)
        .join(LtiUser, Submission.user_id == LtiUser.id)
        .where(Submission.activity_id == activity.id)
        .order_by(Submission.attempt)
        # one query for every row's grade, one for every row's job
        .options(selectinload(Submission.grade), selectinload(Submission.job))
    ).all()
    for submission, user in latest:  # later attempts overwrite earlier ones
        row = rows.setdefault(user.sub, StudentRow(sub=user.sub, name=user.name))
        row.name = row.name or user.name
        row.user_id, row.submission = user.id, submission
    pushes = db.session.scalars(
        select(ScorePush).where(ScorePush.activity_id == activity.id).order_by(ScorePush.id)
    ).all()
    by_user = {row.user_id: row for row in rows.values() if row.user_id is not None}
    for push in pushes:
        if push.user_id in by_user:
            by_user[push.user_id].push = push
    return list(rows.values())


def select_rows(
    rows: Iterable[StudentRow],
    *,
    status: str = "",
    show: str = "all",
    sort: str = "name",
    descending: bool = False,
) -> list[StudentRow]:
    """Filter and sort as the page's query parameters ask; unknown values are ignored."""
    chosen = [row for row in rows if not status or row.status == status]
    if show == "flagged":
        chosen = [row for row in chosen if row.is_flagged]
    elif show == "held":
        chosen = [row for row in chosen if row.is_held]
    elif show == "missing":
        chosen = [row for row in chosen if row.submission is None]
    keys = {
        "name": lambda r: (r.name or r.sub).casefold(),
        "status": lambda r: r.status,
        "score": lambda r: -1.0 if r.score is None else r.score,
        "date": lambda r: r.submitted_at.timestamp() if r.submitted_at else 0.0,
    }
    chosen.sort(key=lambda r: (r.name or r.sub).casefold())  # ties stay in name order
    chosen.sort(key=keys.get(sort, keys["name"]), reverse=descending)
    return chosen


def is_low_confidence(activity: Activity, value: float | None) -> bool:
    """Marked low on the teacher's pages: held for it when the activity sets a
    ``min_confidence`` (app.lms.submissions.is_uncertain), else below :data:`LOW_CONFIDENCE`."""
    if activity.min_confidence is not None:
        return is_uncertain(activity, value)
    return value is not None and value < LOW_CONFIDENCE


def on_maximum(value: float | None, scale: float | None, maximum: float | None) -> float | None:
    """A score given on the grader's ``scale`` on the activity's ``maximum``, as the LMS
    gradebook holds it (scores are sent on the column's scale), to two decimals: pages and
    the CSV show one scale, also after the maximum changed. Without both scales, as it is."""
    if value is None or not scale or not maximum:
        return value
    return round(value * maximum / scale, 2)


# -- statistics -------------------------------------------------------------------------


@dataclass(frozen=True)
class Bin:
    low: float
    high: float
    count: int


@dataclass(frozen=True)
class Statistics:
    maximum: float
    bins: list[Bin]
    scored: int
    mean: float | None
    #: The AI against the teacher over the submissions they graded (app.lms.agreement_report).
    agreement: Report
    prompt_tokens: int
    completion_tokens: int
    cost: float | None

    @property
    def tallest(self) -> int:
        return max((b.count for b in self.bins), default=0)


def statistics(
    activity: Activity, rows: Iterable[StudentRow], config: Mapping[str, Any]
) -> Statistics:
    """Histogram of the latest scores and AI-vs-teacher agreement over every submission a
    teacher graded (both on the activity's maximum), and the activity's model usage."""
    maximum = activity.max_score or config["EVALUAITOR_DEFAULT_MAX_SCORE"]
    grades = [row.grade for row in rows if row.grade is not None]
    values = [
        g.effective_normalized * maximum for g in grades if g.effective_normalized is not None
    ]
    width = maximum / HISTOGRAM_BINS
    counts = [0] * HISTOGRAM_BINS
    for value in values:
        counts[min(int(value / width), HISTOGRAM_BINS - 1)] += 1
    bins = [Bin(i * width, (i + 1) * width, n) for i, n in enumerate(counts)]
    spent = spend.totals(activity.id)
    return Statistics(
        maximum=maximum,
        bins=bins,
        scored=len(values),
        mean=sum(values) / len(values) if values else None,
        agreement=report(activity, maximum),
        prompt_tokens=spent.prompt_tokens,
        completion_tokens=spent.completion_tokens,
        cost=spent.cost,
    )


# -- CSV --------------------------------------------------------------------------------

CSV_COLUMNS = (
    "student",
    "lms_user_id",
    "attempt",
    "status",
    "ai_score",
    "teacher_score",
    "final_score",
    "out_of",
    "released",
    "gradebook",
    "submitted_at",
)
_FORMULA_START = ("=", "+", "-", "@")  # after clean_name: no leading blanks or controls


def to_csv(rows: Iterable[StudentRow], maximum: float | None) -> str:
    """The gradebook as CSV, scores on the activity's ``maximum`` (see :func:`on_maximum`;
    None: each grade's own scale). Text cells lose hidden characters (app.text), and those that a
    spreadsheet would run as a formula are prefixed with an apostrophe (OWASP's advice), so a
    student named ``=HYPERLINK(...)`` stays text."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for row in rows:
        grade, push = row.grade, row.push
        scale = grade.scale if grade else None
        out_of = maximum if maximum and scale else scale
        writer.writerow(
            [
                _cell(row.name),
                _cell(row.sub),
                row.submission.attempt if row.submission else "",
                row.status,
                _num(on_maximum(row.ai_score, scale, maximum)),
                _num(on_maximum(row.teacher_score, scale, maximum)),
                _num(on_maximum(row.score, scale, maximum)),
                _num(out_of),
                "yes" if row.is_released else "no",
                _cell(f"{push.kind}: {push.status}") if push else "",
                row.submitted_at.strftime("%Y-%m-%d %H:%M") if row.submitted_at else "",
            ]
        )
    return out.getvalue()


def _cell(text: str) -> str:
    text = clean_name(text)
    return "'" + text if text.startswith(_FORMULA_START) else text


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:g}"
