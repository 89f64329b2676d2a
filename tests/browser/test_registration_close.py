"""Dynamic Registration's last step in a real browser: the LMS opened the tool's
registration page in a window, and the close button posts `org.imsglobal.lti.close` to it."""

from __future__ import annotations

from tests.conftest import registration_path
from tests.fakes.platform import FakePlatform


def test_the_close_button_tells_the_lms_window_that_registration_is_done(app, live_tool, page):
    with FakePlatform() as moodle:
        url = moodle.registration.start_url(
            live_tool + registration_path(moodle.url), token=moodle.registration.token()
        )
        # The LMS's own window, listening as Moodle's registration page does.
        page.evaluate(
            "window.received = [];"
            "window.addEventListener('message', (event) => window.received.push(event.data));"
        )
        with page.expect_popup() as opened:
            page.evaluate("(url) => window.open(url)", url)
        popup = opened.value
        popup.wait_for_load_state()
        assert "pending" in popup.content()
        popup.get_by_role("button", name="Close and return to the LMS").click()
        page.wait_for_function("window.received.length > 0")
        assert page.evaluate("window.received") == [{"subject": "org.imsglobal.lti.close"}]
        assert len(moodle.registration.registrations) == 1
