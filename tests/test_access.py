"""Who may see and do what: each page token is bound to one platform, activity, user and role."""

from __future__ import annotations

import pytest

from app.extensions import db
from app.models import ScorePush, Submission
from tests.conftest import run_jobs
from tests.documents import ESSAY
from tests.fakes.platform import TEACHER
from tests.test_core_loop import open_activity, status, upload


@pytest.fixture
def graded(browser, platform, llm, live_tool):
    """Student 2 has a graded submission (with pushes) in activity rl-1."""
    llm.set_default("Final score: 8/10")
    page = open_activity(browser, platform, live_tool)
    upload(browser, page, "essay.txt", ESSAY.encode())
    run_jobs()
    db.session.expire_all()
    return {
        "page": page,
        "submission": db.session.query(Submission).one(),
        "push": db.session.query(ScorePush).first(),
    }


TEACHER_ACTIONS = [
    lambda ids: f"submissions/{ids['submission'].id}/retry",
    lambda ids: f"pushes/{ids['push'].id}/retry",
]


@pytest.mark.parametrize("action", TEACHER_ACTIONS, ids=["retry-grading", "retry-push"])
def test_students_cannot_use_teacher_actions(browser, graded, action):
    response = browser.post(graded["page"] + action(graded))
    assert response.status_code == 403


@pytest.mark.parametrize("action", TEACHER_ACTIONS, ids=["retry-grading", "retry-push"])
def test_teachers_of_another_activity_cannot_reach_these_submissions(
    browser, platform, live_tool, graded, action
):
    other = open_activity(
        browser, platform, live_tool, user="3", roles=TEACHER, resource_link_id="rl-other"
    )
    response = browser.post(other + action(graded))
    assert response.status_code == 404
    assert ("Rubric" not in response.text) and ("essay.txt" not in response.text)


def test_teacher_page_lists_only_this_activity(browser, platform, live_tool, graded):
    mine = open_activity(browser, platform, live_tool, user="3", roles=TEACHER)
    assert "essay.txt" in browser.get(mine).text
    other = open_activity(
        browser, platform, live_tool, user="3", roles=TEACHER, resource_link_id="rl-other"
    )
    assert "essay.txt" not in browser.get(other).text


def test_a_student_sees_only_their_own_submission(browser, platform, live_tool, graded):
    other_student = open_activity(browser, platform, live_tool, user="5")
    assert status(browser, other_student) is None
    assert "essay.txt" not in browser.get(other_student).text


def test_teachers_do_not_submit(browser, platform, live_tool):
    page = open_activity(browser, platform, live_tool, user="3", roles=TEACHER)
    assert upload(browser, page, "essay.txt", ESSAY.encode()).status_code == 403


def test_expired_page_tokens_are_refused_everywhere(app, browser, platform, live_tool, graded):
    app.config["EVALUAITOR_LAUNCH_TTL"] = -1
    for path in ("", "status"):
        assert browser.get(graded["page"] + path).status_code == 401
    assert upload(browser, graded["page"], "essay.txt", ESSAY.encode()).status_code == 401
    assert browser.post(graded["page"] + TEACHER_ACTIONS[0](graded)).status_code == 401
