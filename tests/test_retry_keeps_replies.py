"""A grading with several model calls, one of which keeps failing, waits; tried again once the
server recovers, it asks only what it has not received. Through the whole loop: the launch,
the upload, the worker, the schedule of retries, and a teacher's regrade."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from app.evaluation import sweeper
from app.extensions import db
from app.models import GradingJob, JobStatus
from tests.conftest import run_jobs
from tests.documents import ESSAY
from tests.fakes.llm_server import FakeLLM, error
from tests.test_core_loop import open_activity, status, upload
from tests.test_review import act, latest, teacher
from tests.test_strategies_loop import configure

CATEGORIES = ["Syntax & Compilation", "Logic & Correctness", "Output & Functionality",
              "Style & Documentation"]  # fmt: skip
#: Each category's points with a passage of ESSAY (app.grading.grounding).
EVIDENCE = dict.fromkeys(CATEGORIES, "converts light energy into chemical energy")
REPLY = json.dumps(
    {"categories": dict.fromkeys(CATEGORIES, 20), "evidence": EVIDENCE, "issues": ["No tests."]}
)


def _failing(body: dict) -> bool:
    """e's reverse run (the reverse framing asks to start from full marks)."""
    return body["model"] == "e" and "Start from full marks" in body["messages"][1]["content"]


class Graders:
    """Graders g and e; while ``broken``, e's reverse run gets HTTP 500 every time."""

    def __init__(self) -> None:
        self.broken = False

    def __call__(self, body: dict) -> object:
        if self.broken and _failing(body):
            return error(500, "the model crashed")
        return REPLY


@pytest.fixture
def graders(app, llm: FakeLLM) -> Graders:
    app.config["EVALUAITOR_LLM_RETRY_SCHEDULE"] = [0, 0]
    answer = Graders()
    llm.set_default(answer)
    return answer


def _retry_when_due() -> None:
    """The sweeper queues a waiting job whose retry is due, and a worker takes it."""
    job = db.session.query(GradingJob).one()
    assert job.status == JobStatus.WAITING and job.retry_at is not None
    assert sweeper.sweep(timedelta(seconds=30)) == 1
    run_jobs()


def _provenance() -> dict:
    db.session.expire_all()
    return latest().grade.result.provenance


def _ensemble(browser, platform, live_tool) -> str:
    page = open_activity(browser, platform, live_tool)
    configure(plugin_name="ensemble", plugin_params={"models": ["g", "e"], "reverse": True})
    return page


def test_a_retry_asks_only_the_call_that_failed(browser, platform, llm, live_tool, graders):
    page = _ensemble(browser, platform, live_tool)
    graders.broken = True
    upload(browser, page, "essay.txt", ESSAY.encode())
    run_jobs()
    assert status(browser, page)["status"] == "waiting"
    asked = len(llm.requests)  # three runs answered, the fourth tried and failed

    graders.broken = False
    _retry_when_due()

    assert status(browser, page)["status"] == "completed"
    assert len(llm.requests) == asked + 1
    assert _failing(llm.requests[-1])
    provenance = _provenance()
    assert (provenance["llm_calls"], provenance["cache_hits"]) == (1, 3)


def test_a_regrade_asks_afresh_once_and_its_retry_keeps_what_it_received(
    browser, platform, llm, live_tool, graders
):
    page = _ensemble(browser, platform, live_tool)
    upload(browser, page, "essay.txt", ESSAY.encode())
    run_jobs()
    assert status(browser, page)["status"] == "completed" and len(llm.requests) == 4

    staff = teacher(browser, platform, live_tool)
    graders.broken = True
    asked_for = datetime.now(UTC)
    assert act(browser, staff, latest(), "regrade").status_code == 303
    run_jobs()
    job = db.session.query(GradingJob).one()
    assert job.status == JobStatus.WAITING
    assert job.fresh_since is not None and job.fresh_since.replace(tzinfo=UTC) >= asked_for
    answered = [r for r in llm.requests[4:] if not _failing(r)]
    assert len(answered) == 3  # the regrade asked again what the first grading had cached

    graders.broken = False
    before = len(llm.requests)
    _retry_when_due()

    assert status(browser, page)["status"] == "completed"
    assert len(llm.requests) == before + 1  # only the call the regrade had not received
    assert _failing(llm.requests[-1])
    provenance = _provenance()
    assert (provenance["llm_calls"], provenance["cache_hits"]) == (1, 3)
    assert db.session.query(GradingJob).one().fresh_since is not None  # still a regrade
