"""Regrade requests end to end: a student asks about a released grade within the activity's
limits, the teacher answers from the queue, and a new score reaches the fake LMS gradebook as
the teacher's override, with both steps in the audit log."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from app.extensions import db
from app.lms import appeals as appeals_module
from app.models import Activity, Appeal, ScorePush
from tests.conftest import run_jobs
from tests.fakes.platform import TEACHER
from tests.test_core_loop import open_activity
from tests.test_deep_linking import Inputs, valid_form
from tests.test_review import act, audit, graded, latest, teacher
from tests.test_strategies_loop import configure


def ask(browser, page: str, submission_id: int, reason: str = "I cited the sources you asked for."):
    return browser.post(f"{page}submissions/{submission_id}/appeal", data={"reason": reason})


def answer(browser, staff: str, appeal_id: int, **form):
    return browser.post(f"{staff}appeals/{appeal_id}/answer", data=form)


def appeals() -> list[Appeal]:
    db.session.expire_all()
    return db.session.query(Appeal).order_by(Appeal.id).all()


def test_a_student_asks_and_a_new_score_reaches_the_gradebook(browser, platform, llm, live_tool):
    page, submission = graded(browser, platform, llm, live_tool)
    assert platform.grade_for("2")["scoreGiven"] == 8
    form = Inputs(browser.get(page).text).controls
    assert form["reason"]["tag"] == "textarea" and "required" in form["reason"]

    hostile = "<script>alert(1)</script> I named the Calvin cycle."
    assert ask(browser, page, submission.id, hostile).status_code == 303
    (appeal,) = appeals()
    assert (appeal.status, appeal.score_before, appeal.user.sub) == ("open", 8, "2")
    html = browser.get(page).text
    assert "&lt;script&gt;alert(1)&lt;/script&gt; I named the Calvin cycle." in html
    assert "<script>alert(1)" not in html
    assert "waiting for your teacher's answer" in html.replace("&#39;", "'")
    assert 'name="reason"' not in html  # one open request at a time

    staff = teacher(browser, platform, live_tool)
    assert "1 waits for you" in browser.get(staff).text
    queue = browser.get(staff + "appeals").text
    assert "&lt;script&gt;alert(1)" in queue and "<script>alert(1)" not in queue
    assert "8 / 10" in queue and f"submissions/{submission.id}" in queue
    detail = browser.get(f"{staff}submissions/{submission.id}").text
    assert "I named the Calvin cycle." in detail and "Asked for a regrade" in detail

    done = answer(browser, staff, appeal.id, answer="You are right: 9.", score="9")
    assert done.status_code == 303
    run_jobs()
    assert platform.grade_for("2")["scoreGiven"] == 9
    grade = latest().grade
    assert (grade.score, grade.override_score) == (8, 9)
    (appeal,) = appeals()
    assert (appeal.status, appeal.score_before, appeal.score_after) == ("answered", 8, 9)
    (asked,), (answered,) = audit("appeal"), audit("appeal_answer")
    assert appeal.answered_at is not None and appeal.answered_by_id == answered.actor_id
    assert asked.actor.sub == "2" and asked.details == {"appeal": appeal.id, "score": 8}
    assert answered.actor.sub == "3" and answered.details["appeal"] == appeal.id
    assert answered.details["before"]["override_score"] is None
    assert answered.details["after"]["override_score"] == 9
    assert len(audit("override")) == 1  # the change went through the override path
    assert "No regrade request is waiting" in browser.get(staff + "appeals").text

    html = browser.get(page).text
    assert "You are right: 9." in html and "Score changed from 8 to 9." in html
    assert "9 / 10" in html


def test_an_answer_without_a_change_keeps_the_grade(browser, platform, llm, live_tool):
    page, submission = graded(browser, platform, llm, live_tool)
    staff = teacher(browser, platform, live_tool)
    act(browser, staff, submission, "override", score="7", feedback="Cite more.")
    run_jobs()
    ask(browser, page, submission.id)
    pushes = db.session.query(ScorePush).count()
    (appeal,) = appeals()
    assert appeal.score_before == 7  # the teacher's score, as the student saw it

    assert answer(browser, staff, appeal.id, answer="The grade stands.").status_code == 303
    run_jobs()
    (appeal,) = appeals()
    assert (appeal.status, appeal.score_after) == ("answered", 7)
    grade = latest().grade
    assert (grade.override_score, grade.override_feedback) == (7, "Cite more.")
    assert db.session.query(ScorePush).count() == pushes  # nothing new for the gradebook
    assert platform.grade_for("2")["scoreGiven"] == 7
    assert len(audit("override")) == 1 and len(audit("appeal_answer")) == 1
    html = browser.get(page).text
    assert "The grade stands." in html and "The score stays as it was." in html


def test_new_feedback_alone_keeps_the_score(browser, platform, llm, live_tool):
    page, submission = graded(browser, platform, llm, live_tool)
    ask(browser, page, submission.id)
    staff = teacher(browser, platform, live_tool)
    (appeal,) = appeals()
    answer(browser, staff, appeal.id, answer="See the new feedback.", feedback="Now **fairer**.")
    run_jobs()
    grade = latest().grade
    assert grade.effective_score == 8 and grade.override_feedback == "Now **fairer**."
    sent = platform.scores[-1]
    assert (sent["comment"], sent["scoreGiven"]) == ("Now fairer.", 8)


def test_a_refused_answer_keeps_what_the_teacher_typed(browser, platform, llm, live_tool):
    page, submission = graded(browser, platform, llm, live_tool)
    ask(browser, page, submission.id)
    staff = teacher(browser, platform, live_tool)
    (appeal,) = appeals()
    bad = answer(browser, staff, appeal.id, answer="Typed <kept>", score="11")
    assert bad.status_code == 400 and "The score must be between 0 and 10" in bad.text
    assert "Typed &lt;kept&gt;</textarea>" in bad.text
    empty = answer(browser, staff, appeal.id, answer="  ", score="9")
    assert empty.status_code == 400 and "Write an answer for the student" in empty.text
    assert appeals()[0].status == "open" and latest().grade.override_score is None
    assert audit("appeal_answer") == [] and audit("override") == []


def test_a_request_is_refused_past_the_window(browser, platform, llm, live_tool):
    page, submission = graded(browser, platform, llm, live_tool)
    configure(appeal_days=3)
    assert "Requests close on" in browser.get(page).text
    submission.grade.released_at = datetime.now(UTC) - timedelta(days=3, minutes=1)
    db.session.commit()
    html = browser.get(page).text
    assert "The time to ask for a regrade ended on" in html and 'name="reason"' not in html
    refused = ask(browser, page, submission.id)
    assert refused.status_code == 403 and "ended on" in refused.text
    configure(appeal_days=None)  # no deadline
    assert ask(browser, page, submission.id).status_code == 303


def test_requests_stop_at_the_limit_and_a_withdrawn_one_counts(browser, platform, llm, live_tool):
    page, submission = graded(browser, platform, llm, live_tool)
    configure(appeal_limit=2)
    assert "You can make 2 more requests" in browser.get(page).text
    ask(browser, page, submission.id)
    (first,) = appeals()
    twice = ask(browser, page, submission.id)
    assert twice.status_code == 403 and "waiting for your teacher" in twice.text
    assert browser.post(f"{page}appeals/{first.id}/withdraw").status_code == 303
    assert appeals()[0].status == "withdrawn" and len(audit("appeal_withdraw")) == 1
    again = browser.post(f"{page}appeals/{first.id}/withdraw")
    assert again.status_code == 403 and "Only a request still waiting" in again.text

    assert ask(browser, page, submission.id).status_code == 303
    staff = teacher(browser, platform, live_tool)
    answer(browser, staff, appeals()[1].id, answer="No change.")
    refused = ask(browser, page, submission.id)
    assert refused.status_code == 403
    assert "You have made all 2 regrade requests this activity allows." in refused.text
    assert len(appeals()) == 2


def test_two_requests_at_once_leave_one_open(browser, platform, llm, live_tool, monkeypatch):
    page, submission = graded(browser, platform, llm, live_tool)
    configure(appeal_limit=3)
    assert ask(browser, page, submission.id).status_code == 303
    # The second read the submission's requests before the first was stored: only the
    # database can still refuse it.
    monkeypatch.setattr(appeals_module, "submission_appeals", lambda _submission: [])
    second = ask(browser, page, submission.id, "Asked twice at once.")
    assert second.status_code == 403 and "waiting for your teacher" in second.text
    assert [a.reason for a in appeals()] == ["I cited the sources you asked for."]
    assert len(audit("appeal")) == 1


def test_appeals_switched_off_show_no_form_and_refuse_a_post(browser, platform, llm, live_tool):
    page, submission = graded(browser, platform, llm, live_tool)
    configure(appeal_limit=0)
    html = browser.get(page).text
    assert "Regrade requests" not in html and 'name="reason"' not in html
    refused = ask(browser, page, submission.id)
    assert refused.status_code == 403 and "takes no regrade requests" in refused.text
    assert appeals() == []


def test_an_unreleased_grade_cannot_be_appealed(browser, platform, llm, live_tool):
    page, submission = graded(browser, platform, llm, live_tool, policy="hold_all")
    assert 'name="reason"' not in browser.get(page).text
    refused = ask(browser, page, submission.id)
    assert refused.status_code == 403 and "once your grade is released" in refused.text
    assert appeals() == [] and audit("appeal") == []


@pytest.mark.parametrize(
    ("reason", "message"),
    [("   ", "Please say why"), ("x" * 2001, "at most 2000 characters")],
)
def test_a_reason_is_required_and_limited(browser, platform, llm, live_tool, reason, message):
    page, submission = graded(browser, platform, llm, live_tool)
    refused = ask(browser, page, submission.id, reason)
    assert refused.status_code == 400 and message in refused.text
    assert 'aria-invalid="true"' in refused.text
    if reason.strip():
        assert reason in refused.text  # what the student typed is not lost
    assert appeals() == []


def test_nobody_reaches_another_ones_request(browser, platform, llm, live_tool):
    _, other = graded(browser, platform, llm, live_tool, user="4")
    page, mine = graded(browser, platform, llm, live_tool, user="2")
    assert ask(browser, page, other.id).status_code == 404  # someone else's submission
    assert ask(browser, page, 99_999).status_code == 404
    ask(browser, page, mine.id)
    (appeal,) = appeals()

    other_page = open_activity(browser, platform, live_tool, user="4")
    assert browser.post(f"{other_page}appeals/{appeal.id}/withdraw").status_code == 404
    assert browser.get(other_page + "appeals").status_code == 403  # the queue is the teacher's
    assert answer(browser, other_page, appeal.id, answer="Mine now").status_code == 403

    staff = teacher(browser, platform, live_tool)
    assert ask(browser, staff, mine.id).status_code == 403  # teachers do not ask
    elsewhere = open_activity(
        browser, platform, live_tool, user="3", roles=TEACHER, resource_link_id="rl-other"
    )
    assert answer(browser, elsewhere, appeal.id, answer="Not yours").status_code == 404
    assert "No regrade request is waiting" in browser.get(elsewhere + "appeals").text
    assert appeals()[0].status == "open"


def test_the_settings_form_sets_the_limits(browser, platform, llm, live_tool):
    staff = teacher(browser, platform, live_tool)
    controls = Inputs(browser.get(staff + "settings").text).controls
    assert (controls["appeal_limit"]["value"], controls["appeal_days"]["value"]) == ("1", "14")
    for field, value, message in (
        ("appeal_limit", "11", "from 0 to 10"),
        ("appeal_limit", "", "Enter a number"),
        ("appeal_days", "0", "above 0 and at most 365"),
        ("appeal_days", "2.5", "whole number"),
    ):
        refused = browser.post(staff + "settings", data=valid_form(**{field: value}))
        assert refused.status_code == 400 and f'id="{field}-error"' in refused.text
        assert message in refused.text.split(f'id="{field}-error">', 1)[1].split("</p>", 1)[0]
    saved = browser.post(staff + "settings", data=valid_form(appeal_limit="0", appeal_days=""))
    assert saved.status_code == 303
    activity = db.session.query(Activity).one()
    db.session.refresh(activity)
    assert (activity.appeal_limit, activity.appeal_days) == (0, None)
    (event,) = audit("settings")
    assert event.details["after"]["appeal_limit"] == 0
    assert event.details["after"]["appeal_days"] is None
    history = browser.get(staff + "settings").text
    assert "Regrade requests per submission" in history and "Days to ask for a regrade" in history
