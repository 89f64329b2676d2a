"""Accessibility, measured: axe-core (the engine axe-playwright-python ships) checks every page
a person reaches, in every state they reach it in, in English and in Spanish, and in a frame
320 px wide, and no serious or critical violation may remain, nor anything sticking out
sideways (reflow). The practice platform serves as the LMS, so the tool's pages are checked
inside its cross-site frame, as students and teachers see them; the language comes from the
launch (the platform sends its user's locale, as an LMS does). A last test does the work by
keyboard alone and checks that the focus always shows.

Each walk checks each page as it stands, then fails with every finding, each with its nodes,
so one run shows all that is left (see docs/decisions.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Frame, Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from app import tenants
from app.extensions import db
from app.models import Activity, Submission
from app.practice import exercise
from tests.browser.conftest import BLOCKING, TIMEOUT_MS, axe_violations, describe_violations
from tests.browser.test_review_features import SAMPLES
from tests.browser.test_setup_form import PASTED
from tests.conftest import registration_path, run_jobs
from tests.documents import pdf_bytes
from tests.fakes.platform import FakePlatform
from tests.test_admin import TOKEN
from tests.test_practice_asset_processor import _post_report, _report, _state

#: The views checked: a browser locale (the platform reads Accept-Language, and its launches
#: carry the language) and a window width; 354 px leaves the tool's frame 320 px wide, the
#: width WCAG 1.4.10 (Reflow) asks pages to work at.
VIEWS = {
    "en": ("en-GB", 1280),
    "es": ("es-ES", 1280),
    "en-320": ("en-GB", 354),
    "es-320": ("es-ES", 354),  # Spanish words are longer: they found two faults English did not
}

#: Elements that stick out past the right edge of the page (WCAG 1.4.10 lets data tables
#: scroll sideways, so what is inside a table is left out); each listed once, outermost first.
OVERFLOW = """() => {
    const edge = document.documentElement.clientWidth;
    const out = [];
    for (const el of document.body.querySelectorAll('*')) {
        if (el.closest('table, [hidden], .visually-hidden')) continue;
        const box = el.getBoundingClientRect();
        if (box.width && box.right > edge + 1 && !out.some((o) => o.contains(el))) out.push(el);
    }
    return out.map((el) => el.outerHTML.slice(0, 160));
}"""
FINAL = "section.status[data-final=true]"


class Audit:
    """Checks pages as a walk reaches them and keeps what axe found."""

    def __init__(self, view: str) -> None:
        self.view = view
        self.language = view.split("-")[0]
        self.checked: list[str] = []
        self.found: dict[str, list[dict]] = {}

    def __call__(self, where: str, document: Page | Frame) -> None:
        expect(document.locator("h1").first).to_be_attached()  # the page has arrived
        expect(document.locator("html")).to_have_attribute("lang", self.language)
        label = f"{where} [{self.view}]"
        self.checked.append(label)
        blocking = [v for v in axe_violations(document) if v["impact"] in BLOCKING]
        overflow = document.evaluate(OVERFLOW)
        if overflow:  # reported in axe's shape, so the report lists it with the rest
            nodes = [{"target": ["reflow"], "html": html} for html in overflow]
            blocking.append(
                {
                    "id": "reflow",
                    "impact": "serious",
                    "nodes": nodes,
                    "helpUrl": "WCAG 1.4.10",
                    "help": "Content must fit the width without scrolling sideways",
                }
            )
        if blocking:
            self.found[label] = blocking

    def assert_clean(self) -> None:
        report = "\n".join(f"{where}:\n{describe_violations(v)}" for where, v in self.found.items())
        assert not self.found, f"serious or critical findings (axe-core, reflow):\n{report}"


@pytest.fixture(params=list(VIEWS))
def view(request) -> str:
    return request.param


@pytest.fixture
def localized_page(chromium, view) -> Iterator[Page]:
    """A page whose browser asks for the view's language (Accept-Language and
    navigator.language), in a window of the view's width."""
    locale, width = VIEWS[view]
    context = chromium.new_context(viewport={"width": width, "height": 900}, locale=locale)
    context.set_default_timeout(TIMEOUT_MS)
    yield context.new_page()
    context.close()


def tool_at(page: Page, part: str = "/l/") -> Frame:
    """The tool's frame once its address holds ``part`` and that page has loaded. The frames
    are looked at afresh on each try, newest last: across its cross-site hops (tool, platform,
    tool) Chromium may move the frame to a new process, and on a loaded machine the object
    Playwright had for it can stay behind at an old address; the frame element's own content
    frame is asked too (a launch in CI once never showed up in the page's list)."""
    for _ in range(TIMEOUT_MS // 100):
        element = page.query_selector("iframe[name=tool-frame]")
        current = element.content_frame() if element else None  # the element's frame now
        found = [
            frame
            for frame in [*page.frames, *([current] if current else [])]
            if frame is not page.main_frame and not frame.is_detached() and part in frame.url
        ]
        if found:
            found[-1].wait_for_load_state()
            return found[-1]
        page.wait_for_timeout(100)
    raise AssertionError(f"the tool's frame never reached {part!r}")


def launch(page: Page, base_url: str, button: str) -> Frame:
    """From the platform's course page, launch the tool in its frame with the button whose
    test id is ``button``; returns the frame once the tool's own page (``/l/…``) is there."""
    page.goto(base_url + "/")
    page.get_by_test_id(button).click()
    return tool_at(page)


def upload(frame: Frame, work: Path) -> None:
    """As the student on their page, submit ``work`` (the worker grades it later).

    In CI, under load, a click right after a launch twice left the form on the page with no
    request sent (its required file gone: the frame's document had been replaced after the
    file was chosen). The form still showing means nothing was submitted, so choosing the
    file again and pressing again cannot submit twice."""
    waiting = frame.locator("section.status[data-final=false]")
    for _ in range(3):
        frame.locator("#file").set_input_files(str(work))
        frame.locator("#upload-form button[type=submit]").click()
        try:
            waiting.wait_for(state="attached", timeout=TIMEOUT_MS)
            return
        except PlaywrightTimeout:
            expect(frame.locator("#upload-form")).to_be_attached()  # still unsent: try again
    expect(waiting).to_be_attached()


def test_the_course_pages_have_no_serious_violations(
    app, localized_page, practice_platform, llm, tmp_path, view
):
    page, base = localized_page, practice_platform.base_url
    essay = tmp_path / "essay.pdf"
    essay.write_bytes(pdf_bytes())
    check = Audit(view)
    for _ in range(3):
        llm.reply("Well argued.\n\n**Strengths:** clear structure.\n\nFinal score: 6/10")

    page.goto(base + "/")
    check("practice course", page)

    # The teacher adds an activity whose grades wait for release: the form as it opens, with a
    # rubric imported into its editor, and refused for a missing title.
    setup = launch(page, base, "add-activity")
    check("setup form", setup)
    expect(setup.locator(".rubric-table")).to_be_hidden()  # no header-only table while empty
    setup.locator("#rubric-paste").fill(PASTED)
    setup.locator("#rubric-paste + button").click()
    expect(setup.locator("#rubric-status")).not_to_be_empty()
    expect(setup.locator(".rubric-table")).to_be_visible()
    check("setup form with a rubric", setup)
    setup.goto(setup.url)
    setup.locator("#title").fill("")
    setup.locator("#setup-form button[type=submit]").click()
    expect(setup.locator("#form-errors")).to_be_visible()
    check("setup form refused", setup)
    setup.locator("#title").fill("Lab report")
    setup.locator("#max_score").fill("10")
    setup.locator("#release-hold_all").check()
    setup.locator("#setup-form button[type=submit]").click()
    returned = tool_at(page, "/deep-link-return")
    expect(returned.locator("#added")).to_be_visible()
    check("deep linking return", returned)

    # The student: before, while queued, graded (released at once), then an appeal.
    student = launch(page, base, "student-practice-link-1")
    check("student before submitting", student)
    empty = tmp_path / "empty.pdf"
    empty.write_bytes(b"")
    student.locator("#file").set_input_files(str(empty))
    student.locator("#upload-form button[type=submit]").click()
    expect(student.locator("#upload-error")).to_be_visible()
    check("student upload refused", student)
    upload(student, essay)
    check("student waiting for grading", student)
    run_jobs()
    expect(student.locator(FINAL)).to_be_attached()
    check("student graded", student)
    student.locator("#appeal-reason").fill("The second paragraph names both reactions.")
    student.locator("#appeal-reason").press("Tab")
    page.keyboard.press("Enter")
    expect(student.locator("form[action*='/withdraw']")).to_be_attached()
    check("student appeal open", student)
    student.goto(student.url.split("?")[0].rsplit("/", 1)[0] + "/stats")
    check("forbidden (student on the statistics)", student)

    # The same student on the activity whose grades the teacher holds.
    held = launch(page, base, "student-practice-link-2")
    upload(held, essay)
    run_jobs()
    expect(held.locator(FINAL)).to_be_attached()
    check("student held for review", held)

    # The teacher: class list, review, statistics, settings, regrade requests.
    teacher = launch(page, base, "teacher-practice-link-2")
    check("teacher class list", teacher)
    teacher.locator("#bulk-regrade button[value=all]").click()
    teacher = tool_at(page, "/regrade?")
    check("teacher regrade estimate", teacher)
    teacher = launch(page, base, "teacher-practice-link-2")
    teacher.locator("a[href*='/submissions/']").first.click()
    expect(teacher.locator("#score")).to_be_visible()
    check("teacher submission review", teacher)
    teacher.locator("button[name=release]").click()
    expect(teacher.locator("button[name=release]")).to_have_count(0)
    check("teacher submission released", teacher)
    teacher = launch(page, base, "teacher-practice-link-2")
    teacher.locator("a[href$='/stats']").click()
    teacher = tool_at(page, "/stats")
    check("teacher statistics", teacher)
    teacher = launch(page, base, "teacher-practice-link-2")
    teacher.locator("a[href$='/settings']").click()
    teacher = tool_at(page, "/settings")
    check("teacher settings", teacher)
    teacher = launch(page, base, "teacher-practice-link-1")
    teacher.locator("#appeals-link").click()
    teacher = tool_at(page, "/appeals")
    check("teacher regrade requests", teacher)
    teacher.locator("textarea[name=answer]").fill("Right: I missed that paragraph.")
    teacher.locator("input[name=score]").fill("8")
    teacher.locator("form[action*='/answer'] button[type=submit]").click()
    expect(teacher.get_by_role("status")).to_be_visible()
    check("teacher regrade request answered", teacher)
    student = launch(page, base, "student-practice-link-1")
    check("student appeal answered", student)

    # A grading that fails (no model), as the student and the teacher see it.
    app.config["EVALUAITOR_LLM_BASE_URL"] = None
    upload(student, essay)
    run_jobs()
    expect(student.locator(FINAL)).to_be_attached()
    db.session.expire_all()
    assert db.session.query(Submission).order_by(Submission.id.desc()).first().status == "failed"
    check("student grading failed", student)
    teacher = launch(page, base, "teacher-practice-link-1")
    check("teacher class list with a failed grading", teacher)

    # The programming activity: graded by its tests, their results on the page.
    program = launch(page, base, f"student-{exercise.LINK_ID}")
    upload(program, SAMPLES / exercise.SAMPLES[1])
    run_jobs()
    expect(program.locator(FINAL)).to_be_attached()
    check("student program graded by tests", program)

    # Where the platform offers no storage, the frame offers a new window.
    page.goto(base + "/")
    page.locator("#no-storage").check()
    page.get_by_test_id("student-practice-link-1").click()
    offer = tool_at(page, "/lti/")
    expect(offer.locator("#new-window-heading")).to_be_visible()
    check("new window offer", offer)

    page.goto(base + "/")
    expect(page.locator("#scores")).to_be_visible()
    if VIEWS[view][1] > 1000:  # the gradebook fits its panel (beside the tool it ran out of it)
        assert page.locator("#scores").evaluate(
            "t => t.parentElement.scrollWidth <= t.parentElement.clientWidth"
        )
    check("practice course with scores", page)
    page.goto(base + "/launch?launch=nobody")
    check("practice platform error", page)

    assert len(check.checked) == 27
    check.assert_clean()


#: The practice's native assignment: the teacher's grader and the student's submission form.
TEACHER_VIEW, STUDENT_VIEW = "/assignment/teacher", "/assignment/student"


def attach_evaluaitor(page: Page, base_url: str, check: Audit | None = None) -> None:
    """As the teacher of the native assignment, attach Evaluaitor ("Add document processing
    app", its setup form in processor mode, the deep linking return), its grades shown to
    students at once; ``check`` audits each state on the way."""
    page.goto(base_url + TEACHER_VIEW)
    expect(page.locator("#no-processors")).to_be_visible()
    if check:
        check("native assignment, teacher, nothing attached", page)
    page.get_by_test_id("add-processor").click()
    setup = tool_at(page)
    expect(setup.locator("#processor-intro")).to_be_visible()
    if check:
        check("setup form, processor mode", setup)
    setup.locator("#title").fill("Photosynthesis essay")
    setup.locator("#max_score").fill("10")
    setup.locator("#release-auto").check()
    setup.locator("#setup-form button[type=submit]").click()
    returned = tool_at(page, "/deep-link-return")
    expect(returned.locator("#added")).to_contain_text("Photosynthesis essay")
    if check:
        check("deep linking return, processor attached", returned)


def test_the_native_assignment_has_no_serious_violations(
    app, localized_page, practice_platform, llm, view
):
    """The practice's own assignment with Evaluaitor attached as its document processor: the
    practice's pages and the tool's, as the teacher and the student reach them."""
    page, base = localized_page, practice_platform.base_url
    check = Audit(view)
    llm.reply("Clear and well argued.\n\n**Strengths:** clear structure.\n\nFinal score: 8/10")
    attach_evaluaitor(page, base, check)

    # The student: the platform's own form, refused empty, then a text handed in and graded.
    page.goto(base + STUDENT_VIEW)
    expect(page.locator("#no-submissions")).to_be_visible()
    check("native assignment, student before submitting", page)
    page.get_by_test_id("submit").click()
    expect(page.get_by_role("alert")).to_be_visible()
    check("native assignment, empty submission refused", page)
    page.goto(base + STUDENT_VIEW)
    page.locator("#entry").fill("Photosynthesis turns light into sugar.")
    page.get_by_test_id("submit").click()
    expect(page.locator("article.submission")).to_have_count(1)
    check("native assignment, student submitted, no report yet", page)
    page.goto(base + TEACHER_VIEW)
    expect(page.get_by_test_id("resubmit")).to_be_visible()  # no report yet: it may be resent
    check("native assignment, teacher grader awaiting a report", page)
    run_jobs()

    # The teacher's grader with the report, and "View report" into the tool's review of it.
    page.goto(base + TEACHER_VIEW)
    expect(page.locator("table.reports")).to_contain_text("8/10")
    check("native assignment, teacher grader with a report", page)
    page.get_by_test_id("view-report").click()
    review = tool_at(page, "/submissions/")
    expect(review.locator("#score")).to_be_visible()
    check("tool's review of the reported submission", review)
    page.locator("[data-testid^=modify-]").click()
    settings = tool_at(page, "/settings")
    expect(settings.locator("#processor-intro")).to_be_visible()
    check("tool's settings of the processor (Modify)", settings)

    # The student sees the released report and opens it in the tool.
    page.goto(base + STUDENT_VIEW)
    expect(page.locator("table.reports")).to_contain_text("8/10")
    check("native assignment, student with a released report", page)
    page.get_by_test_id("view-report").click()
    student = tool_at(page)
    expect(student.locator(FINAL)).to_contain_text("8")
    check("tool's student page of the processor", student)

    # A report the teacher opens before the tool has read its submission: a second attempt
    # whose notice the tool holds unread, and a report on it sent through the practice's Asset
    # Report Service as the tool would (a tool that answers before it grades).
    page.goto(base + STUDENT_VIEW)
    page.locator("#entry").fill("A second try: light, water and carbon dioxide make sugar.")
    page.get_by_test_id("submit").click()
    expect(page.locator("article.submission")).to_have_count(2)
    newest = _state(practice_platform).submissions[-1]
    sent = _post_report(app, practice_platform, _report(newest.assets[0].asset_id))
    assert sent.status_code == 201, sent.text
    page.goto(base + TEACHER_VIEW)
    page.locator(f"[data-submission='{newest.id}']").get_by_test_id("view-report").click()
    pending = tool_at(page, "/lti/launch")
    expect(pending.locator("#report-pending")).to_be_visible()
    check("tool's report pending (submission not read yet)", pending)
    pending.locator("main a[href*='/l/']").click()
    classes = tool_at(page)
    expect(classes.locator("a[href*='/submissions/']").first).to_be_visible()
    check("tool's class list of the processor", classes)

    assert len(check.checked) == 14
    check.assert_clean()


def test_the_admin_registration_and_error_pages_have_no_serious_violations(
    localized_page, app, live_tool, view
):
    page = localized_page
    check = Audit(view)

    app.config["EVALUAITOR_ADMIN_TOKEN"] = None
    page.goto(live_tool + "/admin/")
    check("admin switched off", page)
    app.config["EVALUAITOR_ADMIN_TOKEN"] = TOKEN
    page.goto(live_tool + "/admin/")
    check("admin sign-in", page)
    page.locator("#token").fill("not the token at all, but long enough")
    page.locator("#token").press("Enter")
    expect(page.locator("[role=alert]")).to_be_visible()
    check("admin sign-in refused", page)
    page.locator("#token").fill(TOKEN)
    page.locator("#token").press("Enter")
    expect(page.locator("form[action$='/sign-out']")).to_be_attached()
    check("admin index", page)
    with app.app_context():  # an organization's own forms: limits, model servers, its month
        school, _ = tenants.upsert_organization("school-a11y", name="School")
        school.monthly_token_limit = 1000
        tenants.set_model_base_urls(school, "https://llm.school.example/v1")
        db.session.commit()
    page.reload()
    page.locator("input[id^=cost-]").fill("lots")
    page.locator("input[id^=cost-]").press("Enter")
    expect(page.locator("[id^=limits-error-]")).to_be_visible()
    check("admin index with an organization, a limit refused", page)

    with FakePlatform() as moodle:
        start = live_tool + registration_path(moodle.url)
        page.goto(moodle.registration.start_url(start, token=moodle.registration.token()))
        expect(page.locator("#close-registration")).to_be_visible()
        check("dynamic registration done", page)

    page.goto(live_tool + "/no/such/page")
    check("not found", page)
    post_form(page, live_tool + "/lti/launch", {"id_token": "not-a-token", "state": "x"})
    check("invalid launch", page)

    assert len(check.checked) == 8
    check.assert_clean()


def post_form(page: Page, action: str, fields: dict[str, str]) -> None:
    """Navigate by posting a form, as a platform's launch does."""
    page.evaluate(
        """([action, fields]) => {
            const form = document.createElement('form');
            form.method = 'post';
            form.action = action;
            for (const [name, value] of Object.entries(fields)) {
                const input = document.createElement('input');
                input.type = 'hidden'; input.name = name; input.value = value;
                form.append(input);
            }
            document.body.append(form);
            form.submit();
        }""",
        [action, fields],
    )
    page.wait_for_load_state()


#: Where the focus is in one document, and whether a person sees it: the element matches
#: :focus-visible and draws an outline of at least 2 px (app.css and practice.css give one).
FOCUS = """() => {
    const el = document.activeElement;
    if (!el || el === document.body) return null;
    const style = getComputedStyle(el);
    return {
        id: el.id || el.dataset.testid || el.textContent.replace(/\\s+/g, ' ').trim(),
        frame: el.tagName === 'IFRAME' ? el.name : null,
        visible: el.matches(':focus-visible') && style.outlineStyle !== 'none'
            && parseFloat(style.outlineWidth) >= 2,
    };
}"""


def focused(page: Page) -> tuple[Page | Frame, dict] | None:
    """The document holding the focus (the page, or the frame the focus went into) and the
    focused element's description (FOCUS); None while nothing has it."""
    focus = page.evaluate(FOCUS)
    if focus and focus["frame"]:
        frame = page.frame(name=focus["frame"])
        return (frame, frame.evaluate(FOCUS)) if frame else None
    return (page, focus) if focus else None


def tab_to(page: Page, document: Page | Frame, target: str, limit: int = 40) -> None:
    """Press Tab until the element whose id (else test id, else text) is ``target`` has the
    focus in ``document`` (the page or the tool's frame), checking at every stop on the way,
    on the platform's page and in the tool's frame, that a person can see where the focus is."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        stop = focused(page)
        if stop is None or stop[1] is None:
            continue
        where, focus = stop
        assert focus["visible"], f"the focus on {focus['id']!r} does not show"
        # Compared by kind, not identity: the frame's object may change across its hops.
        if (where is page) == (document is page) and focus["id"] == target:
            return
    raise AssertionError(f"{limit} presses of Tab did not reach {target!r}")


def keyboard_launch(page: Page, base_url: str, button: str) -> Frame:
    """Open the course page and launch the tool with the keyboard alone."""
    page.goto(base_url + "/")
    tab_to(page, page, button)
    page.keyboard.press("Enter")
    return tool_at(page)


def test_upload_review_and_appeal_by_keyboard_alone(page, practice_platform, llm, tmp_path):
    """No mouse: the student uploads (the file chosen from the file input with Space), the
    teacher overrides and releases the held grade, the student asks for a regrade."""
    llm.reply("Well argued.\n\nFinal score: 6/10")
    base = practice_platform.base_url
    essay = tmp_path / "essay.pdf"
    essay.write_bytes(pdf_bytes())

    # Listened for before the tool's cross-site frame exists, so that its process has the file
    # chooser intercepted as it attaches: armed only at the Space, on a loaded machine (in CI)
    # the chooser it opened was once never reported.
    page.on("filechooser", lambda _chooser: None)
    student = keyboard_launch(page, base, "student-practice-link-1")
    db.session.query(Activity).filter_by(title="Practice essay").one().release_policy = "hold_all"
    db.session.commit()
    tab_to(page, student, "file")
    with page.expect_file_chooser() as chooser:
        page.keyboard.press("Space")
    chooser.value.set_files(str(essay))
    tab_to(page, student, "comment")
    page.keyboard.type("My first try.")
    tab_to(page, student, "Submit")
    page.keyboard.press("Enter")
    expect(student.locator("section.status[data-final=false]")).to_be_attached()
    run_jobs()
    expect(student.locator(FINAL)).to_be_attached()
    expect(student.locator(FINAL)).to_contain_text("Waiting for your teacher")

    # The teacher: Review, a new score saved (Enter), then released (Space).
    teacher = keyboard_launch(page, base, "teacher-practice-link-1")
    tab_to(page, teacher, "Review Ada Student")
    page.keyboard.press("Enter")
    teacher = tool_at(page, "/submissions/")
    tab_to(page, teacher, "score")
    page.keyboard.press("Control+A")
    page.keyboard.type("9")
    tab_to(page, teacher, "Save")
    page.keyboard.press("Enter")
    expect(teacher.locator("#score")).to_have_value("9")
    tab_to(page, teacher, "Release this grade")
    page.keyboard.press("Space")
    expect(teacher.locator("button[name=release]")).to_have_count(0)

    # The student sees 9 and asks for a regrade.
    student = keyboard_launch(page, base, "student-practice-link-1")
    expect(student.locator(FINAL)).to_contain_text("9 / 10")
    tab_to(page, student, "appeal-reason")
    page.keyboard.type("The second paragraph names both reactions.")
    tab_to(page, student, "Send the request")
    page.keyboard.press("Enter")
    expect(student.locator("form[action*='/withdraw']")).to_be_attached()
    expect(student.locator("#appeal-heading + *")).to_contain_text("both reactions")


def test_native_submission_and_view_report_by_keyboard_alone(page, practice_platform, llm):
    """No mouse, once Evaluaitor is attached: the student hands in a text in the practice's own
    form, and the teacher opens its report in the tool from the grader, then reaches the
    tool's score field."""
    llm.reply("Clear and well argued.\n\nFinal score: 8/10")
    base = practice_platform.base_url
    attach_evaluaitor(page, base)

    page.goto(base + STUDENT_VIEW)
    tab_to(page, page, "entry")
    page.keyboard.type("Photosynthesis turns light into sugar.")
    tab_to(page, page, "submit")
    page.keyboard.press("Enter")
    expect(page.locator("article.submission")).to_have_count(1)
    run_jobs()

    page.goto(base + TEACHER_VIEW)
    expect(page.locator("table.reports")).to_contain_text("8/10")
    tab_to(page, page, "view-report")
    page.keyboard.press("Enter")
    review = tool_at(page, "/submissions/")
    expect(review.locator("#score")).to_have_value("8")
    tab_to(page, review, "score")
