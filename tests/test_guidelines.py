"""The teacher's guidelines for the grader: set in the activity's settings, audited, sent to
the model with the instructions by every strategy, and never shown to students."""

from __future__ import annotations

import pytest

from app.extensions import db
from app.grading.base import Assignment
from app.grading.prompts import GUIDELINES_HEADING, with_guidelines
from app.models import Activity
from tests.test_deep_linking import Inputs, valid_form
from tests.test_review import audit, graded, teacher

GUIDELINES = "Forgive spelling; a missing Calvin cycle costs two points."


def test_guidelines_reach_the_model_and_never_the_student(browser, platform, llm, live_tool):
    staff = teacher(browser, platform, live_tool)
    assert Inputs(browser.get(staff + "settings").text).controls["guidelines"]["tag"] == "textarea"
    saved = browser.post(staff + "settings", data=valid_form(guidelines=GUIDELINES))
    assert saved.status_code == 303
    (event,) = audit("settings")
    assert event.details["after"]["guidelines"] == GUIDELINES
    assert "Guidelines for the grader" in browser.get(staff + "settings").text  # the history

    page, submission = graded(browser, platform, llm, live_tool)
    sent = "\n".join(m["content"] for m in llm.requests[-1]["messages"])
    assert f"{GUIDELINES_HEADING}\n{GUIDELINES}" in sent
    assert GUIDELINES not in browser.get(page).text
    assert GUIDELINES not in browser.get(page + "status").text
    detail = browser.get(f"{staff}submissions/{submission.id}").text
    assert GUIDELINES in detail  # in the exact prompt the teacher can read


def test_guidelines_too_long_are_refused_and_nothing_changes(browser, platform, llm, live_tool):
    staff = teacher(browser, platform, live_tool)
    refused = browser.post(staff + "settings", data=valid_form(guidelines="x" * 50_001))
    assert refused.status_code == 400 and "The guidelines are too long" in refused.text
    activity = db.session.query(Activity).one()
    db.session.refresh(activity)
    assert activity.guidelines == ""


@pytest.mark.parametrize(
    ("instructions", "guidelines", "read"),
    [
        ("Write an essay.", "", "Write an essay."),
        (
            "Write an essay.",
            "  Be strict.\n",
            f"Write an essay.\n\n{GUIDELINES_HEADING}\nBe strict.",
        ),
        ("", "Be strict.", f"{GUIDELINES_HEADING}\nBe strict."),
    ],
)
def test_the_grader_reads_the_guidelines_after_the_instructions(instructions, guidelines, read):
    assignment = Assignment(max_score=10, instructions=instructions, guidelines=guidelines)
    assert with_guidelines(assignment) == read
