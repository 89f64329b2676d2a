"""Confidence through the whole loop: stored with the result, shown to the teacher, and an
activity's ``min_confidence`` holding the grades below it; the setting's validation."""

from __future__ import annotations

import pytest

from app.extensions import db
from app.grading.confidence import NO_EXAMPLE
from app.lms import activities
from app.models import Activity, AuditEvent, JobStatus
from tests.fakes.platform import TEACHER
from tests.test_core_loop import open_activity
from tests.test_review import graded, teacher

# GOOD_REPLY, no examples yet: 1 - 0.2 for the missing calibration example.
EXPECTED = 0.8


@pytest.mark.parametrize(
    ("threshold", "held"),
    [(None, False), (0.9, True), (0.8, False), (0.5, False)],
)
def test_a_grade_below_the_activity_s_minimum_confidence_is_held(
    browser, platform, llm, live_tool, threshold, held
):
    open_activity(browser, platform, live_tool, user="3", roles=TEACHER)
    db.session.query(Activity).one().min_confidence = threshold
    db.session.commit()
    _, submission = graded(browser, platform, llm, live_tool, policy="auto")
    job = submission.job
    assert job.status == JobStatus.COMPLETED
    assert job.confidence == EXPECTED == job.provenance["confidence"]["value"]
    assert submission.grade.is_released is not held
    assert (platform.grade_for("2")["scoreGiven"] is None) is held


def test_the_teacher_sees_the_confidence_its_reasons_and_a_low_mark(
    browser, platform, llm, live_tool
):
    staff = teacher(browser, platform, live_tool)
    db.session.query(Activity).one().min_confidence = 0.9
    db.session.commit()
    _, submission = graded(browser, platform, llm, live_tool)
    listing = browser.get(staff).text
    assert '<th scope="col">Confidence</th>' in listing
    assert '<span class="badge badge-low">Low: 80%</span>' in listing  # in words, not colour
    assert "<strong>Held</strong>" in listing
    detail = browser.get(f"{staff}submissions/{submission.id}").text
    assert "below this activity's threshold of 90%, so it waits for your review" in detail
    assert NO_EXAMPLE in detail and "20 points off" in detail

    db.session.query(Activity).one().min_confidence = None  # shown as a plain number then
    db.session.commit()
    listing = browser.get(staff).text
    assert "badge-low" not in listing and "<td>80%</td>" in listing


@pytest.mark.parametrize(
    ("typed", "stored"),
    [("70%", 0.7), ("0.7", 0.7), ("70", 0.7), (" 55 % ", 0.55), ("0,5", 0.5), ("", None)],
)
def test_the_setting_reads_a_share_or_a_percentage(typed, stored):
    assert activities.confidence_threshold(typed) == pytest.approx(stored)


@pytest.mark.parametrize("typed", ["abc", "150", "-1", "101%", "nan", "%"])
def test_the_settings_form_refuses_a_bad_threshold_and_keeps_the_rest(
    browser, platform, live_tool, typed
):
    from tests.test_deep_linking import valid_form

    page = teacher(browser, platform, live_tool)
    response = browser.post(
        page + "settings", data=valid_form(title="Kept title", min_confidence=typed)
    )
    assert response.status_code == 400
    error = response.text.split('id="min_confidence-error">', 1)[1].split("</p>", 1)[0]
    assert "Enter a confidence from 0 to 1 (such as 0.7) or a percentage" in error
    assert '<a href="#min_confidence">' in response.text and 'value="Kept title"' in response.text
    db.session.expire_all()
    activity = db.session.query(Activity).one()
    assert activity.min_confidence is None and activity.title != "Kept title"


def test_the_settings_form_stores_shows_and_audits_the_threshold(browser, platform, live_tool):
    from tests.test_deep_linking import valid_form

    page = teacher(browser, platform, live_tool)
    saved = browser.post(page + "settings", data=valid_form(min_confidence="65%"))
    assert saved.status_code == 303
    db.session.expire_all()
    assert db.session.query(Activity).one().min_confidence == pytest.approx(0.65)
    form = browser.get(page + "settings").text
    assert 'id="min_confidence" name="min_confidence" size="6" value="65%"' in form
    assert '<label for="min_confidence">' in form and 'id="min_confidence-help"' in form
    (event,) = db.session.query(AuditEvent).filter_by(action="settings").all()
    assert event.details["after"]["min_confidence"] == pytest.approx(0.65)
    browser.post(page + "settings", data=valid_form(min_confidence=""))  # cleared
    db.session.expire_all()
    assert db.session.query(Activity).one().min_confidence is None


def test_the_cli_takes_the_threshold_with_the_same_rules(app, browser, platform, live_tool):
    from click.testing import CliRunner
    from flask.cli import ScriptInfo

    from app.cli import cli

    teacher(browser, platform, live_tool)
    activity_id = str(db.session.query(Activity).one().id)

    def invoke(value: str):
        info = ScriptInfo(create_app=lambda: app)
        args = ["activity", "configure", activity_id, "--min-confidence", value]
        return CliRunner().invoke(cli, args, obj=info)

    refused = invoke("lots")
    assert refused.exit_code == 1 and "min_confidence: Enter a confidence" in refused.output
    assert invoke("75%").exit_code == 0
    db.session.expire_all()
    assert db.session.query(Activity).one().min_confidence == pytest.approx(0.75)


def test_a_teacher_graded_example_raises_the_next_grade_s_confidence(
    browser, platform, llm, live_tool
):
    from tests.test_review import act, latest

    staff = teacher(browser, platform, live_tool)
    graded(browser, platform, llm, live_tool, user="2")
    act(browser, staff, latest("2"), "override", score="7")  # now an example
    _, submission = graded(browser, platform, llm, live_tool, user="4")
    (example,) = submission.job.provenance["examples"]
    similarity = example["similarity"]
    assert 0 < similarity <= 1  # the two essays differ only in the student's line
    assert submission.job.confidence == pytest.approx(round(1 - 0.2 * (1 - similarity), 2))
    assert submission.job.confidence > EXPECTED
