"""Strategies besides rubric_eval through the whole loop: settings → worker → gradebook."""

from __future__ import annotations

import json

from app.extensions import db
from app.models import Activity, Grade
from tests.conftest import run_jobs
from tests.documents import ESSAY
from tests.test_core_loop import open_activity, status, upload

LIGHT = "converts light energy into chemical energy"
CALVIN = "the Calvin cycle fixes carbon dioxide into sugars"

RUBRIC = {
    "title": "Essay",
    "criteria": [
        {"name": "Accuracy", "requirement": "Explains photosynthesis correctly.", "weight": 10},
        {"name": "Detail", "requirement": "Mentions the Calvin cycle.", "weight": 5},
        {"name": "Copying", "requirement": "Copies text without citing it.", "weight": -3},
    ],
}


def configure(**settings) -> None:
    activity = db.session.query(Activity).one()
    for name, value in settings.items():
        setattr(activity, name, value)
    db.session.commit()


def test_criteria_strategy_grades_stores_the_breakdown_and_passes_back(
    browser, platform, llm, live_tool
):
    page = open_activity(browser, platform, live_tool)
    configure(plugin_name="criteria", plugin_params={"mode": "one_shot"}, rubric=RUBRIC)
    llm.reply(
        json.dumps(
            {
                # Passages of the essay: the points they earn count (app.grading.grounding).
                "C1": {"verdict": "MET", "reason": "Correct.", "evidence": LIGHT},
                "C2": {"verdict": "MET", "reason": "Named.", "evidence": CALVIN},
                "C3": {"verdict": "MET", "reason": "Uncited copy.", "evidence": "Chlorophyll"},
            }
        )
    )
    upload(browser, page, "essay.txt", ESSAY.encode())
    run_jobs()
    assert status(browser, page)["status"] == "completed"
    grade = db.session.query(Grade).one()
    assert [c["name"] for c in grade.result.criteria] == ["Accuracy", "Detail", "Copying"]
    assert grade.result.normalized == (15 - 3) / 15
    assert (
        grade.result.provenance["plugin"] == "criteria"
        and grade.result.provenance["llm_calls"] == 1
    )
    assert platform.grade_for("2")["scoreGiven"] == 8  # 0.8 of the line item's 10


def test_tree_without_ai_tests_grades_with_no_model_at_all(app, browser, platform, live_tool):
    app.config["EVALUAITOR_LLM_BASE_URL"] = None
    page = open_activity(browser, platform, live_tool)
    tree = {
        "base": {
            "children": [
                {
                    "name": "mentions chlorophyll",
                    "test": {"kind": "contains", "phrases": ["chlorophyll"]},
                },
                {"name": "long enough", "test": {"kind": "word_count", "min": 500}},
            ]
        }
    }  # fmt: skip
    configure(plugin_name="criteria_tree", plugin_params={"tree": tree})
    upload(browser, page, "essay.txt", ESSAY.encode())
    run_jobs()
    state = status(browser, page)
    assert state["status"] == "completed" and state["score"] == 5


def test_broken_activity_settings_fail_with_a_message_for_the_teacher(
    browser, platform, llm, live_tool
):
    page = open_activity(browser, platform, live_tool)
    configure(plugin_name="criteria", plugin_params={"mode": "telepathy"}, rubric=RUBRIC)
    upload(browser, page, "essay.txt", ESSAY.encode())
    run_jobs()
    state = status(browser, page)
    assert state["status"] == "failed"
    assert "grading settings need fixing" in state["error"] and "mode" in state["error"]
    assert llm.requests == []


def test_tree_file_tests_see_the_submitted_file(app, browser, platform, live_tool):
    app.config["EVALUAITOR_LLM_BASE_URL"] = None
    page = open_activity(browser, platform, live_tool)
    tree = {
        "base": {
            "children": [
                {"name": "a Python file", "test": {"kind": "file_present", "pattern": "*.py"}},
                {"name": "defines main", "test": {"kind": "regex", "pattern": "def main"}},
            ]
        }
    }
    configure(plugin_name="criteria_tree", plugin_params={"tree": tree})
    upload(browser, page, "solution.py", b"def main():\n    print(sum(range(101)))\n")
    run_jobs()
    assert status(browser, page)["score"] == 10


def test_flagged_ensemble_grades_are_held_when_the_activity_says_so(
    browser, platform, llm, live_tool
):
    from pathlib import Path

    java = Path(__file__).parent / "policy" / "java"
    categories = ("Syntax & Compilation", "Logic & Correctness", "Output & Functionality",
                  "Style & Documentation")  # fmt: skip
    quote = "public static void main(String[] args)"  # in both programs
    evidence = dict.fromkeys(categories, quote)
    reply = json.dumps(
        {"categories": dict.fromkeys(categories, 20), "evidence": evidence, "issues": []}
    )
    llm.set_default(reply)
    page = open_activity(browser, platform, live_tool)
    configure(
        plugin_name="ensemble",
        plugin_params={"policy": "sumcalc", "models": ["g", "e"]},
        release_policy="hold_flagged",
    )
    upload(browser, page, "SumCalculator.java", (java / "hardcoded_literal.java").read_bytes())
    run_jobs()
    held = status(browser, page)
    assert held["status"] == "needs_review" and held["score"] is None  # not shown to the student
    assert db.session.query(Grade).one().score == 2.5  # capped at 25% of 10, kept for the teacher
    assert platform.scores[-1]["gradingProgress"] == "PendingManual"

    upload(browser, page, "SumCalculator.java", (java / "correct_for.java").read_bytes())
    run_jobs()
    assert status(browser, page)["status"] == "completed"
    assert platform.grade_for("2")["scoreGiven"] == 8


def test_code_judge_through_the_worker(app, browser, platform, live_tool):
    app.config["EVALUAITOR_LLM_BASE_URL"] = None  # the judge needs no model
    page = open_activity(browser, platform, live_tool)
    tests = [
        {"name": "small", "stdin": "3\n", "expected_stdout": "6", "weight": 1},
        {"name": "hundred", "stdin": "100\n", "expected_stdout": "5050", "weight": 3},
    ]
    configure(plugin_name="code_judge", plugin_params={"tests": tests})
    upload(browser, page, "sum.py", b"n = int(input())\nprint(sum(range(1, n)))\n")  # off by one
    run_jobs()
    assert status(browser, page)["status"] == "completed"
    assert status(browser, page)["score"] == 0
    # Each test's result is shown once: in the feedback's list, the table keeping the scores.
    shown = browser.get(page).text
    assert shown.count("output differs from the expected output") == 2
    assert "Score per criterion" in shown and ">Comment<" not in shown
    upload(browser, page, "sum.py", b"n = int(input())\nprint(sum(range(1, n + 1)))\n")
    run_jobs()
    assert status(browser, page)["score"] == 10
    criteria = db.session.query(Grade).order_by(Grade.id.desc()).first().result.criteria
    assert [c["verdict"] for c in criteria] == ["passed", "passed"]
    assert platform.grade_for("2")["scoreGiven"] == 10


def test_the_table_keeps_the_comments_the_feedback_does_not_give():
    from app.web.views import comments_repeated

    criteria = [
        {"name": "Structure", "reason": "Clear  functions."},
        {"name": "Tests", "reason": ""},
    ]
    assert comments_repeated("- **Structure**: Clear\nfunctions.\n- **Tests**", criteria)
    assert not comments_repeated("Excellent work overall.", criteria)  # the table says them
    assert not comments_repeated("Structure and Tests", [])


def test_a_submission_is_never_sent_to_a_model_server_the_school_forbids(
    browser, platform, llm, live_tool
):
    """The activity was set up before the organization narrowed its list: the worker fails
    the grading, naming the servers allowed, and the configured server receives nothing."""
    from app import tenants
    from app.models import Platform, Submission

    page = open_activity(browser, platform, live_tool)
    organization = db.session.query(Platform).one().organization
    tenants.set_model_base_urls(organization, ["https://llm.school.example/v1"])
    db.session.commit()
    upload(browser, page, "essay.txt", ESSAY.encode())
    run_jobs()
    assert status(browser, page)["status"] == "failed"
    db.session.expire_all()
    job = db.session.query(Submission).one().job
    assert job.error_message.startswith(
        "This organization only allows models at https://llm.school.example:443/v1"
    )
    assert llm.requests == []
