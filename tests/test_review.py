"""The teacher's review workflow end to end: holding, overriding, releasing, regrading,
reopening, the class list, the detail page, statistics and the CSV export."""

from __future__ import annotations

import csv
import io
import json

import pytest

from app.extensions import db
from app.lms import gradebook
from app.lti.nrps import Roster
from app.models import Activity, AuditEvent, GradingJob, JobStatus, ScorePush, Submission
from tests.conftest import announce_then_grade, run_jobs
from tests.documents import ESSAY
from tests.fakes.platform import TEACHER
from tests.test_core_loop import GOOD_REPLY, open_activity, status, upload
from tests.test_strategies_loop import LIGHT, RUBRIC, configure

CRITERIA_REPLY = json.dumps(
    {
        "C1": {"verdict": "MET", "reason": "Correct.", "evidence": LIGHT},
        "C2": {"verdict": "UNMET", "reason": "No Calvin cycle.", "evidence": ""},
        "C3": {"verdict": "UNMET", "reason": "Own words.", "evidence": ""},
    }
)


def teacher(browser, platform, live_tool, **settings) -> str:
    return open_activity(browser, platform, live_tool, user="3", roles=TEACHER, **settings)


def graded(browser, platform, llm, live_tool, *, policy="auto", reply=GOOD_REPLY, user="2"):
    """A student's page after one graded upload under ``policy``, and their submission."""
    llm.reply(reply)
    page = open_activity(browser, platform, live_tool, user=user)
    configure(release_policy=policy)
    upload(browser, page, "essay.txt", essay(user))
    announce_then_grade()
    db.session.expire_all()
    return page, latest(user)


def essay(user: str) -> bytes:
    """The essay, made unique per student: identical texts would share a cached model reply."""
    return f"{ESSAY}\n\nStudent {user}.".encode()


def latest(sub: str = "2") -> Submission:
    db.session.expire_all()
    return (
        db.session.query(Submission)
        .filter(Submission.user.has(sub=sub))
        .order_by(Submission.attempt.desc())
        .first()
    )


def act(browser, page: str, submission: Submission, action: str, **form):
    return browser.post(f"{page}submissions/{submission.id}/{action}", data=form)


def audit(action: str) -> list[AuditEvent]:
    db.session.expire_all()
    return db.session.query(AuditEvent).filter_by(action=action).order_by(AuditEvent.id).all()


# -- holding and releasing --------------------------------------------------------------


def test_a_held_grade_is_graded_but_hidden_until_released(browser, platform, llm, live_tool):
    page, submission = graded(browser, platform, llm, live_tool, policy="hold_all")
    assert submission.status == JobStatus.COMPLETED
    assert submission.grade.score == 8 and submission.grade.released_at is None

    state = status(browser, page)
    assert state["status"] == "needs_review" and state["held"] and state["score"] is None
    html = browser.get(page).text
    assert "waiting for your teacher's review" in html
    assert "uses the right terms" not in html and "8 / 10" not in html
    assert platform.grade_for("2")["scoreGiven"] is None  # nothing in the LMS gradebook

    staff = teacher(browser, platform, live_tool)
    assert "Held" in browser.get(staff).text
    response = act(browser, staff, submission, "release")
    assert response.status_code == 303
    run_jobs()
    state = status(browser, page)
    assert state["status"] == "completed" and state["score"] == 8 and not state["held"]
    assert "uses the right terms" in browser.get(page).text
    assert platform.grade_for("2")["scoreGiven"] == 8
    (event,) = audit("release")
    assert event.actor.sub == "3"
    assert event.details["before"]["released_at"] is None
    assert event.details["after"]["released_at"] and event.details["after"]["score"] == 8


def test_releasing_twice_changes_nothing(browser, platform, llm, live_tool):
    _, submission = graded(browser, platform, llm, live_tool, policy="hold_all")
    staff = teacher(browser, platform, live_tool)
    act(browser, staff, submission, "release")
    run_jobs()
    pushes = db.session.query(ScorePush).count()
    again = act(browser, staff, submission, "release")
    assert again.status_code == 303 and "done=unchanged" in again.headers["Location"]
    run_jobs()
    assert db.session.query(ScorePush).count() == pushes
    assert len(audit("release")) == 1


def test_release_all_releases_held_scores_of_latest_attempts_only(
    browser, platform, llm, live_tool
):
    graded(browser, platform, llm, live_tool, policy="hold_all", user="2")
    graded(
        browser, platform, llm, live_tool, policy="hold_all", user="4", reply="Final score: 6/10"
    )
    graded(browser, platform, llm, live_tool, policy="hold_all", user="5", reply="No clear mark.")
    assert latest("5").status == JobStatus.NEEDS_REVIEW
    staff = teacher(browser, platform, live_tool)
    assert "Release all 2 held grades" in browser.get(staff).text
    assert browser.post(staff + "release-all").status_code == 303
    run_jobs()
    assert platform.grade_for("2")["scoreGiven"] == 8
    assert platform.grade_for("4")["scoreGiven"] == 6
    assert platform.grade_for("5")["scoreGiven"] is None  # no score: a teacher must grade it
    assert latest("5").grade.released_at is None
    assert len(audit("release")) == 2
    assert "Release all" not in browser.get(staff).text


# -- overrides --------------------------------------------------------------------------


def test_override_before_release_is_what_the_student_and_gradebook_get(
    browser, platform, llm, live_tool
):
    page, submission = graded(browser, platform, llm, live_tool, policy="hold_all")
    staff = teacher(browser, platform, live_tool)
    response = act(
        browser, staff, submission, "override", score="6,5", feedback="Good, but **cite**."
    )
    assert response.status_code == 303
    run_jobs()
    assert platform.grade_for("2")["scoreGiven"] is None  # still held: nothing sent
    assert status(browser, page)["score"] is None

    act(browser, staff, submission, "release")
    run_jobs()
    assert platform.grade_for("2")["scoreGiven"] == 6.5
    assert platform.scores[-1]["comment"] == "Good, but cite."
    html = browser.get(page).text
    assert "6.5 / 10" in html and "<strong>cite</strong>" in html
    assert "uses the right terms" not in html
    grade = latest().grade
    assert (grade.score, grade.override_score) == (8, 6.5)  # the AI's original is kept
    assert "uses the right terms" in grade.result.feedback
    (event,) = audit("override")
    assert event.details["before"]["override_score"] is None
    assert event.details["after"]["override_score"] == 6.5
    assert event.actor.sub == "3" and event.created_at is not None


def test_a_score_for_a_submission_the_grader_could_not_score_releases_it(
    browser, platform, llm, live_tool
):
    page, submission = graded(browser, platform, llm, live_tool, reply="A fine essay overall.")
    assert submission.status == JobStatus.NEEDS_REVIEW
    staff = teacher(browser, platform, live_tool)
    response = act(browser, staff, submission, "override", score="7", feedback="", release="1")
    assert response.status_code == 303 and "done=released" in response.headers["Location"]
    run_jobs()
    assert latest().status == JobStatus.COMPLETED
    assert status(browser, page)["score"] == 7
    assert platform.grade_for("2")["scoreGiven"] == 7


def test_a_submission_without_a_score_cannot_be_released(browser, platform, llm, live_tool):
    page, submission = graded(browser, platform, llm, live_tool, reply="A fine essay overall.")
    staff = teacher(browser, platform, live_tool)
    response = act(browser, staff, submission, "release")
    assert response.status_code == 400 and "needs your score" in response.text
    assert browser.post(staff + "release-all").status_code == 303
    run_jobs()
    assert latest().grade.released_at is None and status(browser, page)["score"] is None
    assert audit("release") == []


@pytest.mark.parametrize("score", ["11", "-1", "abc", "nan", "inf", "1e400"])
def test_invalid_scores_are_refused_and_nothing_changes(browser, platform, llm, live_tool, score):
    _, submission = graded(browser, platform, llm, live_tool, policy="hold_all")
    staff = teacher(browser, platform, live_tool)
    response = act(browser, staff, submission, "override", score=score, feedback="Kept text")
    assert response.status_code == 400
    assert "The score must be" in response.text
    assert "Kept text" in response.text  # the teacher's typing is not lost
    grade = latest().grade
    assert grade.override_score is None and grade.override_feedback is None
    assert audit("override") == []


def test_per_criterion_override_is_validated_and_shown_after_release(
    browser, platform, llm, live_tool
):
    page = open_activity(browser, platform, live_tool)
    configure(
        plugin_name="criteria",
        plugin_params={"mode": "one_shot"},
        rubric=RUBRIC,
        release_policy="hold_all",
    )
    llm.reply(CRITERIA_REPLY)
    upload(browser, page, "essay.txt", ESSAY.encode())
    run_jobs()
    submission = latest()
    assert [c["score"] for c in submission.grade.result.criteria] == [10, 0, 0]
    staff = teacher(browser, platform, live_tool)
    detail = browser.get(f"{staff}submissions/{submission.id}").text
    assert "No Calvin cycle." in detail and "light energy" in detail

    odd_names = {"criterion-²": "1", "criterion-99999999999": "1", "criterion-x": "1"}
    ignored = act(browser, staff, submission, "override", score="7", **odd_names)
    assert ignored.status_code == 303 and latest().grade.override_criteria is None
    too_much = act(browser, staff, submission, "override", **{"criterion-1": "6"})
    assert too_much.status_code == 400 and "Detail must be between 0 and 5" in too_much.text
    fine = act(browser, staff, submission, "override", **{"criterion-1": "4", "criterion-0": "10"})
    assert fine.status_code == 303
    grade = latest().grade
    assert [c["score"] for c in grade.override_criteria] == [10, 4, 0]
    assert [c["score"] for c in grade.result.criteria] == [10, 0, 0]
    act(browser, staff, submission, "release")
    assert "4 / 5" in browser.get(page).text


def test_teacher_feedback_is_sanitised_on_every_page(browser, platform, llm, live_tool):
    page, submission = graded(browser, platform, llm, live_tool)
    staff = teacher(browser, platform, live_tool)
    hostile = "<script>alert(1)</script> [link](javascript:alert(2)) <img src=x onerror=alert(3)>"
    act(browser, staff, submission, "override", feedback=hostile)
    run_jobs()
    for html in (browser.get(page).text, browser.get(f"{staff}submissions/{submission.id}").text):
        assert "<script>alert" not in html and 'href="javascript:' not in html
        assert "<img" not in html


def test_an_override_after_release_is_sent_again(browser, platform, llm, live_tool):
    _, submission = graded(browser, platform, llm, live_tool)
    assert platform.grade_for("2")["scoreGiven"] == 8
    staff = teacher(browser, platform, live_tool)
    act(browser, staff, submission, "override", score="9", feedback="Better than the AI said.")
    run_jobs()
    assert platform.grade_for("2")["scoreGiven"] == 9
    assert platform.scores[-1]["comment"] == "Better than the AI said."


# -- regrade and reopen -----------------------------------------------------------------


def test_regrade_with_another_strategy_and_model_keeps_the_old_grade_in_the_audit(
    app, browser, platform, llm, live_tool
):
    page = open_activity(browser, platform, live_tool)
    test = {"kind": "contains", "phrases": ["light"]}
    tree = {"base": {"children": [{"name": "says light", "test": test}]}}
    configure(plugin_name="criteria_tree", plugin_params={"tree": tree})
    upload(browser, page, "essay.txt", ESSAY.encode())
    run_jobs()
    submission = latest()
    assert submission.grade.result.provenance["plugin"] == "criteria_tree" and llm.requests == []
    old_score = submission.grade.score

    staff = teacher(browser, platform, live_tool)
    act(browser, staff, submission, "override", score="3")
    llm.reply("Final score: 4/10")
    response = act(browser, staff, submission, "regrade", plugin="rubric_eval", model="judge-2")
    assert response.status_code == 303
    assert status(browser, page)["status"] == "pending"
    run_jobs()
    grade = latest().grade
    assert grade.score == 4 and grade.override_score is None  # a new AI grade replaces it
    assert grade.result.provenance["plugin"] == "rubric_eval"
    assert llm.requests[-1]["model"] == "judge-2"
    assert platform.grade_for("2")["scoreGiven"] == 4
    (event,) = audit("regrade")
    assert event.details["before"]["score"] == old_score
    assert event.details["before"]["override_score"] == 3
    assert event.details["before"]["plugin"] == "criteria_tree"
    assert event.details["after"] == {"plugin": "rubric_eval", "model": "judge-2"}
    assert db.session.get(Activity, submission.activity_id).plugin_name == "criteria_tree"


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({"plugin": "no_such_strategy"}, "no grading strategy named"),
        ({"plugin": "code_judge"}, "settings for code_judge have problems"),
        ({"model": "gpt; rm -rf /"}, "A model name has"),
    ],
)
def test_regrade_refuses_bad_choices(browser, platform, llm, live_tool, form, message):
    _, submission = graded(browser, platform, llm, live_tool)
    staff = teacher(browser, platform, live_tool)
    response = act(browser, staff, submission, "regrade", **form)
    assert response.status_code == 400 and message in response.text
    assert latest().status == JobStatus.COMPLETED and audit("regrade") == []


def test_reopen_grants_one_more_attempt(browser, platform, llm, live_tool):
    llm.set_default(GOOD_REPLY)
    page = open_activity(browser, platform, live_tool)
    configure(max_attempts=1)
    assert "You have 1 attempt left." in browser.get(page).text
    assert upload(browser, page, "essay.txt", ESSAY.encode()).status_code == 303
    run_jobs()
    refused = upload(browser, page, "again.txt", ESSAY.encode())
    assert refused.status_code == 400 and "used your attempt for this activity" in refused.text
    assert "You have used all your attempts" in browser.get(page).text
    assert db.session.query(Submission).count() == 1

    staff = teacher(browser, platform, live_tool)
    assert act(browser, staff, latest(), "reopen").status_code == 303
    twice = act(browser, staff, latest(), "reopen")
    assert twice.status_code == 400 and "reopened already" in twice.text
    assert "You have 1 attempt left." in browser.get(page).text
    assert upload(browser, page, "again.txt", ESSAY.encode()).status_code == 303
    assert upload(browser, page, "third.txt", ESSAY.encode()).status_code == 400
    assert latest().attempt == 2
    assert [e.details["after"]["attempt"] for e in audit("reopen")] == [1]


def test_reopen_needs_a_limit(browser, platform, llm, live_tool):
    _, submission = graded(browser, platform, llm, live_tool)
    staff = teacher(browser, platform, live_tool)
    response = act(browser, staff, submission, "reopen")
    assert response.status_code == 400 and "unlimited attempts" in response.text


# -- pages ------------------------------------------------------------------------------


def test_detail_page_shows_the_whole_story(browser, platform, llm, live_tool):
    llm.reply(
        GOOD_REPLY, usage={"prompt_tokens": 321, "completion_tokens": 54, "total_tokens": 375}
    )
    page = open_activity(browser, platform, live_tool)
    upload(browser, page, "my essay.txt", ESSAY.encode(), comment="Please be kind")
    run_jobs()
    submission = latest()
    staff = teacher(browser, platform, live_tool)
    act(browser, staff, submission, "override", score="7")
    run_jobs()
    html = browser.get(f"{staff}submissions/{submission.id}").text
    for expected in (
        "Photosynthesis converts light energy",  # extracted text
        "Please be kind",
        "Final score: 8/10",  # the raw reply
        "fake-model",
        "321 in, 54 out",
        "rubric_eval",
        "Score 7: sent",  # push history: the teacher's score went out
        "override",  # audit log
        "Download the original",
    ):
        assert expected in html, expected


@pytest.mark.parametrize(
    ("filename", "kind_type", "saved_as"),
    [
        ("essay.txt", "text/plain; charset=utf-8", "attempt1-essay.txt"),
        ('we"ird;na:me<>.md', "text/markdown; charset=utf-8", "attempt1-we_ird_na_me.md"),
    ],
)
def test_download_is_an_attachment_with_a_safe_name(
    browser, platform, llm, live_tool, filename, kind_type, saved_as
):
    llm.set_default(GOOD_REPLY)
    page = open_activity(browser, platform, live_tool)
    data = ESSAY.encode()
    upload(browser, page, filename, data)
    staff = teacher(browser, platform, live_tool)
    response = browser.get(f"{staff}submissions/{latest().id}/file")
    assert response.status_code == 200 and response.content == data
    assert response.headers["Content-Type"] == kind_type
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    disposition = response.headers["Content-Disposition"]
    assert disposition.startswith("attachment;") and f"filename={saved_as}" in disposition


def test_class_list_filters_and_sorts_without_javascript(browser, platform, llm, live_tool):
    platform.enrol("9", given_name="Zoe", family_name="Nosub")
    graded(browser, platform, llm, live_tool, user="2", reply="Final score: 3/10")
    graded(browser, platform, llm, live_tool, user="4", reply="Final score: 9/10")
    graded(browser, platform, llm, live_tool, user="5", reply="No clear mark here.")
    staff = teacher(browser, platform, live_tool)

    def names(query: str) -> list[str]:
        html = browser.get(staff + query).text
        found = [(html.find(f"User {n}</th>"), f"User {n}") for n in ("2", "4", "5")]
        found.append((html.find("Zoe Nosub</th>"), "Zoe Nosub"))
        return [name for position, name in sorted(found) if position >= 0]

    assert names("") == ["User 2", "User 4", "User 5", "Zoe Nosub"]
    assert names("?status=none") == ["Zoe Nosub"]
    assert names("?show=missing") == ["Zoe Nosub"]
    assert names("?status=needs_review") == ["User 5"]
    assert names("?sort=score&order=desc") == ["User 4", "User 2", "User 5", "Zoe Nosub"]
    assert names("?sort=status&status=completed") == ["User 2", "User 4"]
    assert names("?status=<script>&sort=bogus") == names("")  # unknown values are ignored
    assert "No student matches" in browser.get(staff + "?show=flagged").text


def test_statistics_on_a_known_set(app, browser, platform, llm, live_tool):
    app.config.update(EVALUAITOR_LLM_PRICE_INPUT_PER_1K=0.5, EVALUAITOR_LLM_PRICE_OUTPUT_PER_1K=1.5)
    usage = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    for user, score in (("2", 2), ("4", 5), ("5", 8), ("6", 10)):
        llm.reply(f"Final score: {score}/10", usage=usage)
        page = open_activity(browser, platform, live_tool, user=user)
        upload(browser, page, "essay.txt", essay(user))
        run_jobs()
    staff = teacher(browser, platform, live_tool)
    act(browser, staff, latest("5"), "override", score="7.5")  # AI 8: 0.5 apart
    act(browser, staff, latest("2"), "override", score="4")  # AI 2: 2 apart

    activity = db.session.query(Activity).one()
    stats = gradebook.statistics(activity, gradebook.student_rows(activity, Roster(())), app.config)
    assert [b.count for b in stats.bins] == [0, 0, 0, 0, 1, 1, 0, 1, 0, 1]
    assert stats.scored == 4 and stats.mean == pytest.approx((4 + 5 + 7.5 + 10) / 4)
    agreement = stats.agreement.overall  # the rest: tests/test_agreement_report.py
    assert agreement.n == 2
    assert agreement.mad == pytest.approx(1.25)
    assert agreement.within_one == pytest.approx(0.5)
    assert (stats.prompt_tokens, stats.completion_tokens) == (400, 80)
    assert stats.cost == pytest.approx(0.32)

    html = browser.get(staff + "stats").text
    assert "<svg" in html and "<table" in html
    assert "1.25 points" in html and "50%" in html and "0.3200" in html
    app.config["EVALUAITOR_LLM_PRICE_INPUT_PER_1K"] = 0.0  # calls are priced when made
    app.config["EVALUAITOR_LLM_PRICE_OUTPUT_PER_1K"] = 0.0
    assert "0.3200" in browser.get(staff + "stats").text


def test_csv_export_lists_everyone_and_cannot_run_formulas(browser, platform, llm, live_tool):
    platform.enrol("7", given_name='=HYPERLINK("http://evil")', family_name="-Mallory")
    platform.enrol("8", given_name="@Eve", family_name="Nosub")
    graded(browser, platform, llm, live_tool, user="7")
    staff = teacher(browser, platform, live_tool)
    act(browser, staff, latest("7"), "override", score="6")
    response = browser.get(staff + "gradebook.csv")
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/csv")
    assert response.headers["Content-Disposition"].startswith("attachment;")
    rows = {row["lms_user_id"]: row for row in csv.DictReader(io.StringIO(response.text))}
    mallory = rows["7"]
    assert mallory["student"] == '\'=HYPERLINK("http://evil") -Mallory'
    assert (mallory["ai_score"], mallory["teacher_score"], mallory["final_score"]) == (
        "8",
        "6",
        "6",
    )
    assert mallory["status"] == "completed" and mallory["released"] == "yes"
    assert rows["8"]["student"] == "'@Eve Nosub" and rows["8"]["status"] == "none"
    for row in rows.values():
        assert not any(value.startswith(("=", "+", "-", "@")) for value in row.values())


def test_a_held_grade_does_not_leak_through_the_history(browser, platform, llm, live_tool):
    llm.reply("Final score: 6/10")
    page = open_activity(browser, platform, live_tool)
    upload(browser, page, "v1.txt", ESSAY.encode())
    run_jobs()
    configure(release_policy="hold_all")
    llm.reply("Final score: 9/10")
    upload(browser, page, "v2.txt", (ESSAY + " More.").encode())
    run_jobs()
    html = browser.get(page).text
    assert "6 / 10" in html  # the released first attempt, in the history
    assert "9 / 10" not in html and "Waiting for your teacher" in html
    assert status(browser, page)["score"] is None
    held = db.session.query(GradingJob).filter(GradingJob.score == 9).one().submission.grade
    assert held.released_at is None
    assert platform.grade_for("2")["scoreGiven"] == 6  # the gradebook keeps the released one
