"""Regular expressions cannot stall a worker (issue item 3).

Teachers (setup form) and API clients (evaluation settings) write the patterns of
``criteria_tree`` regex tests; students write the text they run on. Patterns that made Python's
backtracking engine run for minutes on a few bytes now grade in milliseconds on 100 KB; patterns
the linear-time engine cannot run are refused where they are typed, naming the pattern and the
feature, and nothing is stored; a pattern stored before that rule stops its grading with the
same message instead of being run, skipped or passed. The project's own patterns that read
students' texts, model replies and LMS headers stay linear on the long runs that made five of
them quadratic.

Gradings that could stall run in a forked process the test waits for at most ``BOUND`` seconds,
so a regression fails the test instead of hanging the suite.
"""

from __future__ import annotations

import json
import multiprocessing
import traceback
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from app import safe_regex
from app.extensions import db
from app.grading import runner, safety
from app.grading.base import Outcome
from app.judge.languages import java_main_class
from app.llm.jsonreply import parse_json_reply
from app.llm.session import LLMSession
from app.lti.nrps import next_link
from app.models import Activity, Evaluation
from tests.api.conftest import Tenant, make_tenant, submit
from tests.conftest import run_jobs
from tests.fakes.platform import TEACHER
from tests.test_core_loop import latest_submission, open_activity, status, upload
from tests.test_deep_linking import post_form, start_setup, valid_form

#: Seconds a grading may take before it counts as stalled: generous for a loaded CI machine;
#: Python's engine took 35 s to over a minute on 30 bytes and never finished on 100 KB.
BOUND = 5.0
BIG = 100_000


def within(seconds: float, work: Callable[[], Any]) -> Any:
    """``work()``'s result, computed in a forked process that is killed after ``seconds``."""
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)

    def child_main() -> None:
        try:
            send.send((True, work()))
        except Exception:
            send.send((False, traceback.format_exc()))

    child = context.Process(target=child_main, daemon=True)
    child.start()
    try:
        assert receive.poll(seconds), f"still running after {seconds} s: the work stalls"
        ok, value = receive.recv()
    finally:
        child.kill()
        child.join()
    assert ok, value
    return value


@pytest.fixture
def tenant(live_tool) -> Iterator[Tenant]:
    """An organization with an API token, and an HTTP client that uses it."""
    made = make_tenant(live_tool, "school-a")
    yield made
    made.client.close()


def tree_of(*tests: dict) -> dict:
    return {"base": {"children": [{"name": f"t{i}", "test": t} for i, t in enumerate(tests)]}}


def regex(pattern: str, **options: Any) -> dict:
    return {"kind": "regex", "pattern": pattern, **options}


def grade(tree: dict, text: str) -> tuple[str, float | None, list[tuple[str, str]]]:
    """The worker's grading path (runner: settings validated, text cleaned and masked, strategy
    run) without a model; the outcome, score and each test's verdict and reason."""
    job = runner.Job.for_text(
        plugin="criteria_tree",
        text=text,
        filename="essay.txt",
        kind="text",
        instructions="Write.",
        max_score=10,
        params={"tree": tree, "max_chars": 2 * BIG},
    )
    result = runner.grade(job, LLMSession(None), lambda *_: None)
    return result.outcome.value, result.score, [(c.verdict, c.reason) for c in result.criteria]


PATHOLOGICAL = [  # (pattern, a run it backtracks on, an ending that stops it, found then?)
    (r"(a|a)+$", "a", "!", False),
    (r"a*a*a*a*a*$", "a", "!", True),  # the empty match at the very end
    (r"(a+)+$", "a", "!", False),
    (r"(x+x+)+y", "x", "", False),
]
FOUND = ("graded", 10, [("pass", "The pattern was found.")])
NOT_FOUND = ("graded", 0, [("fail", "The pattern was not found.")])


@pytest.mark.parametrize("size", [30, BIG], ids=["30-bytes", "100-KB"])
@pytest.mark.parametrize(("pattern", "run", "ending", "found"), PATHOLOGICAL)
def test_catastrophic_patterns_grade_quickly_with_the_right_verdict(
    pattern, run, ending, found, size
):
    hostile = run * (size - len(ending)) + ending
    result = within(BOUND, lambda: grade(tree_of(regex(pattern)), hostile))
    assert result == (FOUND if found else NOT_FOUND)
    if pattern.endswith("$"):  # the run alone matches
        assert within(BOUND, lambda: grade(tree_of(regex(pattern)), run * size)) == FOUND


def test_counting_matches_that_each_read_to_the_end_stops_when_decided():
    """``[^b]*c|a`` finds each ``a`` only after reading to the end of the text: counting all
    100,000 took 6 s (8 s with RE2), a hundred times that on 1 MB; counting stops one past the
    maximum."""
    test = regex("[^b]*c|a", max_count=10)
    outcome, score, verdicts = within(BOUND, lambda: grade(tree_of(test), "a" * BIG))
    assert (outcome, score) == ("graded", 0)
    assert verdicts == [
        ("fail", "Found more than 10 matches of the pattern (between 0 and 10 expected).")
    ]


def test_patterns_that_run_out_of_time_send_the_submission_to_a_teacher(monkeypatch):
    """All regexes of a grading share one time budget; a test left without an answer has no
    score, and the grading waits for a teacher instead of guessing."""
    monkeypatch.setattr(safe_regex, "SCAN_SECONDS", 0.0)
    tree = tree_of(regex("a"), {"kind": "word_count", "min": 1})
    outcome, score, verdicts = grade(tree, "a text")
    assert (outcome, score) == (Outcome.NEEDS_REVIEW.value, None)
    assert verdicts[0] == (
        "error",
        "The pattern could not be checked in the time allowed; a teacher will review it.",
    )
    assert verdicts[1][0] == "pass"


def test_long_whole_word_phrases_do_not_stall_on_long_texts():
    """Python's ``(?<!\\w)phrase(?!\\w)`` tried the whole phrase at every word: 40 phrases of
    1,000 characters on 1 MB took 25 s."""
    phrases = [("a " * 499 + f"b{i}")[:1000] for i in range(40)]
    test = {"kind": "contains", "phrases": phrases, "mode": "any", "whole_words": True}
    outcome, score, verdicts = within(BOUND, lambda: grade(tree_of(test), "a " * 500_000))
    assert (outcome, score, verdicts[0][0]) == ("graded", 0, "fail")


UNSUPPORTED = [
    (r"(\w+) \1", "a backreference \\1"),
    (r"essay(?=\.)", "a lookahead (?=...)"),
    (r"(?<!not )good", "a negative lookbehind (?<!...)"),
    (r"(\w+)++$", "a possessive quantifier ++"),
]


@pytest.mark.parametrize(("pattern", "feature"), UNSUPPORTED)
def test_the_setup_form_refuses_a_pattern_the_safe_engine_cannot_run(
    browser, platform, live_tool, pattern, feature
):
    page = start_setup(browser, platform, live_tool)
    tree = tree_of(regex("intro"), regex(pattern))
    form = valid_form(plugin="criteria_tree", **{"p.criteria_tree.tree": json.dumps(tree)})
    response = post_form(browser, page, form)
    assert response.status_code == 400
    error = response.text.split('id="p-criteria_tree-tree-error">', 1)[1].split("</p>", 1)[0]
    error = error.replace("&#39;", "'").replace("&lt;", "<").replace("&gt;", ">")
    assert repr(pattern) in error and feature in error
    db.session.expire_all()
    assert db.session.query(Activity).one().plugin_name != "criteria_tree"  # nothing stored
    assert platform.deep_linking.answers == []


@pytest.mark.parametrize(("pattern", "feature"), UNSUPPORTED)
def test_the_api_refuses_a_pattern_the_safe_engine_cannot_run(tenant, pattern, feature):
    params = {"tree": tree_of(regex(pattern))}
    response = submit(tenant.client, plugin_name="criteria_tree", plugin_params=params)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["message"].startswith("plugin_params:")
    assert repr(pattern) in error["message"] and feature in error["message"]
    assert db.session.query(Evaluation).count() == 0


def test_an_api_evaluation_with_patterns_the_old_engine_refused_grades_100_kb(tenant):
    """Nested repetitions were refused because Python could not run them safely; RE2 can."""
    params = {"tree": tree_of(regex(r"(a+)+$"), regex(r"(x+x+)+y")), "max_chars": 2 * BIG}
    text = ("a" * (BIG - 1) + "!").encode()
    response = submit(
        tenant.client, "essay.txt", text, plugin_name="criteria_tree", plugin_params=params
    )
    assert response.status_code == 202, response.text
    code = response.json()["job_code"]
    run_jobs()
    result = tenant.client.get(f"/evaluations/{code}/result").json()
    assert result["status"] == "completed" and result["result"]["score"] == 0
    assert [c["verdict"] for c in result["result"]["criteria"]] == ["fail", "fail"]


LEGACY = r"(\w+) \1"  # a repeated word: fine for Python's engine, refused by RE2


def test_a_stored_activity_pattern_the_engine_refuses_stops_grading_with_the_reason(
    browser, platform, live_tool
):
    """Settings saved before RE2: the grading fails with the message the form would show
    (never run by another engine, skipped or passed), the LMS gets no score, and once the
    teacher rewrites the pattern a retry grades the submission."""
    page = open_activity(browser, platform, live_tool)
    activity = db.session.query(Activity).one()
    activity.plugin_name = "criteria_tree"
    activity.plugin_params = {"tree": tree_of(regex(LEGACY))}
    db.session.commit()

    upload(browser, page, "essay.txt", b"the the essay")
    run_jobs()
    state = status(browser, page)
    assert state["status"] == "failed" and state["score"] is None
    assert "grading settings need fixing" in state["error"]
    assert repr(LEGACY) in state["error"] and "a backreference \\1" in state["error"]
    assert all("scoreGiven" not in score for score in platform.scores)

    teacher = open_activity(browser, platform, live_tool, user="3", roles=TEACHER)
    assert browser.get(teacher + "settings").status_code == 200  # the teacher can open it
    fixed = tree_of(regex(r"\b(the) the\b"))
    form = valid_form(plugin="criteria_tree", **{"p.criteria_tree.tree": json.dumps(fixed)})
    assert browser.post(teacher + "settings", data=form).status_code == 303
    retried = browser.post(f"{teacher}submissions/{latest_submission().id}/retry")
    assert retried.status_code == 303
    run_jobs()
    assert status(browser, page)["status"] == "completed"


def test_a_stored_api_evaluation_pattern_the_engine_refuses_fails_with_the_reason(tenant):
    params = {"tree": tree_of(regex("essay"))}
    code = submit(tenant.client, plugin_name="criteria_tree", plugin_params=params).json()
    evaluation = db.session.query(Evaluation).one()
    evaluation.plugin_params = {"tree": tree_of(regex(LEGACY))}  # as stored before RE2
    db.session.commit()
    run_jobs()
    state = tenant.client.get(f"/evaluations/{code['job_code']}/status").json()
    assert state["status"] == "failed"
    assert "grading settings need fixing" in state["error_message"]
    assert repr(LEGACY) in state["error_message"]
    assert "a backreference \\1" in state["error_message"]


def json_or_none(reply: str) -> object:
    try:
        return parse_json_reply(reply)
    except ValueError:
        return None


HOSTILE_TEXTS = [  # the project's own patterns on runs that made them quadratic (minutes)
    pytest.param(lambda: safety.inspect("### system" + "\xa0" * BIG + "```"), id="control-line"),
    pytest.param(
        lambda: safety.mask_pii("student id" + " " * BIG + "!", kind="text"), id="labelled-id"
    ),
    pytest.param(lambda: safety.mask_pii("dni" + "\t" * BIG + "1", kind="text"), id="dni"),
    pytest.param(  # a student's Java program
        lambda: java_main_class({"Main.java": "class A { static void main(" + "\n" * BIG}),
        id="java-package",
    ),
    pytest.param(lambda: json_or_none("```" + "\n" * BIG + "!"), id="model-reply-fence"),
    pytest.param(lambda: next_link("<" * BIG), id="lms-link-header"),
]


@pytest.mark.parametrize("work", HOSTILE_TEXTS)
def test_the_projects_own_patterns_stay_linear_on_long_runs(work):
    within(BOUND, work)
