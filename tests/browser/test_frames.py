"""Inside the platform's cross-site frame: platform storage, the new-window fallback,
keyboard access, and the teacher page."""

from __future__ import annotations

from playwright.sync_api import expect

FOCUSED = "document.activeElement.id || document.activeElement.textContent.trim()"


def open_course(page, practice_platform):
    page.goto(practice_platform.base_url + "/")
    return page.frame_locator("iframe[name=tool-frame]")


def test_launch_in_a_cross_site_frame_keeps_its_state_in_platform_storage(page, practice_platform):
    seen = []
    page.on("response", lambda response: seen.append((response.url, response.status)))
    tool = open_course(page, practice_platform)
    page.get_by_test_id("student-practice-link-1").click()
    expect(tool.get_by_role("heading", level=1)).to_have_text("Practice essay")

    # The state cookie could not come back from the third-party frame, so the launch
    # answered with the page that reads the state and nonce back from the platform.
    launches = [status for url, status in seen if url.endswith("/lti/launch")]
    assert launches == [200]
    assert any(url.endswith("/static/lti-storage.js") for url, _ in seen)


def test_without_platform_storage_the_frame_offers_a_new_window(page, practice_platform):
    tool = open_course(page, practice_platform)
    page.get_by_label("Offer no platform storage").check()
    page.get_by_test_id("student-practice-link-1").click()
    expect(tool.get_by_role("heading", name="Open Evaluaitor in a new window")).to_be_visible()

    with page.expect_popup() as popup_info:
        tool.get_by_role("button", name="Open in a new window").click()
    popup = popup_info.value
    expect(popup.get_by_role("heading", level=1)).to_have_text("Practice essay")


def test_a_storage_frame_that_never_answers_leads_to_the_new_window(page, practice_platform):
    # The platform names its storage frame, but the frame holds nothing that answers.
    page.route("**/storage", lambda route: route.fulfill(body="<!doctype html><title>-</title>"))
    tool = open_course(page, practice_platform)
    page.get_by_test_id("student-practice-link-1").click()
    expect(tool.get_by_role("heading", name="Open Evaluaitor in a new window")).to_be_focused()
    with page.expect_popup() as popup_info:
        tool.get_by_role("button", name="Open in a new window").click()
    expect(popup_info.value.get_by_role("heading", level=1)).to_have_text("Practice essay")


def test_the_platform_can_open_the_tool_in_a_new_window(page, practice_platform):
    open_course(page, practice_platform)
    page.get_by_label("Open in a new window").check()
    with page.expect_popup() as popup_info:
        page.get_by_test_id("student-practice-link-1").click()
    expect(popup_info.value.get_by_role("heading", level=1)).to_have_text("Practice essay")


def test_keyboard_reaches_the_file_input_then_submit(page, practice_platform):
    tool = open_course(page, practice_platform)
    page.get_by_test_id("student-practice-link-1").click()
    expect(tool.get_by_role("heading", level=1)).to_have_text("Practice essay")
    frame = page.frame(name="tool-frame")
    frame.locator("h1").click()  # focus lands inside the frame, at its top

    reached = []
    for _ in range(12):
        page.keyboard.press("Tab")
        reached.append(frame.evaluate(FOCUSED))
        if reached[-1] == "Submit":
            break
    assert "file" in reached and reached[-1] == "Submit"
    assert reached.index("file") < reached.index("comment") < reached.index("Submit")


def test_teacher_page_opens_in_the_frame(page, practice_platform):
    tool = open_course(page, practice_platform)
    page.get_by_test_id("teacher-practice-link-1").click()
    expect(tool.get_by_role("heading", level=1)).to_contain_text("Practice essay")
