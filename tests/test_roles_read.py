"""What a teacher, a student and an LMS admin read, as a real Moodle showed them (issue 14):
the title the teacher set, the registration page's words on re-registration, human labels
instead of internal names, plural forms, one scale for every score, the launch's language on
error and cookie pages, and the gradebook column the tool made itself."""

from __future__ import annotations

import csv
import io
import re
from urllib.parse import parse_qsl, urlsplit

import pytest

from app.extensions import db
from app.grading import registry
from app.lms import activities
from app.models import Activity, AuditEvent, Grade
from app.web import labels
from tests.conftest import run_jobs
from tests.fakes.platform import LTI_CLAIM, TEACHER, FakePlatform, browser_launch
from tests.test_core_loop import open_activity, status, upload
from tests.test_deep_linking import valid_form
from tests.test_registration import register
from tests.test_review import act, essay, graded, teacher

SPANISH = {LTI_CLAIM + "launch_presentation": {"locale": "es-ES", "document_target": "iframe"}}


def activity() -> Activity:
    db.session.expire_all()
    return db.session.query(Activity).one()


def text_of(html: str) -> str:
    """The page's words, without tags (to read what a person reads)."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


# -- 2. the title ------------------------------------------------------------------------


def test_a_title_set_in_the_settings_survives_later_launches(browser, platform, live_tool):
    staff = teacher(browser, platform, live_tool)  # the LMS calls the link "Essay 1"
    saved = browser.post(staff + "settings", data=valid_form(title="Essay 1 (revised)"))
    assert saved.status_code == 303, saved.text

    student = open_activity(browser, platform, live_tool)  # still "Essay 1" in the LMS
    assert activity().title == "Essay 1 (revised)"
    assert "<h1>Essay 1 (revised)</h1>" in browser.get(student).text
    settings = text_of(browser.get(staff + "settings").text)
    assert "Changes to the settings" in settings
    assert "Changed the settings: " in settings
    assert "Title (“Essay 1” → “Essay 1 (revised)”)" in settings
    (event,) = db.session.query(AuditEvent).filter_by(action="settings").all()
    assert event.details["after"]["title"] == "Essay 1 (revised)"


# -- 6. what each role reads -----------------------------------------------------------------


@pytest.fixture
def moodle(app, live_tool):
    with FakePlatform() as fake:
        yield fake


def test_re_registration_does_not_call_an_active_tool_pending(browser, moodle, live_tool):
    first = text_of(register(browser, moodle, live_tool).text)
    assert "This is a new registration. Moodle adds the tool as pending" in first

    again = register(browser, moodle, live_tool, token=moodle.registration.token(update=True))
    assert again.status_code == 200, again.text
    words = text_of(again.text)
    assert "updated the registration Evaluaitor already had" in words
    assert "a tool that was active stays active" in words
    assert "Moodle adds the tool as pending" not in words


def test_the_teacher_page_shows_labels_not_internal_names(browser, platform, llm, live_tool):
    _, submission = graded(browser, platform, llm, live_tool, policy="hold_all")
    staff = teacher(browser, platform, live_tool)
    act(browser, staff, submission, "release")
    page = text_of(browser.get(staff).text)
    assert "Strategy: Overall judgement against the instructions" in page
    assert "rubric_eval" not in page
    detail = text_of(browser.get(f"{staff}submissions/{submission.id}").text)
    assert "Released the grade" in detail and " release " not in detail
    assert "rubric_eval" not in detail.replace('value="rubric_eval"', "")
    settings = browser.get(staff + "settings").text
    assert "Longest text read (characters)" in settings and "Max Chars" not in settings
    assert ">One question per criterion (most accurate)</option>" in settings


def test_counts_have_plural_forms(browser, platform, llm, live_tool):
    graded(browser, platform, llm, live_tool)
    staff = teacher(browser, platform, live_tool)
    stats = text_of(browser.get(staff + "stats").text)
    assert "1 student has a score" in stats and "1 students" not in stats
    page = text_of(browser.get(staff).text)
    assert "1 of 1 student; latest attempt" in page


def test_every_score_is_on_the_activity_maximum_after_it_changed(browser, platform, llm, live_tool):
    """8 of 10 graded and released; the maximum becomes 20: every page, the status poll and
    the CSV say 16 / 20, as the LMS gradebook has it once the grade is sent again."""
    student, submission = graded(browser, platform, llm, live_tool)
    activity().max_score = 20
    db.session.commit()
    staff = teacher(browser, platform, live_tool)

    page = text_of(browser.get(staff).text)
    assert "Maximum score: 20" in page and "16 / 20" in page and "8 / 10" not in page
    rows = list(csv.DictReader(io.StringIO(browser.get(staff + "gradebook.csv").text)))
    assert (rows[0]["ai_score"], rows[0]["final_score"], rows[0]["out_of"]) == ("16", "16", "20")
    assert "16 / 20" in text_of(browser.get(student).text)
    assert (status(browser, student)["score"], status(browser, student)["scale"]) == (16, 20)
    detail = browser.get(f"{staff}submissions/{submission.id}").text
    assert "Score (0 to 20)" in detail and 'value="16"' in detail

    # Saving the field as shown changes nothing; a new score is typed on the same maximum.
    act(browser, staff, submission, "override", score="16", feedback="")
    assert db.session.get(Grade, submission.grade.id).override_score is None
    act(browser, staff, submission, "override", score="10", feedback="")
    db.session.expire_all()
    assert db.session.get(Grade, submission.grade.id).override_score == 5  # on the grader's 10
    too_high = act(browser, staff, submission, "override", score="21", feedback="")
    assert too_high.status_code == 400 and "between 0 and 20" in too_high.text


def test_a_plain_link_does_not_repeat_its_title_in_the_instructions(browser, platform, live_tool):
    page = open_activity(browser, platform, live_tool, title="Essay 2", description="Argue X.")
    html = browser.get(page).text
    assert re.search(r'<div class="instructions">\s*Argue X.\s*</div>', html)
    assert activity().instructions == "Essay 2\n\nArgue X."  # the grader still reads both


def test_the_teacher_page_says_when_the_tool_made_its_own_column(browser, platform, llm, live_tool):
    staff = teacher(browser, platform, live_tool, lineitem=False)  # "accept grades" off
    page = text_of(browser.get(staff).text)
    assert "gave this activity no gradebook column of its own" in page
    assert "will create the column “Essay 1”" in page

    page_student = open_activity(browser, platform, live_tool, lineitem=False)
    llm.reply("Final score: 8/10")
    upload(browser, page_student, "essay.txt", essay("2"))
    run_jobs()
    later = text_of(browser.get(teacher(browser, platform, live_tool)).text)
    assert "Evaluaitor created the column “Essay 1” in the course gradebook" in later


def test_a_launch_without_the_column_notice_says_nothing(browser, platform, live_tool):
    page = text_of(browser.get(teacher(browser, platform, live_tool)).text)
    assert "no gradebook column of its own" not in page


# -- the launch's language ----------------------------------------------------------------------


def test_spanish_teacher_pages_translate_labels_and_actions(browser, platform, llm, live_tool):
    _, submission = graded(browser, platform, llm, live_tool, policy="hold_all")
    staff = teacher(browser, platform, live_tool, extra_claims=SPANISH)
    act(browser, staff, submission, "release")
    for path in ("", f"submissions/{submission.id}", "settings", "stats"):
        html = browser.get(staff + path).text
        assert '<html lang="es">' in html, path
        for english in ("Released the grade", "Max Chars", "Longest text read", "Temperature"):
            assert english not in html, (path, english)


def test_an_error_page_follows_the_launch_language(browser, platform, live_tool):
    response = browser_launch(
        browser,
        platform,
        live_tool,
        message_type="LtiSubmissionReviewRequest",
        extra_claims=SPANISH,
    )
    assert response.status_code == 400
    assert '<html lang="es">' in response.text
    assert "does not handle this kind of launch" not in response.text


def test_the_cookie_page_follows_the_launch_language(browser, platform, live_tool):
    """A browser that dropped the tool's cookie (and an LMS without platform storage): the
    page that says so speaks the launch's Spanish, not the browser's English."""
    platform.set_launch("2", extra_claims=SPANISH)
    params = platform.login_params(target_link_uri=live_tool + "/lti/launch")
    login = browser.post("/lti/login", data=params)
    _, fields = platform.authorize(dict(parse_qsl(urlsplit(login.headers["Location"]).query)))
    browser.cookies.clear()
    page = browser.post("/lti/launch", data=fields, headers={"Accept-Language": "en"})
    assert '<html lang="es">' in page.text
    assert "Open Evaluaitor in a new window" not in page.text


def test_the_settings_page_of_a_spanish_teacher_has_a_history_in_spanish(
    browser, platform, live_tool
):
    staff = open_activity(
        browser, platform, live_tool, user="3", roles=TEACHER, extra_claims=SPANISH
    )
    browser.post(staff + "settings", data=valid_form(title="Ensayo"))
    html = browser.get(staff + "settings").text
    assert "Cambios en la configuración" in html and "Cambió la configuración" in html
    assert "Changes to the settings" not in html and "Changed the settings" not in html


def test_every_strategy_setting_and_activity_field_has_a_label() -> None:
    """A setting added to a strategy (or to the activity) without a label would show its code
    name on the setup form and in the settings history."""
    registry.register_builtin()
    unlabelled = [
        f"{plugin.name}.{name}"
        for plugin in registry.all_plugins()
        for name in plugin.Params.model_fields
        if name not in labels.SETTINGS
    ]
    unlabelled += [name for name in activities.SETTINGS if name not in labels.ACTIVITY_FIELDS]
    assert not unlabelled
