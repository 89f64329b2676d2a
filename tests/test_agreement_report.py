"""The statistics page's AI-versus-teacher agreement on crafted grades stored in the real
database: overall (checked by hand and against app.lms.agreement on the same pairs), per
criterion, per model, over time, the confusion table, the page, and the empty case."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from app.extensions import db
from app.lms import agreement, gradebook
from app.lms.agreement_report import report
from app.lti.nrps import Roster
from app.models import Activity, Grade, GradingJob, JobStatus, LtiUser, Submission
from tests.test_review import teacher

MONDAY = datetime(2026, 11, 2, 10, tzinfo=UTC)
CRITERIA = (("Accuracy", 5), ("Style", 5))


def add_graded(
    activity: Activity,
    sub: str,
    ai: float | None,
    teacher_score: float | None,
    *,
    at: datetime | None = MONDAY,
    scale: float = 10,
    models: tuple[str, ...] = ("model-a",),
    criteria: tuple[float, float] | None = None,
    teacher_criteria: tuple[float, float] | None = None,
    provenance: dict | None = None,
    confidence: float | None = None,
) -> Submission:
    """A graded submission as the worker and app.lms.review store it: the teacher's score is an
    override only where it differs from the AI's; ``at`` None: the teacher never graded it."""
    user = LtiUser(platform_id=activity.platform_id, sub=f"s{sub}", name=f"User {sub}")
    ai_criteria = [
        {"name": name, "score": score, "max": top}
        for (name, top), score in zip(CRITERIA, criteria or (), strict=False)
    ]
    submission = Submission(activity=activity, user=user, attempt=1)
    submission.job = GradingJob(
        status=JobStatus.COMPLETED if ai is not None else JobStatus.NEEDS_REVIEW,
        original_filename="essay.txt",
        kind="text",
        size_bytes=10,
        sha256="0" * 64,
        storage_path="essay.txt",
        score=ai,
        scale=scale,
        criteria=ai_criteria,
        provenance=provenance or {"models": list(models)},
        confidence=confidence,
    )
    overridden = None
    if teacher_criteria is not None:
        overridden = [c | {"score": s} for c, s in zip(ai_criteria, teacher_criteria, strict=True)]
    submission.grade = Grade(
        override_score=None if teacher_score == ai else teacher_score,
        override_criteria=overridden,
        overridden_at=at,
    )
    db.session.add(submission)
    db.session.commit()
    return submission


@pytest.fixture
def staff(browser, platform, live_tool) -> str:
    """A teacher's page on a fresh activity scored out of 10."""
    page = teacher(browser, platform, live_tool)
    activity = db.session.query(Activity).one()
    activity.max_score = 10
    db.session.commit()
    return page


def only_activity() -> Activity:
    return db.session.query(Activity).one()


def crafted(activity: Activity) -> list[tuple[float, float]]:
    """Six graded pairs over two weeks and two models, one of them stored on an old maximum
    of 20, plus what must not count: a grade the teacher never saw, and a review the teacher
    settled without any AI score. Returns the pairs on the maximum of 10."""
    week = timedelta(days=7)
    add_graded(activity, "1", 8, 8, criteria=(4, 4), teacher_criteria=(4, 4))
    add_graded(activity, "2", 14, 16, scale=20, criteria=(4, 3), teacher_criteria=(5, 3))
    add_graded(activity, "3", 5, 8, criteria=(2, 3), teacher_criteria=(4, 4))
    add_graded(activity, "4", 9, 9, at=MONDAY + week, models=("model-b",))
    add_graded(activity, "5", 3, 2, at=MONDAY + week, models=("model-b",))
    add_graded(activity, "6", 6, 6, at=MONDAY + week, models=("model-b",))  # kept the AI's
    add_graded(activity, "7", 4, None, at=None)  # never graded by the teacher
    add_graded(activity, "8", None, 5)  # settled a review the AI could not score
    return [(8, 8), (7, 8), (5, 8), (9, 9), (3, 2), (6, 6)]


def test_overall_agreement_by_hand_and_as_app_agreement_computes_it(staff):
    activity = only_activity()
    pairs = crafted(activity)
    found = report(activity, 10)
    overall = found.overall
    assert overall.n == 6 and found.settled == 1
    # By hand: 3 of 6 on the same point, 5 of 6 within one; |differences| 0+1+3+0+1+0;
    # AI minus teacher 0-1-3+0+1+0.
    assert overall.exact == pytest.approx(3 / 6)
    assert overall.within_one == pytest.approx(5 / 6)
    assert overall.mad == pytest.approx(5 / 6)
    assert overall.bias == pytest.approx(-0.5)
    assert overall == agreement.agreement(pairs, 10)
    assert found.confusion.step == 1 and found.confusion.table == agreement.confusion(pairs, 10)
    assert found.confusion.table[8][5] == 1  # teacher 8, AI 5
    # gradebook.statistics shows the same, with the histogram and the rest
    stats = gradebook.statistics(activity, gradebook.student_rows(activity, Roster(())), {})
    assert stats.agreement == found


def test_per_criterion_per_model_and_by_week(staff):
    activity = only_activity()
    pairs = crafted(activity)
    found = report(activity, 10)
    criteria = {g.label: g.agreement for g in found.criteria}
    assert criteria == {
        "Accuracy (5)": agreement.agreement([(4, 4), (4, 5), (2, 4)], 5),
        "Style (5)": agreement.agreement([(4, 4), (3, 3), (3, 4)], 5),
    }
    assert criteria["Style (5)"].exact == pytest.approx(2 / 3)
    models = {g.label: g.agreement for g in found.models}
    assert models == {
        "model-a": agreement.agreement(pairs[:3], 10),
        "model-b": agreement.agreement(pairs[3:], 10),
    }
    assert found.period == "week"
    assert [(g.label, g.agreement) for g in found.trend] == [
        ("2026-W45", agreement.agreement(pairs[:3], 10)),
        ("2026-W46", agreement.agreement(pairs[3:], 10)),
    ]


def test_an_ensemble_is_compared_grader_by_grader(staff):
    activity = only_activity()
    totals = {"g": 80, "e": 60}  # of 100: 8 and 6 out of 10
    for sub, teacher_score in (("1", 7), ("2", 8)):
        provenance = {"models": ["e", "g"], "model_totals": totals}
        add_graded(activity, sub, 7, teacher_score, provenance=provenance)
    models = {g.label: g.agreement for g in report(activity, 10).models}
    assert models == {
        "e": agreement.agreement([(6, 7), (6, 8)], 10),
        "g": agreement.agreement([(8, 7), (8, 8)], 10),
    }


def test_agreement_by_the_ais_confidence_band_lowest_first(staff, browser):
    activity = only_activity()
    add_graded(activity, "1", 8, 8, confidence=0.9)
    add_graded(activity, "2", 7, 7, confidence=0.8)
    add_graded(activity, "3", 3, 8, confidence=0.4)
    add_graded(activity, "4", 6, 6)  # graded before confidence was kept: in no band
    found = report(activity, 10)
    assert [(g.label, g.agreement) for g in found.confidence] == [
        ("0–49%", agreement.agreement([(3, 8)], 10)),
        ("80–100%", agreement.agreement([(8, 8), (7, 7)], 10)),
    ]
    page = browser.get(staff + "stats").text
    assert "Agreement by the AI's confidence in its grade" in page and "0–49%" in page


def test_one_model_shows_no_per_model_table_and_a_long_span_goes_by_month(staff):
    activity = only_activity()
    add_graded(activity, "1", 6, 7)
    add_graded(activity, "2", 6, 6, at=MONDAY + timedelta(weeks=20))
    found = report(activity, 10)
    assert found.models == []
    assert found.period == "month" and [g.label for g in found.trend] == ["2026-11", "2027-03"]


def test_a_large_maximum_is_banded_in_the_confusion_plot(staff):
    activity = only_activity()
    add_graded(activity, "1", 85, 90, scale=100)
    add_graded(activity, "2", 40, 42, scale=100)
    found = report(activity, 100)
    assert found.confusion.step == 10 and len(found.confusion.table) == 11
    assert found.confusion.table[9][9] == 1 and found.confusion.table[4][4] == 1  # 8.5 → 9
    assert found.overall.mad == pytest.approx(3.5)  # the other numbers on the real scores


def test_another_activity_s_grades_never_count(staff):
    activity = only_activity()
    other = Activity(
        platform_id=activity.platform_id,
        deployment_id=activity.deployment_id,
        resource_link_id="another-link",
        max_score=10,
    )
    db.session.add(other)
    db.session.commit()
    add_graded(other, "9", 2, 9)
    assert report(activity, 10).overall.n == 0
    assert report(other, 10).overall.n == 1


def test_the_page_shows_every_number_beside_its_plots(staff, browser):
    crafted(only_activity())
    html = browser.get(staff + "stats").text
    assert "Over the 6 submissions you graded, scores out of 10." in html
    assert "<dd>50%</dd>" in html and "<dd>83%</dd>" in html  # exact, within one
    assert "0.83 points" in html and "-0.50 points" in html  # MAD, bias
    assert 'aria-labelledby="confusion-heading confusion-help"' in html
    assert "<caption>Submissions by your score (rows) and the AI score (columns)</caption>" in html
    assert "Accuracy (5)</th>" in html and "model-b</th>" in html and "2026-W46</th>" in html
    assert 'class="trend"' in html and "Agreement by week" in html
    assert "You also graded 1 submission the AI could not score" in html


def test_with_nothing_graded_the_page_says_what_to_do(staff, browser):
    add_graded(only_activity(), "1", 7, None, at=None)
    html = browser.get(staff + "stats").text
    assert "Nothing to compare yet. Open a submission the AI graded" in html
    assert 'class="heatmap"' not in html
