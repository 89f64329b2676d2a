"""A student launches from the practice platform, uploads a PDF and sees the grade."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.browser.conftest import screenshot
from tests.conftest import run_jobs
from tests.documents import pdf_bytes

GOOD_REPLY = "Clear and complete.\n\n**Strengths:** precise terms.\n\nFinal score: 8/10"


def test_student_uploads_a_pdf_and_the_platform_receives_the_score(
    page, practice_platform, llm, tmp_path
):
    llm.reply(GOOD_REPLY)
    essay = tmp_path / "essay.pdf"
    essay.write_bytes(pdf_bytes())

    page.goto(practice_platform.base_url + "/")
    page.get_by_test_id("student-practice-link-1").click()
    tool = page.frame_locator("iframe[name=tool-frame]")
    expect(tool.get_by_role("heading", level=1)).to_have_text("Practice essay")

    tool.get_by_label(re.compile("^File")).set_input_files(str(essay))
    tool.get_by_role("button", name="Submit").click()
    expect(tool.get_by_text("Queued for grading")).to_be_visible()
    run_jobs()
    expect(tool.get_by_text("precise terms")).to_be_visible()
    screenshot(page, "student")

    page.goto(practice_platform.base_url + "/")
    row = page.locator("#scores tbody tr").first
    expect(row).to_contain_text("Ada Student")
    expect(row).to_contain_text("8 / 10")
    expect(row).to_contain_text("FullyGraded")
