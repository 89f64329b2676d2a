"""A student launches from the practice platform, uploads a PDF and sees the grade."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.browser.conftest import screenshot, submit_pdf

GOOD_REPLY = "Clear and complete.\n\n**Strengths:** precise terms.\n\nFinal score: 8/10"


def test_student_uploads_a_pdf_and_the_platform_receives_the_score(
    page, practice_platform, llm, tmp_path
):
    llm.reply(GOOD_REPLY)
    page.goto(practice_platform.base_url + "/")
    tool = submit_pdf(page, "practice-link-1", "Practice essay", tmp_path)
    expect(tool.get_by_text("precise terms")).to_be_visible()
    screenshot(page, "student")

    page.goto(practice_platform.base_url + "/")
    row = page.locator("#scores tbody tr").first
    expect(row).to_contain_text("Ada Student")
    expect(row).to_contain_text("8 / 10")
    expect(row).to_contain_text("FullyGraded")
