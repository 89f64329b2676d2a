"""A class graded by real worker processes through a real model server, as a school runs it:
two workers, a server that computes one reply at a time, the LMS's gradebook at the end."""

from __future__ import annotations

from app.extensions import db
from app.models import GradingJob, JobStatus
from tests.realmodel.works import INSTRUCTIONS, RUBRIC, WORKS, Server
from tests.test_core_loop import open_activity, status, upload
from tests.test_reliability import stack  # noqa: F401 (the worker processes' fixture)
from tests.test_strategies_loop import configure


def test_two_workers_grade_a_class_taking_turns_at_the_server(
    app,
    stack,  # noqa: F811 (the fixture imported above)
    browser,
    platform,
    live_tool,
    relay,
    model_server: Server,
) -> None:
    """Each worker grades per criterion (three calls a student); the server never has two of
    them at once, no call times out waiting in its queue, and every student ends graded or
    held for a teacher with a reason, the gradebook saying which."""
    app.config |= {
        "EVALUAITOR_LLM_BASE_URL": relay.url,
        "EVALUAITOR_LLM_MODEL": model_server.model,
        "EVALUAITOR_LLM_TIMEOUT": 120,  # the tests' 2 s is for the fake server
    }
    relay.peak = 0
    pages = {}
    for student in WORKS:
        platform.enrol(student)
        pages[student] = open_activity(browser, platform, live_tool, user=student)
    configure(
        plugin_name="criteria",
        plugin_params={"mode": "per_criterion"},
        rubric=RUBRIC,
        instructions=INSTRUCTIONS,
    )
    stack.start_worker()
    stack.start_worker()
    for student, work in WORKS.items():
        assert upload(browser, pages[student], "essay.txt", work.encode()).status_code == 303

    final = (JobStatus.COMPLETED, JobStatus.NEEDS_REVIEW)
    stack.wait_for(
        "every essay graded or held",
        lambda: all(job.status in final for job in db.session.query(GradingJob)),
        seconds=900,
    )
    assert relay.peak == 1
    assert all(exchange.status == 200 for exchange in relay.exchanges)
    for student, page in pages.items():
        shown = status(browser, page)
        assert shown["status"] in ("completed", "needs_review"), (student, shown)
        if shown["status"] == "completed":
            assert 0 <= shown["score"] <= 10
    for job in db.session.query(GradingJob):
        calls = job.provenance["calls"]
        assert calls and all(call["attempts"] == 1 for call in calls)
        assert job.status == JobStatus.COMPLETED or job.review_reason
