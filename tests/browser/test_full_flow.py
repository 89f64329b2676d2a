"""The whole round trip through the practice platform, as a teacher and a student would
click it: add an activity by deep linking, submit a PDF, review, override, release, and
see the FullyGraded score arrive in the platform's gradebook."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.browser.conftest import screenshot, submit_pdf
from tests.conftest import run_jobs


def test_teacher_adds_student_submits_teacher_overrides_and_releases(
    page, practice_platform, llm, tmp_path
):
    llm.reply("Well argued.\n\n**Strengths:** clear structure.\n\nFinal score: 6/10")
    platform_page = practice_platform.base_url + "/"
    tool = page.frame_locator("iframe[name=tool-frame]")

    # The teacher adds an activity through deep linking and fills the setup form.
    page.goto(platform_page)
    page.get_by_role("button", name="Add an activity (deep linking)").click()
    expect(tool.get_by_role("heading", name="Set up the activity")).to_be_visible()
    tool.get_by_label("Title", exact=True).fill("Lab report")
    tool.get_by_label("Instructions for students").fill("Explain what photosynthesis does.")
    tool.get_by_label("Maximum score").fill("10")
    tool.get_by_label("Hold every grade until I release it").check()
    screenshot(page, "setup")
    tool.get_by_role("button", name="Add the activity to the course").click()
    expect(tool.get_by_text("Added “Lab report” to the course.")).to_be_visible()

    # The student opens the new link, uploads a PDF and watches it being graded.
    page.goto(platform_page)
    submit_pdf(page, "practice-link-2", "Lab report", tmp_path)

    # The teacher reviews it, overrides the score and releases it.
    page.goto(platform_page)
    page.get_by_test_id("teacher-practice-link-2").click()
    expect(tool.get_by_role("link", name=re.compile("^Review")).first).to_be_visible()
    screenshot(page, "teacher")
    tool.get_by_role("link", name=re.compile("^Review")).first.click()
    tool.get_by_label(re.compile(r"^Score \(0 to 10\)")).fill("9")
    tool.get_by_role("button", name="Save and release").click()
    expect(tool.get_by_text("Released", exact=False).first).to_be_visible()
    run_jobs()

    page.goto(platform_page)
    row = page.locator("#scores tbody tr").first
    expect(row).to_contain_text("Lab report")
    expect(row).to_contain_text("Ada Student")
    expect(row).to_contain_text("9 / 10")
    expect(row).to_contain_text("FullyGraded")
