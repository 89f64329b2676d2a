"""The course roster from Names and Role Provisioning: paging, caching, and falling back to
the students known from submissions when the LMS does not offer it or it fails."""

from __future__ import annotations

import pytest
from redis import Redis

from app.lti.nrps import next_link
from tests.conftest import run_jobs
from tests.fakes.platform import NRPS_CLAIM, TEACHER
from tests.test_core_loop import GOOD_REPLY, open_activity, upload
from tests.test_review import essay

FALLBACK = "Only students who have submitted are listed."


def memberships_requests(platform) -> list[str]:
    return [entry["path"] for entry in platform.request_log if entry["kind"] == "memberships"]


@pytest.fixture
def course(browser, platform, llm, live_tool):
    """Five enrolled students who never opened the activity, and student 2 who submitted."""
    for n in range(10, 15):
        platform.enrol(str(n), given_name="Never", family_name=f"Opened {n}")
    llm.set_default(GOOD_REPLY)
    page = open_activity(browser, platform, live_tool)
    upload(browser, page, "essay.txt", essay("2"))
    run_jobs()
    return page


def test_roster_lists_every_enrolled_student_across_pages(
    app, browser, platform, live_tool, course
):
    app.config["EVALUAITOR_NRPS_PAGE_SIZE"] = 2
    staff = open_activity(browser, platform, live_tool, user="3", roles=TEACHER)
    html = browser.get(staff).text
    for n in range(10, 15):
        assert f"Never Opened {n}</th>" in html
    assert "Test User 2</th>" in html
    assert "Test User 3</th>" not in html  # the teacher is a member, not a student
    assert FALLBACK not in html
    assert "6 of 6 students" in html
    # Seven members (five, student 2, the teacher) two at a time: four pages along rel=next.
    pages = memberships_requests(platform)
    assert len(pages) == 4 and all("limit=2" in path for path in pages)
    assert [p.rsplit("from=", 1)[-1] for p in pages[1:]] == ["2", "4", "6"]

    browser.get(staff + "?show=missing")  # cached: the LMS is not asked again
    assert len(memberships_requests(platform)) == 4
    assert "No submission" in browser.get(staff + "?show=missing").text


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ({"status": 500}, "HTTP 500"),
        ({"status": 403, "body": {"status": 403, "reason": "no"}}, "HTTP 403"),
        ({"status": None, "delay": 3}, "did not send the course's member list in time"),
        ({"status": 0, "delay": 0}, "could not be reached"),
        ({"status": 200, "body": {"id": "x", "members": "everyone"}}, "could not be read"),
        ({"status": 200, "body": "<html>Moodle error</html>"}, "could not be read"),
        ({"status": 200, "body": '{"members": ' + "[" * 50_000}, "could not be read"),
    ],
    ids=["500", "403", "timeout", "hang-up", "malformed", "not-json", "nested-too-deep"],
)
def test_roster_failure_falls_back_to_students_with_submissions(
    app, browser, platform, live_tool, course, fault, reason
):
    if fault.get("delay"):
        # Short, but not so short that a busy machine misses the token request before it.
        app.config["EVALUAITOR_NRPS_TIMEOUT"] = 1.0
    platform.fail_next("memberships", **fault)
    staff = open_activity(browser, platform, live_tool, user="3", roles=TEACHER)
    response = browser.get(staff)
    assert response.status_code == 200
    html = response.text.replace("&#39;", "'")
    assert reason in html and FALLBACK in html
    assert "Test User 2</th>" in html and "Never Opened" not in html
    # The failure is remembered briefly: the next view does not wait on the LMS again.
    asked = len(memberships_requests(platform))
    assert FALLBACK in browser.get(staff).text
    assert len(memberships_requests(platform)) == asked


def test_teacher_page_works_while_redis_is_down(app, browser, platform, live_tool, course):
    staff = open_activity(browser, platform, live_tool, user="3", roles=TEACHER)
    healthy = app.extensions["evaluaitor.redis"]
    app.extensions["evaluaitor.redis"] = Redis(port=9, socket_connect_timeout=0.2)
    try:
        response = browser.get(staff)
    finally:
        app.extensions["evaluaitor.redis"] = healthy
    assert response.status_code == 200
    assert "unavailable right now" in response.text and "Test User 2</th>" in response.text


def test_platform_without_the_service_is_explained(browser, platform, llm, live_tool):
    llm.set_default(GOOD_REPLY)
    page = open_activity(browser, platform, live_tool, drop_claims=[NRPS_CLAIM])
    upload(browser, page, "essay.txt", essay("2"))
    run_jobs()
    staff = open_activity(
        browser, platform, live_tool, user="3", roles=TEACHER, drop_claims=[NRPS_CLAIM]
    )
    html = browser.get(staff).text
    assert "does not share the course" in html and "Test User 2</th>" in html
    assert memberships_requests(platform) == []


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ('<https://lms.example/m?limit=2&from=2>; rel="next"', "https://lms.example/m?limit=2&from=2"),
        (
            "<https://m.example/x?limit=2&amp;from=0>; rel=“first”, "
            "<https://m.example/x?limit=2&amp;from=4>; rel=“next”",
            "https://m.example/x?limit=2&from=4",
        ),
        ('<https://a.example/1>; rel="prev", <https://a.example/3>; rel="next last"', "https://a.example/3"),
        ('<https://a.example/1>; rel="last"', None),
        ("", None),
        ("garbage, <>; next", None),
    ],
    ids=["rfc", "moodle-quotes", "several-rels", "no-next", "empty", "garbage"],
)  # fmt: skip
def test_next_link_is_read_from_any_link_header(header, expected):
    assert next_link(header) == expected
