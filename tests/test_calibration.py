"""Calibration from the teacher's own grades, end to end: a teacher scores or pins submissions
of an activity, and later gradings of that activity (and only of it) show the model those
examples, masked, chosen when the job runs; the teacher's controls and what the pages say."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy import select

from app.api import auth as api_auth
from app.extensions import db
from app.lms import calibration
from app.models import Activity, AuditEvent, Grade, GradingJob, Platform, Submission
from tests.conftest import register, run_jobs
from tests.documents import ESSAY
from tests.fakes.platform import TEACHER, FakePlatform
from tests.test_core_loop import open_activity, upload

REPLY = "Clear work.\n\nFinal score: 6/10"
#: The first words of the examples block (app.grading.prompts.EXAMPLES_INTRO).
BLOCK = "Graded examples for calibration"


@pytest.fixture
def class_llm(llm):
    llm.set_default(REPLY)
    return llm


def work(browser, platform, live_tool, user: str, text: str, *, name: str = "", **launch):
    """``user`` (called ``name``) submits ``text`` to the activity, graded by the fake model."""
    if name:
        given, family = name.split()
        platform.enrol(user, given_name=given, family_name=family)
    page = open_activity(browser, platform, live_tool, user=user, **launch)
    assert upload(browser, page, "essay.txt", text.encode()).status_code == 303
    run_jobs()
    db.session.expire_all()
    newest = select(Submission).where(Submission.user.has(sub=user)).order_by(Submission.id.desc())
    return db.session.scalars(newest).first()


def teacher_page(browser, platform, live_tool, **launch) -> str:
    return open_activity(browser, platform, live_tool, user="3", roles=TEACHER, **launch)


def post(browser, page: str, submission: Submission, action: str, **form) -> httpx.Response:
    return browser.post(f"{page}submissions/{submission.id}/{action}", data=form)


def score(browser, page: str, submission: Submission, value: str, feedback: str = "") -> None:
    response = post(browser, page, submission, "override", score=value, feedback=feedback)
    assert response.status_code == 303, response.text


def used(submission: Submission) -> list[dict]:
    db.session.expire_all()
    return db.session.get(GradingJob, submission.job.id).provenance["examples"]


def prompts(llm) -> list[str]:
    return ["\n".join(m["content"] for m in body["messages"]) for body in llm.requests]


def set_count(count: int) -> None:
    for activity in db.session.query(Activity):
        activity.example_count = count
    db.session.commit()


def essay(topic: str) -> str:
    return f"{ESSAY} {topic}"


def test_a_teacher_scored_example_reaches_the_prompt_masked_and_is_recorded(
    browser, platform, class_llm, live_tool
):
    first = work(
        browser, platform, live_tool, "4", essay("Marisol Quintana wrote this."),
        name="Marisol Quintana",
    )  # fmt: skip
    staff = teacher_page(browser, platform, live_tool)
    score(browser, staff, first, "9", feedback="Well argued, Marisol Quintana; cite sources.")
    assert used(first) == []  # nothing was scored before it

    second = work(browser, platform, live_tool, "5", essay("Stomata let gases in."))
    (example,) = used(second)
    assert example["submission_id"] == first.id and example["pinned"] is False
    assert 0.5 < example["similarity"] <= 1

    last = prompts(class_llm)[-1]
    assert BLOCK in last and "the teacher's score: 9 out of 10" in last
    assert "[name] wrote this." in last and "Well argued, [name]; cite sources." in last
    assert not [p for p in prompts(class_llm) if "Marisol" in p or "Quintana" in p]

    detail = browser.get(f"{staff}submissions/{second.id}").text
    assert f"submissions/{first.id}" in detail and "% alike" in detail


def test_examples_never_come_from_another_activity_or_tenant(
    browser, platform, class_llm, live_tool
):
    """The same essay, scored by teachers elsewhere, is never an example here."""
    mine = work(browser, platform, live_tool, "4", essay("MINE-MARK"))
    score(browser, teacher_page(browser, platform, live_tool), mine, "9")
    for where in (
        {"resource_link_id": "rl-other"},
        {"context_id": "course-2", "resource_link_id": "rl-2"},
    ):
        other = work(browser, platform, live_tool, "6", essay("ELSEWHERE-MARK"), **where)
        score(browser, teacher_page(browser, platform, live_tool, **where), other, "2")
    with FakePlatform(client_id="bravo-client", name="bravo") as bravo:
        bravo.tool_jwks_url = f"{live_tool}/lti/jwks"
        bravo.tool_redirect_uris = [f"{live_tool}/lti/launch"]
        register(bravo)
        foreign = work(browser, bravo, live_tool, "8", essay("OTHER-TENANT-MARK"))
        score(browser, teacher_page(browser, bravo, live_tool), foreign, "1")

    new = work(browser, platform, live_tool, "5", essay("NEW-MARK"))
    assert [e["submission_id"] for e in used(new)] == [mine.id]
    last = prompts(class_llm)[-1]
    assert "MINE-MARK" in last
    assert "ELSEWHERE-MARK" not in last and "OTHER-TENANT-MARK" not in last
    assert "out of 10" in last and "score: 9 out of 10" in last


@pytest.mark.parametrize("count", [0, 1, 3])
def test_pinned_always_excluded_never_and_the_count_limits(
    browser, platform, class_llm, live_tool, count
):
    staff = teacher_page(browser, platform, live_tool)
    scored = []
    for n, topic in enumerate(("roots", "leaves", "sugars", "water")):
        submission = work(browser, platform, live_tool, str(10 + n), essay(f"About {topic}."))
        score(browser, staff, submission, str(5 + n))
        scored.append(submission)
    pinned = work(browser, platform, live_tool, "20", "Volcanoes erupt lava; an unrelated text.")
    assert post(browser, staff, pinned, "example", use="pinned").status_code == 303
    twin = work(browser, platform, live_tool, "21", essay("NEW-MARK about sugars."))
    score(browser, staff, twin, "1")
    assert post(browser, staff, twin, "example", use="excluded").status_code == 303
    set_count(count)

    new = work(browser, platform, live_tool, "30", essay("NEW-MARK about sugars."))
    chosen = used(new)
    assert len(chosen) == min(count, 5)
    ids = [e["submission_id"] for e in chosen]
    assert twin.id not in ids  # excluded, though it is the very same text
    if count:
        assert chosen[0] == {"submission_id": pinned.id, "similarity": chosen[0]["similarity"],
                             "pinned": True}  # fmt: skip
        assert set(ids[1:]) <= {s.id for s in scored}
        similarities = [e["similarity"] for e in chosen[1:]]
        assert similarities == sorted(similarities, reverse=True)
    assert (BLOCK in prompts(class_llm)[-1]) == bool(count)


def test_a_regrade_uses_the_examples_that_exist_then(browser, platform, class_llm, live_tool):
    staff = teacher_page(browser, platform, live_tool)
    first = work(browser, platform, live_tool, "4", essay("Roots."))
    second = work(browser, platform, live_tool, "5", essay("Leaves."))
    assert used(second) == []  # the first one has no teacher score yet

    score(browser, staff, first, "3", feedback="Too short.")
    assert post(browser, staff, second, "regrade").status_code == 303
    run_jobs()
    assert [e["submission_id"] for e in used(second)] == [first.id]
    assert "Too short." in prompts(class_llm)[-1]


def test_a_grade_the_teacher_kept_as_it_was_is_an_example_and_a_new_result_unmakes_it(
    browser, platform, class_llm, live_tool
):
    staff = teacher_page(browser, platform, live_tool)
    first = work(browser, platform, live_tool, "4", essay("Roots."))
    score(browser, staff, first, "6")  # the AI's own score: no override is stored
    db.session.expire_all()
    assert first.grade.override_score is None and first.grade.is_teacher_graded

    second = work(browser, platform, live_tool, "5", essay("Leaves."))
    assert [e["submission_id"] for e in used(second)] == [first.id]
    assert "the teacher's score: 6 out of 10" in prompts(class_llm)[-1]

    # Graded again, its new result is the AI's alone: no longer the teacher's example.
    assert post(browser, staff, first, "regrade").status_code == 303
    run_jobs()
    third = work(browser, platform, live_tool, "6", essay("Stems."))
    assert used(third) == []


def test_api_evaluations_get_no_examples(app, browser, platform, class_llm, live_tool):
    scored = work(browser, platform, live_tool, "4", essay("Roots."))
    score(browser, teacher_page(browser, platform, live_tool), scored, "9")
    org = db.session.query(Platform).one().organization
    _, token = api_auth.create_token(org, "tests")
    db.session.commit()
    with httpx.Client(
        base_url=live_tool, headers={"Authorization": f"Bearer {token}"}, timeout=10
    ) as api:
        answer = api.post("/evaluations", files={"file": ("essay.txt", essay("Roots.").encode())})
        assert answer.status_code == 202, answer.text
    run_jobs()
    db.session.expire_all()
    job = db.session.query(GradingJob).order_by(GradingJob.id.desc()).first()
    assert job.owner_kind == "evaluation" and job.provenance["examples"] == []
    assert BLOCK not in prompts(class_llm)[-1]


# -- the teacher's controls -----------------------------------------------------------


def test_pinning_and_excluding_are_audited_and_summarised(browser, platform, class_llm, live_tool):
    staff = teacher_page(browser, platform, live_tool)
    submission = work(browser, platform, live_tool, "4", essay("Roots."))
    other = work(browser, platform, live_tool, "5", essay("Leaves."))
    score(browser, staff, other, "7")

    assert post(browser, staff, submission, "example", use="pinned").status_code == 303
    assert post(browser, staff, submission, "example", use="pinned").status_code == 303
    assert post(browser, staff, submission, "example", use="excluded").status_code == 303
    events = db.session.query(AuditEvent).filter_by(action="example").order_by(AuditEvent.id)
    assert [e.details for e in events] == [
        {"before": {"example": "auto"}, "after": {"example": "pinned"}},
        {"before": {"example": "pinned"}, "after": {"example": "excluded"}},
    ]  # saving the same choice again records nothing
    assert all(e.actor.sub == "3" and e.submission_id == submission.id for e in events)
    page = browser.get(f"{staff}submissions/{submission.id}").text
    assert '<option value="excluded" selected>' in page and 'for="example-use"' in page
    summary = browser.get(staff).text
    assert "1 scored by you, 0 pinned, 1 excluded" in summary
    db.session.expire_all()
    activity = db.session.query(Activity).one()
    assert calibration.summary(activity) == calibration.Summary(graded=1, pinned=0, excluded=1)


def test_an_unknown_choice_is_refused_and_changes_nothing(browser, platform, class_llm, live_tool):
    staff = teacher_page(browser, platform, live_tool)
    submission = work(browser, platform, live_tool, "4", essay("Roots."))
    response = post(browser, staff, submission, "example", use="always")
    assert response.status_code == 400
    assert "Choose automatic, pinned or excluded." in response.text
    db.session.expire_all()
    assert db.session.query(Grade).one().example == "auto"
    assert db.session.query(AuditEvent).filter_by(action="example").count() == 0


def test_a_forged_page_token_cannot_change_an_example(browser, platform, class_llm, live_tool):
    staff = teacher_page(browser, platform, live_tool)
    submission = work(browser, platform, live_tool, "4", essay("Roots."))
    token = staff.split("/")[2]
    forged = staff.replace(token, token[:-3] + ("aaa" if not token.endswith("aaa") else "bbb"))
    assert post(browser, forged, submission, "example", use="pinned").status_code == 401
    db.session.expire_all()
    assert db.session.query(Grade).one().example == "auto"
