"""A student in headless Chromium, through Moodle's own pages: log in, open the activity in
Moodle's frame, upload through the tool's form there, watch the progress and the grade; the
grade is then read from Moodle's database.

Chromium and Playwright as in tests/browser (skipped, with the reason, when missing; an
error in CI). Every wait is on something the page shows; the fake model answers only once
the progress has been seen (the grading client's retries cover a slow browser).
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

from tests.browser.conftest import chromium, page, sync_api  # noqa: F401  (the fixtures)
from tests.documents import pdf_bytes
from tests.moodle.flows import (
    Placed,
    Tool,
    activate,
    add_activity,
    register,
    wait_for_gradebook,
)
from tests.moodle.site import Account, Moodle

expect = sync_api.expect
#: Where the tool's pages are: Moodle's frame, or a window of their own.
Surface = sync_api.FrameLocator | sync_api.Page

#: How long grading may take once the model answered (a worker process does it).
GRADING_MS = 60_000
REPLY = "Well structured.\n\nFinal score: 7/10"


def log_in(tab: sync_api.Page, moodle: Moodle, account: Account) -> None:
    """Moodle's login form, as a person fills it in."""
    tab.goto(moodle.url + "/login/index.php")
    tab.locator("#username").fill(account.username)
    tab.locator("#password").fill(account.password)
    tab.locator("#loginbtn").click()
    expect(tab).not_to_have_url(re.compile(r"/login/"))


def open_activity(tab: sync_api.Page, moodle: Moodle, placed: Placed) -> sync_api.FrameLocator:
    """The student, signed in, opens the activity: Moodle's page with the tool in its frame."""
    log_in(tab, moodle, moodle.student)
    tab.goto(f"{moodle.url}/mod/lti/view.php?id={placed.cmid}")
    return tab.frame_locator("iframe#contentframe")


def upload_and_watch(tool_page: Surface, tool: Tool, title: str, folder: Path) -> None:
    """Upload a PDF with the tool's form, see the progress, then the grade and feedback.

    The fake model answers only once the progress has been seen, so it is always there to
    see (if the browser is slow, the grading client's retries ask again)."""
    seen = threading.Event()
    tool.llm.set_default(lambda _request: seen.wait(GRADING_MS / 1000) and REPLY)
    essay = folder / "essay.pdf"
    essay.write_bytes(pdf_bytes())
    expect(tool_page.get_by_role("heading", level=1)).to_have_text(title)
    tool_page.get_by_label(re.compile("^File")).set_input_files(str(essay))
    tool_page.get_by_role("button", name="Submit").click()

    expect(tool_page.locator("#status-progress")).to_be_visible()  # in line, or being graded
    seen.set()
    expect(tool_page.locator("section.status[data-final=true]")).to_be_attached(timeout=GRADING_MS)
    expect(tool_page.locator("#status-text")).to_have_text("Graded")
    expect(tool_page.locator(".score")).to_contain_text("7 / 10")
    expect(tool_page.locator(".feedback")).to_contain_text("Well structured.")


def assert_in_moodles_gradebook(tool: Tool, placed: Placed, moodle: Moodle) -> None:
    row = wait_for_gradebook(tool, placed, moodle.student.id, lambda r: r["rawgrade"])
    assert (row["rawgrade"], row["grademax"]) == (7, 10)
    assert "Well structured." in row["feedback"]


def test_a_student_uploads_in_moodles_frame_and_the_grade_lands(
    same_site_tool: Tool,
    teacher,
    admin,
    moodle,
    page,  # noqa: F811  (the imported fixture)
    tmp_path: Path,
):
    tool = same_site_tool
    type_id = register(admin, tool)
    activate(admin, type_id)
    placed = add_activity(teacher, type_id, title="Essay in Chromium", max_score="10")

    frame = open_activity(page, moodle, placed)
    upload_and_watch(frame, tool, "Essay in Chromium", tmp_path)

    assert_in_moodles_gradebook(tool, placed, moodle)


def test_with_third_party_cookies_blocked_the_student_goes_on_in_a_new_window(
    tool: Tool,
    teacher,
    moodle,
    type_id,
    page,  # noqa: F811  (the imported fixture)
    tmp_path: Path,
):
    """The tool on another site than Moodle, in a Chromium that blocks third-party cookies
    (tests/browser's launch flags) and over HTTP (no partitioned cookie): the frame offers a
    new window, which opens the tool once (Moodle's single-use hint is not reused)."""
    placed = add_activity(teacher, type_id, title="Essay in a window", max_score="10")

    frame = open_activity(page, moodle, placed)
    expect(frame.get_by_role("heading", level=1)).to_have_text("Open Evaluaitor in a new window")
    with page.context.expect_page() as opened:
        frame.get_by_role("button", name="Open in a new window").click()
    window = opened.value
    expect(window).to_have_url(re.compile("^" + re.escape(tool.url) + "/l/"))
    upload_and_watch(window, tool, "Essay in a window", tmp_path)

    assert_in_moodles_gradebook(tool, placed, moodle)
