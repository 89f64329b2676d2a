"""Two newer features through the practice platform in the browser: a student's regrade
request answered by the teacher (the new score reaches the platform's gradebook), and the
programming activity graded by program tests alone, with no language model configured."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import expect

from app.practice import exercise
from tests.browser.conftest import screenshot, submit_pdf
from tests.conftest import run_jobs

SAMPLES = Path(exercise.__file__).parent / "static"


def test_a_student_appeals_and_the_teacher_answers_in_the_gradebook(
    page, practice_platform, llm, tmp_path
):
    llm.reply("Clear.\n\nFinal score: 6/10")
    platform_page = practice_platform.base_url + "/"
    tool = page.frame_locator("iframe[name=tool-frame]")

    # The student submits; the essay activity releases the grade at once.
    page.goto(platform_page)
    submit_pdf(page, "practice-link-1", "Practice essay", tmp_path)
    expect(tool.get_by_role("region", name="Your submission", exact=True)).to_contain_text("6 / 10")

    # They ask for a regrade, sending the request from the keyboard alone.
    requests = tool.get_by_role("region", name="Regrade requests")
    reason = requests.get_by_label("Why should your grade be looked at again?")
    reason.fill("My essay names the light and dark reactions in the second paragraph.")
    reason.press("Tab")
    send = requests.get_by_role("button", name="Send the request")
    expect(send).to_be_focused()
    page.keyboard.press("Enter")
    expect(requests).to_contain_text("Waiting for the teacher")
    expect(requests).to_contain_text("Your request is waiting for your teacher's answer.")
    expect(requests).to_contain_text("the light and dark reactions")
    expect(requests.get_by_role("button", name="Send the request")).to_have_count(0)
    screenshot(page, "student-appeal")

    # The teacher follows the class list's link to the open requests and answers with 8.
    page.goto(platform_page)
    page.get_by_test_id("teacher-practice-link-1").click()
    queue_link = tool.get_by_role("link", name=re.compile("^Regrade requests"))
    expect(queue_link).to_have_accessible_name("Regrade requests (1 waits for you)")
    queue_link.click()
    expect(tool.get_by_role("heading", level=1)).to_have_text("Practice essay: regrade requests")
    request = tool.get_by_role("region", name="Ada Student: attempt 1")
    expect(request).to_contain_text("the light and dark reactions")
    screenshot(page, "teacher-appeal-queue")
    request.get_by_label("Your answer to the student").fill("Right: I missed that paragraph.")
    request.get_by_label("New score (0 to 10; empty: keep it)").fill("8")
    request.get_by_role("button", name="Send the answer to Ada Student").click()
    expect(tool.get_by_role("status")).to_contain_text("Your answer was saved")
    expect(tool.get_by_role("status")).to_contain_text("The new score goes to the gradebook.")
    expect(tool.get_by_text("No regrade request is waiting for an answer.")).to_be_visible()
    run_jobs()

    page.goto(platform_page)
    row = page.locator("#scores tbody tr").first  # newest first
    expect(row).to_contain_text("Practice essay")
    expect(row).to_contain_text("Ada Student")
    expect(row).to_contain_text("8 / 10")
    expect(row).to_contain_text("FullyGraded")

    # The student sees the answer and the new score on their page.
    page.get_by_test_id("student-practice-link-1").click()
    expect(tool.get_by_role("region", name="Your submission", exact=True)).to_contain_text("8 / 10")
    requests = tool.get_by_role("region", name="Regrade requests")
    expect(requests).to_contain_text("Answered")
    expect(requests).to_contain_text("Right: I missed that paragraph.")
    expect(requests).to_contain_text("Score changed from 6 to 8.")
    # The activity allows one request per submission, and this one was answered.
    expect(requests).to_contain_text("You have made the one regrade request this activity allows.")


def _upload(page, sample: str) -> None:
    """As the student on the programming activity's page, upload a sample and let the
    worker grade it."""
    tool = page.frame_locator("iframe[name=tool-frame]")
    tool.get_by_label(re.compile("^File")).set_input_files(str(SAMPLES / sample))
    tool.get_by_role("button", name="Submit").click()
    expect(tool.get_by_text("Waiting in the grading queue")).to_be_visible()
    run_jobs()
    expect(tool.locator("section.status[data-final=true]")).to_be_attached()


def test_the_programming_practice_activity_grades_without_a_model(app, page, practice_platform):
    # No `llm` fixture: the tests' app has no model configured.
    assert app.config["EVALUAITOR_LLM_BASE_URL"] is None
    platform_page = practice_platform.base_url + "/"
    tool = page.frame_locator("iframe[name=tool-frame]")

    page.goto(platform_page)
    expect(page.get_by_role("link", name="a correct program")).to_be_visible()
    page.get_by_test_id(f"student-{exercise.LINK_ID}").click()
    expect(tool.get_by_role("heading", level=1)).to_have_text(exercise.TITLE)
    _upload(page, exercise.SAMPLES[0])
    status = tool.get_by_role("region", name="Your submission", exact=True)
    expect(status).to_contain_text("Graded")
    expect(status).to_contain_text("10 / 10")
    expect(status).to_contain_text("5 of 5")
    screenshot(page, "programming-grade")

    page.goto(platform_page)
    row = page.locator("#scores tbody tr").first  # newest first
    expect(row).to_contain_text(exercise.TITLE)
    expect(row).to_contain_text("Ada Student")
    expect(row).to_contain_text("10 / 10")
    expect(row).to_contain_text("FullyGraded")

    # Attempts are unlimited by default (Activity.max_attempts is None), so a second try with
    # the buggy sample is taken, and as the latest it is the grade that counts.
    page.get_by_test_id(f"student-{exercise.LINK_ID}").click()
    expect(tool.get_by_role("heading", name="Submit a new version")).to_be_visible()
    _upload(page, exercise.SAMPLES[1])
    expect(status).to_contain_text("Attempt 2")
    expect(status).to_contain_text("6 / 10")
    expect(status).to_contain_text("3 of 5")
    history = tool.get_by_role("table", name="Your submissions and their grades")
    expect(history.get_by_role("row")).to_have_count(3)  # header, attempt 2, attempt 1

    page.goto(platform_page)
    row = page.locator("#scores tbody tr").first
    expect(row).to_contain_text(exercise.TITLE)
    expect(row).to_contain_text("6 / 10")
