"""A student whose browser blocks the tool's cookie inside Moodle's frame (Moodle offers no
platform storage): the tool must still open, in a new window."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.moodle.flows import add_activity, launch
from tests.moodle.site import Person, find_form, form_fields, said


@pytest.fixture
def blocking_student(moodle, tool) -> Iterator[Person]:
    """The student, in a browser that keeps no cookie of the tool's site (third-party)."""
    person = moodle.sign_in(moodle.student)
    tool_host = httpx.URL(tool.url).host

    def drop_tool_cookies(response: httpx.Response) -> None:
        for cookie in list(person.http.cookies.jar):
            if cookie.domain.removesuffix(".local") == tool_host:
                person.http.cookies.jar.clear(cookie.domain, cookie.path, cookie.name)

    person.http.event_hooks["response"] = [drop_tool_cookies]
    yield person
    person.close()


def test_with_the_cookie_blocked_the_tool_opens_in_a_new_window(
    tool, teacher, blocking_student, type_id
):
    placed = add_activity(teacher, type_id, title="Blocked cookie")

    frame = launch(blocking_student, placed.cmid)
    assert "Open Evaluaitor in a new window" in frame.text
    handoff = find_form(frame, "")  # the page's one form, posted to a new window
    assert handoff.get("target") == "_blank"
    fields = form_fields(handoff)
    assert "/l/" not in frame.text  # nothing that opens the tool is in the frame's page

    window = blocking_student.submit(handoff.action, fields, frame)
    assert window.status_code == 200, said(window)  # Moodle said "Invalid request" before
    assert "Blocked cookie" in window.text and str(window.url).startswith(tool.url + "/l/")

    again = blocking_student.submit(handoff.action, fields, frame)
    assert again.status_code == 400 and "expired" in again.text  # the handoff works once
