"""Who may see and do what: each page token is bound to one platform, activity, user and role."""

from __future__ import annotations

import csv
import io

import pytest

from app.extensions import db
from app.models import AuditEvent, Grade, ScorePush, Submission
from tests.conftest import run_jobs
from tests.documents import ESSAY
from tests.fakes.platform import TEACHER
from tests.test_core_loop import open_activity, status, upload


@pytest.fixture
def graded(browser, platform, llm, live_tool):
    """Student 2 has a graded submission (with pushes) in activity rl-1 of course-1."""
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


#: Every teacher route that names a submission or push of the activity: (method, path, form).
ITEM_ROUTES = {
    "detail": ("GET", "submissions/{s}", None),
    "download": ("GET", "submissions/{s}/file", None),
    "override": ("POST", "submissions/{s}/override", {"score": "1", "feedback": "x"}),
    "release": ("POST", "submissions/{s}/release", {}),
    "regrade": ("POST", "submissions/{s}/regrade", {"plugin": "rubric_eval"}),
    "reopen": ("POST", "submissions/{s}/reopen", {}),
    "example": ("POST", "submissions/{s}/example", {"use": "pinned"}),
    "retry-grading": ("POST", "submissions/{s}/retry", {}),
    "retry-push": ("POST", "pushes/{p}/retry", {}),
}
#: Teacher routes about the whole activity.
ACTIVITY_ROUTES = {
    "stats": ("GET", "stats", None),
    "csv": ("GET", "gradebook.csv", None),
    "release-all": ("POST", "release-all", {}),
    "regrade-estimate": ("GET", "regrade?scope=all", None),
    "regrade-chosen": ("POST", "regrade", {"scope": "all"}),
}


def call(browser, page: str, route: tuple, ids: dict):
    method, path, form = route
    url = page + path.format(s=ids["submission"].id, p=ids["push"].id)
    return browser.request(method, url, data=form)


def unchanged(ids: dict) -> None:
    """Nothing the refused request asked for happened."""
    db.session.expire_all()
    grade = db.session.query(Grade).one()
    assert grade.override_score is None and grade.score == 8 and grade.example == "auto"
    assert db.session.query(AuditEvent).count() == 0
    assert db.session.get(Submission, ids["submission"].id).reopened_at is None


@pytest.mark.parametrize("route", [*ITEM_ROUTES.values(), *ACTIVITY_ROUTES.values()],
                         ids=[*ITEM_ROUTES, *ACTIVITY_ROUTES])  # fmt: skip
def test_students_cannot_use_teacher_pages_or_actions(browser, graded, route):
    response = call(browser, graded["page"], route, graded)
    assert response.status_code == 403
    assert "essay.txt" not in response.text and "Photosynthesis" not in response.text
    unchanged(graded)


@pytest.mark.parametrize("route", list(ITEM_ROUTES.values()), ids=list(ITEM_ROUTES))
@pytest.mark.parametrize("where", ["same-course", "other-course"])
def test_teachers_of_another_activity_get_not_found(
    browser, platform, live_tool, graded, route, where
):
    other = open_activity(
        browser,
        platform,
        live_tool,
        user="3",
        roles=TEACHER,
        resource_link_id="rl-other",
        context_id="course-1" if where == "same-course" else "course-2",
    )
    response = call(browser, other, route, graded)
    assert response.status_code == 404
    assert "essay.txt" not in response.text and "Photosynthesis" not in response.text
    unchanged(graded)


def test_another_course_teachers_activity_pages_show_none_of_this_activity(
    browser, platform, live_tool, graded
):
    other = open_activity(
        browser, platform, live_tool, user="3", roles=TEACHER,
        resource_link_id="rl-2", context_id="course-2",
    )  # fmt: skip
    assert "No scores yet" in browser.get(other + "stats").text
    exported = csv.DictReader(io.StringIO(browser.get(other + "gradebook.csv").text))
    assert all(row["status"] == "none" and row["ai_score"] == "" for row in exported)
    listing = browser.get(other).text
    assert "essay.txt" not in listing and "8 / 10" not in listing
    assert browser.post(other + "release-all").status_code == 303
    unchanged(graded)


def test_teacher_page_lists_only_this_activity(browser, platform, live_tool, graded):
    mine = open_activity(browser, platform, live_tool, user="3", roles=TEACHER)
    detail = f"submissions/{graded['submission'].id}"
    assert detail in browser.get(mine).text
    other = open_activity(
        browser, platform, live_tool, user="3", roles=TEACHER, resource_link_id="rl-other"
    )
    assert detail not in browser.get(other).text


def test_a_student_sees_only_their_own_submission(browser, platform, live_tool, graded):
    other_student = open_activity(browser, platform, live_tool, user="5")
    assert status(browser, other_student) is None
    assert "essay.txt" not in browser.get(other_student).text
    response = browser.get(f"{other_student}submissions/{graded['submission'].id}/file")
    assert response.status_code == 403


def test_teachers_do_not_submit(browser, platform, live_tool):
    page = open_activity(browser, platform, live_tool, user="3", roles=TEACHER)
    assert upload(browser, page, "essay.txt", ESSAY.encode()).status_code == 403


def test_expired_page_tokens_are_refused_everywhere(app, browser, platform, live_tool, graded):
    teacher = open_activity(browser, platform, live_tool, user="3", roles=TEACHER)
    app.config["EVALUAITOR_LAUNCH_TTL"] = -1
    for path in ("", "status"):
        assert browser.get(graded["page"] + path).status_code == 401
    assert upload(browser, graded["page"], "essay.txt", ESSAY.encode()).status_code == 401
    for route in [*ITEM_ROUTES.values(), *ACTIVITY_ROUTES.values()]:
        assert call(browser, teacher, route, graded).status_code == 401
    unchanged(graded)
